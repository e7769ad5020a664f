# PyTorch timed with time.process_time and datetime.now (clocks people use too).
import time
from datetime import datetime

import torch

x = torch.rand(128, 128)
for _ in range(3):
    c0 = time.process_time()
    y = x @ x
    print("cpu seconds", time.process_time() - c0)
s = datetime.now()
z = x @ x
print("wall", (datetime.now() - s).total_seconds())
