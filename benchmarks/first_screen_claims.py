"""Does each claim on the first screen read the same in the fix table?

    python benchmarks/first_screen_claims.py RECORD.json [...]

For each recorded run/diagnose: the first screen's lines with a claimed ratio ("N× faster (95 %
CI ...)") and how many of them appear, interval for interval, in the fix table of `--verbose`
(`whichdevice report RECORD --verbose`, 400 columns so no cell is folded); plus whether the
warnings line has an "other" bucket. Works on any version of whichdevice (it reads the printed
text only), so it measures the code before and after the change alike.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

CLAIM = re.compile(r"(\d[\d.]*× (?:faster|slower) \(95 % CI [^,]+, \d+ (?:rounds?|samples?))")


def _report(path: Path, *, verbose: bool) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        args = [sys.executable, "-m", "whichdevice", "report", str(path), "--out", tmp] + (
            ["--verbose"] if verbose else []
        )
        env = {"COLUMNS": "400" if verbose else "100", "PATH": "/usr/bin:/bin", **_pythonpath()}
        return subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout


def _pythonpath() -> dict[str, str]:
    import os

    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


def main() -> None:
    print("| record | claims on the first screen | found in the fix table | 'other' warnings |")
    print("| --- | --- | --- | --- |")
    for name in sys.argv[1:]:
        path = Path(name)
        first = _report(path, verbose=False)
        table = _report(path, verbose=True)
        table = table[table.index("Every fix") :] if "Every fix" in table else table
        claims = CLAIM.findall(first)
        found = sum(c in table for c in claims)
        other = "yes" if re.search(r"\d+ other", first) else "no"
        print(f"| {path.name} | {len(claims)} | {found} | {other} |")


if __name__ == "__main__":
    main()
