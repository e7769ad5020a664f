"""`whichdevice train --precision` and `--trace` for real on the CPU (small sizes), the CPU
16-bit note from /proc/cpuinfo flags, and bad input."""

import math

import pytest
from conftest import run_cli

from whichdevice.frameworks.tensorflow.precision import cpu_flags, fast_16bit
from whichdevice.core.records import load_run


def test_cpu_flags_are_read_from_cpuinfo_text():
    text = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n"
    assert fast_16bit(cpu_flags(text)) == {"bfloat16": True, "float16": False}
    assert fast_16bit(cpu_flags("flags : sse avx2 f16c")) == {"bfloat16": False, "float16": False}


def test_bad_precision_is_one_line_exit_2(tmp_path, capsys):
    code, out, err = run_cli(["train", "--precision", "fp8", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--precision: 'fp8' is not one of float32, mixed_float16, mixed_bfloat16" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.tf
def test_precision_and_trace_on_the_cpu(tmp_path, capsys):
    j, trace = tmp_path / "t.json", tmp_path / "trace"
    code, out, err = run_cli(
        [
            "train",
            "--quick",
            "--parts",
            "fit",
            "--device",
            "CPU:0",
            "--precision",
            "mixed_float16,mixed_bfloat16",
            "--trace",
            str(trace),
            "--out",
            str(tmp_path),
            "--json",
            str(j),
        ],
        capsys,
    )
    assert code == 0, err
    rec = load_run(j)
    prec = {r.spec.params["precision"]: r for r in rec.results if r.spec.params["kind"] == "precision"}
    assert set(prec) == {"float32", "mixed_float16", "mixed_bfloat16"}  # float32 added as the reference
    for p, r in prec.items():
        assert r.status == "ok", r.error
        assert math.isfinite(r.metrics["final_loss"]) and r.metrics["final_loss"] > 0
        assert r.metrics["compute_16bit"] == (0.0 if p == "float32" else 1.0)
    fast = fast_16bit(cpu_flags())
    assert prec["float32"].metrics["cpu_fast_bf16"] == float(fast["bfloat16"])
    assert "Precision" in out and "final loss" in out
    if not fast["bfloat16"]:
        assert "no fast 16-bit math" in out.replace("\n", " ")
    # One profile per fit run, of its steady epochs only, where TensorBoard looks for it.
    fits = [r for r in rec.results if r.spec.params["kind"] == "fit"]
    profiles = sorted(trace.glob("*/plugins/profile/*/*.xplane.pb"))
    assert len(profiles) == len(fits) >= 1
    assert all(p.stat().st_size > 0 for p in profiles)
