"""Family 3: an LSTM classifier over sequences (batch_first), the last step's state to logits."""

import torch.nn as nn


class SeqClassifier(nn.Module):
    def __init__(self, features=8, hidden=32, classes=4):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def build():
    return SeqClassifier()
