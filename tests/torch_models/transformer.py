"""Family 4: one TransformerEncoderLayer over token embeddings, mean-pooled to logits."""

import torch.nn as nn


class TinyEncoder(nn.Module):
    def __init__(self, vocab=100, d_model=32, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.encoder = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=64, batch_first=True)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


def build():
    return TinyEncoder()
