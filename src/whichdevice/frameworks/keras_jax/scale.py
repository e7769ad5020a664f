"""``scale`` worker for Keras 3 on JAX: ``keras.distribution.DataParallel`` over ``jax.devices()``.

On a CPU-only machine JAX shows N host devices only when ``XLA_FLAGS`` holds
``--xla_force_host_platform_device_count=N`` before JAX is imported; ``workloads/scale.py`` sets it
in this worker's environment (``python -m whichdevice.frameworks.keras_jax.scale JOB OUT``). The
host devices share the CPU's cores.

The step is Keras' own compiled JAX train step (``model.make_train_function()``, what ``fit``
calls each step) with the distribution set: the batch is sharded along the mesh's batch axis,
the weights replicated, and XLA's SPMD partitioner inserts the gradient all-reduce. The state is
threaded through the calls as ``fit`` does.

All-reduce share: the ``allreduce`` variant times a ``psum`` (``jax.shard_map``) of arrays shaped
like the model's trainable variables over the same devices, alone, minus the same call without
the ``psum`` (``allreduce_base``: its dispatch) — method ``isolated``; each
call takes the previous call's output, so calls are ordered as training steps are.
"""

from __future__ import annotations

import os
import sys

from whichdevice.frameworks.common import scaleworker as sw


def run(job: dict, emit: sw.Emitter) -> None:
    os.environ["KERAS_BACKEND"] = "jax"
    import jax
    import keras
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P
    from keras.src.backend.jax.trainer import _distribute_data

    devices = jax.devices()
    emit({"type": "hello", "devices": [str(d) for d in devices], "version": jax.__version__})
    policy = sw.timing_policy(job)

    def sync(result=None) -> None:
        if result is not None:
            jax.block_until_ready(result)

    for n in sorted({int(n) for n, _, _ in job["points"]}):
        if n > len(devices):
            for batch, variant in sw.points(job, n):
                emit(
                    {
                        "type": "point",
                        "key": [n, batch, variant],
                        "error": f"JAX shows {len(devices)} devices, {n} replicas asked",
                    }
                )
            continue
        distribution = keras.distribution.DataParallel(devices=devices[:n])
        keras.distribution.set_distribution(distribution)
        seen = int(distribution.device_mesh.devices.size)  # read back from the engine
        for batch, variant in sw.points(job, n):

            def make(batch=batch, variant=variant):
                model = sw.keras_model(job["model"])
                metrics = {"replicas_seen": float(seen), "per_replica_batch": float(batch // n)}
                metrics["params"] = float(sum(int(np.prod(v.shape)) for v in model.trainable_variables))
                if variant in ("allreduce", "allreduce_base"):
                    collective = variant == "allreduce"
                    mesh = Mesh(np.array(devices[:n]), ("replica",))
                    sharding = NamedSharding(mesh, P("replica"))
                    held = [
                        jax.device_put(np.ones((n, *v.shape), "float32"), sharding) for v in model.trainable_variables
                    ]
                    psum = jax.jit(
                        jax.shard_map(
                            lambda *a: [jax.lax.psum(t, "replica") / n if collective else t + 0.0 for t in a],
                            mesh=mesh,
                            in_specs=P("replica"),
                            out_specs=P("replica"),
                        )
                    )
                    state = {"arrays": held}

                    def allreduce():
                        state["arrays"] = psum(*state["arrays"])
                        return state["arrays"]

                    return allreduce, sync, metrics
                model.compile(keras.optimizers.Adam(1e-3), sw.keras_loss(job["model"]))
                x, y = sw.data(job["model"], batch)
                model.train_on_batch(x, y)  # builds the model, optimizer and metrics under the distribution
                batch_data = _distribute_data((x, y, None))
                metrics["replicas_seen"] = float(len(batch_data[0].sharding.device_set))
                model.make_train_function()
                state = {
                    "s": model._get_jax_state(
                        trainable_variables=True,
                        non_trainable_variables=True,
                        optimizer_variables=True,
                        metrics_variables=True,
                        purge_model_variables=False,
                    )
                }

                def train_step():
                    logs, state["s"] = model.train_function(state["s"], iter([batch_data]))
                    return state["s"][0]

                return train_step, sync, metrics

            sw.measure_point(emit, n, batch, variant, make, policy)
    keras.distribution.set_distribution(None)


def main(argv: list[str]) -> int:
    sw.die_with_parent()
    job, out = sw.read_job(argv)
    run(job, sw.Emitter(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
