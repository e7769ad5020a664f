import pytest
from conftest import make_record

from whichdevice.analysis.fixes import ab_fixes
from whichdevice.core.records import CaseResult, CaseSpec, Timing
from whichdevice.present.claims import ratio_text


def _r(device, samples, **params):
    spec = CaseSpec(workload="train", framework="tensorflow", device=device, params=params)
    t = Timing(first_call_s=samples[0], warmup_s=[samples[0]], samples_s=samples, number_per_sample=1, overhead_s=0)
    return CaseResult(spec=spec, status="ok", timing=t, wall_s=0, metrics={"samples_per_step": params.get("batch", 1)})


def test_pairs_differ_in_exactly_one_parameter():
    rec = make_record(
        [
            _r("CPU:0", [1.0, 1.01, 0.99, 1.0, 1.0], kind="fit", batch=32, spe=1),
            _r("CPU:0", [0.5, 0.51, 0.49, 0.5, 0.5], kind="fit", batch=32, spe=32),
            _r("CPU:0", [0.2, 0.2, 0.2], kind="loop", batch=32, spe=32),  # other kind: not a pair
            _r("GPU:0", [2.0, 2.0, 2.0], kind="fit", batch=32, spe=32),  # other device: not a pair
        ],
        "train",
    )
    (fix,) = ab_fixes(rec, "spe", 1)
    assert fix.variant_value == 32 and fix.device == "CPU:0"
    assert fix.speedup == pytest.approx(2.0)
    assert "2× faster (95 % CI" in ratio_text(fix.comparison) and "5 samples" in ratio_text(fix.comparison)


def test_batch_fix_is_credited_per_sample():
    # batch 10 -> 1000: the step takes 5x longer but carries 100x the samples: 20x faster per sample.
    rec = make_record(
        [
            _r("CPU:0", [0.001, 0.001, 0.001], kind="steady", batch=10),
            _r("CPU:0", [0.005, 0.005, 0.005], kind="steady", batch=1000),
        ],
        "train",
    )
    (fix,) = ab_fixes(rec, "batch", 10)
    assert fix.speedup == pytest.approx(20.0)


def test_noise_gives_no_significant_change():
    rec = make_record(
        [
            _r("CPU:0", [1.0, 1.2, 0.8, 1.1, 0.9], kind="fit", jit=False),
            _r("CPU:0", [1.02, 1.22, 0.82, 1.12, 0.92], kind="fit", jit=True),
        ],
        "train",
    )
    (fix,) = ab_fixes(rec, "jit", False)
    assert not fix.comparison.significant
    assert "no clear change" in ratio_text(fix.comparison)


def _spe_grid(times, thin=None):
    return make_record(
        [
            _r(
                "CPU:0",
                [t * 0.99, t, t * 1.01, t, t] if spe != thin else [t],
                kind="fit",
                example="ex2",
                batch=10,
                steps_per_execution=spe,
            )
            for spe, t in times.items()
        ],
        "train",
    )


def _spe(record):
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.present.fixes import verdict_lines

    v = suite_verdict(record).fix("steps_per_execution")
    return v, verdict_lines(v)


def test_the_smallest_setting_within_90_percent_of_the_best_is_recommended():
    # 1 -> 5 -> 20 -> 100: 2x, 3.8x, 4x: 20 reaches 95 % of the best (100) and is smaller.
    v, lines = _spe(_spe_grid({1: 1.0, 5: 0.5, 20: 0.263, 100: 0.25}))
    (grid,) = v.grids
    assert grid.pick.variant == 20 and grid.best.variant == 100 and v.outcome == "helps" and v.best is grid.pick
    assert lines[0].startswith("CPU:0: steps_per_execution 1 -> 20: 3.8× faster (95 % CI")
    assert "best in the grid: steps_per_execution 100, 4× faster (95 % CI 4–4×, 5 samples)" in lines[0]
    assert "reaches 95% of the best" in lines[0]
    assert lines[1].startswith(
        "CPU:0 grid (samples/s vs steps_per_execution 1): 5: 2× faster (95 % CI 2–2×, 5 samples); "
    )
    assert lines[1].endswith("; 100: 4× faster (95 % CI 4–4×, 5 samples)")  # the same words as the line above


