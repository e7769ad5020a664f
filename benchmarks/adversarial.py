"""Adversarial reliability cases: every case a real ``python -m whichdevice`` (or a
real child process), each with what is expected and what was observed.

    python benchmarks/adversarial.py [--only SUBSTRING] [--out benchmarks/results/adversarial.json]

Families: output files (FIFOs, devices, planted links, same-second runs), resume (moved,
copied, renamed, torn, glued, edited, foreign journals), full disk (a small tmpfs: ENOSPC
while journaling and while writing the report; a folder remounted read-only mid-run),
processes and signals (forks in user code, the API and Ctrl-C, SIGTERM, SIGHUP, a closed
pipe, kill -9 and the scratch folder), inputs (numbers at the limits, non-ASCII digits, long
paths, symlink loops, FIFOs, devices, huge files, NaN/inf/negative times, damaged history),
control characters, warnings of impossible settings, and the user's model file re-checked
on resume.

After every case two global checks run: no process started by the case is still alive (every
process the benchmark starts carries a marker in its environment; /proc is scanned for it),
and nothing was written to the TMPDIR the runs were given (whichdevice keeps its temporary
files in $WHICHDEVICE_HOME/tmp). A case passes only if its own check and both global checks
pass. The tmpfs cases need root (mount); they are reported as not run otherwise.

Everything is measured on this machine; nothing is assumed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

WD = [sys.executable, "-m", "whichdevice"]
QUICK = ["matmul", "--framework", "numpy", "--sizes", "10", "--mode", "steady", "--min-time", "0.02"]
# A run that finishes n=8, then hangs in n=64 (an injected fault) until it is interrupted.
HANG = ["matmul", "--framework", "numpy", "--sizes", "8,64", "--mode", "steady", "--min-time", "0.02"]
HANG_ENV = {"WHICHDEVICE_FAULT": "hang:n=64"}
SUFFIX = ".partial.jsonl"
MARK = f"wdadv-{uuid.uuid4().hex[:12]}"


@dataclass
class Res:
    rc: int
    out: str
    err: str
    wall_s: float


@dataclass
class Case:
    family: str
    name: str
    expected: str
    run: Callable[[Ctx], tuple[bool, str]]
    needs_root: bool = False


CASES: list[Case] = []


def case(family: str, name: str, expected: str, needs_root: bool = False):
    def wrap(fn):
        CASES.append(Case(family, name, expected, fn, needs_root))
        return fn

    return wrap


class Ctx:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.watch_tmp = root / "watched-tmp"
        self.fixtures = root / "fixtures"
        for d in (self.home, self.watch_tmp, self.fixtures):
            d.mkdir(parents=True, exist_ok=True)
        self.n = 0
        self.mounts: list[Path] = []

    def env(self, extra: dict | None = None) -> dict:
        return {
            **os.environ,
            "WHICHDEVICE_HOME": str(self.home),
            "TMPDIR": str(self.watch_tmp),
            "COLUMNS": "200",
            "WD_ADV_MARK": MARK,
            **(extra or {}),
        }

    def folder(self) -> Path:
        self.n += 1
        d = self.root / f"case{self.n:03d}"
        d.mkdir()
        return d

    def cli(self, args: list[str], cwd: Path, extra: dict | None = None, timeout: float = 180) -> Res:
        t0 = time.monotonic()
        try:
            p = subprocess.run(
                [*WD, *args],
                cwd=cwd,
                env=self.env(extra),
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                errors="replace",
            )
        except subprocess.TimeoutExpired as e:
            return Res(124, str(e.stdout or ""), f"TIMEOUT after {timeout} s (hang)", time.monotonic() - t0)
        return Res(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)

    def start(self, args: list[str], cwd: Path, extra: dict | None = None, **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(
            [*WD, *args],
            cwd=cwd,
            env=self.env(extra),
            text=True,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            errors="replace",
            **kw,
        )

    def mount_tmpfs(self, folder: Path, size: str) -> bool:
        if os.geteuid() != 0:
            return False
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
        if r.returncode == 0:
            self.mounts.append(folder)
        return r.returncode == 0

    def umount_all(self) -> None:
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(m)], capture_output=True)
        self.mounts.clear()


# ------------------------------------------------------------------ helpers


def errors_of(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("error:")]


def one_line(r: Res, code: int = 2, must: str | None = None) -> tuple[bool, str]:
    """exit ``code``, one ``error:`` line (containing ``must``), no traceback."""
    lines = errors_of(r.err)
    ok = r.rc == code and len(lines) == 1 and "Traceback" not in r.err + r.out
    if must is not None:
        ok = ok and must.lower() in " ".join(r.err.split()).lower()
    shown = lines[0] if lines else (r.err.strip().splitlines() or ["(nothing on stderr)"])[-1]
    return ok, f"exit {r.rc}: {shown[:200]}"


def finished_ok(r: Res) -> tuple[bool, str]:
    ok = r.rc == 0 and "Traceback" not in r.err
    return ok, f"exit {r.rc}" + ("" if ok else f": {r.err.strip().splitlines()[-1:]}")


def record_of(r: Res) -> Path | None:
    for ln in r.out.splitlines():
        if ln.startswith("Record:"):
            return Path(ln.split(":", 1)[1].strip())
    return None


def wait_for(pred: Callable[[], bool], timeout: float = 90) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def journal_in(folder: Path) -> Path | None:
    found = sorted(folder.glob(f"*{SUFFIX}")) if folder.exists() else []
    return found[0] if found else None


def results_in(journal: Path) -> int:
    try:
        return journal.read_text(errors="replace").count('"type": "result"')
    except OSError:
        return 0


def interrupted_run(ctx: Ctx, out: Path, sig: int = signal.SIGTERM) -> tuple[Path, Res]:
    """A HANG run stopped by ``sig`` once n=8 is journaled: (its journal, how it ended)."""
    p = ctx.start([*HANG, "--out", str(out)], ctx.root, HANG_ENV)
    wait_for(lambda: (j := journal_in(out)) is not None and results_in(j) >= 1)
    t0 = time.monotonic()
    p.send_signal(sig)
    try:
        o, e = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        o, e = p.communicate()
    return journal_in(out), Res(p.returncode, o, e, time.monotonic() - t0)


def header_edit(journal: Path, change: Callable[[dict], None], recompute: bool) -> None:
    lines = journal.read_text().split("\n")
    h = json.loads(lines[0])
    change(h)
    if recompute:  # as a forger who knows the checksum rule would
        body = {k: v for k, v in h.items() if k != "checksum"}
        h["checksum"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
    lines[0] = json.dumps(h)
    journal.write_text("\n".join(lines))


def good_record(ctx: Ctx) -> Path:
    """One real record (made once, copied by the cases that damage it)."""
    rec = ctx.fixtures / "good.json"
    if not rec.exists():
        r = ctx.cli([*QUICK, "--json", str(rec)], ctx.fixtures)
        assert r.rc == 0, r.err
    return rec


def damaged(ctx: Ctx, d: Path, change: Callable[[dict], None] | None = None, text: str | None = None) -> Path:
    p = d / "rec.json"
    if text is not None:
        p.write_text(text)
        return p
    data = json.loads(good_record(ctx).read_text())
    change(data)
    p.write_text(json.dumps(data))
    return p


def live_marked() -> list[str]:
    """Processes still alive (not zombies) that carry this benchmark's marker."""
    found = []
    me = os.getpid()
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == me:
            continue
        try:
            if MARK.encode() not in (pid_dir / "environ").read_bytes():
                continue
            state = (pid_dir / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z":
                found.append(f"{pid_dir.name}:{(pid_dir / 'cmdline').read_bytes()[:80]!r}")
        except OSError:
            continue
    return found


# ================================================================== 1-3: output files


@case("output files", "--json onto a FIFO", "exit 2, one line; the FIFO is still a FIFO")
def _(ctx):
    d = ctx.folder()
    os.mkfifo(d / "x_fifo")
    r = ctx.cli([*QUICK, "--json", str(d / "x_fifo")], d)
    ok, obs = one_line(r, 2, "FIFO")
    return ok and stat.S_ISFIFO(os.lstat(d / "x_fifo").st_mode), obs


@case("output files", "--json onto a character device (mknod c 1 3)", "exit 2; still a device", needs_root=True)
def _(ctx):
    d = ctx.folder()
    os.mknod(d / "x_null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    r = ctx.cli([*QUICK, "--json", str(d / "x_null")], d)
    ok, obs = one_line(r, 2, "device")
    return ok and stat.S_ISCHR(os.lstat(d / "x_null").st_mode) and len(os.listdir(d)) == 1, obs


@case("output files", "--json /dev/null", "exit 2; /dev/null untouched, no /dev/null.png")
def _(ctx):
    d = ctx.folder()
    r = ctx.cli([*QUICK, "--json", "/dev/null"], d)
    ok, obs = one_line(r, 2, "device")
    return ok and stat.S_ISCHR(os.lstat("/dev/null").st_mode) and not os.path.exists("/dev/null.png"), obs


@case("output files", "--json onto a symbolic link to a victim file", "exit 2; the victim unchanged")
def _(ctx):
    d = ctx.folder()
    (d / "victim").write_text("precious")
    os.symlink(d / "victim", d / "link.json")
    r = ctx.cli([*QUICK, "--json", str(d / "link.json")], d)
    ok, obs = one_line(r, 2, "symbolic link")
    return ok and (d / "victim").read_text() == "precious", obs


@case("output files", "--json x.json where x.png is a FIFO", "exit 2 before measuring; FIFO kept")
def _(ctx):
    d = ctx.folder()
    os.mkfifo(d / "x.png")
    r = ctx.cli([*QUICK, "--json", str(d / "x.json")], d)
    ok, obs = one_line(r, 2, "FIFO")
    return ok and stat.S_ISFIFO(os.lstat(d / "x.png").st_mode) and not (d / "x.json").exists(), obs


@case("output files", "--json x.json where x.html is a link to a victim", "exit 2; victim unchanged")
def _(ctx):
    d = ctx.folder()
    (d / "victim").write_text("precious")
    os.symlink(d / "victim", d / "x.html")
    r = ctx.cli([*QUICK, "--json", str(d / "x.json")], d)
    ok, obs = one_line(r, 2, "symbolic link")
    return ok and (d / "victim").read_text() == "precious", obs


@case(
    "output files",
    "symlinks planted under every old-style name of the next 3 minutes (PNG temp, journal, record, html)",
    "run finishes, victim unchanged, no planted link followed",
)
def _(ctx):
    d = ctx.folder()
    out = d / "shared"
    out.mkdir()
    os.chmod(out, 0o1777)
    victim = d / "victim"
    victim.write_text("root-owned")
    now = time.time()
    for s in range(-5, 180):
        ts = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + s))
        for name in (f".matmul-{ts}.png.tmp.png", f"matmul-{ts}{SUFFIX}", f"matmul-{ts}.json", f"matmul-{ts}.html"):
            os.symlink(victim, out / name)
    r = ctx.cli([*QUICK, "--out", str(out)], d)
    ok, obs = finished_ok(r)
    return ok and victim.read_text() == "root-owned" and record_of(
        r
    ) is not None, obs + f"; victim: {victim.read_text()}"


