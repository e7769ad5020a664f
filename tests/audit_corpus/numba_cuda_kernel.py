# Numba: a CUDA kernel launched and timed (not followed by the audit).
import time

import numpy as np
from numba import cuda


@cuda.jit
def double(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2.0


x = cuda.to_device(np.ones(1 << 20))
t0 = time.time()
double[4096, 256](x)
print("kernel:", time.time() - t0)
