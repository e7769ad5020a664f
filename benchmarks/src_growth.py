"""Where ``src/``'s lines came from since the one-path issue was filed, by the issue each commit names.

The one-path issue was filed on a review of main at 38ffd9b and asked that ``src/`` "not grow past
36,000 lines". This script reads the git history from that commit to ``HEAD`` and sums, for every
non-merge commit, the change in ``src/`` Python lines (added minus removed, as ``git diff --numstat``
counts them), grouped by the first issue number the commit's message names (a hash sign and two digits, or the word 'issue' and two digits).
Commits naming none are "untagged": most are review mends and helper steps of the issues around them.

Usage::

    python benchmarks/src_growth.py                 # from 38ffd9b to HEAD
    python benchmarks/src_growth.py --since REV --until REV

It reads the history only; it runs nothing else, so the machine's load does not change its figures.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILED = "38ffd9b"
ISSUE = re.compile(r"#(\d{2})\b|\bissue (\d{2})\b", re.IGNORECASE)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def src_lines(rev: str) -> int:
    """``wc -l`` of every ``src/`` Python file at ``rev``."""
    names = [n for n in _git("ls-tree", "-r", "--name-only", rev, "src").splitlines() if n.endswith(".py")]
    return sum(len(_git("show", f"{rev}:{n}").splitlines()) for n in names)


def _delta(commit: str) -> int:
    total = 0
    for row in _git("diff", "--numstat", f"{commit}^", commit, "--", "src").splitlines():
        added, removed, path = row.split("\t", 2)
        if path.endswith(".py") and added != "-":
            total += int(added) - int(removed)
    return total


def _issue(message: str) -> str:
    m = ISSUE.search(message)
    return f"#{m.group(1) or m.group(2)}" if m else "untagged"


def growth(since: str, until: str) -> dict[str, tuple[int, int]]:
    """Issue -> (commits, net src/ lines) over the non-merge commits in ``since..until``."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for commit in _git("rev-list", "--no-merges", f"{since}..{until}").split():
        row = out[_issue(_git("log", "-1", "--format=%s%n%b", commit))]
        row[0] += 1
        row[1] += _delta(commit)
    return {k: (n, d) for k, (n, d) in sorted(out.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--since", default=FILED)
    ap.add_argument("--until", default="HEAD")
    a = ap.parse_args()
    start, end = src_lines(a.since), src_lines(a.until)
    rows = growth(a.since, a.until)
    print(f"src/ lines at {a.since}: {start:,}; at {a.until}: {end:,} ({end - start:+,})")
    print("| issue named | commits | net src/ lines |\n|---|---|---|")
    for issue, (n, d) in rows.items():
        print(f"| {issue} | {n} | {d:+,} |")
    summed = sum(d for _, d in rows.values())
    print(f"| all non-merge commits | {sum(n for n, _ in rows.values())} | {summed:+,} |")
    if summed != end - start:
        print(f"(the merge commits themselves account for {end - start - summed:+,} lines)")


if __name__ == "__main__":
    main()