@case("output files", "a planted link at a journal's name (O_EXCL|O_NOFOLLOW)", "creation refused, victim unchanged")
def _(ctx):
    d = ctx.folder()
    (d / "victim").write_text("precious")
    os.symlink(d / "victim", d / f"j{SUFFIX}")
    code = (
        "import sys; from pathlib import Path; from whichdevice.measure.journal import Journal\n"
        f"try:\n Journal.create(Path({str(d / ('j' + SUFFIX))!r}), {{'experiment': 'matmul'}})\n"
        "except FileExistsError: print('refused')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ctx.env())
    ok = p.stdout.strip() == "refused" and (d / "victim").read_text() == "precious"
    return ok, p.stdout.strip() or p.stderr.strip()[-200:]


@case("output files", "atomic writer over a planted link at the target", "refused (NotRegularFile), victim unchanged")
def _(ctx):
    d = ctx.folder()
    (d / "victim").write_text("precious")
    os.symlink(d / "victim", d / "r.html")
    code = (
        "from whichdevice.core import safeio\n"
        f"try:\n safeio.write_atomic({str(d / 'r.html')!r}, 'x')\n"
        "except safeio.NotRegularFile: print('refused')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ctx.env())
    left = [n for n in os.listdir(d) if n.endswith(".wdtmp")]
    ok = p.stdout.strip() == "refused" and (d / "victim").read_text() == "precious" and not left
    return ok, (p.stdout.strip() or p.stderr.strip()[-200:]) + f"; temp files left: {len(left)}"


@case(
    "output files",
    "two runs of the same command started in the same second",
    "two records, two journals, 2 history ids",
)
def _(ctx):
    d = ctx.folder()
    home = d / "home"
    procs = [ctx.start([*QUICK, "--out", str(d / "o")], d, {"WHICHDEVICE_HOME": str(home)}) for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    recs = [record_of(Res(p.returncode, o, e, 0)) for p, (o, e) in zip(procs, outs)]
    with contextlib.closing(sqlite3.connect(home / "history.sqlite")) as con:
        paths = [row[0] for row in con.execute("select path from runs")]
    ok = all(p.returncode == 0 for p in procs) and None not in recs and recs[0] != recs[1]
    ok = ok and all(r.exists() for r in recs) and len(set(paths)) == 2
    return (
        ok,
        f"exits {[p.returncode for p in procs]}; records {[r.name if r else None for r in recs]}; history paths {len(set(paths))}",
    )


@case("output files", "--out is a FIFO", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    os.mkfifo(d / "f")
    return one_line(ctx.cli([*QUICK, "--out", str(d / "f")], d), 2, "--out")


@case("output files", "--out inside a symlink loop", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    os.symlink(d / "b", d / "a")
    os.symlink(d / "a", d / "b")
    return one_line(ctx.cli([*QUICK, "--out", str(d / "a" / "o")], d), 2, "--out")


@case("output files", "--json with a 5000-character path", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    return one_line(ctx.cli([*QUICK, "--json", str(d / ("x" * 5000 + ".json"))], d), 2, "--json")


@case("output files", "--out with a 300-character folder name", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    return one_line(ctx.cli([*QUICK, "--out", str(d / ("y" * 300))], d), 2, "--out")


@case("output files", "--json onto an existing regular file", "replaced by the new record, exit 0")
def _(ctx):
    d = ctx.folder()
    (d / "r.json").write_text("old")
    r = ctx.cli([*QUICK, "--json", str(d / "r.json")], d)
    ok, obs = finished_ok(r)
    return ok and (d / "r.json").read_text().startswith("{"), obs


# ================================================================== 4, 5, 12: resume


@case("resume", "folder moved (mv r moved) then --resume moved", "record written in moved/, exit 0")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    shutil.move(d / "r", d / "moved")
    r = ctx.cli(["matmul", "--resume", str(d / "moved")], d)
    ok, obs = finished_ok(r)
    rec = record_of(r)
    return ok and rec is not None and rec.parent == d / "moved" and not journal_in(d / "moved"), obs + f"; {rec}"


@case(
    "resume",
    "folder copied (cp -r r copy) then --resume copy",
    "record in copy/, r/ untouched (journal kept, no record)",
)
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    shutil.copytree(d / "r", d / "copy")
    before = sorted(os.listdir(d / "r"))
    r = ctx.cli(["matmul", "--resume", str(d / "copy")], d)
    ok, obs = finished_ok(r)
    rec = record_of(r)
    return ok and rec is not None and rec.parent == d / "copy" and sorted(os.listdir(d / "r")) == before, obs


@case("resume", "journal renamed (x.partial.jsonl -> y.partial.jsonl)", "record y.json beside it")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    j.rename(d / "r" / f"y{SUFFIX}")
    r = ctx.cli(["matmul", "--resume", str(d / "r" / f"y{SUFFIX}")], d)
    ok, obs = finished_ok(r)
    return ok and (d / "r" / "y.json").exists(), obs


@case("resume", "journal with a cut-short last line, resumed", "tail cut before appending; every case once")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    with open(j, "a") as f:
        f.write('{"type": "result", "result": {"spec": {"work')
    r = ctx.cli(["matmul", "--resume", str(j)], d)
    ok, obs = finished_ok(r)
    rec = record_of(r)
    n = [x["spec"]["params"]["n"] for x in json.loads(rec.read_text())["results"]] if rec else []
    return ok and sorted(n) == [8, 64], obs + f"; cases {sorted(n)}"


@case(
    "resume",
    "torn journal, resume interrupted by SIGTERM, resumed again",
    "hint line both times, no traceback, then complete",
)
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    with open(j, "a") as f:
        f.write('{"type": "resu')
    size = j.stat().st_size
    p = ctx.start(["matmul", "--resume", str(j)], d, HANG_ENV)
    wait_for(lambda: j.stat().st_size > size)  # the resume appended (its child's session): it is in the hang
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    o, e = p.communicate(timeout=60)
    first = p.returncode == 143 and "--resume" in e and "Traceback" not in e
    r = ctx.cli(["matmul", "--resume", str(j)], d, {"WHICHDEVICE_FAULT": ""})
    ok, obs = finished_ok(r)
    return first and ok, f"interrupted resume: exit {p.returncode}, hint {'--resume' in e}; second resume {obs}"


@case(
    "resume",
    "journal where a resume appended onto a torn line (the old bug)",
    "the glued line is read; resume completes",
)
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    lines = j.read_text().split("\n")
    lines[-2] = '{"type": "result", "resu' + lines[-2]  # the n=8 result glued after a torn write
    j.write_text("\n".join(lines))
    r = ctx.cli(["matmul", "--resume", str(j)], d, {"WHICHDEVICE_FAULT": ""})
    return finished_ok(r)


@case("resume", "journal header edited (sizes changed by hand)", "exit 2: edited header refused")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    header_edit(j, lambda h: h["options"].update(sizes=[8, 64, 99999]), recompute=False)
    return one_line(ctx.cli(["matmul", "--resume", str(j)], d), 2, "edited")


@case("resume", "journal written by another version (version and checksum rewritten)", "exit 2: names both versions")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    header_edit(j, lambda h: h.update(tool_version="0.0.1"), recompute=True)
    return one_line(ctx.cli(["matmul", "--resume", str(j)], d), 2, "0.0.1")


@case("resume", "journal from an older version (no format, no checksum)", "exit 2: another version")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    header_edit(j, lambda h: [h.pop(k) for k in ("format", "checksum")], recompute=False)
    return one_line(ctx.cli(["matmul", "--resume", str(j)], d), 2, "another format")


@case("resume", "options of the wrong type in a forged header (checksum recomputed)", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    header_edit(j, lambda h: h["options"].update(sizes="abc", min_time_s=[1]), recompute=True)
    return one_line(ctx.cli(["matmul", "--resume", str(j)], d), 2, "--resume")


@case("resume", "header experiment name with ESC/OSC (forged)", "exit 2; no control character printed")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    header_edit(j, lambda h: h.update(experiment="\x1b]0;pwned\x07\x1b[2Jmatmul"), recompute=True)
    r = ctx.cli(["matmul", "--resume", str(j)], d)
    ok, obs = one_line(r, 2)
    return ok and "\x1b" not in r.err + r.out and "\x07" not in r.err, obs


@case("resume", "--resume a FIFO", "exit 2 at once (no hang)")
def _(ctx):
    d = ctx.folder()
    os.mkfifo(d / f"x{SUFFIX}")
    return one_line(ctx.cli(["matmul", "--resume", str(d / f"x{SUFFIX}")], d, timeout=30), 2, "FIFO")


@case("resume", "--resume /dev/zero (endless device)", "exit 2 at once")
def _(ctx):
    d = ctx.folder()
    return one_line(ctx.cli(["matmul", "--resume", "/dev/zero"], d, timeout=30), 2, "device")


@case("resume", "--resume a 300 MiB sparse file", "exit 2 at once, not read")
def _(ctx):
    d = ctx.folder()
    with open(d / f"big{SUFFIX}", "wb") as f:
        f.truncate(300 * 2**20)
    r = ctx.cli(["matmul", "--resume", str(d / f"big{SUFFIX}")], d, timeout=30)
    ok, obs = one_line(r, 2, "MiB")
    return ok and r.wall_s < 20, obs + f" ({r.wall_s:.1f} s)"


@case("resume", "--resume a folder holding a FIFO named like a journal", "exit 2, no hang")
def _(ctx):
    d = ctx.folder()
    os.mkfifo(d / f"x{SUFFIX}")
    return one_line(ctx.cli(["matmul", "--resume", str(d)], d, timeout=30), 2, "no unfinished")


@case("resume", "--resume an empty file", "exit 2")
def _(ctx):
    d = ctx.folder()
    (d / f"e{SUFFIX}").write_text("")
    return one_line(ctx.cli(["matmul", "--resume", str(d / f"e{SUFFIX}")], d), 2, "--resume")


@case("resume", "--resume binary garbage", "exit 2")
def _(ctx):
    d = ctx.folder()
    (d / f"g{SUFFIX}").write_bytes(os.urandom(4096))
    return one_line(ctx.cli(["matmul", "--resume", str(d / f"g{SUFFIX}")], d), 2, "--resume")


@case("resume", "journal result with a NaN sample", "exit 2: corrupt at that line")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    text = j.read_text()
    i = text.index('"samples_s": [') + len('"samples_s": [')
    j.write_text(text[:i] + "NaN, " + text[i:])
    return one_line(ctx.cli(["matmul", "--resume", str(j)], d), 2, "corrupt")


@case("resume", "journal result with a negative time", "exit 2: corrupt at that line")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    text = j.read_text()
    i = text.index('"samples_s": [') + len('"samples_s": [')
    j.write_text(text[:i] + "-1.0, " + text[i:])
    return one_line(ctx.cli(["matmul", "--resume", str(j)], d), 2, "corrupt")


@case("resume", "resumed with the journal's core count changed (another machine)", "warning line, note in the record")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    header_edit(j, lambda h: h["machine"].update(cores=64), recompute=True)
    r = ctx.cli(["matmul", "--resume", str(j)], d, {"WHICHDEVICE_FAULT": ""})
    ok, obs = finished_ok(r)
    rec = record_of(r)
    noted = rec is not None and any("64 usable cores" in n for n in json.loads(rec.read_text())["notes"])
    return ok and "warning:" in r.err and noted, obs + f"; warning {'warning:' in r.err}; noted {noted}"


@case("resume", "resumed with another numpy version in the journal", "warning line, note in the record")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    header_edit(j, lambda h: h["versions"].update(numpy="0.1"), recompute=True)
    r = ctx.cli(["matmul", "--resume", str(j)], d, {"WHICHDEVICE_FAULT": ""})
    ok, obs = finished_ok(r)
    rec = record_of(r)
    noted = rec is not None and any("numpy was 0.1" in n for n in json.loads(rec.read_text())["notes"])
    return ok and "numpy was 0.1" in r.err and noted, obs + f"; noted {noted}"


@case("resume", "stale 0-byte .NAME.html.*.wdtmp left by a kill, then resume", "the resume removes it")
def _(ctx):
    d = ctx.folder()
    j, _ = interrupted_run(ctx, d / "r")
    stem = j.name[: -len(SUFFIX)]
    (d / "r" / f".{stem}.html.0123456789ab.wdtmp").write_text("")
    r = ctx.cli(["matmul", "--resume", str(j)], d, {"WHICHDEVICE_FAULT": ""})
    ok, obs = finished_ok(r)
    left = [n for n in os.listdir(d / "r") if n.endswith(".wdtmp")]
    return ok and not left, obs + f"; temp files left {left}"


# ------------------------------------------------ the user's model file on resume (item 12)

MODEL = (
    "import keras\ndef build():\n    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)], name='m')\n"
)


def _killed_train(ctx: Ctx, d: Path) -> Path | None:
    (d / "m.py").write_text(MODEL)
    args = ["train", "--framework", "tensorflow", "--model", f"{d / 'm.py'}:build", "--input-shape", "4"]
    p = ctx.start([*args, "--batches", "8,16", "--out", str(d / "r")], d)
    wait_for(lambda: (j := journal_in(d / "r")) is not None and results_in(j) >= 1, timeout=240)
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate()
    return journal_in(d / "r")


@case("resume", "model file edited after the run started, then --resume", "exit 2 before the code runs again")
def _(ctx):
    d = ctx.folder()
    j = _killed_train(ctx, d)
    if j is None:
        return False, "the train run did not journal a result"
    (d / "m.py").write_text(MODEL + "import os\nos.system('touch PWNED')\n")
    r = ctx.cli(["train", "--resume", str(j)], d)
    ok, obs = one_line(r, 2, "changed since the run started")
    return ok and not (d / "PWNED").exists(), obs


@case("resume", "model file deleted, then --resume", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    j = _killed_train(ctx, d)
    if j is None:
        return False, "the train run did not journal a result"
    (d / "m.py").unlink()
    return one_line(ctx.cli(["train", "--resume", str(j)], d), 2, "gone")


# ================================================================== 6: full disk, read-only


@case(
    "full disk",
    "ENOSPC while appending to the journal (64 KiB tmpfs)",
    "exit 1, one line with --resume; journal whole; resume completes after space is freed",
    needs_root=True,
)
def _(ctx):
    d = ctx.folder()
    mnt = d / "mnt"
    mnt.mkdir()
    if not ctx.mount_tmpfs(mnt, "64k"):
        return False, "could not mount a tmpfs"
    args = ["matmul", "--framework", "numpy", "--sizes", ",".join(str(n) for n in range(8, 200, 4))]
    args += ["--mode", "steady", "--min-time", "0.01", "--out", str(mnt / "o")]
    (mnt / "o").mkdir()
    (mnt / "filler").write_bytes(b"\0" * (56 * 1024))  # ~8 KiB left: the header and a few results
    r = ctx.cli(args, d)
    ok, obs = one_line(r, 1, "no space left")
    j = journal_in(mnt / "o")
    whole = j is not None and j.read_text().endswith("\n") and "--resume" in r.err
    leftovers = [n for n in os.listdir(mnt / "o") if not n.endswith(SUFFIX)]
    (mnt / "filler").unlink()
    subprocess.run(["mount", "-o", "remount,size=2m", str(mnt)], check=True)
    r2 = ctx.cli(["matmul", "--resume", str(j)], d) if j else Res(9, "", "", 0)
    done, obs2 = finished_ok(r2)
    return (
        ok and whole and not leftovers and done,
        f"{obs}; journal ends whole {whole}; other files {leftovers}; resume {obs2}",
    )


@case(
    "full disk",
    "ENOSPC while writing the HTML report (80 KiB tmpfs)",
    "exit 1, one line with --resume; no PNG/HTML/temp left; resume completes",
    needs_root=True,
)
def _(ctx):
    d = ctx.folder()
    mnt = d / "mnt"
    mnt.mkdir()
    if not ctx.mount_tmpfs(mnt, "80k"):
        return False, "could not mount a tmpfs"
    r = ctx.cli([*QUICK, "--out", str(mnt)], d)
    ok, obs = one_line(r, 1, "no space left")
    j = journal_in(mnt)
    left = sorted(n for n in os.listdir(mnt) if not n.endswith(SUFFIX))
    subprocess.run(["mount", "-o", "remount,size=2m", str(mnt)], check=True)
    r2 = ctx.cli(["matmul", "--resume", str(j)], d) if j else Res(9, "", "", 0)
    done, obs2 = finished_ok(r2)
    return ok and j is not None and not left and done, f"{obs}; left beside the journal {left}; resume {obs2}"


@case(
    "full disk",
    "output folder remounted read-only while measuring",
    "exit 1, one line; resume completes once writable",
    needs_root=True,
)
def _(ctx):
    d = ctx.folder()
    mnt = d / "mnt"
    mnt.mkdir()
    if not ctx.mount_tmpfs(mnt, "4m"):
        return False, "could not mount a tmpfs"
    p = ctx.start([*HANG, "--out", str(mnt), "--case-timeout", "6"], d, HANG_ENV)
    wait_for(lambda: (j := journal_in(mnt)) is not None and results_in(j) >= 1)
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    o, e = p.communicate(timeout=120)  # the hang times out at 6 s; journaling its failure meets a read-only disk
    ok, obs = one_line(Res(p.returncode, o, e, 0), 1, "read-only")
    subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
    j = journal_in(mnt)
    r2 = ctx.cli(["matmul", "--resume", str(j)], d, {"WHICHDEVICE_FAULT": ""}) if j else Res(9, "", "", 0)
    done, obs2 = finished_ok(r2)
    return ok and done, f"{obs}; resume {obs2}"


@case(
    "full disk", "report --out on a read-only file system", "exit 2, one line (checked before writing)", needs_root=True
)
def _(ctx):
    d = ctx.folder()
    mnt = d / "mnt"
    mnt.mkdir()
    if not ctx.mount_tmpfs(mnt, "1m"):
        return False, "could not mount a tmpfs"
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    return one_line(ctx.cli(["report", str(good_record(ctx)), "--out", str(mnt)], d), 2, "--out")


@case(
    "full disk",
    "journal append meets ENOSPC (fault injected into os.write)",
    "the half line is cut back, file ends whole",
)
def _(ctx):
    d = ctx.folder()
    code = f"""
import errno, os
from pathlib import Path
from whichdevice.measure import journal as jm
from whichdevice.core.records import CaseSpec, failed
j = jm.Journal.create(Path({str(d / ("f" + SUFFIX))!r}), {{"experiment": "matmul"}})
spec = CaseSpec(workload="matmul", framework="numpy", device="CPU:0", params={{"n": 8}})
j.add_result(failed(spec, "x", "error", 0.1))
real = os.write
def half(fd, data):
    real(fd, bytes(data[: len(data) // 2]))
    raise OSError(errno.ENOSPC, "No space left on device")
os.write = half
try:
    j.add_result(failed(spec, "y", "error", 0.1))
except OSError as e:
    print("raised", e.errno == errno.ENOSPC)
os.write = real
print(len(jm.Journal.read(j.path).results), j.path.read_text().endswith(chr(10)))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ctx.env())
    return p.stdout.split() == ["raised", "True", "1", "True"], " ".join(p.stdout.split()) or p.stderr[-200:]


# ================================================================== 7-9: processes and signals

FORKER = """
import os, subprocess, sys, time
a = subprocess.Popen(["sleep", "300"])
b = subprocess.Popen(["sleep", "301"], start_new_session=True)
print(a.pid, b.pid, flush=True)
time.sleep(1.5)
"""


@case(
    "processes",
    "a child that forks a grandchild and a setsid daemon, then exits 0",
    "both killed when it ends (core.process)",
)
def _(ctx):
    d = ctx.folder()
    (d / "forker_mod.py").write_text(FORKER)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from whichdevice.core.process import run_module\n"
        "r = run_module('forker_mod', [], timeout_s=30, stdout=open(sys.argv[2], 'w'))\nprint(r.returncode)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(d), str(d / "pids")],
        capture_output=True,
        text=True,
        env=ctx.env({"PYTHONPATH": os.pathsep.join([str(d), os.environ.get("PYTHONPATH", "")])}),
    )
    time.sleep(0.3)
    pids = [int(x) for x in (d / "pids").read_text().split()]
    alive = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z":
                alive.append(pid)
    return p.stdout.strip() == "0" and not alive, f"exit {p.stdout.strip()}; still alive: {alive}"


NOISY = """import subprocess, keras
print('{"ok": false, "argument": "--x", "problem": "fake answer", "fix": "fake"}')
def build():
    subprocess.Popen(["sleep", "333"])
    print("{not json at all")
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)], name="%s")
"""


@case(
    "processes",
    "user model prints fake JSON and forks in build(); name TF rejects in training",
    "exit 2 naming the name; no fork survives; quick",
)
def _(ctx):
    d = ctx.folder()
    (d / "noisy.py").write_text(NOISY % "bad name")
    r = ctx.cli(["train", "--model", f"{d / 'noisy.py'}:build", "--input-shape", "4", "--out", str(d / "o")], d)
    ok, obs = one_line(r, 2, "'bad name'")
    return ok and r.wall_s < 170 and not (d / "o").exists(), obs + f" ({r.wall_s:.0f} s)"


@case(
    "processes",
    "user model prints to stdout and forks; a good name",
    "pre-flight passes on the real answer; run measures",
)
def _(ctx):
    d = ctx.folder()
    (d / "noisy.py").write_text(NOISY % "fine_model")
    args = ["train", "--model", f"{d / 'noisy.py'}:build", "--input-shape", "4", "--batches", "8", "--quick"]
    r = ctx.cli([*args, "--out", str(d / "o"), "--parts", "loop"], d, timeout=400)
    return finished_ok(r)


@case("processes", "user code calls sys.exit(0) at import", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    (d / "exits.py").write_text("import sys\nprint('hello')\nsys.exit(0)\ndef build(): pass\n")
    return one_line(ctx.cli(["train", "--model", f"{d / 'exits.py'}:build", "--input-shape", "4"], d), 2, "exited")


API = """
import os, sys, whichdevice
print(os.getpid(), flush=True)
try:
    whichdevice.matmul(sizes="8,64", modes="steady", framework="numpy", min_time_s=0.02, case_timeout_s=120)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
"""


@case(
    "processes",
    "Python API: KeyboardInterrupt during whichdevice.matmul()",
    "the measuring child is stopped; nothing in TMPDIR",
)
def _(ctx):
    d = ctx.folder()
    p = subprocess.Popen([sys.executable, "-c", API], stdout=subprocess.PIPE, text=True, env=ctx.env(HANG_ENV), cwd=d)
    p.stdout.readline()

    def kids() -> list[Path]:
        return [c for c in Path("/proc").iterdir() if c.name.isdigit() and _ppid(c) == p.pid]

    wait_for(lambda: bool(kids()), timeout=90)
    time.sleep(1.0)
    running = kids()
    p.send_signal(signal.SIGINT)
    out = p.communicate(timeout=60)[0]
    time.sleep(0.3)
    alive = live_marked()
    return (
        "KeyboardInterrupt" in out and not alive and bool(running),
        f"children before {len(running)}; alive after: {alive}; said {out.strip()!r}",
    )


def _ppid(proc_dir: Path) -> int:
    try:
        return int((proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


@case("signals", "Ctrl-C (SIGINT) in the hang", "exit 130, the --resume line, no traceback")
def _(ctx):
    d = ctx.folder()
    j, r = interrupted_run(ctx, d / "r", signal.SIGINT)
    return r.rc == 130 and "--resume" in r.err and "Traceback" not in r.err and j is not None, f"exit {r.rc}"


@case("signals", "SIGTERM in the hang", "exit 143, the --resume line")
def _(ctx):
    d = ctx.folder()
    j, r = interrupted_run(ctx, d / "r", signal.SIGTERM)
    return r.rc == 143 and "--resume" in r.err and "Traceback" not in r.err and j is not None, f"exit {r.rc}"


@case("signals", "SIGHUP in the hang", "exit 129, journal kept, the --resume line, scratch removed")
def _(ctx):
    d = ctx.folder()
    j, r = interrupted_run(ctx, d / "r", signal.SIGHUP)
    scratch = list((ctx.home / "tmp").glob("run-*"))
    ok = r.rc == 129 and "--resume" in " ".join(r.err.split()) and j is not None and not scratch
    return ok, f"exit {r.rc}; hint {'--resume' in r.err}; scratch left {len(scratch)}"


@case("signals", "output piped to `head -1`", "exit 141, the --resume line on stderr, journal kept; resume completes")
def _(ctx):
    d = ctx.folder()
    p = subprocess.Popen(
        f"{sys.executable} -m whichdevice matmul --framework numpy --sizes 10 --mode steady --min-time 0.02 "
        f"--out {d / 'o'} | head -1; echo ${{PIPESTATUS[0]}} >&2",
        shell=True,
        executable="/bin/bash",
        cwd=d,
        env=ctx.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    o, e = p.communicate(timeout=120)
    rc = int(e.strip().splitlines()[-1])
    j = journal_in(d / "o")
    r2 = ctx.cli(["matmul", "--resume", str(j)], d) if j else Res(9, "", "", 0)
    done, obs2 = finished_ok(r2)
    return rc == 141 and "--resume" in e and j is not None and done, f"exit {rc}; resume {obs2}"


@case(
    "signals",
    "kill -9 of the whole run",
    "its scratch folder is in WHICHDEVICE_HOME/tmp (not /tmp), removed by the next command",
)
def _(ctx):
    d = ctx.folder()
    p = ctx.start([*HANG, "--out", str(d / "r")], d, HANG_ENV)
    wait_for(lambda: (j := journal_in(d / "r")) is not None and results_in(j) >= 1)
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate()
    left = list((ctx.home / "tmp").glob("run-*"))
    r = ctx.cli(["history"], d)
    after = list((ctx.home / "tmp").glob("run-*"))
    return bool(
        left
    ) and not after and r.rc == 0, f"scratch after kill -9: {len(left)}; after the next command: {len(after)}"


@case("signals", "SIGTERM twice in quick succession", "exit 143, one hint, no traceback")
def _(ctx):
    d = ctx.folder()
    p = ctx.start([*HANG, "--out", str(d / "r")], d, HANG_ENV)
    wait_for(lambda: (j := journal_in(d / "r")) is not None and results_in(j) >= 1)
    p.send_signal(signal.SIGTERM)
    time.sleep(0.01)
    p.send_signal(signal.SIGTERM)
    o, e = p.communicate(timeout=60)
    return p.returncode == 143 and "Traceback" not in e and e.count("--resume") == 1, f"exit {p.returncode}"


@case(
    "processes",
    "a normal run: no process of it outlives it, nothing in TMPDIR or cwd but --out",
    "0 left, only --out written",
)
def _(ctx):
    d = ctx.folder()
    r = ctx.cli([*QUICK, "--out", str(d / "o")], d)
    ok, obs = finished_ok(r)
    return ok and os.listdir(d) == ["o"], obs + f"; cwd holds {os.listdir(d)}"


# ================================================================== inputs

NUMERIC = [
    (["--sizes", "١٢"], "--sizes", "Arabic-Indic digits"),
    (["--sizes", "１０"], "--sizes", "full-width digits"),
    (["--sizes", "²"], "--sizes", "a superscript digit"),
    (["--sizes", "1e309"], "--sizes", "a float beyond double"),
    (["--sizes", "9" * 5000], "--sizes", "5000 digits"),
    (["--sizes", "99999999999999999999999"], "--sizes", "beyond int64"),
    (["--sizes", "0x10"], "--sizes", "hex"),
    (["--min-time", "1e309"], "--min-time", "overflows to inf"),
    (["--min-time", "1e300"], "--min-time", "finite but endless"),
    (["--min-time", "１"], "--min-time", "a full-width digit"),
    (["--min-time", "-0"], "--min-time", "negative zero"),
    (["--min-time", "1e-400"], "--min-time", "underflows to 0"),
    (["--min-time", "0x1p3"], "--min-time", "a hex float"),
    (["--case-timeout", "1e20"], "--case-timeout", "100 billion years"),
    (["--case-timeout", "nan"], "--case-timeout", "NaN"),
    (["--cpu-threads", "٤"], "--cpu-threads", "an Arabic-Indic 4"),
    (["--cpu-threads", "99999999999999999999"], "--cpu-threads", "beyond int64"),
    (["--cpu-threads", "-0"], "--cpu-threads", "negative zero"),
    (["--memory-limit", "1e30"], "--memory-limit", "1e30 GiB"),
    (["--memory-limit", "inf"], "--memory-limit", "infinite"),
]
for _args, _arg, _what in NUMERIC:

    def _numeric(ctx, args=_args, arg=_arg):
        d = ctx.folder()
        r = ctx.cli([*QUICK[:-2], *args] if args[0] == "--min-time" else [*QUICK, *args], d)
        ok, obs = one_line(r, 2, arg)
        return ok and not os.listdir(d), obs

    case("inputs", f"matmul {_arg} {_what}", "exit 2, one line naming it, nothing written")(_numeric)


@case("inputs", "run --budget 1e300", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    return one_line(ctx.cli(["run", "--budget", "1e300"], d), 2, "--budget")


@case("inputs", "history --limit in Arabic-Indic digits", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    return one_line(ctx.cli(["history", "--limit", "٥"], d), 2, "--limit")


@case("inputs", "report a FIFO", "exit 2 at once (no hang)")
def _(ctx):
    d = ctx.folder()
    os.mkfifo(d / "r.json")
    return one_line(ctx.cli(["report", str(d / "r.json")], d, timeout=30), 2, "FIFO")


@case("inputs", "report /dev/zero", "exit 2 at once")
def _(ctx):
    d = ctx.folder()
    return one_line(ctx.cli(["report", "/dev/zero"], d, timeout=30), 2, "device")


@case("inputs", "report /dev/stdin with a never-ending writer", "exit 2 at once")
def _(ctx):
    d = ctx.folder()
    p = subprocess.Popen(
        [*WD, "report", "/dev/stdin"],
        cwd=d,
        env=ctx.env(),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        o, e = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        return False, "hang"
    return one_line(Res(p.returncode, o, e, 0), 2, "RESULT")


@case("inputs", "report a 1 GiB sparse file", "exit 2 at once, not read")
def _(ctx):
    d = ctx.folder()
    with open(d / "big.json", "wb") as f:
        f.truncate(2**30)
    r = ctx.cli(["report", str(d / "big.json")], d, timeout=30)
    ok, obs = one_line(r, 2, "MiB")
    return ok and r.wall_s < 20, obs


@case("inputs", "report through a symlink loop", "exit 2")
def _(ctx):
    d = ctx.folder()
    os.symlink(d / "b.json", d / "a.json")
    os.symlink(d / "a.json", d / "b.json")
    return one_line(ctx.cli(["report", str(d / "a.json")], d), 2, "RESULT")


@case("inputs", "report a 5000-character path", "exit 2, one line naming the path (cli/guard.py's net)")
def _(ctx):
    d = ctx.folder()
    return one_line(ctx.cli(["report", "r" * 5000 + ".json"], d), 2, "too long")


@case("inputs", "compare a FIFO and a record", "exit 2 at once")
def _(ctx):
    d = ctx.folder()
    os.mkfifo(d / "f.json")
    return one_line(ctx.cli(["compare", str(d / "f.json"), str(good_record(ctx))], d, timeout=30), 2, "FIFO")


BAD_RECORDS = [
    ("a NaN sample", lambda r: r["results"][0]["timing"]["samples_s"].insert(0, "NaN-marker"), "NaN"),
    ("Infinity as first call", lambda r: r["results"][0]["timing"].update(first_call_s="Inf-marker"), "Infinity"),
    ("a negative sample", lambda r: r["results"][0]["timing"]["samples_s"].insert(0, -0.5), None),
    ("a zero sample", lambda r: r["results"][0]["timing"]["samples_s"].insert(0, 0.0), None),
    ("a negative wall time", lambda r: r["results"][0].update(wall_s=-3.0), None),
    ("1e999 flops", lambda r: r["results"][0]["metrics"].update(flops="Big-marker"), "1e999"),
    ("no results key type", lambda r: r.update(results="none"), None),
    ("schema version true", lambda r: r.update(schema_version=True), None),
]
for _name, _change, _literal in BAD_RECORDS:

    def _bad_record(ctx, change=_change, literal=_literal):
        d = ctx.folder()
        p = damaged(ctx, d, change)
        if literal:
            text = p.read_text()
            for marker in ('"NaN-marker"', '"Inf-marker"', '"Big-marker"'):
                text = text.replace(marker, literal)
            p.write_text(text)
        r = ctx.cli(["report", str(p)], d)
        ok, obs = one_line(r, 2, "RESULT")
        return ok and sorted(os.listdir(d)) == ["rec.json"], obs

    case("inputs", f"record with {_name}", "exit 2, one line, nothing written")(_bad_record)


@case("inputs", "record nested 100000 levels deep", "exit 2 (no RecursionError traceback)")
def _(ctx):
    d = ctx.folder()
    return one_line(ctx.cli(["report", str(damaged(ctx, d, text="[" * 100000 + "]" * 100000))], d), 2, "RESULT")


@case("inputs", "record of invalid UTF-8", "exit 2")
def _(ctx):
    d = ctx.folder()
    (d / "rec.json").write_bytes(b'{"schema_version": 2, "x": "\xff\xfe"}')
    return one_line(ctx.cli(["report", str(d / "rec.json")], d), 2, "RESULT")


@case("inputs", "history database is garbage", "`history`: exit 1, one line naming the file and the fix")
def _(ctx):
    d = ctx.folder()
    (d / "home").mkdir()
    (d / "home" / "history.sqlite").write_bytes(b"not a database " * 100)
    return one_line(ctx.cli(["history"], d, {"WHICHDEVICE_HOME": str(d / "home")}), 1, "mv")


@case("inputs", "history database is a FIFO", "`history`: exit 1, no hang")
def _(ctx):
    d = ctx.folder()
    (d / "home").mkdir()
    os.mkfifo(d / "home" / "history.sqlite")
    return one_line(ctx.cli(["history"], d, {"WHICHDEVICE_HOME": str(d / "home")}, timeout=30), 1, "history")


@case("inputs", "history database is garbage during a run", "the record is written, exit 0, 'History not updated'")
def _(ctx):
    d = ctx.folder()
    (d / "home").mkdir()
    (d / "home" / "history.sqlite").write_bytes(b"not a database " * 100)
    r = ctx.cli([*QUICK, "--out", str(d / "o")], d, {"WHICHDEVICE_HOME": str(d / "home")})
    ok, obs = finished_ok(r)
    return ok and record_of(r) is not None and "History not updated" in r.out, obs


@case("inputs", "compare with a garbage history and a run id", "exit 1, one line")
def _(ctx):
    d = ctx.folder()
    (d / "home").mkdir()
    (d / "home" / "history.sqlite").write_bytes(b"not a database " * 100)
    return one_line(ctx.cli(["compare", "1", "2"], d, {"WHICHDEVICE_HOME": str(d / "home")}), 1, "history")


@case("inputs", "--model is a FIFO", "exit 2, no hang")
def _(ctx):
    d = ctx.folder()
    os.mkfifo(d / "m.py")
    return one_line(
        ctx.cli(["train", "--model", f"{d / 'm.py'}:build", "--input-shape", "4"], d, timeout=200), 2, "--model"
    )


@case("inputs", "--model through a symlink loop", "exit 2")
def _(ctx):
    d = ctx.folder()
    os.symlink(d / "b.py", d / "a.py")
    os.symlink(d / "a.py", d / "b.py")
    return one_line(ctx.cli(["train", "--model", f"{d / 'a.py'}:build"], d), 2, "--model")


@case("inputs", "every case fails (injected raise on every size)", "record written, exit 1 with one line saying so")
def _(ctx):
    d = ctx.folder()
    r = ctx.cli([*QUICK, "--out", str(d / "o")], d, {"WHICHDEVICE_FAULT": "raise:matmul"})
    ok, obs = one_line(r, 1, "every case failed")
    return ok and record_of(r) is not None, obs


# ================================================================== 10, 11: warnings, control characters


@case("warnings", "--cpu-threads 4096 on this machine", "one `warning:` line naming the cores; the run goes on")
def _(ctx):
    d = ctx.folder()
    r = ctx.cli([*QUICK, "--cpu-threads", "4096", "--out", str(d / "o")], d)
    ok, obs = finished_ok(r)
    warned = [ln for ln in r.err.splitlines() if ln.startswith("warning:") and "cores" in ln]
    return ok and len(warned) == 1, obs + f"; {warned[:1]}"


@case("warnings", "--cpu-threads equal to the cores", "no warning")
def _(ctx):
    d = ctx.folder()
    cores = len(os.sched_getaffinity(0))
    r = ctx.cli([*QUICK, "--cpu-threads", str(cores), "--out", str(d / "o")], d)
    ok, obs = finished_ok(r)
    return ok and "warning:" not in r.err, obs


ESC = "\x1b]0;OWNED\x07\x1b[2J\x1b[31m\x9b1m\x1bc"


@case(
    "control characters",
    "record with ESC/OSC in notes, command and an error text, rendered by `report`",
    "no control character reaches stdout or stderr",
)
def _(ctx):
    d = ctx.folder()

    def change(r):
        r["notes"].append(f"note {ESC} end")
        r["command"] = ["whichdevice", f"matmul{ESC}"]

    p = damaged(ctx, d, change)
    r = ctx.cli(["report", str(p), "--out", str(d / "o")], d)
    bad = [c for c in "\x1b\x07\x9b" if c in r.out + r.err]
    return r.rc == 0 and not bad, f"exit {r.rc}; control characters seen: {bad!r}"


@case("control characters", "--model path with ESC sequences", "error line without them")
def _(ctx):
    d = ctx.folder()
    r = ctx.cli(["train", "--model", f"{ESC}.py:build"], d)
    ok, obs = one_line(r, 2, "--model")
    return ok and "\x1b" not in r.err and "\x07" not in r.err, obs.encode("unicode_escape").decode()[:200]


@case("control characters", "--sizes with ESC sequences", "error line without them")
def _(ctx):
    d = ctx.folder()
    r = ctx.cli([*QUICK[:3], "--sizes", f"1{ESC}"], d)
    ok, obs = one_line(r, 2, "--sizes")
    return ok and "\x1b" not in r.err, obs.encode("unicode_escape").decode()[:200]


@case(
    "control characters", "a case's error text with ESC (injected failure named by the key)", "report lines free of ESC"
)
def _(ctx):
    d = ctx.folder()
    r = ctx.cli([*QUICK, "--out", str(d / "o")], d, {"WHICHDEVICE_FAULT": "raise:matmul", "FORCE_COLOR": ""})
    rec = record_of(r)
    if rec is None:
        return False, f"no record: {r.err[-200:]}"
    data = json.loads(rec.read_text())
    data["results"][0]["error"] = f"RuntimeError: {ESC} boom"
    rec.write_text(json.dumps(data))
    r2 = ctx.cli(["report", str(rec), "--out", str(d / "o2")], d)
    return r2.rc == 0 and "\x1b" not in r2.out + r2.err, f"exit {r2.rc}"


# ================================================================== main


def load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "uptime unavailable"


# ================================================================== Reliability III
# The failures a review of user code and odd terminals found, each as a real run, and a new family of its own: processes
# that try to outlive the child that started them ("escaping processes").

_SLEEP = 'os.execvp("sleep", ["sleep", "300"])'
ESCAPES = {
    "double fork + setsid, at once": f"""
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        {_SLEEP}
    os._exit(0)
""",
    "triple fork, setsid twice": f"""
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            {_SLEEP}
        os._exit(0)
    os._exit(0)
""",
    "setpgid: a group of its own, same session": f"""
import os
if os.fork() == 0:
    os.setpgid(0, 0)
    if os.fork() == 0:
        {_SLEEP}
    os._exit(0)
""",
    "ignores SIGTERM and SIGHUP, own session": """
import subprocess
subprocess.Popen(["sh", "-c", "trap '' TERM HUP; exec sleep 300"], start_new_session=True)
""",
    "nohup setsid sleep & (the shell exits)": """
import subprocess
subprocess.run(["sh", "-c", "nohup setsid sleep 300 >/dev/null 2>&1 &"], check=True)
""",
    "20 daemons in a loop": f"""
import os
for _ in range(20):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            {_SLEEP}
        os._exit(0)
""",
    "from a thread, start_new_session": """
import subprocess, threading
t = threading.Thread(target=lambda: subprocess.Popen(["sleep", "300"], start_new_session=True))
t.start(); t.join()
""",
    "a detached parent that forks the daemon after the child ended": f"""
import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(0.3)
    if os.fork() == 0:
        {_SLEEP}
    os._exit(0)
""",
}


def _escape_case(name: str, source: str) -> None:
    @case("escaping processes", f"a child's code: {name}", "nothing outlives the child (subreaper, core.process)")
    def _(ctx):
        d = ctx.folder()
        (d / "escape_mod.py").write_text(source)
        code = "from whichdevice.core.process import run_module\nprint(run_module('escape_mod', [], timeout_s=30).returncode)\n"
        p = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=ctx.env({"PYTHONPATH": os.pathsep.join([str(d), os.environ.get("PYTHONPATH", "")])}),
        )
        time.sleep(0.3)
        alive = live_marked()
        return p.stdout.strip() == "0" and not alive, f"exit {p.stdout.strip()}; alive after: {len(alive)}"


for _name, _source in ESCAPES.items():
    _escape_case(_name, _source)


@case("escaping processes", "an audited script that double-forks a setsid daemon", "nothing left after the audit")
def _(ctx):
    d = ctx.folder()
    (d / "s.py").write_text("import os\n" + ESCAPES["double fork + setsid, at once"] + "print('done')\n")
    r = ctx.cli(["audit", "s.py", "--out", "a", "--no-rerun"], d)
    time.sleep(0.3)
    alive = live_marked()
    return r.rc == 0 and not alive, f"exit {r.rc}; alive after: {len(alive)}"


@case("escaping processes", "whichdevice SIGKILLed while its child runs", "the child dies with it (PR_SET_PDEATHSIG)")
def _(ctx):
    d = ctx.folder()
    (d / "sleeper_mod.py").write_text("import time\ntime.sleep(300)\n")
    code = "from whichdevice.core.process import run_module\nprint('go', flush=True)\nrun_module('sleeper_mod', [], timeout_s=300)\n"
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env=ctx.env({"PYTHONPATH": os.pathsep.join([str(d), os.environ.get("PYTHONPATH", "")])}),
    )
    p.stdout.readline()
    wait_for(lambda: len(live_marked()) >= 2, 30)
    p.kill()
    p.wait()
    gone = wait_for(lambda: not live_marked(), 10)
    return gone, "child gone" if gone else f"alive: {live_marked()}"


DAEMON_MODEL = """
import os
import torch

def build():
    pid = os.fork()
    if pid == 0:  # a daemon: fork, setsid, fork again, the middle one exits
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "300"])
        os._exit(0)
    os.waitpid(pid, 0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 10))
"""


@case(
    "escaping processes",
    "diagnose --framework torch of a model whose build() starts a daemon (every child builds it)",
    "exit 0; no process left (36 were, before the fix)",
)
def _(ctx):
    d = ctx.folder()
    (d / "m.py").write_text(DAEMON_MODEL)
    args = ["diagnose", "--framework", "torch", "--model", "m.py:build", "--input-shape", "3,8,8"]
    r = ctx.cli([*args, "--classes", "10", "--budget", "20", "--out", "o"], d, timeout=600)
    time.sleep(0.5)
    alive = live_marked()
    return r.rc in (
        0,
        1,
    ) and "Traceback" not in r.err and not alive, f"exit {r.rc} ({r.wall_s:.0f} s); alive after: {len(alive)}"


@case("hostile environment", "PYTHONIOENCODING=ascii: a whole run", "exit 0, plain ASCII, the record written")
def _(ctx):
    d = ctx.folder()
    r = ctx.cli([*QUICK, "--out", "o"], d, {"PYTHONIOENCODING": "ascii"})
    ok = r.rc == 0 and r.out.isascii() and record_of(r) is not None and (d / record_of(r)).exists()
    return ok, f"exit {r.rc}; ascii {r.out.isascii()}"


@case("hostile environment", "PYTHONIOENCODING=latin-1: report --markdown of a record", "exit 0, no traceback")
def _(ctx):
    d = ctx.folder()
    r = ctx.cli(["report", str(good_record(ctx)), "--markdown"], d, {"PYTHONIOENCODING": "latin-1"})
    return r.rc == 0 and "Traceback" not in r.err, f"exit {r.rc}"


@case("hostile environment", "--out named with a byte that is not UTF-8", "exit 0; record, HTML and PNG written")
def _(ctx):
    d = ctx.folder()
    odd = os.fsdecode(b"o\xff")
    r = ctx.cli([*QUICK, "--out", odd], d)
    got = sorted(f.suffix for f in (d / odd).iterdir()) if (d / odd).exists() else []
    return r.rc == 0 and got == [".html", ".json", ".png"], f"exit {r.rc}; written {got}"


@case("hostile environment", "stdout closed (>&-, as in cron)", "exit 2, one line, nothing measured")
def _(ctx):
    d = ctx.folder()
    p = subprocess.run(
        " ".join([*WD, *QUICK, "--out", "o"]) + " >&-", shell=True, cwd=d, env=ctx.env(), stderr=subprocess.PIPE
    )
    err = p.stderr.decode(errors="replace")
    r = Res(p.returncode, "", err, 0.0)
    ok, obs = one_line(r, 2, "standard output")
    return ok and not (d / "o").exists(), obs


for _kind in ("a file", "under a file", "its cache a file"):

    def _home_case(kind: str) -> None:
        @case("hostile environment", f"WHICHDEVICE_HOME is {kind}", "exit 2, one line naming WHICHDEVICE_HOME")
        def _(ctx):
            d = ctx.folder()
            (d / "f").write_text("")
            home = {"a file": d / "f", "under a file": d / "f" / "h", "its cache a file": d / "h"}[kind]
            if kind == "its cache a file":
                home.mkdir()
                (home / "cache").write_text("")
            return one_line(ctx.cli([*QUICK, "--out", "o"], d, {"WHICHDEVICE_HOME": str(home)}), 2, "WHICHDEVICE_HOME")

    _home_case(_kind)


@case("hostile environment", "a fresh HOME: a Keras model refused by the pre-flight", "exit 2; nothing in HOME")
def _(ctx):
    d = ctx.folder()
    (d / "home").mkdir()
    (d / "m.py").write_text("import keras\ndef build():\n    return keras.Sequential([keras.layers.Dense(2)])\n")
    r = ctx.cli(["diagnose", "--model", "m.py:nope", "--budget", "20"], d, {"HOME": str(d / "home")})
    ok, obs = one_line(r, 2, "--model")
    left = os.listdir(d / "home")
    return ok and left == [], f"{obs}; HOME holds {left}"


@case("hostile notebooks", "a code cell whose source is a list of numbers", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    cell = {"cell_type": "code", "source": [1, 2, 3], "metadata": {}, "outputs": []}
    (d / "n.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return one_line(ctx.cli(["audit", "n.ipynb", "--out", "a"], d), 2, "SCRIPT")


@case("hostile notebooks", "a notebook nested 100,000 levels deep", "exit 2, one line")
def _(ctx):
    d = ctx.folder()
    (d / "n.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    return one_line(ctx.cli(["audit", "n.ipynb", "--out", "a"], d), 2, "SCRIPT")


@case("hostile user files", "an audited script writes title, clear and OSC 52 sequences", "text passes, no sequence")
def _(ctx):
    d = ctx.folder()
    (d / "s.py").write_text(
        'import sys\nprint("a \\x1b]0;T\\x07 b \\x1b[2J\\x1bc c \\x1b]52;c;Zm9v\\x07 d")\n'
        'print("e \\x9b31m", file=sys.stderr)\n'
    )
    r = ctx.cli(["audit", "s.py", "--out", "a", "--no-rerun"], d)
    seen = [c for c in "\x1b\x07\x9b" if c in r.out + r.err]
    return r.rc == 0 and not seen and "a  b  c  d" in r.out, f"exit {r.rc}; control characters seen: {seen}"


@case("hostile user files", "build() starts a non-daemon thread, then raises", "exit 2 at once with the model's error")
def _(ctx):
    d = ctx.folder()
    (d / "m.py").write_text(
        "import threading, time\ndef build():\n    threading.Thread(target=time.sleep, args=(600,)).start()\n"
        "    raise ValueError('not ready')\n"
    )
    r = ctx.cli(["diagnose", "--framework", "torch", "--model", "m.py:build", "--budget", "20"], d, timeout=200)
    ok, obs = one_line(r, 2, "not ready")
    return ok and r.wall_s < 90, f"{obs} ({r.wall_s:.0f} s)"


@case("hostile user files", "build() holds 1.5 GiB, --memory-limit 0.75", "stopped by the memory limit, said so")
def _(ctx):
    d = ctx.folder()
    (d / "m.py").write_text(
        "import time\nHELD = []\ndef build():\n    HELD.append(b'x' * (1536 * 2**20))\n    time.sleep(30)\n"
        "    raise ValueError('held')\n"
    )
    args = ["diagnose", "--framework", "torch", "--model", "m.py:build", "--memory-limit", "0.75", "--budget", "20"]
    r = ctx.cli(args, d, timeout=200)
    ok, obs = one_line(r, 2, "memory limit")
    return ok and "--memory-limit" in r.err and r.wall_s < 28, f"{obs} ({r.wall_s:.0f} s)"


@case("concurrency", "a second --resume of a journal while the first resume runs", "exit 2 before it measures")
def _(ctx):
    d = ctx.folder()
    journal, _first = interrupted_run(ctx, d / "o")
    p = ctx.start(["matmul", "--resume", str(journal)], d, HANG_ENV)
    try:
        wait_for(lambda: any(str(journal) in os.path.realpath(f"/proc/{p.pid}/fd/{fd}") for fd in _fds(p.pid)), 60)
        r = ctx.cli(["matmul", "--resume", str(journal)], d, timeout=60)
        ok, obs = one_line(r, 2, "in use")
    finally:
        p.send_signal(signal.SIGTERM)  # as a user would: it removes its scratch folder
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    return ok and r.wall_s < 30, f"{obs} ({r.wall_s:.0f} s)"


def _fds(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []


@case("foreign records", "report of a record in a read-only folder", "the page printed, nothing written")
def _(ctx):
    d = ctx.folder()
    shutil.copy(good_record(ctx), d / "r.json")
    r = ctx.cli(["report", "r.json"], d)
    return r.rc == 0 and os.listdir(d) == ["r.json"], f"exit {r.rc}; folder holds {sorted(os.listdir(d))}"


@case("foreign records", "report and compare of a record with 3,000 samples per point", "each under 2 s of CPU")
def _(ctx):
    d = ctx.folder()
    data = json.loads(good_record(ctx).read_text())
    for res in data["results"]:
        t = res.get("timing") or {}
        if t.get("samples_s"):
            t["samples_s"] = [t["samples_s"][i % len(t["samples_s"])] * (1 + i % 7 * 1e-3) for i in range(3000)]
            t["stop_reason"] = "sample cap"
    (d / "r.json").write_text(json.dumps(data))
    times = []
    for args in (["report", "r.json"], ["compare", "r.json", "r.json"]):
        t0 = os.times()
        r = ctx.cli(args, d, timeout=300)
        t1 = os.times()
        times.append((r.rc, t1.children_user + t1.children_system - t0.children_user - t0.children_system))
    ok = all(rc == 0 and cpu < 2 for rc, cpu in times)
    return ok, "; ".join(f"exit {rc}, {cpu:.2f} s CPU" for rc, cpu in times)


# ---------------------------------------------------------------- Reliability III, the rest (items 9, 7 and 10)

KERAS_M = """
import keras, tensorflow as tf
def build():
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return m
def bad_loss(y_true, y_pred):
    tf.debugging.assert_less(tf.reduce_max(y_pred), -1e9, message="my loss refuses these")
    return tf.reduce_mean(y_pred)
def build_bad_loss():
    m = build()
    m.compile(optimizer="sgd", loss=bad_loss)
    return m
"""
KERAS_D = """
import numpy as np, tensorflow as tf
def empty():
    return tf.data.Dataset.from_tensor_slices((np.zeros((0, 4), "float32"), np.zeros((0,), "int64")))
def good():
    return tf.data.Dataset.from_tensor_slices((np.zeros((64, 4), "float32"), np.zeros((64,), "int64"))).batch(8)
"""
TORCH_M = """
import torch
class ToCuda(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 3)
    def forward(self, x):
        return self.l(x.cuda())
class Greedy(ToCuda):
    def forward(self, x):
        if x.shape[0] > 2:
            torch.empty(2**40)
        return self.l(x)
def cuda_forward():
    return ToCuda()
def greedy():
    return Greedy()
"""


def _preflight_case(name: str, args: list[str], want: str, must: str) -> None:
    @case("wrong argument", name, f"exit 2, one line naming {want}")
    def _(ctx):
        d = ctx.folder()
        (d / "km.py").write_text(KERAS_M)
        (d / "kd.py").write_text(KERAS_D)
        (d / "tm.py").write_text(TORCH_M)
        r = ctx.cli(["diagnose", *args, "--budget", "20", "--out", "o"], d, timeout=300)
        ok, obs = one_line(r, 2, must)
        return ok and f"error: {want}:" in r.err, obs


for _name, _args, _want, _must in [
    ("an empty --data dataset", ["--model", "km.py:build", "--data", "kd.py:empty"], "--data", "empty dataset"),
    (
        "a loss that raises in the graph",
        ["--model", "km.py:build_bad_loss", "--data", "kd.py:good"],
        "--model",
        "my loss refuses these",
    ),
    (
        ".cuda() in forward, no GPU",
        ["--framework", "torch", "--model", "tm.py:cuda_forward", "--input-shape", "4", "--classes", "3"],
        "--model",
        "x.device",
    ),
    (
        "a step that runs out of memory",
        ["--framework", "torch", "--model", "tm.py:greedy", "--input-shape", "4", "--classes", "3"],
        "--batch",
        "--memory-limit",
    ),
]:
    _preflight_case(_name, _args, _want, _must)


@case("hostile user files", "an audited script that uses up its file descriptors", "exit 0, recorded, one note")
def _(ctx):
    d = ctx.folder()
    (d / "s.py").write_text(
        "import os\nheld = []\ntry:\n    while True:\n        held.append(os.open(os.devnull, os.O_RDONLY))\n"
        "except OSError:\n    pass\nprint('done')\n"
    )
    r = ctx.cli(["audit", "s.py", "--out", "a", "--no-rerun"], d)
    noted = "ran out of file descriptors" in r.out
    ok = r.rc == 0 and noted and "Traceback" not in r.err and record_of(r) is not None
    return ok, f"exit {r.rc}; note {noted}; traceback {'Traceback' in r.err}"


@case("hostile user files", "run --budget 20 whose measuring children hang", "ends near the budget; says a case hung")
def _(ctx):
    d = ctx.folder()
    r = ctx.cli(
        ["run", "--framework", "torch", "--budget", "20", "--out", "o"], d, {"WHICHDEVICE_FAULT": "hang:|"}, timeout=300
    )
    answer = next((ln for ln in r.out.splitlines() if ln.startswith("Answer:")), "")
    ok = r.rc == 1 and r.wall_s < 50 and "did not end" in answer and "raise --budget" not in answer
    return ok, f"exit {r.rc} in {r.wall_s:.0f} s; {answer[:160]}"


# A family of its own: what a script writes where it runs ("the user's folder"). Each case is a
# tiny torch loop that writes one way users' scripts write, diagnosed in a folder holding the
# user's own files; the folder must read the same after (names, contents, times), the script's
# copies must be beside the record, and the screen must say so.

_LOOP = """
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4096, 8), torch.randint(0, 2, (4096,))
for i in range(0, 4096, 16):
    opt.zero_grad(); F.cross_entropy(model(x[i:i + 16]), y[i:i + 16]).backward(); opt.step()
"""

FOLDER_WRITERS = {
    "overwrites the user's log.csv before training": 'import os\nopen("log.csv", "w").write("epoch,loss\\n")\n' + _LOOP,
    "saves over the user's checkpoint with torch.save every 8 steps": _LOOP
    + '    if i % 128 == 0:\n        torch.save(model.state_dict(), "best.pt")\n',
    "replaces a file atomically (os.replace over it)": 'import os\nopen("t.tmp", "w").write("new")\nos.replace("t.tmp", "best.pt")\n'
    + _LOOP,
    "deletes the user's file": 'import os\nos.remove("notes.txt")\n' + _LOOP,
    "makes a timestamped run folder": 'import os, time\nos.makedirs(f"runs/{time.time_ns()}")\n' + _LOOP,
    "writes beside the script while run from another folder": (
        'import os\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), "img.png"), "wb").write(b"x")\n'
        + _LOOP
    ),
    "writes into a subfolder of the user's (lightning_logs/version_N)": (
        'import os\nos.makedirs("lightning_logs/version_%d" % os.getpid())\n' + _LOOP
    ),
    "makes a folder that a second run would refuse to make (os.makedirs without exist_ok)": (
        'import os\nos.makedirs("celeba_gan")\n' + _LOOP
    ),
    "saves a checkpoint in a bare except when it is stopped": (
        "try:\n"
        + "".join("    " + ln + "\n" for ln in _LOOP.strip().splitlines())
        + 'except:\n    torch.save(model.state_dict(), "interrupted.pt")\n    raise\n'
    ),
    "writes, then raises before its first step (refused)": 'open("log.csv", "w").write("x")\nraise ValueError("no data")\n',
}


def _user_files(d: Path) -> None:
    (d / "log.csv").write_text("the user's log")
    (d / "best.pt").write_bytes(b"the user's weights")
    (d / "notes.txt").write_text("the user's notes")
    (d / "runs").mkdir()
    (d / "runs" / "old").write_text("an earlier run")
    (d / "lightning_logs").mkdir()


def _folder_state(d: Path) -> dict:
    out = {}
    for p in sorted(d.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(d))] = (
            p.is_dir(),
            None if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest(),
            st.st_mtime_ns,
        )
    return out


def _folder_case(name: str, source: str) -> None:
    @case("the user's folder", f"a script that {name}", "the folder as it was; the script's copies beside the record")
    def _(ctx):
        d = ctx.folder()
        user = d / "proj"
        user.mkdir()
        _user_files(user)
        (user / "train.py").write_text(source)
        cwd = d if "another folder" in name else user
        before = _folder_state(user)
        r = ctx.cli(["diagnose", str(user / "train.py"), "--budget", "20", "--out", str(d / "out")], cwd, timeout=240)
        same = _folder_state(user) == before
        refused = "refused" in name
        if refused:
            ok = r.rc == 2 and same and not (d / "out").exists()
            return (
                ok,
                f"exit {r.rc}; folder {'as it was' if same else 'CHANGED'}; out/ {'absent' if not (d / 'out').exists() else 'WRITTEN'}",
            )
        kept = list((d / "out").glob("*.script-files")) if (d / "out").exists() else []
        said = "Your script wrote" in r.err
        ok = r.rc == 0 and same and (bool(kept) or "deletes" in name) and said
        return ok, f"exit {r.rc}; folder {'as it was' if same else 'CHANGED'}; copies kept: {bool(kept)}; said: {said}"


for _name, _source in FOLDER_WRITERS.items():
    _folder_case(_name, _source)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None)
    ap.add_argument("--out", default="benchmarks/results/adversarial.json")
    a = ap.parse_args()
    chosen = [c for c in CASES if a.only is None or a.only.lower() in (c.family + " " + c.name).lower()]
    load_before = load()
    t_all = time.monotonic()
    rows = []
    root = Path(tempfile.mkdtemp(prefix="wd-adversarial-", dir=os.environ.get("ADV_ROOT")))
    ctx = Ctx(root)
    try:
        for i, c in enumerate(chosen, 1):
            t0 = time.monotonic()
            if c.needs_root and os.geteuid() != 0:
                ok, obs = False, "not run: needs root (mount, mknod)"
            else:
                try:
                    ok, obs = c.run(ctx)
                except Exception as e:  # a defect of the case or of whichdevice: reported, never hidden
                    ok, obs = False, f"benchmark error: {type(e).__name__}: {e}"[:300]
            time.sleep(0.2)
            alive = live_marked()
            tmp_left = os.listdir(ctx.watch_tmp)
            if alive:
                ok, obs = False, obs + f"; PROCESSES LEFT: {alive}"
                for entry in alive:
                    with contextlib.suppress(OSError):
                        os.kill(int(entry.split(":")[0]), signal.SIGKILL)
            if tmp_left:
                ok, obs = False, obs + f"; WRITTEN TO TMPDIR: {tmp_left[:3]}"
                for n in tmp_left:
                    shutil.rmtree(ctx.watch_tmp / n, ignore_errors=True)
            ctx.umount_all()
            rows.append(
                {
                    "family": c.family,
                    "case": c.name,
                    "expected": c.expected,
                    "observed": obs,
                    "pass": bool(ok),
                    "wall_s": round(time.monotonic() - t0, 1),
                }
            )
            print(f"[{i}/{len(chosen)}] {'PASS' if ok else 'FAIL'} {c.family}: {c.name} -> {obs}", flush=True)
    finally:
        ctx.umount_all()
        shutil.rmtree(root, ignore_errors=True)
    report = {
        "command": "python benchmarks/adversarial.py" + (f" --only {a.only!r}" if a.only else ""),
        "load_before": load_before,
        "load_after": load(),
        "wall_s": round(time.monotonic() - t_all, 1),
        "cases": len(rows),
        "passed": sum(r["pass"] for r in rows),
        "rows": rows,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=1))
    print(
        f"\n{report['passed']}/{report['cases']} passed in {report['wall_s']} s; load before: {load_before}; after: {report['load_after']}"
    )
    print(markdown(report))


def markdown(report: dict) -> str:
    out = ["| family | case | expected | observed | pass |", "| --- | --- | --- | --- | --- |"]
    for r in report["rows"]:
        cells = [r["family"], r["case"], r["expected"], r["observed"], "yes" if r["pass"] else "**NO**"]
        out.append("| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
