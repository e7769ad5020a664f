"""A case's fix as a typed variant (``core/records.Variant``): a catalogue key and a value of the
type its entry declares, built by the catalogue, planned through each framework's script adapters,
laid out among the parameters as cases named it before (``workloads/fixes.params_of``), and read
from a version-4 record by migration, so that an old record renders as it did and ``compare``
pairs its cases with a new record's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from whichdevice import frameworks
from whichdevice.core import records
from whichdevice.core.records import CaseSpec, Variant, load_run, save_run
from whichdevice.workloads import fixes, script, scriptplan

DATA = Path(__file__).parent / "data"
# Version-4 records of diagnose SCRIPT whose cases named their fix among their parameters: the batch
# sweep, autocast and the DataLoader's workers (torch); steps_per_execution, jit_compile, mixed
# precision and the loss read every batch (Keras on JAX); tf.data's prefetch (TensorFlow, failed cases).
OLD = [
    DATA / "diagnose_script_ddp_single_cpu_budget60_cpu_2core.json",
    DATA / "diagnose_script_kio_antirectifier_jax_budget60_cpu_2core.json",
    DATA / "diagnose_script_kio_gan_budget90_cpu_2core.json",
]


def test_every_fix_a_case_varies_declares_the_type_of_its_value():
    for e in fixes.FIXES:
        if not e.param:  # a check (op placement, warm-up): no case varies it
            assert e.value_type is None
            continue
        assert e.value_type is not None, e.key
        for value in (e.baseline, *e.values):
            if value is not None:
                assert e.variant(value) == Variant(fix=e.key, value=value)


@pytest.mark.parametrize(
    "fix, value",
    [("batch", True), ("batch", "128"), ("jit_compile", 1), ("autocast", "float8"), ("cpu_threads", 1.5)],
)
def test_a_value_of_another_type_than_the_catalogue_declares_is_refused(fix, value):
    with pytest.raises(TypeError, match=f"{fix}="):
        fixes.entry(fix).variant(value)


def test_each_framework_adapts_only_catalogue_fixes_and_each_once():
    seen = {}
    for fw in frameworks.having("scriptfixes"):
        keys = [a.fix for a in frameworks.part(fw, "scriptfixes").ADAPTERS]
        assert len(keys) == len(set(keys)), fw
        assert set(keys) <= set(fixes.BY_KEY), (fw, set(keys) - set(fixes.BY_KEY))
        seen[fw] = keys
    assert {"autocast", "torch_compile", "num_workers"} <= set(seen["torch"])
    assert "steps_per_execution" in seen["keras-jax"] and "steps_per_execution" not in seen["keras-torch"]
    assert "sync" not in seen["tensorflow"] and seen["jax"] == ["batch"]


TORCH_FACTS = {
    "framework": "torch",
    "entry": "torch.optim.Optimizer.step",
    "batch": 32,
    "step_s": 0.06,
    "first_step_s": 0.5,
    "setup_s": 14.0,
    "model": "Net",
    "conv2d": True,
    "data_source": "DataLoader",
    "loader": {"batch_size": 32, "num_workers": 0, "pin_memory": False},
    "samples": 4096,
}
KERAS_FACTS = {
    "framework": "keras-jax",
    "entry": "keras.Model.fit",
    "batch": 32,
    "step_s": 0.005,
    "first_step_s": 0.8,
    "setup_s": 6.0,
    "model": "Sequential",
    "data": "tfdata",
}


@pytest.mark.parametrize("facts, device", [(TORCH_FACTS, "CPU:0"), (TORCH_FACTS, "GPU:0"), (KERAS_FACTS, "CPU:0")])
def test_a_planned_case_and_the_same_case_of_a_version_4_record_are_one_case(facts, device, monkeypatch):
    """The planner's cases carry their fix as a typed variant; the same case as a version-4 record
    (or journal) held it, its fix among its parameters, is read to the same identity, so ``compare``
    and ``--resume`` pair them."""
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])
    sizing = scriptplan.size(facts, 900.0, gpu=device.startswith("GPU"))
    user = scriptplan.user_params({"script": "/x/train.py"}, facts)
    cases = scriptplan.cases(facts["framework"], device, user, sizing)
    planned = {c.variant.fix for c in cases if c.variant is not None}
    assert planned >= ({"batch", "autocast", "num_workers"} if facts is TORCH_FACTS else {"jit_compile", "prefetch"})
    for c in cases:
        if c.variant is not None:  # its fix apart from its parameters (every case keeps the user's batch)
            param = fixes.entry(c.variant.fix).param
            assert "fix" not in c.params and (param not in c.params or param == "batch"), c
        old = {"spec": {**c.model_dump(exclude={"variant"}), "params": fixes.params_of(c)}, "status": "ok"}
        again = CaseSpec.model_validate(records.result_upgraded(old)["spec"])
        assert again == c and again.identity == c.identity, c


def _report(path: Path, capsys, *flags: str) -> str:
    code, out, err = run_cli(["report", str(path), *flags], capsys)
    assert code == 0, err
    return out.replace(str(path), "RECORD")


@pytest.mark.parametrize("old", OLD, ids=lambda p: p.stem)
def test_an_old_record_reads_migrated_and_renders_as_it_did(old, tmp_path, capsys):
    raw = json.loads(old.read_text())
    assert raw["schema_version"] == 4
    rec = load_run(old)
    varied = [r for r in rec.results if r.spec.variant is not None]
    assert varied, "a record with no fix to migrate tests nothing here"
    for was, r in zip(raw["results"], rec.results):
        # the parameters the analysis reads are the record's own, in their order
        assert list(fixes.params_of(r.spec).items()) == list(was["spec"]["params"].items())
        v = r.spec.variant
        if v is not None:  # a value of the type its catalogue entry declares
            assert fixes.entry(v.fix).variant(v.value) == v
            param = fixes.entry(v.fix).param
            assert "fix" not in r.spec.params and (param not in r.spec.params or param == "batch")
    assert not any("migration" in n for n in rec.notes)  # nothing the reader must know changed
    new = tmp_path / old.name
    save_run(rec, new)
    written = json.loads(new.read_text())
    assert written["schema_version"] == records.SCHEMA_VERSION == 5
    assert any(r["spec"]["variant"] for r in written["results"])
    assert not any("fix" in r["spec"]["params"] for r in written["results"])
    for flags in (("--verbose",), ("--markdown", "--verbose")):
        assert _report(new, capsys, *flags) == _report(old, capsys, *flags), flags


def test_compare_pairs_the_cases_of_an_old_and_a_new_record_of_the_same_workload(tmp_path, capsys):
    old = OLD[0]
    new = tmp_path / "new.json"
    save_run(load_run(old), new)
    code, out, err = run_cli(["compare", str(old), str(new)], capsys)
    assert code == 0, err
    n = len(json.loads(old.read_text())["results"])
    assert f"0 of {n} cases changed" in out and "only in" not in out
    assert "autocast bfloat16" in out and "num_workers=2" in out  # the variants' cases, named as before


# ------------------------------------------------------------------ a fix added as an entry and its adapters

_ZEROES = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 32), torch.randn(64, 1)
for step in range(300):
    opt.zero_grad({arg})
    if step and model[0].weight.grad is None:  # freed: a set_to_none member's step
        open(__file__ + ".freed", "w").close()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def test_set_to_none_is_planned_where_the_script_zeroes_its_gradients_in_place():
    """The catalogue's set_to_none entry with torch's script adapter: its pair is planned only where
    the pre-flight saw the script keep its gradients (zero_grad(set_to_none=False)), and takes
    turns with the baseline."""
    facts = {**TORCH_FACTS, "data_source": None, "loader": {}, "conv2d": False}
    keeps = {**facts, "plan_facts": {"keeps_grads": True}}
    assert "set_to_none" not in {c["variant"]["fix"] for c in scriptplan.size(facts, 900.0)["planned"]}
    sizing = scriptplan.size(keeps, 900.0)
    pair = [p for p in sizing["planned"] if p["variant"]["fix"] == "set_to_none"]
    assert [p["variant"]["value"] for p in pair] == [False, True]
    cases = scriptplan.cases("torch", "CPU:0", scriptplan.user_params({"script": "/x/t.py"}, keeps), sizing)
    sides = [c for c in cases if c.variant is not None and c.variant.fix == "set_to_none"]
    assert [script.variant_of(c) for c in sides] == ["baseline", "set_to_none"]
    assert {script.group_key(c) for c in sides} == {script.group_key(cases[0])}  # in turns, one process
    assert [fixes.params_of(c)["fix"] for c in sides] == ["set_to_none"] * 2  # paired as torch's --model pairs


@pytest.mark.frameworks
def test_a_script_that_zeroes_its_gradients_in_place_gets_set_to_none_measured(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    path = tmp_path / "zeroes.py"
    path.write_text(_ZEROES.format(arg="set_to_none=False"))
    facts = scriptplan.preflight({"script": str(path), "args": []}, 120.0)
    assert facts["plan_facts"] == {"keeps_grads": True}
    sizing = scriptplan.size(facts, 300.0)
    user = scriptplan.user_params({"script": str(path), "args": []}, facts)
    cases = scriptplan.cases("torch", "CPU:0", user, sizing)
    group = [c for c in cases if c.variant is None or c.variant.fix == "set_to_none"]
    assert len(group) == 3
    monkeypatch.setattr(script, "_RAN_HERE", [True])  # a fresh process, as a measuring child's later runs
    assert not Path(f"{path}.freed").exists()  # the pre-flight ran the script as it is
    got = script.time_group(group, None, None, 0.0)
    assert not any(isinstance(g, BaseException) for g in got), got
    assert Path(f"{path}.freed").exists()  # the member's steps freed the gradients the script keeps
    # the same member on a script that frees its gradients (torch's default): not applicable, said why
    plain = tmp_path / "frees.py"
    plain.write_text(_ZEROES.format(arg=""))
    again = [c.model_copy(update={"params": {**c.params, "script": str(plain)}}) for c in group]
    said = script.time_group(again, None, None, 0.0)
    assert isinstance(said[2], script.NotApplicable) and "frees its gradients already" in str(said[2])


def test_a_plan_journaled_before_variants_resumes_to_the_same_cases(monkeypatch):
    """``--resume`` of a run started by the version before: its journaled plan names each fix among
    the planned case's parameters; its cases are read to the same keys as a plan made now."""
    monkeypatch.setattr(scriptplan, "thread_counts", lambda fw: [1])
    sizing = scriptplan.size(TORCH_FACTS, 900.0)
    user = scriptplan.user_params({"script": "/x/train.py"}, TORCH_FACTS)

    def flat(planned: dict) -> dict:  # the planned case as the version before wrote it
        rest = {k: v for k, v in planned.items() if k != "variant"}
        spec = CaseSpec(workload="train", framework="torch", device="CPU:0", params=rest, variant=planned["variant"])
        return fixes.params_of(spec)

    old = {**sizing, "planned": [flat(p) for p in sizing["planned"]]}
    assert any("fix" in p for p in old["planned"]) and not any("variant" in p for p in old["planned"])
    now, then = (scriptplan.cases("torch", "CPU:0", user, s) for s in (sizing, old))
    assert [c.key for c in then] == [c.key for c in now] and then == now


def test_an_older_record_s_migration_note_reads_as_it_did():
    """Version 5's step changes no word a reader sees: a version-1 record still says it was read
    through migration to version 4 (its report as before), a version-4 one says nothing."""
    (note,) = [n for n in load_run(DATA / "run_cpu_2core.json").notes if "migration" in n]
    assert note.startswith("This record was written with result schema version 1 ")
    assert note.endswith("read through migration to version 4.")
