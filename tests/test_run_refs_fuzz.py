"""Arguments that name a run (`compare`, `report`, `history --limit`): any string a user can
type gets one line naming the argument and exit 2, never a traceback. Unicode
digits ('²', '١٢'), integers of any size, NUL bytes, names too long for the file system."""

import pytest
from conftest import run_cli
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

# what people type: digits of every script, huge integers, paths, control characters
REFS = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(categories=["Nd", "No"]), min_size=1, max_size=30),
    st.integers(min_value=-(10**40), max_value=10**400).map(str),
    st.text(alphabet="0123456789/.\x00\n\x1b", min_size=1, max_size=300),
)


# Typed where a run is named, these ask for the command's help (exit 0), as they should: hypothesis
# once drew "--help" for RUN_A
HELP = ("--help", "-h")


def _one_line_exit_2(code, out, err, argument, typed=""):
    assert code == 2, (code, out, err)
    assert err.startswith("error: ") and err.strip().count("\n") == 0, err
    assert "Traceback" not in out + err
    assert "\x1b" not in out + err and "\x00" not in out + err
    if typed.startswith("-") and "No such option" in err:  # '-10' reads as options -1 -0: named
        return
    assert argument in err


def _valid_limit(text):
    t = text.strip()
    return t.isascii() and t.lstrip("+").isdigit() and len(t) < 40 and 0 < int(t) <= 100_000


@pytest.fixture
def empty_history(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path / "home" / ".whichdevice"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


_FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FUZZ
@given(ref=REFS)
@example(ref="²")
@example(ref="١٢")
@example(ref=str(2**64))
@example(ref="9" * 5000)
@example(ref="a\x00b")
@example(ref="")
def test_compare_any_run_a(empty_history, capsys, ref):
    assume(ref not in HELP)
    code, out, err = run_cli(["compare", ref, "1"], capsys)
    _one_line_exit_2(code, out, err, "RUN_A", ref)


@_FUZZ
@given(ref=REFS)
@example(ref="²")
@example(ref=str(10**30))
@example(ref="x" * 5000)
@example(ref="a\x00b")
def test_report_any_result(empty_history, capsys, ref):
    assume(ref not in HELP)
    code, out, err = run_cli(["report", ref], capsys)
    _one_line_exit_2(code, out, err, "RESULT", ref)


@_FUZZ
@given(limit=REFS.filter(lambda s: not _valid_limit(s)))
@example(limit="²")
@example(limit=str(2**70))
def test_history_any_limit(empty_history, capsys, limit):
    code, out, err = run_cli(["history", "--limit", limit], capsys)
    _one_line_exit_2(code, out, err, "--limit")
