"""Run history: every record a command writes is indexed in a local SQLite database.

The database only *indexes* records (where the JSON is, what machine and versions made it);
the JSON files stay the source of truth. Location: ``$WHICHDEVICE_HOME/history.sqlite``,
default ``~/.whichdevice``; ``history --history DIR`` and ``compare --history DIR`` read another
folder (:func:`use`). On an ephemeral CI runner, point ``WHICHDEVICE_HOME`` at a cached folder
so that the baseline's run ids and the learned noise survive between jobs. Parameterized queries only. Indexing never fails a run: if the
database cannot be written, the command says so and goes on.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from whichdevice.core.errors import UsageError
from whichdevice.core.records import RunRecord, load_run

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    experiment TEXT NOT NULL,
    command TEXT NOT NULL,
    hostname TEXT NOT NULL,
    cpu TEXT NOT NULL,
    devices TEXT NOT NULL,
    frameworks TEXT NOT NULL,
    n_results INTEGER NOT NULL,
    n_failed INTEGER NOT NULL,
    path TEXT NOT NULL
)
"""


# Between-run noise: when ``compare`` is given two runs of the same command on the
# same machine with nothing changed (same versions, options, devices), each case's
# log(median before / median after) is a sample of that case's run-to-run noise; later
# compares on this machine learn a per-case noise threshold from them
# (analysis/significance.learned_threshold).
_NOISE_SCHEMA = """
CREATE TABLE IF NOT EXISTS case_noise (
    hostname TEXT NOT NULL,
    experiment TEXT NOT NULL,
    case_key TEXT NOT NULL,
    run_a TEXT NOT NULL,
    run_b TEXT NOT NULL,
    log_ratio REAL NOT NULL,
    UNIQUE (hostname, case_key, run_a, run_b)
)
"""


MAX_ID = 2**63 - 1  # SQLite's largest integer: a run id beyond it names no run

# Set by ``--history DIR`` for the rest of the command (:func:`use`); None: the environment decides.
_home_override: Path | None = None


def use(folder: Path | None) -> None:
    """Read and write the history in ``folder`` (``--history``) instead of ``$WHICHDEVICE_HOME``."""
    global _home_override
    _home_override = Path(folder) if folder is not None else None


def home() -> Path:
    if _home_override is not None:
        return _home_override
    return Path(os.environ.get("WHICHDEVICE_HOME") or Path.home() / ".whichdevice")


def db_path() -> Path:
    return home() / "history.sqlite"


@dataclass(frozen=True)
class Entry:
    id: int
    created_at: str
    experiment: str
    command: str
    hostname: str
    cpu: str
    devices: str
    frameworks: str
    n_results: int
    n_failed: int  # cases that failed (not those the time budget skipped: see n_skipped)
    path: str
    n_skipped: int | None = None  # cases the time budget skipped (not measured, not failed)


def _connect() -> sqlite3.Connection:
    path = db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute(_SCHEMA)
    con.execute(_NOISE_SCHEMA)
    columns = {str(row[1]) for row in con.execute("PRAGMA table_info(runs)")}
    if "n_skipped" not in columns:  # a history written before skipped cases were counted apart
        con.execute("ALTER TABLE runs ADD COLUMN n_skipped INTEGER")
    return con


