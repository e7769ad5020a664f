"""Time to the first answer of `whichdevice run`: the command under a pseudo-terminal
(as a user sees it), every line it prints timestamped from the start, and when the first
"Provisional answer" and the final "Answer:" lines appeared. The load (`uptime`) before and after.

    python benchmarks/first_answer.py --out /tmp/fa [--columns 80] [--pipe] [-- EXTRA RUN ARGS]

``--pipe`` runs it with stdout and stderr on a pipe instead (what a script or CI sees): the
lines per finished phase and the final answer only.
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _read_all(fd: int, proc: subprocess.Popen, t0: float) -> list[tuple[float, str]]:
    """Every line (split on newlines and carriage returns: a progress frame is a line) with
    the seconds since the start at which it was complete."""
    lines: list[tuple[float, str]] = []
    buf = ""
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536).decode(errors="replace")
            except OSError:  # the pty closed: the child is gone
                chunk = ""
            if not chunk and proc.poll() is not None:
                break
            buf += chunk
            *done, buf = re.split(r"\r\n|\n|\r", buf)
            now = time.perf_counter() - t0
            lines += [(now, ANSI.sub("", x)) for x in done if ANSI.sub("", x).strip()]
        elif proc.poll() is not None:
            break
    if buf.strip():
        lines.append((time.perf_counter() - t0, ANSI.sub("", buf)))
    return lines


def run_once(out: Path, columns: int, pipe: bool, extra: list[str]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "whichdevice", "run", "--out", str(out), *extra]
    env = {**os.environ, "WHICHDEVICE_HOME": str(out / "home"), "COLUMNS": str(columns), "LINES": "40"}
    t0 = time.perf_counter()
    if pipe:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        lines = _read_all(fd, proc, t0)
    else:
        master, slave = pty.openpty()
        os.set_blocking(master, True)
        import fcntl
        import struct
        import termios

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        proc = subprocess.Popen(cmd, env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        lines = _read_all(master, proc, t0)
        os.close(master)
    proc.wait()
    wall = time.perf_counter() - t0
    first = next((t for t, x in lines if "Provisional answer" in x), None)
    final = next((t for t, x in lines if x.lstrip().startswith("Answer:")), None)
    return {"rc": proc.returncode, "wall_s": wall, "provisional_s": first, "final_s": final, "lines": lines}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--columns", type=int, default=100)
    ap.add_argument("--pipe", action="store_true", help="stdout and stderr on a pipe, not a terminal")
    ap.add_argument("--show", action="store_true", help="print every timestamped line")
    ap.add_argument("extra", nargs="*", help="more `whichdevice run` arguments (after --)")
    a = ap.parse_args()
    before = _uptime()
    res = run_once(a.out, a.columns, a.pipe, a.extra)
    after = _uptime()
    if a.show:
        seen = set()
        for t, x in res["lines"]:
            if x in seen:  # progress frames repeat: each distinct line once, when first seen
                continue
            seen.add(x)
            print(f"{t:7.1f} s  {x}")
    fmt = lambda t: "never" if t is None else f"{t:.1f} s"  # noqa: E731
    print(f"load before: {before}")
    print(f"load after:  {after}")
    print(
        f"exit {res['rc']}; wall {res['wall_s']:.1f} s; provisional answer at {fmt(res['provisional_s'])}; "
        f"final answer at {fmt(res['final_s'])} ({'pipe' if a.pipe else f'pty, {a.columns} columns'})"
    )


if __name__ == "__main__":
    main()
