"""How the placement test data was made (run on a 2-core CPU-only VM, TensorFlow 2.21.0, xprof 2.24):

    TF_CPP_MIN_LOG_LEVEL=2 python tests/data/placement/make_placement_data.py

- ``cpu_step.log``: stdout+stderr of whichdevice's placement probe, i.e. seed 001's
  ``tf.function`` train step (batch 32) with ``tf.strings.as_string``/``length`` on the loss,
  its first call with ``tf.debugging.set_log_device_placement(True)`` on from the first op;
- ``cpu_step_edges.json``: that step graph's data edges ``[src, dst, bytes|null]``;
- ``cpu_framework_op_stats.json``: XProf ``framework_op_stats`` of 10 profiled steps of it.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    from whichdevice import frameworks
    from whichdevice.frameworks.tensorflow import placement_log, profiler

    params = {"kind": "placement", "model": "seed001", "batch": 32, "string_op": True}
    probe = placement_log.run_probe("CPU:0", params)
    (HERE / "cpu_step.log").write_text(probe["log"])
    (HERE / "cpu_step_edges.json").write_text(json.dumps(probe["edges"]))

    from whichdevice.workloads.train import _Model

    fw = frameworks.load("tensorflow")
    fw.placement.configure("CPU:0", None)
    m = _Model(params)
    import whichdevice.frameworks.tensorflow.training as training
    import tempfile

    model = m.build()
    opt, loss = m.optimizer_and_loss(model)
    step = placement_log.train_step(model, opt, loss, with_string_op=True)
    x, y = m.one_batch(training, 32)
    for _ in range(3):
        step(x, y)[0].numpy()
    with tempfile.TemporaryDirectory() as tmp:
        with profiler.trace(tmp):
            for _ in range(10):
                step(x, y)[0].numpy()
        data = profiler.framework_op_stats(profiler.xplane_files(tmp)[-1])
    (HERE / "cpu_framework_op_stats.json").write_bytes(data)


if __name__ == "__main__":
    sys.exit(main())
