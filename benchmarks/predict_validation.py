"""Leave-one-out validation of the cost model on the shared H100 reference (benchmarks/predict.md).

    python benchmarks/predict_validation.py            # uses the recorded op lists
    python benchmarks/predict_validation.py --trace    # re-traces them (TensorFlow, torch, Keras/JAX, Keras/torch)
    python benchmarks/predict_validation.py --write    # also writes the shipped error model

1. Profile: ``deviceprofile.from_torch_probe`` on tests/data/h100_probe_torch.json — its
   ``launch``, ``transfer`` and ``matmul`` sections only (the shipped ``h100`` profile).
2. Workloads: the reference's MLP (100 -> Dense 128 relu -> Dense 10, Adam, sparse CE) as each
   framework runs it, its training step traced *here* by that framework (``describe_train`` of
   frameworks/<fw>/calibration.py) at the reference's batch sizes; recorded in
   tests/data/h100_mlp_<fw>_ops.json.
3. Points (every GPU step the reference measured for that model):
   - torch: probe_torch.json ``mlp``: ``cuda_step_s`` (no sync), ``cuda_step_item_s`` (one
     ``.item()``), ``cuda_step_from_host_s`` (batch copied from host + ``.item()``); and its
     ``seed001`` loops as written (batches 10, 32, 1024: loop seconds / steps);
   - tensorflow (proxy): the same measured steps, predicted from TensorFlow's graph op list
     (there is no TensorFlow on the reference machine: this is the graph model checked
     against PyTorch's measured steps, not a TensorFlow measurement);
   - keras-jax, keras-torch: keras_*_gpu.json, epoch 2 of ``model.fit`` / steps per epoch
     (batch copied from host each step).
   The per-step host overhead comes from the same machine's CPU run of the same loop
   (``prediction.host_overhead``), as ``predict`` takes it from the local CPU run.
4. Leave-one-out: each point's calibrated band (``errormodel``) is fitted on the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PROBE = DATA / "h100_probe_torch.json"
KERAS = {"keras-jax": "keras_jax", "keras-torch": "keras_torch"}
FRAMEWORKS = ("tensorflow", "torch", "keras-jax", "keras-torch")
REPORTED = FRAMEWORKS + ("jax",)  # jax: the jitted matmul rows of keras_jax_*.json (no op list to trace)
TORCH_BATCHES = [1, 4, 10, 32, 128, 512, 2048, 8192, 32768]
SEED001_BATCHES = [1024]  # probe_torch.json's seed001 loop at batch 1024 (10 and 32 are above)
KERAS_FITS = [(1000, 10), (100000, 32), (100000, 512), (100000, 4096)]
ERRORS_OUT = ROOT / "src" / "whichdevice" / "profiles" / "errors" / "h100-2026-11-22.json"
SMALL = 512  # batch regime: <= 512 "small", above "large"


def ops_file(fw: str) -> Path:
    return DATA / ("h100_mlp_tf_ops.json" if fw == "tensorflow" else f"h100_mlp_{fw.replace('-', '_')}_ops.json")


def batches_of(fw: str) -> list[int]:
    if fw in KERAS:
        return [b for _, b in KERAS_FITS]
    return sorted(TORCH_BATCHES + SEED001_BATCHES) if fw == "torch" else TORCH_BATCHES


# ---------------- tracing (one child process per framework) ----------------


def trace_one(fw: str) -> None:
    """In a fresh process: the framework's training step traced at each batch."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["CUDA_VISIBLE_DEVICES"] = "-1" if fw == "tensorflow" else ""
    os.environ["JAX_PLATFORMS"] = "cpu"
    if fw in KERAS:
        os.environ["KERAS_BACKEND"] = fw.split("-")[1]
    import importlib

    from whichdevice.frameworks.common.casemodel import CaseModel
    from whichdevice.workloads.calibrate import encode_ops

    folder = fw.replace("-", "_")
    cal = importlib.import_module(f"whichdevice.frameworks.{folder}.calibration")
    training = importlib.import_module(f"whichdevice.frameworks.{folder}.training")
    version = importlib.import_module({"tensorflow": "tensorflow", "torch": "torch"}.get(fw, "keras")).__version__
    out = {
        "origin": f"benchmarks/predict_validation.py --trace: seed 001's model (the reference's MLP) as {fw} "
        f"runs it ({version}), one training step traced on this project's CPU-only VM by "
        f"frameworks/{folder}/calibration.py describe_train",
        "batches": {},
    }
    for b in batches_of(fw):
        m = CaseModel({"model": "seed001"}, training)
        model = m.build()
        opt, loss = m.optimizer_and_loss(model)
        x, y = m.one_batch(training, b)
        d = cal.describe_train(model, opt, loss, training, x, y)
        x_bytes = x.nbytes // 2 if x.dtype.kind == "f" and x.dtype.itemsize == 8 else x.nbytes
        out["batches"][str(b)] = encode_ops(d["ops"], float(x_bytes + y.nbytes), d["launch_mode"], d.get("tf32", False))
    ops_file(fw).write_text(json.dumps(out, indent=1) + "\n")


