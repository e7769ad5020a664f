"""The fixes' keys: the one place each fix's name is spelled.

The catalogue (``workloads/fixes.py``) builds its entries from these names, and so does every
module that may not import it: a record's migration of an older schema (``core/records.py``,
which imports nothing else of the package) and the framework adapters (``frameworks/``, below
``workloads`` in the layers contract). A key is written to disk (a variant's ``fix``, a case
parameter, a plan's ``fixes_cut``): it never changes once a record holds it. Everything else a
fix declares (its parameter, values, words) is its catalogue entry's.
"""

from __future__ import annotations

# The grid of batch sizes; the case parameter it varies is every train case's batch size.
BATCH = "batch"
# TensorFlow's input pipeline: tf.data with prefetch, and TF ops instead of tf.py_function.
PREFETCH = "prefetch"
PYFUNC = "pyfunc"
# The checks: op placement, timing after the warm-up.
PLACEMENT = "placement"
WARMUP = "warmup"
# Keras' compile options and its precision policy.
STEPS_PER_EXECUTION = "steps_per_execution"
JIT_COMPILE = "jit_compile"
PRECISION = "precision"
# Reading the loss back every step.
SYNC = "sync"
# PyTorch's.
SET_TO_NONE = "set_to_none"
AUTOCAST = "autocast"
CHANNELS_LAST = "channels_last"
CUDNN_BENCHMARK = "cudnn_benchmark"
NUM_WORKERS = "num_workers"
PIN_MEMORY = "pin_memory"
TORCH_COMPILE = "torch_compile"
# The CPU's thread count.
CPU_THREADS = "cpu_threads"

# The train kind of the precision fix's cases: a whole fit per precision policy
# (workloads/precision.py). Written in a case's parameters: its own string, not the fix's key.
PRECISION_KIND = "precision"
