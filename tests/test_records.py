import json

import pytest
from conftest import make_record, timing_of

from whichdevice.errors import UsageError
from whichdevice.records import (
    SCHEMA_VERSION,
    CaseResult,
    CaseSpec,
    Timing,
    load_run,
    save_run,
)


def _record():
    spec = CaseSpec(workload="matmul", framework="tensorflow", device="CPU:0", params={"n": 10, "mode": "steady"})
    ok = CaseResult(spec=spec, status="ok", timing=timing_of(0.5), wall_s=1.0)
    bad = CaseResult(spec=spec.model_copy(update={"device": "GPU:0"}), status="failed", error="boom", wall_s=0.1)
    return make_record([ok, bad])


def test_round_trip_keeps_raw_samples_and_recomputes_statistics(tmp_path):
    path = tmp_path / "r.json"
    rec = _record()
    save_run(rec, path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["results"][0]["timing"]["median_s"] == 0.5  # written for readers
    data["results"][0]["timing"]["median_s"] = 99.0  # a tampered derived value is ignored
    path.write_text(json.dumps(data))
    back = load_run(path)
    assert back.results[0].timing.median_s == 0.5
    assert back == rec


def test_records_are_immutable():
    rec = _record()
    with pytest.raises(Exception):
        rec.experiment = "x"


def test_ok_needs_timing_and_failed_needs_error():
    spec = CaseSpec(workload="m", framework="f", device="CPU:0")
    with pytest.raises(ValueError):
        CaseResult(spec=spec, status="ok", wall_s=0)
    with pytest.raises(ValueError):
        CaseResult(spec=spec, status="failed", wall_s=0)


def test_timing_needs_a_sample():
    with pytest.raises(ValueError):
        Timing(first_call_s=1, warmup_s=[1], samples_s=[], number_per_sample=1, overhead_s=0)


@pytest.mark.parametrize(
    "content, expected",
    [
        (None, "no such file"),
        ("{not json", "not readable JSON"),
        ("[1, 2]", "not a whichdevice result"),
        ('{"schema_version": 999}', "newer than this whichdevice"),
        ('{"schema_version": 1, "experiment": "matmul"}', "does not match the result schema"),
    ],
)
def test_bad_result_files_are_usage_errors(tmp_path, content, expected):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError, match=expected) as e:
        load_run(path)
    assert e.value.argument == "RESULT"


def test_truncated_file_is_a_usage_error(tmp_path):
    path = tmp_path / "r.json"
    save_run(_record(), path)
    path.write_text(path.read_text()[:200])
    with pytest.raises(UsageError, match="not readable JSON"):
        load_run(path)
