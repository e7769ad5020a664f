"""Where does a diagnose's round 2 happen? For each recorded diagnose run of a budget, the
measuring child's import, its round's wall (the planned cases' walls; halved where the run had
two rounds), the sum "import + 2 x round", and whether the run got a second round.

At ``--budget 20``, sets G and H (last session's records, code before the change) got round 2
exactly where that sum stayed under about 13.3 s: the later rounds had to start before 75 % of
the budget (15 s after the child began), while the plan filled round 1 to 55 % of what the budget
left. The same table over set I (the code after) shows every run with two rounds or more.

    python benchmarks/round2_reach.py --budget 20 RECORD_DIR [RECORD_DIR ...]

Reads ``*.json`` diagnose records (``stable_verdicts.py``'s ``OUT`` folders); prints a markdown
table sorted by the sum, then the count of runs with one round and with more, below and above
each threshold given by ``--split``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def row(path: Path, budget: float) -> dict | None:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    o = d.get("options") or {}
    results = d.get("results") or []
    if d.get("experiment") != "diagnose" or o.get("budget_s") != budget or not results:
        return None
    rounds = max(len((r.get("timing") or {}).get("rounds_s") or []) for r in results) or 1
    wall = sum(r.get("wall_s") or 0.0 for r in results) / rounds
    imported = max([s.get("import_s") or 0.0 for s in d.get("sessions") or []] or [0.0])
    return {
        "run": f"{path.parent.name}/{path.stem}",
        "load_per_core": o.get("preflight_load_per_core"),
        "import_s": imported,
        "round_s": wall,
        "sum_s": imported + 2 * wall,
        "rounds": rounds,
        "planned_round_s": o.get("planned_round_s"),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--budget", type=float, default=20.0)
    p.add_argument("--split", type=float, default=13.3, help="the sum at which to count one-round runs")
    p.add_argument("dirs", nargs="+", type=Path)
    a = p.parse_args()
    rows = [r for d in a.dirs for f in sorted(d.glob("*.json")) if (r := row(f, a.budget)) is not None]
    rows.sort(key=lambda r: r["sum_s"])
    print("| run | load per core | import s | round s | import + 2 × round | rounds | planned round s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['run']} | {r['load_per_core']} | {r['import_s']:.1f} | {r['round_s']:.1f} | {r['sum_s']:.1f} | "
            f"{r['rounds']} | {r['planned_round_s'] if r['planned_round_s'] is not None else '-'} |"
        )
    below = [r for r in rows if r["sum_s"] < a.split]
    above = [r for r in rows if r["sum_s"] >= a.split]
    for name, part in (("below", below), ("at or above", above)):
        two = sum(r["rounds"] >= 2 for r in part)
        print(f"\n{name} {a.split:g} s: {len(part)} runs, {two} with two rounds or more, {len(part) - two} with one")


if __name__ == "__main__":
    main()