# ---------------- the points ----------------


def points():
    from whichdevice.analysis import deviceprofile
    from whichdevice.analysis.prediction import reference_points

    probe = json.loads(PROBE.read_text())
    profile = deviceprofile.from_torch_probe(probe, "h100", "tests/data/h100_probe_torch.json", "2026-11-22")
    keras = {
        fw: (json.loads((DATA / f"{f}_cpu.json").read_text()), json.loads((DATA / f"{f}_gpu.json").read_text()))
        for fw, f in KERAS.items()
    }
    ops = {fw: json.loads(ops_file(fw).read_text())["batches"] for fw in FRAMEWORKS}
    return reference_points(probe, keras, ops, profile)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--trace-one"]:
        trace_one(argv[1])
        return 0
    if "--trace" in argv:
        for fw in FRAMEWORKS:
            subprocess.run([sys.executable, __file__, "--trace-one", fw], check=True)
    from whichdevice.analysis import errormodel
    from whichdevice.core import stats

    pts = points()
    held = errormodel.leave_one_out(pts)
    print(
        "| framework | batch | quantity | measured ms | model ms | calibrated ms [80 % band] | error | in band | winner (measured / predicted) |"
    )
    print("| --- | ---: | --- | ---: | ---: | --- | ---: | --- | --- |")
    for h in held:
        p, b = h.point, h.band
        w = h.winner
        print(
            f"| {p.framework} | {p.batch} | {p.quantity} | {p.measured_s * 1e3:.3f} | {p.predicted.mid * 1e3:.3f} | "
            f"{b.mid * 1e3:.3f} [{b.low * 1e3:.3f}, {b.high * 1e3:.3f}] | {h.error * 100:+.0f} % | "
            f"{'yes' if h.inside else 'no'} | {w[0] + ' / ' + w[1] if w else '—'} |"
        )

    def summary(label, hs):
        if not hs:
            return
        errs = [abs(h.error) for h in hs]
        inside = sum(h.inside for h in hs)
        ws = [h.winner for h in hs if h.winner]
        called = [w for w in ws if w[1] != "too close"]
        right = sum(w[0] == w[1] for w in called)
        raw = [abs(h.point.predicted.mid / h.point.measured_s - 1) for h in hs]
        print(
            f"| {label} | {len(hs)} | {stats.median(raw) * 100:.0f} % | {stats.median(errs) * 100:.0f} % | "
            f"{inside}/{len(hs)} ({inside / len(hs):.0%}) | {right}/{len(called)} | {len(ws) - len(called)} |"
        )

    print(
        "\n| framework, batch regime | points | median abs. error, model | median abs. error, calibrated (LOO) "
        "| inside the 80 % band (LOO) | winner right where called | too close (not called) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for fw in REPORTED:
        hs = [h for h in held if h.point.framework == fw]
        summary(f"{fw}, all", hs)
        summary(f"{fw}, batch ≤ {SMALL}", [h for h in hs if h.point.batch <= SMALL])
        summary(f"{fw}, batch > {SMALL}", [h for h in hs if h.point.batch > SMALL])
    summary("all frameworks", held)
    summary("all, without the tensorflow proxy", [h for h in held if h.point.framework != "tensorflow"])

    em = errormodel.fit(
        pts,
        "leave-one-out residuals of the cost model on the shared H100 reference (2026-11-22): PyTorch, "
        "Keras/JAX and Keras/torch steps measured there; TensorFlow's graph model checked against the PyTorch "
        "steps (no TensorFlow on that machine) — benchmarks/predict_validation.py",
    )
    print(
        "\nFitted on all points:",
        json.dumps(em.model_dump(mode="json")["bias"]),
        "spread:",
        {k: (round(v.q_lo, 3), round(v.q_hi, 3), v.n) for k, v in em.spread.items()},
    )
    if "--write" in argv:
        ERRORS_OUT.parent.mkdir(parents=True, exist_ok=True)
        ERRORS_OUT.write_text(errormodel.dumps(em))
        print(f"wrote {ERRORS_OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
