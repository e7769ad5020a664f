"""Render every record in ``tests/data`` the ways a user sees it, and compare two renderings.

The one-path refactor (one path from a job to the screen) moves analysis out of the presenters without
changing what the user reads. This script is its gate: run it on the code before and after, then
``--compare`` the two folders. A difference is printed as a unified diff; the exit code is 1.

For each JSON record that ``whichdevice report`` reads (records that it refuses are listed as
such, and their refusal line is compared too) it writes:

- ``<id>.first.txt``: ``report REC`` (the first screen);
- ``<id>.verbose.txt``: ``report REC --verbose``;
- ``<id>.md``: ``report REC --markdown --verbose``;
- ``<id>.csv``: ``report REC --csv``;
- ``<id>.html/…``: the files ``report REC --out DIR`` writes (HTML compared as text, PNG by their
  SHA-256, which matplotlib keeps stable for the same figure).

Each output is prefixed with the command's exit code. The scratch folder's path is replaced by
``<OUT>`` so that two renderings into different folders compare equal. ``COLUMNS=100`` and a
pipe (no terminal) fix the layout.

Usage::

    python benchmarks/render_identity.py --out /tmp/render-before
    python benchmarks/render_identity.py --compare /tmp/render-before /tmp/render-after
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
MODES: dict[str, tuple[str, ...]] = {
    "first.txt": (),
    "verbose.txt": ("--verbose",),
    "md": ("--markdown", "--verbose"),
    "csv": ("--csv",),
}


def records() -> list[Path]:
    return sorted(p for p in DATA.rglob("*.json") if p.is_file())


def _env() -> dict[str, str]:
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", TERM="dumb")
    env.pop("FORCE_COLOR", None)
    return env


def _report(args: list[str], scratch: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "whichdevice", "report", *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=scratch,
        timeout=300,
        check=False,
    )
    text = f"rc={done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    return text.replace(str(scratch), "<OUT>").replace(str(ROOT), "<ROOT>")


def render_one(record: Path, out: Path) -> str:
    rid = str(record.relative_to(DATA)).replace("/", "__").removesuffix(".json")
    with tempfile.TemporaryDirectory(prefix="wd-render-") as tmp:
        scratch = Path(tmp)
        for suffix, flags in MODES.items():
            (out / f"{rid}.{suffix}").write_text(_report([str(record), *flags], scratch), encoding="utf-8")
        html_dir = scratch / "html"
        log = _report([str(record), "--out", str(html_dir)], scratch)
        (out / f"{rid}.out.txt").write_text(log, encoding="utf-8")
        files = sorted(p for p in html_dir.rglob("*") if p.is_file()) if html_dir.exists() else []
        lines = []
        for f in files:
            rel = f.relative_to(html_dir)
            if f.suffix in {".html", ".md", ".txt", ".json", ".csv"}:
                body = f.read_text(encoding="utf-8").replace(str(scratch), "<OUT>").replace(str(ROOT), "<ROOT>")
                (out / f"{rid}.file__{str(rel).replace('/', '__')}").write_text(body, encoding="utf-8")
                lines.append(f"{rel} text")
            else:
                lines.append(f"{rel} sha256={hashlib.sha256(f.read_bytes()).hexdigest()}")
        (out / f"{rid}.files.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rid


def render_all(out: Path, jobs: int) -> int:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    recs = records()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for rid in pool.map(lambda r: render_one(r, out), recs):
            print(rid, flush=True)
    print(f"{len(recs)} records rendered into {out}")
    return 0


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differing = 0
    for name in names:
        pa, pb = a / name, b / name
        ta = pa.read_text(encoding="utf-8").splitlines(keepends=True) if pa.exists() else ["<missing>\n"]
        tb = pb.read_text(encoding="utf-8").splitlines(keepends=True) if pb.exists() else ["<missing>\n"]
        if ta != tb:
            differing += 1
            sys.stdout.writelines(difflib.unified_diff(ta, tb, f"{a.name}/{name}", f"{b.name}/{name}", n=1))
    print(f"{len(names)} files compared, {differing} differ")
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="folder to render every record into (replaced)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--jobs", type=int, default=2, help="reports rendered at once (default 2)")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("--out or --compare is required")
    return render_all(args.out, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
