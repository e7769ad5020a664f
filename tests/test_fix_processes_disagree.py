"""A fix's pair whose processes fell in two modes (threads contending for busy cores put a whole
process in the slow mode or the fast one) is not claimed: two processes per side decide nothing.
The record is the busy input-bound diagnose with its autocast pair's rounds edited into two modes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from whichdevice.analysis import suite
from whichdevice.core.records import RunRecord
from whichdevice.present.fixes import not_measured_text, verdict_lines

DATA = Path(__file__).parent / "data" / "diagnose_script_input_bound_budget60_cpu_2core_busy.json"


def _round(ms: float, n: int = 10) -> list[float]:
    return [ms / 1e3 * (1 + 0.002 * (i - (n - 1) / 2)) for i in range(n)]


def _set(result: dict, rounds: list[list[float]]) -> None:
    t = result["timing"]
    t["rounds_s"] = rounds
    t["samples_s"] = [x for r in rounds for x in r]


def _record(*, bimodal: bool, threads: bool = False) -> RunRecord:
    d = json.loads(DATA.read_text())
    by = {r["spec"]["params"].get("autocast"): r for r in d["results"]}
    # off: one process at 60 ms a step, the other at 20 ms (or both at 60); bfloat16 ~7x faster in each
    _set(by["off"], [_round(60), _round(20 if bimodal else 60)])
    _set(by["bfloat16"], [_round(8), _round(3 if bimodal else 8)])
    if threads:  # the record's CPU thread-count pair: default against one thread
        base = by[None]
        for value, ms in (("default", 60.0), (1, 6.0)):
            r = copy.deepcopy(base)
            r["spec"]["params"] = {**base["spec"]["params"], "fix": "cpu_threads", "cpu_threads": value}
            _set(r, [_round(ms), _round(ms * 1.01), _round(ms * 0.99)])
            d["results"].append(r)
    return RunRecord.model_validate(d)


def _autocast(record: RunRecord) -> suite.FixVerdict:
    return suite.suite_verdict(record).fix("autocast")


def test_processes_in_one_mode_each_side_keep_their_claim() -> None:
    v = _autocast(_record(bimodal=False))
    assert v.outcome == "helps"


def test_processes_in_two_modes_as_far_apart_as_the_change_are_not_claimed() -> None:
    v = _autocast(_record(bimodal=True))
    assert v.outcome == "not_measured"
    assert v.not_measured is not None and v.not_measured.reason == "contended"
    text = not_measured_text(v.not_measured, "diagnose")
    assert text.startswith("not enough samples: the processes disagree (bimodal steps, 60 ms vs 20 ms per step)")
    assert "the machine's cores were contended (2 threads a process on 2 busy cores)" in text
    assert "CPU threads" not in text  # no thread-count pair in this record
    lines = " ".join(verdict_lines(v))
    assert "helps" not in lines and "faster (" not in lines


def test_the_thread_count_pair_is_named_as_the_measured_alternative() -> None:
    v = _autocast(_record(bimodal=True, threads=True))
    assert v.not_measured is not None and v.not_measured.reason == "contended"
    text = not_measured_text(v.not_measured, "diagnose")
    assert "the measured alternative, CPU threads" in text
    assert "→ 1: 10× faster" in text


def test_one_thread_a_process_names_other_processes_not_its_own_threads() -> None:
    record = _record(bimodal=True)
    one = [x.model_copy(update={"cpu_threads_intra": 1}) for x in record.sessions]
    v = _autocast(record.model_copy(update={"sessions": one}))
    assert v.not_measured is not None
    text = not_measured_text(v.not_measured, "diagnose")
    assert "(one thread a process: other processes took its core)" in text
    assert "threads a process on" not in text


def test_two_processes_in_two_modes_decide_nothing_even_beyond_the_gap() -> None:
    # the change (7x) beyond the modes' gap (1.5x) in both processes: two processes a side, one in
    # each mode, still decide nothing (the old rule claimed it)
    d = json.loads(DATA.read_text())
    by = {r["spec"]["params"].get("autocast"): r for r in d["results"]}
    _set(by["off"], [_round(60), _round(40)])
    _set(by["bfloat16"], [_round(60 / 7), _round(40 / 7)])
    v = _autocast(RunRecord.model_validate(d))
    assert v.outcome == "not_measured"
    assert v.not_measured is not None and v.not_measured.reason == "contended"


ONE_PROCESS = Path(__file__).parent / "data" / "diagnose_script_torch_cnn_one_process_budget60_cpu_2core.json"


def test_a_scripts_claim_from_one_process_a_side_is_not_enough():
    """The corpus's torch_cnn.py three times at load 2.8-3.5 (benchmarks/stable_verdicts.md): run 1's
    thread-count pair ran one process a side and recommended "one CPU thread 3.8× faster (10 samples)";
    runs 2 and 3 said "not enough samples". One process lands in one mode of a contended machine:
    its claim is not enough, and says why."""
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.core.records import load_run
    from whichdevice.present.claims import ratio_text

    record = load_run(ONE_PROCESS)
    v = suite_verdict(record, seed_batch=32).fix("cpu_threads")
    assert v.outcome != "helps"
    claims = [f.claim for f in v.deciding] or [f.claim for f in v.fixes]
    assert claims and all(c.unit == "samples" and c.status == "not_enough" for c in claims), claims
    assert all(c.note is not None and c.note.kind == "one_process" for c in claims)
    assert "one process a side" in ratio_text(claims[0])
