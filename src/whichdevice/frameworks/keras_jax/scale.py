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

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from whichdevice.frameworks.common import scaleworker as sw


@dataclass(frozen=True)
class _Replicas:
    """The devices of one replica count and what every point on them shares."""

    job: dict
    devices: list  # the first n of jax.devices()
    seen: int  # the replicas the distribution's mesh holds (read back from the engine)
    sync: Callable[[Any], None]


def run(job: dict, emit: sw.Emitter) -> None:
    os.environ["KERAS_BACKEND"] = "jax"
    import jax
    import keras

    # Keras' private helper (_train_step uses it): a Keras without it fails here, before any point.
    from keras.src.backend.jax.trainer import _distribute_data  # noqa: F401

    devices = jax.devices()
    emit({"type": "hello", "devices": [str(d) for d in devices], "version": jax.__version__})
    policy = sw.timing_policy(job)

    def sync(result=None) -> None:
        if result is not None:
            jax.block_until_ready(result)

    for n in sorted({int(n) for n, _, _ in job["points"]}):
        if n > len(devices):
            _emit_too_few(emit, job, n, len(devices))
            continue
        distribution = keras.distribution.DataParallel(devices=devices[:n])
        keras.distribution.set_distribution(distribution)
        replicas = _Replicas(job, devices[:n], int(distribution.device_mesh.devices.size), sync)
        for batch, variant in sw.points(job, n):
            sw.measure_point(emit, n, batch, variant, functools.partial(_make_point, replicas, batch, variant), policy)
    keras.distribution.set_distribution(None)


def _emit_too_few(emit: sw.Emitter, job: dict, n: int, have: int) -> None:
    """Every point at ``n`` replicas fails: JAX shows fewer devices."""
    for batch, variant in sw.points(job, n):
        emit(
            {
                "type": "point",
                "key": [n, batch, variant],
                "error": f"JAX shows {have} devices, {n} replicas asked",
            }
        )


def _make_point(replicas: _Replicas, batch: int, variant: str):
    """One point's (step, sync, metrics): the all-reduce alone (``allreduce``, and its
    ``allreduce_base`` without the psum) or Keras' distributed train step."""
    import numpy as np

    n = len(replicas.devices)
    model = sw.keras_model(replicas.job["model"])
    metrics = {"replicas_seen": float(replicas.seen), "per_replica_batch": float(batch // n)}
    metrics["params"] = float(sum(int(np.prod(v.shape)) for v in model.trainable_variables))
    if variant in ("allreduce", "allreduce_base"):
        return _allreduce_step(replicas.devices, model, collective=variant == "allreduce"), replicas.sync, metrics
    step, metrics["replicas_seen"] = _train_step(replicas.job, model, batch)
    return step, replicas.sync, metrics


def _allreduce_step(devices: list, model, *, collective: bool) -> Callable[[], Any]:
    """A ``psum`` over ``devices`` of arrays shaped like the model's trainable variables (without
    ``collective``: the same call adding 0.0, its dispatch); each call takes the previous output."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    n = len(devices)
    mesh = Mesh(np.array(devices), ("replica",))
    sharding = NamedSharding(mesh, P("replica"))
    held = [jax.device_put(np.ones((n, *v.shape), "float32"), sharding) for v in model.trainable_variables]
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

    return allreduce


def _train_step(job: dict, model, batch: int) -> tuple[Callable[[], Any], float]:
    """Keras' compiled JAX train step under the distribution, its state threaded through the
    calls as ``fit`` does; and the replicas the sharded batch lies on."""
    import keras
    from keras.src.backend.jax.trainer import _distribute_data

    model.compile(keras.optimizers.Adam(1e-3), sw.keras_loss(job["model"]))
    x, y = sw.data(job["model"], batch)
    model.train_on_batch(x, y)  # builds the model, optimizer and metrics under the distribution
    batch_data = _distribute_data((x, y, None))
    seen = float(len(batch_data[0].sharding.device_set))
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

    return train_step, seen


def main(argv: list[str]) -> int:
    return sw.start(run, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
