"""An append-only journal of a run in progress, so nothing finished is lost.

Every finished case (and every child's session) is appended to ``NAME.partial.jsonl`` as
one JSON line, flushed and fsynced before the run moves on. ``kill -9`` of the whole run
at any moment leaves a readable journal: at worst its last line is cut short, and that
line is ignored on reading. ``--resume JOURNAL`` reads it back, skips the finished cases,
appends the rest to the same journal, and writes the final record; the journal is then
removed. The first line (the header) holds what is needed to resume: the experiment, its
checked options and where the record goes.

A run of several parts (``run --framework a,b``: one journal per framework) has a top-level
journal and part journals whose header names it (``part_of``): only the top-level one is
resumed; a folder given to ``--resume`` means its top-level journals.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from whichdevice.core.errors import UsageError
from whichdevice.core.records import CaseResult, Session, result_v1_to_v2

SUFFIX = ".partial.jsonl"


def journal_path(json_file: Path) -> Path:
    return json_file.with_name(json_file.stem + SUFFIX)


@dataclass
class JournalState:
    header: dict
    sessions: list[Session] = field(default_factory=list)
    results: list[CaseResult] = field(default_factory=list)

    @property
    def done(self) -> dict[str, CaseResult]:
        """Finished cases by key (a failed case counts as finished: it is not retried)."""
        return {r.spec.key: r for r in self.results}


def _header(path: Path) -> dict:
    """The header of a journal (an empty dict if the first line is not one)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            obj = json.loads(f.readline())
    except (OSError, json.JSONDecodeError):
        return {}
    return obj if isinstance(obj, dict) and obj.get("type") == "header" else {}


# The journal of the run in progress in this process (a top-level one: not a part), so an
# interrupted command can say how to resume it (cli.py).
active: Path | None = None


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls, path: Path, header: dict) -> Journal:
        global active
        j = cls(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps({"type": "header", **header}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        if not header.get("part_of"):
            active = Path(path)
        return j

    def _append(self, obj: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(obj) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def add_result(self, result: CaseResult) -> None:
        self._append({"type": "result", "result": result.model_dump(mode="json")})

    def add_session(self, session: Session) -> None:
        self._append({"type": "session", "session": session.model_dump(mode="json")})

    def finish(self) -> None:
        global active
        self.path.unlink(missing_ok=True)
        if active == self.path:
            active = None

    @staticmethod
    def read(
        path: Path | str, argument: str = "--resume", experiment: str | None = None, part: bool = False
    ) -> JournalState:
        """Read a journal; a cut-short last line (the run was killed mid-write) is ignored.
        A part journal (header ``part_of``) is refused unless ``part``: its run resumes it."""
        global active
        p = Path(path)
        if p.is_dir():
            found = sorted(f for f in p.glob(f"*{SUFFIX}") if not _header(f).get("part_of"))
            if len(found) != 1:
                what = "no" if not found else f"{len(found)}"
                raise UsageError(
                    argument, f"'{p}' holds {what} unfinished run journals (*{SUFFIX})", "Pass the journal file itself."
                )
            p = found[0]
        if not p.exists():
            raise UsageError(argument, f"no such file '{p}'", f"Pass the {SUFFIX} file an interrupted run left.")
        lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
        state: JournalState | None = None
        for i, line in enumerate(lines):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                if i == len(lines) - 1:
                    break  # the write the kill interrupted
                raise UsageError(
                    argument, f"'{p}' is corrupt at line {i + 1}", "It cannot be resumed; start a new run."
                ) from None
            kind = obj.get("type") if isinstance(obj, dict) else None
            if i == 0:
                if kind != "header":
                    raise UsageError(argument, f"'{p}' is not a whichdevice journal", f"Pass a {SUFFIX} file.")
                state = JournalState(header=obj)
            else:
                try:
                    if kind == "result":
                        # a result journaled before failure kinds (schema 1) gets its kind from its text
                        state.results.append(CaseResult.model_validate(result_v1_to_v2(obj["result"])))
                    elif kind == "session":
                        state.sessions.append(Session.model_validate(obj["session"]))
                except (KeyError, TypeError, AttributeError, ValidationError):
                    raise UsageError(
                        argument, f"'{p}' is corrupt at line {i + 1}", "It cannot be resumed; start a new run."
                    ) from None
        if state is None:
            raise UsageError(argument, f"'{p}' is empty", "It cannot be resumed; start a new run.")
        top = state.header.get("part_of")
        if top and not part:
            if not Path(top).exists():
                raise UsageError(
                    argument, f"'{p}' is left over from a run that has finished ('{top}' is gone)", "Delete it."
                )
            raise UsageError(
                argument, f"'{p}' is one part of the interrupted run '{top}'", f"Resume the whole run: --resume {top}."
            )
        if experiment and state.header.get("experiment") != experiment:
            raise UsageError(
                argument,
                f"'{p}' is a journal of `{state.header.get('experiment')}`, not `{experiment}`",
                f"Resume it with `whichdevice {state.header.get('experiment')} --resume`.",
            )
        if not top:
            active = p
        return state
