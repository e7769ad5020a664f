"""Run history: every record a command writes is indexed in a local SQLite database.

The database only *indexes* records (where the JSON is, what machine and versions made it);
the JSON files stay the source of truth. Location: ``$WHICHDEVICE_HOME/history.sqlite``,
default ``~/.whichdevice``. Parameterized queries only. Indexing never fails a run: if the
database cannot be written, the command says so and goes on.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from whichdevice.core.records import RunRecord

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


def home() -> Path:
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
    n_failed: int
    path: str


def _connect() -> sqlite3.Connection:
    path = db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute(_SCHEMA)
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
    )
    with _connect() as con:
        cur = con.execute(
            "INSERT INTO runs (created_at, experiment, command, hostname, cpu, devices, frameworks, n_results,"
            " n_failed, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )
        return int(cur.lastrowid)


def entries(limit: int = 20, experiment: str | None = None) -> list[Entry]:
    if not db_path().exists():
        return []
    with _connect() as con:
        if experiment:
            rows = con.execute("SELECT * FROM runs WHERE experiment = ? ORDER BY id DESC LIMIT ?", (experiment, limit))
        else:
            rows = con.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        return [Entry(*r) for r in rows.fetchall()]


def get(run_id: int) -> Entry | None:
    if not db_path().exists():
        return None
    with _connect() as con:
        row = con.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    return Entry(*row) if row else None