def test_a_grid_value_with_one_sample_is_never_the_best():
    # steps_per_execution 100 "best in the grid" from one sample (64.4 ms ± 0 ns)
    v, lines = _spe(_spe_grid({1: 1.0, 5: 0.5, 20: 0.263, 100: 0.1}, thin=100))
    assert v.grids[0].best.variant == 20 and [f.variant for f in v.grids[0].thin] == [100]
    assert lines[0].startswith("CPU:0: steps_per_execution 1 -> 20: 3.8× faster")
    assert "best in the grid: steps_per_execution 20" in lines[0]
    assert "steps_per_execution 100: not enough samples (n=1), not considered" in lines[0]
    assert "100: not enough samples (10× from n=1; 1 sample: at least 5 needed)" in lines[1]


def test_a_grid_where_nothing_helps_recommends_nothing():
    v, lines = _spe(_spe_grid({1: 1.0, 5: 1.001, 20: 0.999, 100: 1.2}))  # the last is slower
    assert lines[0] == "CPU:0: none of steps_per_execution 5, 20, 100 beats 1 significantly"
    assert v.outcome == "slower" and v.best.variant == 100  # listed as slower here, not as "no clear gain"


def test_jit_compile_is_not_recommended_where_xla_is_already_the_default():
    """Keras/JAX's jit_compile="auto" compiles with XLA: a fit that does not set jit_compile records
    it (metric jit_compile = 1). jit_compile False -> True is then no change for the user: not on
    the first screen's changes, and the fix table says why."""
    from whichdevice.analysis.fixes import jit_by_default
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.core.records import CaseResult, CaseSpec, RunRecord
    from whichdevice.present.firstscreen import first_screen

    def fit(params, samples, jit_metric):
        return CaseResult(
            spec=CaseSpec(
                workload="train",
                framework="keras-jax",
                device="CPU:0",
                params={"kind": "fit", "example": "ex2", "model": "seed001", "batch": 10, **params},
            ),
            status="ok",
            timing=Timing(
                first_call_s=samples[0], warmup_s=[samples[0]], samples_s=samples, number_per_sample=1, overhead_s=0
            ),
            metrics={"jit_compile": jit_metric, "samples_per_step": 10.0},
            wall_s=1.0,
        )

    fast, slow = [0.0003 + i * 1e-6 for i in range(8)], [0.027 + i * 1e-5 for i in range(8)]
    results = [
        fit({"steps_per_execution": 1}, fast, 1.0),
        fit({"jit_compile": False}, slow, 0.0),
        fit({"jit_compile": True}, fast, 1.0),
    ]
    record = make_record(results, "run")
    assert isinstance(record, RunRecord) and jit_by_default(record, "CPU:0")
    v = suite_verdict(record)
    jit = v.fix("jit_compile")
    assert [f.device for f in jit.default_on] == ["CPU:0"] and not jit.gains("CPU:0")
    assert jit.outcome == "not_measured" and jit.not_measured.reason == "default"
    assert not any(c.kind == "jit_compile" for c in first_screen(record, v).changes)
    # where the default is eager (TensorFlow on a CPU), the same measurement is a change
    eager = record.model_copy(update={"results": [fit({"steps_per_execution": 1}, slow, 0.0), *results[1:]]})
    assert not jit_by_default(eager, "CPU:0")
    assert any(c.kind == "jit_compile" for c in first_screen(eager, suite_verdict(eager)).changes)


