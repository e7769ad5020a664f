"""float32 vs Keras mixed precision on the same training run (``whichdevice train --precision``).

Kind ``precision`` of the ``train`` workload: the model is built under the case's Keras
policy (``float32``, ``mixed_float16``, ``mixed_bfloat16``) and trained with ``model.fit``;
every batch is timed by ``StepTimer(sync=True)``, the first epoch is the warm-up and the later
epochs the steady samples (as kind ``fit``). The final training loss goes into the metrics, so
speed and numerical effect are read side by side. ``mixed_float16`` gets Keras' loss scaling
automatically (``LossScaleOptimizer`` is wrapped in by ``compile``).

Metrics ``cpu_fast_bf16`` / ``cpu_fast_fp16`` (1/0) say whether this CPU has the instructions
that make 16-bit math fast (``frameworks.tensorflow.precision``); on a GPU they are about the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whichdevice.core.records import CaseSpec, Timing
    from whichdevice.core.timing import TimingPolicy
    from whichdevice.frameworks.contracts import Framework

import math


def run_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict[str, float]]:
    from whichdevice.frameworks.common.steptimer import StepTimer
    from whichdevice.core.records import scalar_int
    from whichdevice.core.steps import raw_from_steps
    from whichdevice.frameworks.common.casemodel import CaseModel
    from whichdevice.workloads.train import _steps
    from whichdevice.workloads.fixes import BATCH, PRECISION

    from whichdevice import frameworks

    training = frameworks.part(fw.name, "training")
    prec = frameworks.part(fw.name, "precision")
    p = spec.params
    m = CaseModel(p)
    n, b, epochs = scalar_int(p["samples"]), scalar_int(p[BATCH.param]), scalar_int(p["epochs"])
    name = str(p[PRECISION.param])
    if name not in prec.POLICIES:
        raise ValueError(f"unknown precision {name!r}")
    with prec.policy(name), fw.placement.scope(spec.device):
        model = m.build()
        m.compile_for_fit(model)
        inputs = m.dataset(training, n, b, str(p.get("data", "tfdata")))
        timer = StepTimer(None, warmup_batches=_steps(n, b), sync=True, batch_size=b, verbose=0, mark_steps=False)
        if isinstance(inputs, tuple):
            hist = model.fit(inputs[0], inputs[1], batch_size=b, epochs=epochs, verbose=0, callbacks=[timer])
        else:
            hist = model.fit(inputs, epochs=epochs, verbose=0, callbacks=[timer])
        compute_dtype = str(model.layers[0].dtype_policy.compute_dtype) if model.layers else name
    spe = timer.batch_epochs.count(0)
    raw = raw_from_steps(timer.batch_times_s, warmup_steps=spe, overhead_s=overhead_s)
    metrics = timer.metrics()
    losses = hist.history.get("loss", [])
    metrics["final_loss"] = float(losses[-1]) if losses else math.nan
    metrics["first_epoch_loss"] = float(losses[0]) if losses else math.nan
    fast = prec.fast_16bit(prec.cpu_flags())
    metrics["cpu_fast_bf16"] = 1.0 if fast["bfloat16"] else 0.0
    metrics["cpu_fast_fp16"] = 1.0 if fast["float16"] else 0.0
    metrics["compute_16bit"] = 1.0 if compute_dtype in ("float16", "bfloat16") else 0.0
    return raw, metrics