def add(record: RunRecord, path: Path) -> int:
    """Index ``record`` (written at ``path``); returns its run id."""
    devices = ", ".join(sorted({f"{s.device.name} {s.device.description}" for s in record.sessions}))
    frameworks = ", ".join(sorted({f"{s.framework.name} {s.framework.version}" for s in record.sessions}))
    row = (
        record.created_at,
        record.experiment,
        " ".join(record.command),
        record.machine.hostname,
        record.machine.cpu_model,
        devices,
        frameworks,
        len(record.results),
        sum(r.status == "failed" for r in record.results),
        str(Path(path).absolute()),
        sum(r.status == "skipped" for r in record.results),
    )
    with _connect() as con:
        cur = con.execute(
            "INSERT INTO runs (created_at, experiment, command, hostname, cpu, devices, frameworks, n_results,"
            " n_failed, path, n_skipped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )
        assert cur.lastrowid is not None  # an INSERT always sets it
        return int(cur.lastrowid)


def entries(limit: int = 20, experiment: str | None = None) -> list[Entry]:
    if not db_path().exists():
        return []
    with _connect_rows() as con:
        if experiment:
            rows = con.execute("SELECT * FROM runs WHERE experiment = ? ORDER BY id DESC LIMIT ?", (experiment, limit))
        else:
            rows = con.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        return [_counted(_entry(r)) for r in rows.fetchall()]


def latest(experiment: str, match: Callable[[RunRecord], T | None], *, mentions: str = "", limit: int = 20) -> T | None:
    """``match`` of the newest of this machine's last ``limit`` ``experiment`` records for which it
    is not None, among those whose command line holds ``mentions`` (a record is read only then);
    None where there is none, or where the history or a record cannot be read (a plan is then
    made afresh: reading the history never fails a run)."""
    host = socket.gethostname()
    try:
        found = [e for e in entries(limit, experiment) if e.hostname == host and mentions in e.command]
    except (UsageError, sqlite3.Error, OSError):
        return None
    for e in found:
        try:
            hit = match(load_run(e.path))
        except (UsageError, OSError, ValueError):
            continue
        if hit is not None:
            return hit
    return None


def get(run_id: int) -> Entry | None:
    if not db_path().exists():
        return None
    with _connect_rows() as con:
        row = con.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    return _counted(_entry(row)) if row else None


_FIELDS = tuple(dataclasses.fields(Entry))


def _connect_rows() -> sqlite3.Connection:
    """A connection whose rows are read by column name: a newer version may add columns, in
    any place, and this version reads the ones it knows and ignores the rest."""
    con = _connect()
    con.row_factory = sqlite3.Row
    return con


def _entry(row: sqlite3.Row) -> Entry:
    """The entry in ``row``, by column name. A column this version needs and does not find means
    a history written by a version whose index this one cannot read: one line, not a traceback."""
    have = set(row.keys())
    values = {}
    for f in _FIELDS:
        if f.name in have:
            values[f.name] = row[f.name]
        elif f.default is dataclasses.MISSING:
            raise UsageError(
                "--history",
                f"'{db_path()}' has no column '{f.name}' in its runs table (written by another whichdevice version)",
                "Upgrade whichdevice (pip install -U whichdevice), or pass another folder with --history.",
            )
    return Entry(**values)


def _counted(e: Entry) -> Entry:
    """An entry indexed before skipped cases were counted apart (``n_skipped`` None) counted
    them as failed: its record, when still readable, splits them; otherwise it stays as indexed."""
    if e.n_skipped is not None or not e.n_failed:
        return e if e.n_skipped is not None else dataclasses.replace(e, n_skipped=0)
    try:
        record = load_run(e.path)
    except (UsageError, OSError):
        return e
    return dataclasses.replace(
        e,
        n_failed=sum(r.status == "failed" for r in record.results),
        n_skipped=sum(r.status == "skipped" for r in record.results),
    )


def add_repeat(hostname: str, experiment: str, run_a: str, run_b: str, log_ratios: dict[str, float]) -> int:
    """Store one repeat pair's per-case log ratios (``run_a``/``run_b``: the records' ids, e.g.
    their creation times); a pair already stored is not stored twice. Returns rows added."""
    rows = [(hostname, experiment, k, run_a, run_b, float(v)) for k, v in log_ratios.items()]
    with _connect() as con:
        before = con.total_changes
        con.executemany(
            "INSERT OR IGNORE INTO case_noise (hostname, experiment, case_key, run_a, run_b, log_ratio)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        return con.total_changes - before


def noise_samples(hostname: str, exclude: tuple[str, str] | None = None) -> dict[str, list[float]]:
    """Per case key, the between-run log ratios stored for this machine (without the pair
    ``exclude``, so a compare never learns its threshold from itself)."""
    if not db_path().exists():
        return {}
    out: dict[str, list[float]] = {}
    with _connect() as con:
        rows = con.execute("SELECT case_key, run_a, run_b, log_ratio FROM case_noise WHERE hostname = ?", (hostname,))
        for key, a, b, v in rows.fetchall():
            if exclude is not None and {a, b} == set(exclude):
                continue
            out.setdefault(str(key), []).append(float(v))
    return out