def test_adding_a_fix_is_one_catalogue_entry(monkeypatch):
    """CONTRIBUTING.md "How to add a fix": a new FixEntry (and the cases that measure it) is paired,
    claimed, put on the first screen and in the fix table with no other change."""
    from whichdevice.analysis import suite
    from whichdevice.present.firstscreen import first_screen
    from whichdevice.present.suitepage import fix_grid
    from whichdevice.workloads import fixes as catalogue

    new = catalogue.FixEntry(
        key="layout",
        param="layout",
        baseline="channels_first",
        method="ab",
        title="Use channels_last",
        change="channels_last instead of channels_first",
        short="channels_last",
        code="x = x.to(memory_format=torch.channels_last)",
        how="convert the model and its inputs to channels_last",
        source="seed003",
        anchor="PyTorch performance tuning guide",
        cases=lambda w, p: w == "train" and "layout" in p,
        repeat=True,
    )
    monkeypatch.setattr(catalogue, "FIXES", (*catalogue.FIXES, new))
    monkeypatch.setitem(catalogue.BY_KEY, "layout", new)
    fast, slow = [0.5, 0.51, 0.49, 0.5, 0.5], [1.0, 1.01, 0.99, 1.0, 1.0]
    record = make_record(
        [
            _r("CPU:0", slow, kind="fit", example="ex2", batch=10, layout="channels_first"),
            _r("CPU:0", fast, kind="fit", example="ex2", batch=10, layout="channels_last"),
        ],
        "run",
    )
    v = suite.suite_verdict(record)
    layout = v.fix("layout")
    assert layout.outcome == "helps" and layout.best.variant == "channels_last"
    (change,) = [c for c in first_screen(record, v).changes if c.kind == "layout"]
    assert change.title == "channels_last instead of channels_first" and change.code.startswith("x = x.to(")
    row = next(r for r in fix_grid(v, record=record).rows if r[0].text.endswith("Use channels_last"))
    assert row[1].text == "helps" and change.gain_text.rstrip(")") in row[2].text
    assert catalogue.repeated("train", {"layout": "channels_last"})  # round 2 repeats its cases


EDITED = __import__("pathlib").Path(__file__).parent / "data" / "edited"  # real records, batch sweep edited


def _diagnose_screen(name):
    from whichdevice.analysis.suite import suite_verdict
    from whichdevice.core.records import load_run
    from whichdevice.present.firstscreen import first_screen, tail_lines
    from whichdevice.present.suitepage import fix_grid

    record = load_run(EDITED / name)
    assert any("EDITED for a test" in n for n in record.notes)
    v = suite_verdict(record, seed_batch=32)
    rows = {row[0].text.split(". ", 1)[1]: (row[1].text, row[2].text) for row in fix_grid(v, record=record).rows}
    return v.fix("batch"), " ".join(tail_lines(first_screen(record, v))), rows["Increase the batch size"]


def test_a_smaller_batch_slower_is_not_a_larger_batch_slower():
    """Keras-io weather LSTM and siamese network: batch 8 was 3.3x slower than the
    user's 32 and batch 128 faster, not significantly; the first screen said "Slower here: a
    larger batch 3.3× slower". A smaller batch is not the fix; no larger batch was slower."""
    fv, tail, (status, effect) = _diagnose_screen("diagnose_batch8_slower.json")
    small = next(f for f in fv.fixes if f.variant == 8)
    assert small.outcome == "slower" and 3.0 < 1 / small.claim.ratio < 3.6  # the edit holds: 8 is 3.3x slower
    assert fv.outcome != "slower" and all(f.variant != 8 for f in fv.deciding)
    assert "Slower here" not in tail and status != "slower here"
    assert "none of batch 8, 128 beats 32" in effect


def test_nothing_larger_measured_is_not_measured_never_no_clear_change():
    """A text CNN: nothing above the user's batch 32 was measured, and the first screen
    said "No clear change: a larger batch". It was not measured."""
    fv, tail, (status, effect) = _diagnose_screen("diagnose_nothing_above_32.json")
    assert fv.outcome == "not_measured" and fv.not_measured is not None and fv.not_measured.reason == "none_larger"
    assert "No clear change: a larger batch" not in tail and "a larger batch (nothing larger measured)" in tail
    assert status == "not measured" and effect.startswith("CPU:0: no batch larger than 32 measured (only batch 8)\n")


