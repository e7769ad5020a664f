"""Comments and prose a reader of the repository can follow: no pointer to a work session
("stop" and a number), to an issue by its number, or to a path outside the repository. A reader
cannot look those up; the sentence says the reason itself (the measurement, the case that broke)
and git keeps the history. Upstream references that name their repository
(``tensorflow/tensorflow#24774``) can be looked up and are not matched."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The folders and files scanned, and the kinds of text files in them.
SCANNED = ("src", "tests", "benchmarks", "docs", "README.md", "CONTRIBUTING.md")
SUFFIXES = (".py", ".md", ".sh", ".toml")

# Anywhere in a file: a session pointer, an issue by number, a path outside the repository.
ANYWHERE = {
    "session pointer": re.compile(r"\bstop \d+\b"),
    "issue number": re.compile(r"\b[Ii]ssues? #?\d+\b|(?<![\w/-])\(#\d+\)"),
    "path outside the repository": re.compile(r"\.\./shared/|/wor[k]/"),
}
# In comments and docstrings (and Markdown prose) only: a bare "#NN" issue number.
BARE = re.compile(r"(?<![\w/&-])#\d{2}\b")

# Program strings that keep such a text, each with why: (path, the text matched, why).
ALLOWED: tuple[tuple[str, str, str], ...] = (
    (
        "tests/data/edited/make.py",
        "issue 39",
        "the note it writes into the edited records, which must stay byte for byte as committed",
    ),
    (
        "tests/test_profile_import.py",
        "../shared/",
        "the skip message of the test that compares the copies with that folder when it is present",
    ),
)


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        p = ROOT / name
        if p.is_file():
            out.append(p)
        else:
            out.extend(f for f in sorted(p.rglob("*")) if f.is_file() and f.suffix in SUFFIXES)
    # This file names the allowed texts themselves.
    return [f for f in out if "__pycache__" not in f.parts and f != Path(__file__).resolve()]


def _prose(path: Path, text: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a Python file, the comment lines of a shell or TOML file,
    the whole of a Markdown file: (first line, text)."""
    if path.suffix == ".md":
        return [(1, text)]
    if path.suffix != ".py":
        return [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.lstrip().startswith("#")]
    out: list[tuple[int, str]] = []
    prev = None
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    skip = (tokenize.COMMENT, tokenize.NL)
    for i, t in enumerate(toks):
        if t.type == tokenize.COMMENT:
            out.append((t.start[0], t.string))
        elif t.type == tokenize.STRING:
            starts = prev is None or prev.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
            ends = i + 1 < len(toks) and toks[i + 1].type in (tokenize.NEWLINE, tokenize.ENDMARKER)
            if starts and ends:
                out.append((t.start[0], t.string))
        if t.type not in skip:
            prev = t
    return out


def _findings() -> list[str]:
    allowed = {(p, s) for p, s, _ in ALLOWED}
    found: list[str] = []
    for f in _files():
        rel = f.relative_to(ROOT).as_posix()
        text = f.read_text(encoding="utf-8", errors="replace")
        for kind, rx in ANYWHERE.items():
            for m in rx.finditer(text):
                if (rel, m.group(0)) not in allowed:
                    line = text.count("\n", 0, m.start()) + 1
                    found.append(f"{rel}:{line}: {kind}: {m.group(0)!r}")
        for first, chunk in _prose(f, text):
            for m in BARE.finditer(chunk):
                if (rel, m.group(0)) not in allowed:
                    line = first + chunk.count("\n", 0, m.start())
                    found.append(f"{rel}:{line}: issue number: {m.group(0)!r}")
    return found


def test_no_session_pointer_issue_number_or_outside_path():
    found = _findings()
    assert not found, "say the reason itself instead:\n" + "\n".join(found[:60])


def test_the_allowlist_is_still_needed():
    stale = []
    for path, s, _ in ALLOWED:
        p = ROOT / path
        if not p.is_file() or s not in p.read_text(encoding="utf-8"):
            stale.append(f"{path}: {s!r}")
    assert not stale, "allowed texts no longer present:\n" + "\n".join(stale)
