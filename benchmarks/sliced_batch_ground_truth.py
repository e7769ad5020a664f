"""Ground truth for ``tests/script_corpus/torch_sliced_batches.py``, timed by hand: the same tiny MLP,
loss and optimizer, its loop slicing real batches of K rows from the same data (``X[i : i + K]``),
per-sample time at each K. Rounds interleave the batches (the order rotates each round) so that the
machine's load hits each alike; each round times STEPS steps per batch after WARM steps.

    python benchmarks/sliced_batch_ground_truth.py [--rounds 8] [--threads N]

Prints each batch's median step and per-sample time, and per round the per-sample ratio of batch 8
to each K (how many times faster per sample K is), with the rounds' median and range.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn

BATCHES = (8, 32, 64, 128, 256)
STEPS, WARM = 200, 20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    X, Y = torch.randn(4096, 16), torch.randint(0, 4, (4096,))
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def per_step(k: int) -> float:
        times = []
        for j in range(WARM + STEPS):
            i = (j * k) % (len(X) - k + 1)
            t = time.perf_counter()
            xb, yb = X[i : i + k], Y[i : i + k]
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t)
        return statistics.median(times[WARM:])

    rounds: list[dict[int, float]] = []
    for r in range(a.rounds):
        order = BATCHES[r % len(BATCHES) :] + BATCHES[: r % len(BATCHES)]
        rounds.append({k: per_step(k) for k in order})
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {a.rounds} rounds x {STEPS} steps")
    for k in BATCHES:
        step = statistics.median(x[k] for x in rounds)
        ratios = [(x[8] / 8) / (x[k] / k) for x in rounds]
        print(
            f"batch {k:4d}: step {step * 1e6:8.1f} us, per sample {step / k * 1e6:7.2f} us; "
            f"per sample vs batch 8: {statistics.median(ratios):6.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f}x)"
        )


if __name__ == "__main__":
    main()
