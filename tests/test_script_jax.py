"""``diagnose SCRIPT.py`` on plain JAX, optax and Flax (frameworks/jax/capture.py): the plan and its
words without a process; one real run of the plain-JAX corpus script (its baseline and a re-batched
step in one process); the optax and Flax scripts' runs are ``slow`` and skip without flax/optax."""

from __future__ import annotations

from pathlib import Path

import pytest

from whichdevice.frameworks.contracts import CaptureSpec
from whichdevice.workloads import script, scriptplan

CORPUS = Path(__file__).parent / "script_corpus"
ENTRY = "jax.jit train step"


def _facts(**more):
    facts = {
        "framework": "jax",
        "entry": ENTRY,
        "batch": 32,
        "step_s": 0.005,
        "first_step_s": 1.5,
        "setup_s": 8.0,
        "data_s": 3.0,
        "import_s": 5.0,
        "model": "MLP",
    }
    return {**facts, **more}


def test_the_capture_names_its_framework():
    assert scriptplan.framework_of({"entry": ENTRY, "framework": "jax"}) == "jax"
    assert scriptplan.framework_of({"entry": "torch.optim.Optimizer.step"}) == "torch"


def test_a_jitted_step_plans_a_batch_sweep_in_the_round_s_one_process():
    """The capture re-batches the step itself, so a sweep is planned although the script makes its own
    batches, and its variants share the baseline's process (no extra set-up per variant)."""
    sizing = scriptplan.size(_facts(), 60)
    batches = scriptplan.planned_batches(sizing["planned"])
    assert batches and all(p["kind"] == "steady" for p in sizing["planned"]) and not sizing["cut"]
    user = scriptplan.user_params({"script": "train.py", "args": []}, _facts())
    cases = scriptplan.cases("jax", "CPU:0", user, sizing)
    assert {script.variant_of(c) for c in cases} == {"baseline", *(f"batch:{b}" for b in batches)}
    assert all(script.shares_child(c) for c in cases)
    assert len({script.group_key(c) for c in cases}) == 1
    notes = " ".join(scriptplan.notes(user, sizing))
    assert "re-batched the captured step, not the script" in notes


def test_the_step_s_data_arguments_give_the_batch_and_are_tiled():
    jax = pytest.importorskip("jax")
    import numpy as np

    from whichdevice.frameworks.jax import capture

    params = [np.zeros((8, 16)), np.zeros(16), np.zeros((16, 1)), np.zeros(1)]
    args = (params, np.ones((32, 8)), {"x": np.ones((32, 3)), "y": np.ones(32)}, 0.1)
    assert capture._batch_args(jax, args) == [1, 2]
    assert capture._batch_of(jax, args) == 32
    assert capture._batch_of(jax, (params, 0.1)) is None
    tiled = capture._tile(jax, np.arange(6).reshape(3, 2), 7)
    assert isinstance(tiled, np.ndarray) and tiled.shape == (7, 2) and tiled[3].tolist() == [0, 1]
    assert capture._tile(jax, jax.numpy.ones((32, 4)), 8).shape == (8, 4)


def test_the_plain_jax_corpus_script_is_timed_with_its_step_re_batched():
    """One process: the baseline and ``batch:64`` dealt the jitted step's calls in turn; the step found
    without optax (a jax.grad inside jax.jit), its batch read from the sliced arrays."""
    pytest.importorskip("jax")
    spec = CaptureSpec("baseline", warmup_steps=2, steps=5, also=("batch:64",))
    run = script.run_child(
        {"script": str(CORPUS / "jax_plain_loop.py"), "args": []},
        spec,
        ["jax"],
        timeout_s=60,
        env=scriptplan._cpu_env(),
    )
    got = run.by_variant()
    assert set(got) == {"baseline", "batch:64"}, (run.end, run.stderr_tail[-800:])
    base, big = got["baseline"], got["batch:64"]
    assert base["status"] == big["status"] == "ok" and base["entry"] == ENTRY and base["framework"] == "jax"
    assert base["batch_size"] == 32 and base["samples_per_step"] == 32 and big["samples_per_step"] == 64
    assert len(base["step_s"]) >= 5 and len(big["step_s"]) >= 5 and base["model"] == "update"
    assert big["rebatched"] == "step" and base["recompiles"] == 0


def test_a_jax_loop_beside_tensorflow_is_captured():
    """TensorFlow imports Keras (on its TensorFlow backend): the JAX capture stood aside for
    Keras on JAX's own jitted step, so a Flax example that writes TensorBoard summaries got no
    answer ("reached no timed training step")."""
    pytest.importorskip("optax")
    spec = CaptureSpec("baseline", warmup_steps=2, steps=5)
    run = script.run_child(
        {"script": str(CORPUS / "jax_beside_tensorflow.py"), "args": []},
        spec,
        ["tensorflow", "torch", "jax"],  # every capture, as the pre-flight installs them
        timeout_s=120,
        env=scriptplan._cpu_env(),
    )
    (r,) = run.results
    assert r["status"] == "ok" and r["entry"] == ENTRY and len(r["step_s"]) >= 5, (run.end, run.stderr_tail[-800:])
    assert r["batch_size"] == 32


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,model,batch",
    [
        ("jax_optax_loop.py", "train_step", 64),
        ("flax_linen_trainstate.py", "MLP", 32),
        ("flax_nnx_optimizer.py", "MLP", 32),
    ],
)
def test_optax_and_flax_scripts_are_captured(name, model, batch):
    pytest.importorskip("optax")
    if name.startswith("flax"):
        pytest.importorskip("flax")
    spec = CaptureSpec("baseline", warmup_steps=2, steps=5, also=(f"batch:{batch * 2}",))
    run = script.run_child(
        {"script": str(CORPUS / name), "args": []}, spec, ["jax"], timeout_s=120, env=scriptplan._cpu_env()
    )
    got = run.by_variant()
    assert set(got) == {"baseline", f"batch:{batch * 2}"}, (run.end, run.stderr_tail[-800:])
    assert all(r["status"] == "ok" and len(r["step_s"]) >= 5 for r in got.values())
    assert got["baseline"]["model"] == model and got["baseline"]["batch_size"] == batch
    assert got[f"batch:{batch * 2}"]["samples_per_step"] == batch * 2
