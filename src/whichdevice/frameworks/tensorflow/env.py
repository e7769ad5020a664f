"""Environment for a TensorFlow child process, decided before ``import tensorflow``.

TensorFlow reads these once, at import / runtime initialization; setting them later has
no effect, which is why each (framework, device) gets its own process.
"""

from __future__ import annotations

from whichdevice.core import fixkeys

from whichdevice.frameworks.common.ladders import TF_DATA
from whichdevice.frameworks.common.writers import H5PY, SAFETENSORS

# ``pipeline``: the variant ladder of this framework's input-pipeline API (parent-safe).
PIPELINE = TF_DATA

# The seeds' tf.data input is fed as tf.data here (frameworks.declared; the others feed NumPy batches).
FEEDS_TF_DATA = True

# What a script's capture watches (frameworks.declared), for the line that says none was reached.
CAPTURE_WATCHES: tuple[str, ...] = (
    "keras Model.fit",
    "Model.train_on_batch",
    "tf.GradientTape + optimizer.apply_gradients or apply",
)
# The registry's entry for this framework (frameworks/__init__.py: what each name means).
PARTS: tuple[str, ...] = (
    "training",
    "calibration",
    "probes",
    "scale",
    "pipeline",
    "profiler",
    "precision",
    "placement_log",
    "audit",
    "pitfalls",
    "scriptfixes",
)
REQUIRES: tuple[str, ...] = ("tensorflow",)
# The files TensorFlow and Keras write from native code, which Python's audit events do not show
# (workloads/scriptwrites.py; frameworks.declared; common/writers.py; what the path is: ``file``,
# ``tree`` a folder the writer writes in, ``prefix`` the start of its files' names):
# - .h5 and .weights.h5 through h5py (a ModelCheckpoint, BackupAndRestore);
# - tf.io.gfile's files, written in C++ (tf.keras' CSVLogger, a GFile the script opens), and its
#   renames, copies, folders and removals: a SavedModel's saved_model.pb and a checkpoint's
#   ``checkpoint`` file are written to a temporary name and renamed in C++, tf.saved_model.save
#   and model.export make their folders there, a CheckpointManager removes old checkpoints;
# - a summary writer's event files (tf.summary.create_file_writer, Keras' TensorBoard callback,
#   the TF1 FileWriter), written by a C++ thread under the logdir it is given;
# - a checkpoint's .index and .data files (tf.train.Checkpoint.write/save, CheckpointManager,
#   a SavedModel's variables/), written by C++ ops under the prefix it is given;
# - safetensors' files (safetensors.tensorflow.save_file), written in Rust.
NATIVE_WRITERS: tuple[tuple[str, str, str, str, str], ...] = (
    H5PY,
    ("tensorflow.python.lib.io.file_io", "FileIO.__init__", "name", "mode", "file"),
    ("tensorflow.python.lib.io.file_io", "rename_v2", "src,dst", "", "tree"),
    ("tensorflow.python.lib.io.file_io", "copy_v2", "dst", "", "file"),
    ("tensorflow.python.lib.io.file_io", "create_dir_v2", "path", "", "file"),
    ("tensorflow.python.lib.io.file_io", "recursive_create_dir_v2", "path", "", "file"),
    ("tensorflow.python.lib.io.file_io", "delete_file_v2", "path", "", "file"),
    ("tensorflow.python.lib.io.file_io", "delete_recursively_v2", "path", "", "tree"),
    ("tensorflow.python.ops.gen_summary_ops", "create_summary_file_writer", "logdir", "", "tree"),
    ("tensorflow.python.summary.writer.event_file_writer", "EventFileWriter.__init__", "logdir", "", "tree"),
    ("tensorflow.python.checkpoint.checkpoint", "TrackableSaver.save", "file_prefix", "", "prefix"),
    SAFETENSORS,
)
INSTALL = "pip install 'whichdevice[tensorflow]'"
KERAS = True
# Declarations read by the parent (frameworks.declared): pitfalls time the first epoch as a whole;
# predict keeps its GPU profile's CPU.
PITFALLS_TIMING = "epochs"
PREDICT_LOCAL_CPU = False
# Why the pre-flight has no traced step of a script here, said where the no-GPU answer would be
# (frameworks.declared; default: none, the capture traces the step or says why itself).
STEP_UNTRACED = (
    "this version does not trace a TensorFlow step (neither Keras' fit nor a tf.function's graph is read for its ops)"
)
# A fix's line where TensorFlow's differs from the catalogue's ``code`` (frameworks.declared, by fix).
FIX_CODE: dict[str, str] = {
    fixkeys.CPU_THREADS: "tf.config.threading.set_intra_op_parallelism_threads({v})  # before the first op runs"
}
# A fix's "how" where TensorFlow's differs from the catalogue's (frameworks.declared, by fix): a
# page of this framework alone names its own call, not torch's.
FIX_HOW: dict[str, str] = {
    fixkeys.CPU_THREADS: "tf.config.threading.set_intra_op_parallelism_threads(n) before the first op "
    "(or TF_NUM_INTRAOP_THREADS=n)"
}
# ``scale`` (frameworks.declared): its data-parallel engine and how the all-reduce is isolated
# for N > 1 replicas: timed alone on gradient-sized tensors, and the same call without the
# collective (its dispatch).
SCALE_ENGINE = "tf.distribute.MirroredStrategy"
SCALE_METHOD = "isolated"
SCALE_VARIANTS: tuple[str, ...] = ("allreduce", "allreduce_base")
SAYS: dict[str, str] = {
    "scale": "MirroredStrategy",
    "replicas": "logical CPU devices",
    "predict": "graph ops",
    "diagnose": "a Keras model, default",
    "run": "default",
    "pipeline": "tf.data",
}


def child_env(device_kind: str, cpu_threads: int | None = None) -> dict[str, str]:
    """Variables to add to a child's environment.

    ``device_kind``: ``"cpu"`` hides every GPU (``CUDA_VISIBLE_DEVICES=-1``) so nothing is
    initialized on it and soft placement cannot move an op there; ``"gpu"`` turns on
    memory growth so the run does not grab the whole card; ``"discover"`` changes nothing
    about devices.
    """
    env = {
        # Keep TF's C++ INFO/WARNING lines out of the child's stderr (errors still show).
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    if device_kind == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = "-1"
    elif device_kind == "gpu":
        env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
    elif device_kind != "discover":
        raise ValueError(f"device_kind must be cpu, gpu or discover, not {device_kind!r}")
    if cpu_threads is not None:
        # Read by TensorFlow at runtime initialization (tensorflow/core/util/env_var.h users).
        env["TF_NUM_INTRAOP_THREADS"] = str(cpu_threads)
        env["TF_NUM_INTEROP_THREADS"] = str(cpu_threads)
    return env
