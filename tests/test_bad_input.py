"""Every bad input answered: one line naming the argument and the fix, exit 2, nothing written,
no traceback — across all commands. Plus property-based tests of the parsers."""

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from whichdevice.core.errors import UsageError
from whichdevice.core.validate import parse_int_list, parse_positive_float

CASES = [
    # matmul
    (["matmul", "--sizes", "0"], "--sizes"),
    (["matmul", "--sizes", "-5"], "--sizes"),
    (["matmul", "--sizes", "1e3"], "--sizes"),
    (["matmul", "--sizes", "999999999"], "--sizes"),
    (["matmul", "--dtype", "int7"], "--dtype"),
    (["matmul", "--device", "NPU:0"], "--device"),
    (["matmul", "--framework", "mxnet"], "--framework"),
    (["matmul", "--case-timeout", "0"], "--case-timeout"),
    (["matmul", "--min-time", "nan"], "--min-time"),
    (["matmul", "--resume", "/nonexistent/x.partial.jsonl"], "--resume"),
    (["matmul", "--memory-limit", "0.1"], "--memory-limit"),
    (["matmul", "--out", "/proc/whichdevice-out"], "--out"),  # os.access says yes (root); mkdir fails
    (["train", "--json", "/sys/whichdevice.json"], "--json"),
    (["run", "--memory-limit", "lots"], "--memory-limit"),
    (["train", "--memory-limit", "-1"], "--memory-limit"),
    # train
    (["train", "--batches", "0"], "--batches"),
    (["train", "--batches", "abc"], "--batches"),
    (["train", "--parts", "everything"], "--parts"),
    (["train", "--model", "missing_file.py:build"], "--model"),
    (["train", "--model", "no_colon"], "--model"),
    (["train", "--classes", "3"], "--classes"),
    (["train", "--device", "GPU:x"], "--device"),
    # run
    (["run", "--budget", "1"], "--budget"),
    (["run", "--budget", "-3"], "--budget"),
    (["run", "--device", "TPU"], "--device"),
    (["run", "--cpu-threads", "0"], "--cpu-threads"),
    (["run", "--resume", "/nonexistent"], "--resume"),
    # pipeline
    (["pipeline", "--images", "0"], "--images"),
    (["pipeline", "--batch", "-1"], "--batch"),
    # --resume with any other option: the interrupted run's options are reused
    (["pipeline", "--resume", "x.partial.jsonl", "--images", "64"], "--images"),
    (["matmul", "--resume", "x.partial.jsonl", "--sizes", "10"], "--sizes"),
    (["run", "--resume", "x.partial.jsonl", "--framework", "tensorflow"], "--framework"),
    (["train", "--quick", "--resume", "x.partial.jsonl"], "--quick"),
    (["diagnose", "--resume", "x.partial.jsonl", "--batch", "8"], "--batch"),
    # report / compare / history
    (["report", "/nonexistent/r.json"], "RESULT"),
    (["compare", "/nonexistent/a.json", "/nonexistent/b.json"], "RUN_A"),
    (["compare", "99999", "1"], "RUN_A"),
    (["history", "--limit", "0"], "--limit"),
    # audit
    (["audit", "/nonexistent/script.py"], ""),
    # global
    (["matmul", "--no-such-option"], "--no-such-option"),
    (["no-such-command"], "no-such-command"),
]


@pytest.mark.parametrize("args, argument", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_input(tmp_path, capsys, monkeypatch, args, argument):
    monkeypatch.chdir(tmp_path)  # default output folders would land here
    code, out, err = run_cli(args, capsys)
    assert code == 2, (out, err)
    assert err.startswith("error: ") and err.strip().count("\n") == 0, err
    assert argument in err
    assert "Traceback" not in out + err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "args, argument",
    [c for c in CASES if "--resume" in c[0] and c[1] != "--resume"],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_resume_with_another_option_says_to_drop_it(tmp_path, capsys, args, argument):
    code, _, err = run_cli([a.replace("x.partial.jsonl", str(tmp_path / "x.partial.jsonl")) for a in args], capsys)
    assert code == 2
    assert f"--resume reuses the interrupted run's options. Drop {argument}" in err


def test_there_are_at_least_30_cases():
    assert len(CASES) >= 30


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_size_parser_accepts_only_positive_integers(text):
    try:
        values = parse_int_list(text, "--sizes", maximum=32768, example="1,10")
    except UsageError as e:
        assert e.argument == "--sizes" and "--sizes" in str(e)
        return
    assert values and all(isinstance(v, int) and 1 <= v <= 32768 for v in values)
    assert values == sorted(set(values))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=32768), min_size=1, max_size=8))
def test_size_parser_round_trips(values):
    assert parse_int_list(",".join(map(str, values)), "--sizes", maximum=32768, example="1") == sorted(set(values))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_seconds_parser_never_lets_nonsense_through(text):
    try:
        v = parse_positive_float(text, "--min-time", "0.2")
    except UsageError as e:
        assert e.argument == "--min-time"
        return
    assert v > 0 and v != float("inf")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=1_000_000), min_size=1, max_size=4))
def test_shape_parser_keeps_order_and_repeats(dims):
    from whichdevice.core.validate import parse_shape

    # a shape is not a set of sizes: 28,28,1 stays (28, 28, 1), never sorted or de-duplicated
    assert parse_shape(",".join(map(str, dims))) == tuple(dims)
