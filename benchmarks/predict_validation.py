"""Validate the cost model on the recorded H100 run (benchmarks/predict.md).

    python benchmarks/predict_validation.py            # uses the recorded op lists
    python benchmarks/predict_validation.py --trace    # re-traces them with TensorFlow first

1. Profile: ``deviceprofile.from_torch_probe`` on tests/data/h100_probe_torch.json — its
   ``launch``, ``transfer`` and ``matmul`` sections only (the shipped ``h100`` profile).
2. Workload: the probe's MLP written in Keras (benchmarks/predict_mlp_model.py), its train
   step traced by TensorFlow at each of the probe's batch sizes; op lists recorded in
   tests/data/h100_mlp_tf_ops.json (``--trace`` rewrites them).
3. Predict every ``mlp`` row (held out: never used by the profile) and print the errors.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "data" / "h100_probe_torch.json"
OPS = ROOT / "tests" / "data" / "h100_mlp_tf_ops.json"


def trace(batches: list[int]) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
    import numpy as np
    import tensorflow as tf

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from predict_mlp_model import build

    from whichdevice.frameworks.tensorflow import calibration, training

    out = {
        "origin": "benchmarks/predict_validation.py --trace: the Keras twin of the probe's MLP "
        f"(benchmarks/predict_mlp_model.py), train step traced by TensorFlow {tf.__version__}",
        "batches": {},
    }
    for b in batches:
        model = build()
        step = training.train_step(model, model.optimizer, model.loss)
        x = np.zeros((b, 100), np.float32)
        y = np.zeros((b,), np.int64)
        ops = calibration.describe_step(step, x, y)
        from whichdevice.workloads.calibrate import encode_ops

        out["batches"][str(b)] = encode_ops(ops, float(x.nbytes + y.nbytes))
    return out


def main(argv: list[str]) -> int:
    from whichdevice.analysis import deviceprofile
    from whichdevice.analysis.prediction import crossover_ratio, description_from_metrics, validate_on_probe

    probe = json.loads(PROBE.read_text())
    batches = [int(r["batch"]) for r in probe["mlp"]]
    if "--trace" in argv:
        OPS.write_text(json.dumps(trace(batches), indent=1) + "\n")
    recorded = json.loads(OPS.read_text())["batches"]
    described = {b: description_from_metrics(recorded[str(b)], b) for b in batches}
    profile = deviceprofile.from_torch_probe(probe, "h100", "tests/data/h100_probe_torch.json", "2026-11-22")
    v = validate_on_probe(probe["mlp"], profile, described)

    k = described[batches[0]].kernels
    print(f"Workload: {k} kernels per step ({described[batches[0]].free_ops} free graph ops), from the traced graph\n")
    print("| batch | quantity | measured ms | predicted ms [band] | error | in band | dominant |")
    print("| ---: | --- | ---: | --- | ---: | --- | --- |")
    for p in v.points:
        band = f"{p.predicted.mid * 1e3:.3f} [{p.predicted.low * 1e3:.3f}, {p.predicted.high * 1e3:.3f}]"
        print(
            f"| {p.batch} | {p.quantity} | {p.measured_s * 1e3:.3f} | {band} | {p.error * 100:+.0f} % | "
            f"{'yes' if p.inside_band else 'no'} | {p.dominant} |"
        )
    print()
    for q in ("cuda_step_s", "cuda_step_item_s", "cuda_step_from_host_s", "cpu_step_s"):
        print(f"median |error| {q}: {v.median_abs_error(q) * 100:.0f} %")
    print(f"\nmeasured crossover:  {v.measured_crossover.describe('samples')}")
    print(f"predicted crossover (predicted CPU vs predicted GPU): {v.predicted_crossover.describe('samples')}")
    r = crossover_ratio(v.predicted_crossover, v.measured_crossover)
    print(f"  ratio to measured: {r:.2f}x" if r else "  ratio: n/a")
    print(
        f"predicted crossover (measured CPU vs predicted GPU, as `predict` does): "
        f"{v.mixed_crossover.describe('samples')}"
    )
    r = crossover_ratio(v.mixed_crossover, v.measured_crossover)
    print(f"  ratio to measured: {r:.2f}x" if r else "  ratio: n/a")
    print("\n| batch | measured winner | predicted winner | bands overlap (too close) | right |")
    print("| ---: | --- | --- | --- | --- |")
    for b, mw, pw, close in v.winners:
        print(f"| {b} | {mw} | {pw} | {'yes' if close else 'no'} | {'yes' if mw == pw else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