def test_contributing_shows_a_real_fix_in_three_files():
    """CONTRIBUTING's "How to add a fix" shows the catalogue's set_to_none entry and torch's script
    adapter as they are, and the files it counts are every file that names the fix."""
    import re
    from pathlib import Path

    from whichdevice.core import fixkeys
    from whichdevice.frameworks.common import fixes as keras_fixes
    from whichdevice.frameworks.contracts import ScriptFix
    from whichdevice.frameworks.torch import capture_hooks
    from whichdevice.frameworks.torch import scriptfixes as torch_scriptfixes
    from whichdevice.workloads import fixes as catalogue

    root = Path(__file__).resolve().parents[1]
    text = (root / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## How to add a fix", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    ns: dict = {
        "_torch": catalogue._torch,
        "_TUNING_GUIDE": catalogue._TUNING_GUIDE,
        "ScriptFix": ScriptFix,
        "fixkeys": fixkeys,
    }
    ns |= {k: getattr(torch_scriptfixes, k) for k in ("_switch", "_pair", "_keeps_grads", "BY_NAME")}
    shown_code = code.replace("_torch(", "shown = _torch(", 1).replace("ScriptFix(", "adapter = ScriptFix(", 1)
    exec(shown_code, ns)  # noqa: S102 (our own document's example)
    shown, real = ns["shown"], catalogue.BY_KEY["set_to_none"]
    for f in ("key", "framework", "param", "baseline", "method", "title", "code", "caveat", "values", "group"):
        assert getattr(shown, f) == getattr(real, f), f
    assert shown.value_type is real.value_type is bool and shown.named and real.named
    (adapter,) = ns["adapter"]  # the line as it stands in ADAPTERS, its comma included
    real_adapter = {a.fix: a for a in torch_scriptfixes.ADAPTERS}["set_to_none"]
    for facts in ({"model": "Net", "plan_facts": {"keeps_grads": True}}, {"model": "Net"}):
        assert adapter.cases(facts, False) == real_adapter.cases(facts, False)
    assert adapter.member(True, {}) == real_adapter.member(True, {}) == "set_to_none"
    assert adapter.apply is real_adapter.apply and real_adapter.apply.turns == "switched"
    assert capture_hooks.fix_of("set_to_none", {"fix": "set_to_none", "value": True})[0] is real_adapter.apply
    # "2 files": the fix's name is a string in the catalogue's keys and the adapter, nowhere else
    named = {
        str(p.relative_to(root / "src" / "whichdevice"))
        for p in (root / "src" / "whichdevice").rglob("*.py")
        if re.search(r"[\"']set_to_none[\"']", p.read_text(encoding="utf-8"))
    }
    assert named == {"core/fixkeys.py", "frameworks/torch/scriptfixes.py"}
    # every catalogue fix a framework plans as pairs for run's suite and --model has that framework's adapter
    assert {e.param for e in catalogue.FIXES if e.group and e.framework == "keras"} <= set(keras_fixes.COMPILE)


def test_keras_and_jax_captures_reach_each_adapters_applier_by_its_typed_key():
    """The Keras and JAX captures apply a member through the applier its typed variant's key names;
    a spec written by hand (no typed variants) reaches the same applier by the member's name."""
    from whichdevice.frameworks.common import kerasscriptfixes
    from whichdevice.frameworks.jax import scriptfixes as jax_scriptfixes

    for module, adapters in ((kerasscriptfixes, kerasscriptfixes.ADAPTERS.values()), (jax_scriptfixes, None)):
        for a in adapters or module.ADAPTERS:
            value = {"batch": 64, "cpu_threads": 2, "prefetch": "tfdata", "sync": "each"}.get(a.fix, True)
            member = a.member(value, {"entry": "keras.Model.fit"})
            assert a.apply is not None and module.applied(member, {"fix": a.fix, "value": value})[0] is a.apply
            assert module.applied(member)[0] is a.apply, member
        assert module.applied("baseline", {"fix": "batch", "value": 32}) == (None, "")
