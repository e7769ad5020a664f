"""Strings that did not come from whichdevice itself (model and file names, error texts of a
framework or of the user's code, the contents of a record or journal someone handed us), made
safe to print: no terminal control sequence survives.

Removed: whole escape sequences (CSI ``ESC [ ... final``, OSC ``ESC ] ... BEL|ST``, DCS/APC/PM/
SOS strings, two-character ``ESC x``), every other C0 control but tab and newline, DEL, the C1
controls (U+0080-U+009F, among them the 8-bit CSI and OSC) and the Unicode bidirectional
overrides that make text display in another order than it reads. The CLI's consoles apply
:func:`clean` to every piece of text they print (``cli/common.SafeConsole``), so no caller can
forget it; whichdevice's own colours are added after that, by rich.
"""

from __future__ import annotations

import re

_SEQUENCES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]?            # CSI ... final byte
    | \x1b[\]PX^_][^\x00-\x1f\x7f-\x9f]*(?:\x07|\x1b\\)?  # OSC, DCS, SOS, PM, APC ... BEL or ST
    | \x9b[0-?]*[ -/]*[@-~]?            # 8-bit CSI
    | [\x90\x98\x9d\x9e\x9f][^\x00-\x1f\x7f-\x9f]*(?:\x07|\x9c)?  # 8-bit DCS, SOS, OSC, PM, APC
    | \x1b[ -/]*[0-~]?                  # any other escape (ESC c resets the terminal)
    """,
    re.VERBOSE | re.DOTALL,
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROLS_BUT_CR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: str, *, newlines: bool = True, carriage_returns: bool = False) -> str:
    """``text`` without control sequences or control characters (tab and newline kept
    unless ``newlines`` is false, then each becomes a space; a carriage return kept with
    ``carriage_returns``: a progress bar redrawing its line)."""
    if text.isprintable():  # the usual case: nothing to do
        return text
    out = (_CONTROLS_BUT_CR if carriage_returns else _CONTROLS).sub("", _SEQUENCES.sub("", text))
    if not newlines:
        out = out.replace("\n", " ").replace("\t", " ")
    return out


_STARTS = "\x1b\x9b\x90\x98\x9d\x9e\x9f"  # ESC, and the 8-bit CSI, DCS, SOS, OSC, PM, APC
_HOLD_MAX = 4096  # a 'sequence' longer than this is cleaned as it is, not held


class StreamCleaner:
    """:func:`clean` for text that arrives in pieces (a child's output passed through):
    printable text, newlines, tabs and carriage returns pass; escape sequences (colours,
    cursor moves, clear screen, window title, OSC 52 clipboard writes) do not, even when one is
    cut across two pieces: a sequence still open at a piece's end is held until the rest comes."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        text, self._held = self._held + text, ""
        cut = max(text.rfind(c) for c in _STARTS)
        if cut >= 0 and len(text) - cut <= _HOLD_MAX and _open(text[cut:]):
            text, self._held = text[:cut], text[cut:]
        return clean(text, carriage_returns=True)

    def close(self) -> str:
        """What is held at the end (a sequence never finished): cleaned."""
        text, self._held = self._held, ""
        return clean(text, carriage_returns=True)


def _open(tail: str) -> bool:
    """Whether ``tail`` (from an escape's first character) may still be the start of a longer
    sequence: nothing after ESC yet, a CSI without its final byte, a string (OSC, DCS, ...)
    without its terminator."""
    if tail == "\x1b":
        return True
    eight_bit = tail[0] != "\x1b"
    kind = tail[0] if eight_bit else tail[1]
    body = tail[1:] if eight_bit else tail[2:]
    if kind in "[\x9b":
        return re.search("[@-~]", body) is None
    if kind in "]PX^_\x90\x98\x9d\x9e\x9f":
        return re.search("[\x00-\x1f\x7f-\x9f]", body) is None
    return False


# Plain stand-ins for the typographic characters whichdevice prints, for a terminal whose
# encoding cannot show them (PYTHONIOENCODING=ascii, a latin-1 locale). A character
# with no stand-in, or a file name's undecodable byte (a lone surrogate), becomes '?'. Each
# stand-in is one character wide: the consoles substitute after rich has laid a table out, and
# a wider one would be cropped at the cell's edge.
_PLAIN = str.maketrans(
    {
        "·": ".",
        "—": "-",
        "–": "-",
        "−": "-",
        "…": ".",
        "≈": "~",
        "±": "~",
        "×": "x",
        "→": ">",
        "←": "<",
        "≤": "<",
        "≥": ">",
        "•": "*",
        "‘": "'",
        "’": "'",
        "“": '"',
        "”": '"',
        "µ": "u",
        "μ": "u",
        "✓": "v",
        "✔": "v",
        "✗": "x",
        "✘": "x",
        "²": "2",
        "³": "3",
        "⁴": "4",
        "\u00a0": " ",
        "\u2009": " ",
        "\u202f": " ",
    }
)


def for_encoding(text: str, encoding: str | None) -> str:
    """``text`` as a stream of ``encoding`` can write it, as wide as it was: unchanged when it
    can, else each character it cannot encode replaced by a plain stand-in (``—`` -> ``-``) or
    ``?``."""
    enc = encoding or "utf-8"
    try:
        text.encode(enc)
        return text
    except UnicodeEncodeError:
        pass
    except LookupError:  # an encoding Python does not know: ASCII is safe everywhere
        enc = "ascii"
    out = []
    for ch in text:
        if not _encodes(ch, enc):
            ch = ch.translate(_PLAIN)
            ch = ch if _encodes(ch, enc) else "?"
        out.append(ch)
    return "".join(out)


def _encodes(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
