"""``scale`` worker for TensorFlow: ``tf.distribute.MirroredStrategy`` over N devices.

On a CPU-only machine the N devices are logical CPU devices made with
``tf.config.set_logical_device_configuration`` — how TensorFlow tests its own strategies. It must
run before TensorFlow initializes its runtime, which is why this is a process of its own
(``python -m whichdevice.frameworks.tensorflow.scale JOB OUT``, started by ``workloads/scale.py``):
the measuring child has initialized TensorFlow already. All logical CPU devices share one
intra-op thread pool (all cores): N replicas split the same cores, as N GPUs would not.

The step is TensorFlow's custom-training recipe for a strategy: the Keras model and optimizer
created in ``strategy.scope()``, one global batch split by ``experimental_distribute_dataset``,
``strategy.run`` of forward + ``GradientTape`` + ``apply_gradients`` (the gradients are
all-reduced across replicas by the strategy's cross-device ops), in one ``tf.function``.

All-reduce share: the ``allreduce`` variant times ``ReplicaContext.all_reduce(SUM)`` of tensors
shaped like the model's trainable variables, alone, on the same strategy, minus the same ``strategy.run`` call without the collective
(``allreduce_base``: its dispatch) — method ``isolated``.
"""

from __future__ import annotations

import os
import sys

from whichdevice.frameworks.common import scaleworker as sw


def _variables(tf, n: int) -> None:
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(n)])


def run(job: dict, emit: sw.Emitter) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    replicas = sorted({int(n) for n, _, _ in job["points"]})
    _variables(tf, max(replicas))
    import keras

    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    emit({"type": "hello", "devices": devices, "version": tf.__version__})
    policy = sw.timing_policy(job)
    sync = lambda _=None: tf.test.experimental.sync_devices()  # noqa: E731
    for n in replicas:
        strategy = tf.distribute.MirroredStrategy(devices=devices[:n])
        seen = int(strategy.num_replicas_in_sync)  # read back from the engine, not assumed
        for batch, variant in sw.points(job, n):

            def make(batch=batch, variant=variant):
                with strategy.scope():
                    model = sw.keras_model(job["model"])
                    optimizer = keras.optimizers.Adam(1e-3)
                    # Built here, in the strategy's scope: created lazily inside the
                    # tf.function its slots would be made in a replica context.
                    optimizer.build(model.trainable_variables)
                    loss_fn = sw.keras_loss(job["model"], reduction=None)
                metrics = {"replicas_seen": float(seen), "per_replica_batch": float(batch // n)}
                metrics["params"] = float(sum(int(tf.size(v)) for v in model.trainable_variables))
                if variant in ("allreduce", "allreduce_base"):
                    shapes = [tuple(v.shape) for v in model.trainable_variables]
                    collective = variant == "allreduce"

                    @tf.function
                    def allreduce():
                        def on_replica():
                            tensors = [tf.ones(s) for s in shapes]
                            if not collective:  # the same call, without the all-reduce
                                return tensors
                            ctx = tf.distribute.get_replica_context()
                            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, tensors)

                        return strategy.run(on_replica)

                    return allreduce, sync, metrics
                x, y = sw.data(job["model"], batch)
                ds = tf.data.Dataset.from_tensors((x, y)).repeat()
                it = iter(strategy.experimental_distribute_dataset(ds))

                @tf.function
                def train_step():
                    def on_replica(xb, yb):
                        with tf.GradientTape() as tape:
                            per_sample = loss_fn(yb, model(xb, training=True))
                            loss = tf.nn.compute_average_loss(per_sample, global_batch_size=batch)
                        grads = tape.gradient(loss, model.trainable_variables)
                        optimizer.apply_gradients(zip(grads, model.trainable_variables))
                        return loss

                    xb, yb = next(it)
                    return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(on_replica, (xb, yb)), axis=None)

                return train_step, sync, metrics

            sw.measure_point(emit, n, batch, variant, make, policy)


def main(argv: list[str]) -> int:
    return sw.start(run, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
