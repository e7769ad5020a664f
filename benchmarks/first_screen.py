"""How long the first screen of `run`/`diagnose` is (at most 25 lines at 100 columns).

    python benchmarks/first_screen.py RECORD.json [...]

For each record: the lines the first screen takes at 80, 100 and 120 columns as a terminal
shows them (rich's wrapping included), the two lines `run` adds after it (Record:, History:)
counted, and its widest line. Plots are not drawn (they do not change the text).
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from whichdevice.jobs import running
from whichdevice.core.records import load_run
from whichdevice.present import plots


def main() -> None:
    plots.plot_sweep = plots.plot_batch_sweep = lambda _t, png, **_k: Path(png).write_bytes(b"")
    print("| record | 80 cols | 100 cols | 120 cols | widest line (chars) |")
    print("| --- | --- | --- | --- | --- |")
    for path in sys.argv[1:]:
        record = load_run(Path(path))
        counts, widest = [], 0
        for width in (80, 100, 120):
            buf = io.StringIO()
            running.console = Console(file=buf, width=width, force_terminal=True, color_system=None)
            with tempfile.TemporaryDirectory() as tmp:
                running.page(record, Path(tmp) / "run.png", loglog=True)
            lines = buf.getvalue().rstrip("\n").split("\n")
            counts.append(len(lines) + 2)  # + Record:, History:
            if width == 120:
                widest = max(len(line) for line in lines if not line.startswith("Report: "))
        print(f"| {Path(path).name} | {counts[0]} | {counts[1]} | {counts[2]} | {widest} |")


if __name__ == "__main__":
    main()
