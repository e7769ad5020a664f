"""An LSTM language model over token ids with a hidden state carried across batches (detached
each step), truncated backprop, gradient clipping and SGD: the shape of pytorch/examples' word
language model, on random tokens."""

import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self, ntoken, ninp, nhid):
        super().__init__()
        self.embed = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid)
        self.out = nn.Linear(nhid, ntoken)

    def forward(self, tokens, hidden):
        output, hidden = self.rnn(self.embed(tokens), hidden)
        return self.out(output), hidden

    def init_hidden(self, bsz):
        w = next(self.parameters())
        return (w.new_zeros(1, bsz, self.rnn.hidden_size), w.new_zeros(1, bsz, self.rnn.hidden_size))


def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    return data[: nbatch * bsz].view(bsz, -1).t().contiguous().to(device)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ntokens, bptt, batch_size = 1000, 35, 20
train_data = batchify(torch.randint(0, ntokens, (20 * 35 * 12,)), batch_size, device)
model = LM(ntokens, 64, 64).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1.0)

for epoch in range(2):
    hidden = model.init_hidden(batch_size)
    for i in range(0, train_data.size(0) - 1, bptt):
        seq_len = min(bptt, len(train_data) - 1 - i)
        data, targets = train_data[i : i + seq_len], train_data[i + 1 : i + 1 + seq_len].reshape(-1)
        hidden = tuple(h.detach() for h in hidden)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, ntokens), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.2f}")
