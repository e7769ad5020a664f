import json
from pathlib import Path

import pytest
from conftest import make_record, timing_of

from whichdevice.core.errors import UsageError
from whichdevice.core.records import SCHEMA_VERSION, CaseResult, CaseSpec, Timing, load_run, save_run


def _record():
    spec = CaseSpec(workload="matmul", framework="tensorflow", device="CPU:0", params={"n": 10, "mode": "steady"})
    ok = CaseResult(spec=spec, status="ok", timing=timing_of(0.5), wall_s=1.0)
    bad = CaseResult(
        spec=spec.model_copy(update={"device": "GPU:0"}), status="failed", error="boom", failure="error", wall_s=0.1
    )
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
        ('{"schema_version": 2, "experiment": "matmul"}', "does not match the result schema"),
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


@pytest.mark.parametrize("version", [0, -1, "2", True, None])
def test_an_invalid_schema_version_is_a_usage_error(tmp_path, version):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": version}))
    with pytest.raises(UsageError, match="no valid schema version"):
        load_run(path)


def test_every_older_version_has_a_migration_step():
    from whichdevice.core.records import MIGRATIONS

    assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION))


V1_FAILURES = [  # error texts version 1 wrote, and the kind version 2 gives them
    ("timed out after 5 s (--case-timeout)", "timeout"),
    ("child process died: SIGABRT; last error line: F1123 Check failed", "crash"),
    ("child process died: SIGKILL (out of memory? the OS kills with SIGKILL)", "crash"),
    ("not run: child process exited with code 1", "not_started"),
    ("skipped: the time budget (--budget) ran out before this case", "skipped"),
    ("ResourceExhaustedError: OOM when allocating tensor with shape[8192,8192] on GPU:0", "out_of_memory"),
    ("MemoryError: Unable to allocate 8.00 TiB", "out_of_memory"),
    ("ValueError: Input 0 of layer dense is incompatible", "error"),
]


def test_a_version_1_record_is_migrated_not_misread(tmp_path):
    # tests/data/run_cpu_2core.json is a real `whichdevice run` written with schema version 1;
    # its first cases are turned into version-1 failures (no `failure` field existed).
    data = json.loads((Path(__file__).parent / "data" / "run_cpu_2core.json").read_text())
    assert data["schema_version"] == 1
    for r, (error, _) in zip(data["results"], V1_FAILURES):
        r.update(status="failed", error=error, timing=None)
        assert "failure" not in r
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    rec = load_run(path)
    assert rec.schema_version == SCHEMA_VERSION
    assert [r.failure for r in rec.results[: len(V1_FAILURES)]] == [k for _, k in V1_FAILURES]
    assert all(r.failure is None for r in rec.results[len(V1_FAILURES) :] if r.status == "ok")
    assert any("schema version 1" in n and "migration" in n for n in rec.notes)
    assert path.read_bytes() == before  # read, never rewritten
    # the samples came through untouched
    assert rec.results[-1].timing.samples_s == data["results"][-1]["timing"]["samples_s"]


def test_a_failed_result_needs_its_kind():
    spec = CaseSpec(workload="m", framework="f", device="CPU:0")
    with pytest.raises(ValueError, match="failure kind"):
        CaseResult(spec=spec, status="failed", error="boom", wall_s=0)
    with pytest.raises(ValueError, match="no failure kind"):
        CaseResult(spec=spec, status="ok", timing=timing_of(1.0), failure="error", wall_s=0)


H200_RUN = Path(__file__).parent / "data" / "h200" / "run.json"  # a real `run --budget 30`: 15 cases skipped


def test_a_case_the_budget_skipped_is_skipped_not_failed_and_old_records_read_so(tmp_path):
    """`run --budget 30` wrote its skipped cases as status "failed" (failure kind
    "skipped"). A skipped case was not measured; it did not fail. Version 4 gives it its own
    status; a version-3 record that said failed+skipped reads as skipped, and says it was migrated."""
    from whichdevice.core.records import failed, result_upgraded

    raw = json.loads(H200_RUN.read_text())
    assert raw["schema_version"] == 3
    said = [r for r in raw["results"] if r["status"] == "failed"]
    assert len(said) == 15 and all(r["failure"] == "skipped" for r in said)
    rec = load_run(H200_RUN)
    assert sum(r.status == "skipped" for r in rec.results) == 15
    assert not any(r.status == "failed" for r in rec.results)
    assert any("schema version 3" in n and "migration" in n for n in rec.notes)
    # a record written now says skipped, and reads back the same, with no migration note
    path = tmp_path / "now.json"
    save_run(rec.model_copy(update={"notes": []}), path)
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION == 5
    again = load_run(path)
    assert [r.status for r in again.results] == [r.status for r in rec.results] and again.notes == []
    # the child's budget skip makes a skipped case, never a failed one
    spec = CaseSpec(workload="m", framework="f", device="CPU:0")
    assert failed(spec, "skipped: the time budget (--budget) ran out", "skipped", 0.0).status == "skipped"
    assert failed(spec, "boom", "error", 0.0).status == "failed"
    with pytest.raises(ValueError, match="skipped"):
        CaseResult(spec=spec, status="failed", error="skipped: budget", failure="skipped", wall_s=0)
    # a journal line written before version 4 (results have no version of their own) reads as skipped
    assert result_upgraded(said[0])["status"] == "skipped"


def test_a_version_3_record_with_no_skipped_case_reads_unchanged_with_no_note():
    """Keep every rendered record identical: version 4 changes nothing for a record with no
    skipped case, so it gets no migration note (its report stays word for word)."""
    rec = load_run(Path(__file__).parent / "data" / "run_keras_jax_torch_cpu_2core.json")
    assert not any("migration" in n for n in rec.notes)
