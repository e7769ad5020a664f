"""THE catalogue of fixes: every change whichdevice measures (or checks) and recommends.

One entry per fix declares its cases and its claim: the case parameter it changes, its baseline
and the values tried, the train kind its pairs are timed interleaved in, how it is measured, what
else its claim reads, the framework it applies to, which cases measure it and whether round 2
repeats them; and its words (title, line of code, caveat, article and anchor). Everything else
reads this list: the planners (``workloads/suite.py``, ``workloads/scriptplan.py``), the
interleaved groups (``workloads.interleave_key``), the round-2 choice and order
(``measure/session.py``), the pairing and the claims (``analysis/suite.py``), the first screen
and the fix table (``present/``). Each framework applies a fix with one adapter function named by
its key (``frameworks/<framework>/fixes.py``; ``frameworks/common/fixes.py`` for Keras). Nothing
else names a fix (CONTRIBUTING.md "How to add a fix": an entry here and its adapter). An entry's
key is spelled once, in ``core/fixkeys.py``, for the modules that may not import this one: the
records' migrations (``core/``) and the framework adapters (``frameworks/``).

It lives in ``workloads/`` because both ``analysis`` and ``measure`` read it, and the layers
contract (pyproject.toml) lets neither import the other; ``analysis/fixes.py`` re-exports it.
An entry with ``method="ab"`` is paired automatically: two ok cases whose parameters differ only
in ``param`` (``baseline`` on one side) form a claim, per sample.

Text fields are data for presenters (``present/``), with ``{b}``/``{v}`` for the baseline and
the variant value and, in a caveat, ``{r}`` for their ratio.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from whichdevice.core import fixkeys

if TYPE_CHECKING:  # the records and pydantic load where a variant is built: `--help` reads the words alone
    from pydantic import TypeAdapter

    from whichdevice.core.records import CaseSpec, Scalar, Variant

# How an entry is measured: an A/B pair of cases (``ab``), a grid of values against one
# baseline where the smallest value close to the best is recommended (``grid``), the image
# pipeline's variants (``pipeline``: per training step, else the pipeline alone), or a check
# that measures no ratio (``check``: op placement, warm-up).
Method = Literal["ab", "grid", "pipeline", "check"]
# Where a case is in the record: (workload, params) -> whether it measures this fix.
CasePredicate = Callable[[str, dict[str, Any]], bool]


@dataclass(frozen=True)
class FixEntry:
    key: str  # a short stable name: 'batch', 'prefetch', ...
    param: str  # the case parameter it changes ('' for a check)
    baseline: object  # that parameter's value before the fix (None: the run's own, e.g. the user's batch)
    method: Method
    title: str  # the fix table's row: "Increase the batch size"
    change: str  # the first screen's line: "Batch {b} → {v}"
    short: str  # in a list of names: "a larger batch"
    code: str  # the line to write ({v}: the recommended value)
    how: str  # the fix table's "how" column
    source: str  # the article it comes from (a key of present/names.SOURCES)
    anchor: str  # where the advice is documented (the anchors' docs)
    cases: CasePredicate  # the cases that measure it (both sides)
    repeat: bool  # round 2 (a fresh process) measures its cases again: a claim rests on them
    # "any", the one framework it applies to (tf.data: tensorflow), or "keras": Keras' own API
    # (model.compile options, precision policies) on any Keras framework (frameworks.KERAS)
    framework: str = "any"
    caveat: str = ""  # when the change alters training, not only its speed
    elsewhere: str = ""  # the command that measures it when a suite does not
    # The image pipeline's variants that measure it too (baseline variant, fixed variant), per
    # training step and for the pipeline alone (workloads/pipeline.py); None: not measured there.
    pipeline: tuple[str, str] | None = None
    gpu_only: bool = False  # measured on a GPU only: a run without one says "not measured here (no GPU)"
    cpu_only: bool = False  # measured on the CPU only: a plan gives a GPU device no case of it
    # The fix is a larger value of ``param`` (a larger batch): the grid's smaller values are shown
    # beside it, never its outcome (batch 8 slower than 32 is not "a larger batch is slower").
    larger: bool = False
    # --- its cases: the planners read these; a record's cases are paired by them
    values: tuple[object, ...] = ()  # the variants measured against ``baseline`` (a grid: each value)
    # The train kind whose cases of this fix are timed interleaved, one group per pair or grid
    # (workloads.interleave_key): "steady", "fit" or "loop"; "" measured alone.
    group: str = ""
    # Whether it applies to the user's model, from the pre-flight's facts (the case parameters; a
    # record keeps them as ``<framework>_<fact>`` options). None: to every model.
    applies: Callable[[dict[str, Any]], bool] | None = None
    # The variant compiles once in its warm-up: measured last, within a bound (``compile_limit_s``),
    # its compile reported as a one-time cost with its break-even (analysis/suite.compile_costs).
    compiles: bool = False
    # --- its claim: what analysis (analysis/suite.py) reads beside the pairs
    check: str = ""  # method "check": what is checked ("placement": op placement, "warmup": the first step)
    # The metric a fit case records when the framework's own default already applies the fix (then
    # its True side is no change for the user): jit_compile="auto" resolved to XLA.
    default_metric: str = ""
    # ... and in words (present/): what the default does on those devices, what it did there
    default_words: tuple[str, str] = ("", "")
    cpu_16bit: bool = False  # what this CPU's 16-bit math means for the measurement is said beside it
    # The cause of the slowness its gain measures (analysis/suite.Cause): "fixed_cost",
    # "call_overhead" (counted only without a fixed cost), "python_pipeline", "sync".
    cause: str = ""
    # A cause its change acts on though its gain does not measure that cause's share (the
    # script's measured wait for input: more DataLoader workers): "input_wait", "host_reads".
    # Where the fix's pairs are too noisy to tell, the first screen names it beside the cause,
    # never as a recommendation.
    targets: str = ""
    # --- its words (present/fixes.py): the baseline's and variant's values in words; the
    # parameter's name is then left out of the pair's line. None: the parameter and raw values.
    words: dict[str, str] | None = None
    # Only where a plan put it in the record (its cases there, or named in the plan's fixes_cut):
    # a record of another command, or one from before the fix, has no verdict on it to show.
    planned_only: bool = False
    # --- its variant (core/records.Variant): the type of ``param``'s value (a case that measures
    # the fix carries ``Variant(fix=key, value=...)`` of this type), and whether its cases also
    # name the fix in a ``fix`` parameter (a torch steady pair, the CPU thread count: the batch
    # and sync pairs' predicates leave such cases out).
    value_type: Any = None
    named: bool = False
    # --- a script's plan (workloads/scriptplan.py) sizes these cases itself, not the framework's
    # adapter: batches near the user's (the batch sweep), or the machine's CPU thread counts, each
    # set in the measuring child's environment before the import (script.threads_env) and planned
    # first on a machine busier than its cores (one thread against the contention).
    sweeps_batch: bool = False
    thread_count: bool = False
    answers_contention: bool = False

    def variant(self, value: object) -> Variant:
        """The variant of a case that measures this fix at ``value`` (either side of its pair); a
        value not of ``value_type`` (``True`` for a batch, ``"8"`` for steps_per_execution) is a
        ``TypeError``."""
        from pydantic import ValidationError

        from whichdevice.core.records import Variant

        if not self.param or self.value_type is None:
            raise TypeError(f"{self.key} is a check, not a setting a case varies")
        try:
            checked = _adapter(self.value_type).validate_python(value, strict=True)
        except ValidationError:
            raise TypeError(f"{self.key}={value!r}: the catalogue declares {self.value_type!r}") from None
        return Variant(fix=self.key, value=checked)


@cache
def _adapter(value_type: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(value_type)


_PREFETCH_DATA = ("tfdata_noprefetch", "tfdata")  # the two sides of the train-loop prefetch pair
# The train kind of the precision fix's cases (a whole fit per policy, workloads/precision.py).
PRECISION_KIND = fixkeys.PRECISION_KIND


def _p(**want: object) -> CasePredicate:
    """A predicate: the case's parameters hold these values."""
    return lambda workload, p: all(p.get(k) == v for k, v in want.items())


FIXES: tuple[FixEntry, ...] = (
    FixEntry(
        key=fixkeys.BATCH,
        value_type=int,
        param=fixkeys.BATCH,
        baseline=None,
        method="grid",
        title="Increase the batch size",
        change="Batch {b} → {v}",
        short="a larger batch",
        code="model.fit(x, y, batch_size={v})",
        how="raise the batch until samples/s stops growing",
        caveat="this changes training: scale the learning rate (×{r:.3g}, with warm-up), check accuracy",
        source="seed001",
        anchor="PyTorch profiler plugin: GPU utilisation < 0.5 → increase batch size (ANCHORS.md)",
        cases=lambda w, p: (
            w == "train" and p.get("kind") == "steady" and p.get(fixkeys.SYNC) == "none" and "fix" not in p
        ),
        repeat=True,
        larger=True,
        group="steady",
        cause="fixed_cost",
        sweeps_batch=True,
    ),
    FixEntry(
        key=fixkeys.PREFETCH,
        value_type=Literal["tfdata_noprefetch", "tfdata"],
        param="data",
        baseline="tfdata_noprefetch",
        method="ab",
        title="Use tf.data with prefetch",
        change="Prefetch the input (tf.data)",
        short="prefetch",
        code="ds = ds.map(f, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)",
        how="dataset.batch(...).prefetch(tf.data.AUTOTUNE) so input overlaps the step",
        source="seed003",
        anchor="XProf input-pipeline advice: num_parallel_calls in map(), tune prefetch (ANCHORS.md)",
        cases=lambda w, p: (
            (w == "train" and p.get("kind") == "loop" and p.get("data") in _PREFETCH_DATA)
            or (w == "pipeline" and p.get("variant") in ("serial", "prefetch"))
        ),
        pipeline=("serial", "prefetch"),
        repeat=True,
        framework="tensorflow",
        targets="input_wait",
        elsewhere="`whichdevice pipeline`",
        words={
            "tfdata_noprefetch": "tf.data without",
            "tfdata": "with prefetch",
            "serial": "serial map",
            "prefetch": "parallel map + prefetch",
        },
    ),
    FixEntry(
        key=fixkeys.PYFUNC,
        value_type=str,
        param="variant",
        baseline="pyfunc",
        method="pipeline",
        title="Reduce Python-side preprocessing",
        change="TF ops instead of tf.py_function",
        short="TF ops instead of tf.py_function",
        code="ds = ds.map(augment_in_tf_ops)  # not tf.py_function(augment, ...)",
        how="do preprocessing in TF ops inside tf.data map",
        source="seed003",
        anchor="XProf: POTENTIALLY input-bound (I/O or Python execution) (ANCHORS.md)",
        cases=lambda w, p: w == "pipeline" and p.get("variant") in ("pyfunc", "prefetch"),
        pipeline=("pyfunc", "prefetch"),
        repeat=True,
        framework="tensorflow",
        elsewhere="`whichdevice pipeline`",
        cause="python_pipeline",
        words={"pyfunc": "augmentation in tf.py_function", "prefetch": "in TF ops"},
    ),
    FixEntry(
        key=fixkeys.PLACEMENT,
        param="",
        baseline=None,
        method="check",
        title="Check that the important ops run on the GPU",
        change="Check op placement",
        short="op placement",
        code="tf.debugging.set_log_device_placement(True)",
        how="tf.debugging.set_log_device_placement(True); `whichdevice placement` for the full table",
        source="seed001",
        anchor="TensorFlow GPU performance guide: set_log_device_placement (ANCHORS.md)",
        cases=_p(kind="placement"),
        repeat=False,
        framework="tensorflow",
        elsewhere="`whichdevice placement`",
        check="placement",
    ),
    FixEntry(
        key=fixkeys.WARMUP,
        param="",
        baseline=None,
        method="check",
        title="Benchmark after warm-up",
        change="Time after warm-up",
        short="timing after warm-up",
        code="# time the steps after the first epoch, not the first steps",
        how="exclude the first steps / epoch from comparisons",
        source="seed001",
        anchor="TensorFlow GPU performance guide: avoid profiling the first few batches (ANCHORS.md)",
        cases=_p(kind="loop"),
        repeat=True,  # the loops are device-vs-device claims too (seed 001 ex2)
        check="warmup",
    ),
    FixEntry(
        key=fixkeys.STEPS_PER_EXECUTION,
        value_type=int,
        framework="keras",
        param=fixkeys.STEPS_PER_EXECUTION,
        baseline=1,
        method="grid",
        title="steps_per_execution",
        change="steps_per_execution 1 → {v}",
        short="steps_per_execution",
        code="model.compile(optimizer, loss, steps_per_execution={v})",
        how="model.compile(..., steps_per_execution=N) runs N steps per call, amortizing Python and dispatch overhead",
        caveat="callbacks and the progress bar then run once every {v} steps, not every step",
        source="seed001",
        anchor="Keras 3: steps_per_execution helps small models with large Python overhead (ANCHORS.md)",
        cases=lambda w, p: w == "train" and fixkeys.STEPS_PER_EXECUTION in p,
        repeat=True,
        values=(5, 20),
        group="fit",
        cause="call_overhead",
    ),
    FixEntry(
        key=fixkeys.JIT_COMPILE,
        value_type=bool,
        framework="keras",
        param=fixkeys.JIT_COMPILE,
        baseline=False,
        method="ab",
        title="jit_compile (XLA)",
        change="Compile the step with XLA (jit_compile)",
        short="jit_compile",
        code="model.compile(optimizer, loss, jit_compile=True)",
        how="model.compile(..., jit_compile=True) fuses ops into fewer kernels",
        caveat="each new input shape compiles again: the first steps get slower",
        source="seed001",
        anchor="Keras 3: jit_compile='auto' disables XLA on CPU-only machines (ANCHORS.md)",
        cases=lambda w, p: w == "train" and fixkeys.JIT_COMPILE in p,
        repeat=True,
        values=(True,),
        group="fit",
        default_metric="jit_compile",
        default_words=("compile with XLA by default (jit_compile='auto')", "jit_compile='auto' compiled with XLA"),
    ),
    FixEntry(
        key=fixkeys.SYNC,
        value_type=Literal["each", "none"],
        param=fixkeys.SYNC,
        baseline="each",
        method="ab",
        title="Do not read the loss back every step",
        change="Read the loss back every N steps",
        short="loss read less often",
        code="if step % 100 == 0: print(float(loss))  # not every step",
        how="avoid .numpy()/.item()/float(loss) per step; log every N steps",
        source="seed001",
        anchor="JAX dispatch is asynchronous; each read-back is a device sync (ANCHORS.md, timing methods)",
        cases=lambda w, p: w == "train" and p.get("kind") == "steady" and "fix" not in p,  # not a torch fix's pair
        repeat=True,
        group="steady",
        cause="sync",
        targets="host_reads",
        words={"each": "loss read every step", "none": "never"},
    ),
    FixEntry(
        key=fixkeys.PRECISION,
        value_type=str,
        framework="keras",
        param=fixkeys.PRECISION,
        baseline="float32",
        method="ab",
        title="Mixed precision",
        change="Mixed precision (float16)",
        short="mixed precision",
        code='keras.mixed_precision.set_global_policy("mixed_float16")',
        how="keras.mixed_precision.set_global_policy('mixed_float16')",
        caveat="keep the output layer float32; a custom loop needs keras.optimizers.LossScaleOptimizer",
        source="seed002",
        anchor="XProf overview: only X % of device compute in 16 bit when < 10 % (ANCHORS.md)",
        cases=_p(kind=PRECISION_KIND),
        repeat=True,
        elsewhere="`whichdevice train --precision mixed_float16`",
        cpu_16bit=True,
        words={},
    ),
)

# ------------------------------------------------------------------ PyTorch
# `diagnose --framework torch`: each an A/B pair on the user's nn.Module at the user's batch
# (a steady pair names its fix in ``fix``; the DataLoader pairs are loops over a loader).
# Reading the loss every step is ``sync`` above.
_TUNING_GUIDE = "PyTorch Performance Tuning Guide (pytorch.org/tutorials/recipes/recipes/tuning_guide)"


def _torch_pair(key: str) -> CasePredicate:
    """The steady A/B pair of torch fix ``key`` (both sides name it in ``fix``)."""
    return lambda w, p: w == "train" and p.get("fix") == key


def _torch(key: str, baseline: object, value: object, **entry: Any) -> FixEntry:
    """A torch fix: an A/B pair of its parameter ``key`` (``baseline`` -> ``value``), repeated in
    round 2 unless it says not; by default a steady pair at the user's batch (:func:`_torch_pair`,
    its cases naming the fix), its value of ``baseline``'s type unless it says another."""
    entry = {
        "cases": _torch_pair(key),
        "named": "cases" not in entry,
        "group": "steady",
        "repeat": True,
        "value_type": type(baseline),
        **entry,
    }
    return FixEntry(
        key=key, param=key, baseline=baseline, values=(value,), method="ab", source="", framework="torch", **entry
    )


TORCH_FIXES: tuple[FixEntry, ...] = (
    _torch(
        fixkeys.SET_TO_NONE,
        False,
        True,
        title="Free the gradients instead of zeroing them",
        change="zero_grad(set_to_none=True)",
        short="zero_grad(set_to_none=True)",
        code="optimizer.zero_grad(set_to_none=True)  # not set_to_none=False, not p.grad.zero_()",
        how="optimizer.zero_grad(set_to_none=True): no memset of every gradient each step",
        caveat="the default since PyTorch 2.0; code that reads .grad after zero_grad() then sees None, not zeros",
        anchor=f"{_TUNING_GUIDE}: use parameter.grad = None instead of model.zero_grad()",
    ),
    _torch(
        fixkeys.AUTOCAST,
        "off",
        "bfloat16",
        value_type=Literal["off", "bfloat16", "float16"],
        title="Autocast (mixed precision)",
        change="Autocast to {v}",
        short="autocast bfloat16",
        code="with torch.autocast(device.type, dtype=torch.{v}): loss = loss_fn(model(x), y)",
        how="forward and loss under torch.autocast(device.type, dtype=torch.bfloat16)",
        caveat="changes the numerics: compare the loss curve and accuracy; float16 needs torch.amp.GradScaler; "
        "a CPU without bfloat16 instructions runs it slower",
        anchor=f"{_TUNING_GUIDE}: use mixed precision and AMP",
    ),
    _torch(
        fixkeys.CHANNELS_LAST,
        False,
        True,
        title="channels_last memory format for the convolutions",
        change="channels_last memory format",
        short="channels_last",
        code="model = model.to(memory_format=torch.channels_last); x = x.to(memory_format=torch.channels_last)",
        how="the model and each 4-d batch in torch.channels_last (a model with Conv2d on image input)",
        caveat="helps convolutions only, and mostly on GPUs with tensor cores; other layers may copy back",
        anchor=f"{_TUNING_GUIDE}: use channels_last memory format for computer vision models",
        # a Conv2d in the model, on image input (a 4-d batch)
        applies=lambda user: bool(user.get("conv2d")) and len(str(user.get("input_shape", "")).split(",")) == 3,
    ),
    _torch(
        fixkeys.CUDNN_BENCHMARK,
        False,
        True,
        title="Let cuDNN pick the fastest convolution (cudnn.benchmark)",
        change="torch.backends.cudnn.benchmark = True",
        short="cudnn.benchmark",
        code="torch.backends.cudnn.benchmark = True",
        how="torch.backends.cudnn.benchmark = True before training (GPU)",
        caveat="the first step of each input shape tries every algorithm; varying shapes pay it again; "
        "results are not bit-for-bit reproducible",
        anchor=f"{_TUNING_GUIDE}: enable cuDNN auto-tuner",
        gpu_only=True,
    ),
    _torch(
        fixkeys.NUM_WORKERS,
        0,
        2,  # 2 cores here; more rarely pay on a small machine
        title="Load batches in DataLoader worker processes",
        change="Load batches in {v} DataLoader workers",
        short="DataLoader workers",
        code="DataLoader(dataset, batch_size=b, shuffle=True, num_workers={v}, persistent_workers=True)",
        how="DataLoader(..., num_workers=N, persistent_workers=True)",
        caveat="each worker is a process with its own copy of the dataset object; on few cores they compete with the step",
        targets="input_wait",
        anchor="PyTorch profiler plugin: DataLoader > 5 % of step → raise num_workers (ANCHORS.md)",
        cases=lambda w, p: (
            w == "train" and p.get("kind") == "loop" and fixkeys.NUM_WORKERS in p and fixkeys.PIN_MEMORY not in p
        ),
        group="loop",
    ),
    _torch(
        fixkeys.PIN_MEMORY,
        False,
        True,
        title="Pinned batches and non_blocking copies",
        change="pin_memory + non_blocking copies",
        short="pin_memory + non_blocking",
        code="DataLoader(..., pin_memory=True); x = x.to(device, non_blocking=True)",
        how="DataLoader(..., pin_memory=True) and .to(device, non_blocking=True) (GPU)",
        caveat="pinned host memory is locked: very large pinned batches leave less memory to the rest of the machine",
        anchor=f"{_TUNING_GUIDE}: enable async data loading and augmentation (pin_memory)",
        cases=lambda w, p: w == "train" and p.get("kind") == "loop" and fixkeys.PIN_MEMORY in p,
        group="loop",
        gpu_only=True,
    ),
    _torch(
        fixkeys.TORCH_COMPILE,
        False,
        True,
        title="Compile the model (torch.compile)",
        change="Compile the model (torch.compile)",
        short="torch.compile",
        code="model = torch.compile(model)",
        how="model = torch.compile(model); compiling is bounded by a quarter of --budget",
        caveat="the first step compiles (seconds to minutes, in the warm-up, not in this gain); a new input "
        "shape compiles again; check that the results match",
        anchor=f"{_TUNING_GUIDE}: fuse operations (torch.compile)",
        # compiled once: a second process compiles again (60-75 s of the mnist Net's 300 s budget
        # twice left round 2 one of 11 cases), so its claim rests on round 1's interleaved pair
        repeat=False,
        compiles=True,
    ),
)
FIXES = FIXES + TORCH_FIXES

# ------------------------------------------------------------------ the CPU's thread count
# A script's steps on the CPU at a thread count other than its framework's default (one thread;
# the physical cores where the default is every logical core). Each variant is a process of its
# own, its count set in the environment before the script imports the framework
# (frameworks/<fw>/env.child_env: OMP_NUM_THREADS for torch, TF_NUM_INTRAOP_THREADS for
# TensorFlow); the default side runs as the script does. Planned where the framework's
# child_env sets a thread count (not on JAX, which has none) and on the CPU only.
CPU_THREADS = FixEntry(
    key=fixkeys.CPU_THREADS,
    value_type=int | Literal["default"],
    named=True,
    cpu_only=True,
    param=fixkeys.CPU_THREADS,
    baseline="default",
    method="ab",
    title="Set the CPU thread count",
    change="CPU threads {b} → {v}",
    short="the CPU thread count",
    code="torch.set_num_threads({v})",
    how="torch.set_num_threads(n) (or OMP_NUM_THREADS=n) before training; TensorFlow: "
    "tf.config.threading.set_intra_op_parallelism_threads(n) before the first op (or TF_NUM_INTRAOP_THREADS=n)",
    caveat="measured at this machine's load: cores busy with other work favour fewer threads, idle ones more; "
    "decide on the machine that trains",
    source="",
    anchor=f"{_TUNING_GUIDE}: CPU-specific optimizations (torch.set_num_threads, OMP_NUM_THREADS)",
    cases=lambda w, p: w == "train" and fixkeys.CPU_THREADS in p,
    repeat=True,
    values=(1,),
    planned_only=True,  # diagnose SCRIPT plans it (workloads/scriptplan)
    thread_count=True,
    answers_contention=True,
)
FIXES = FIXES + (CPU_THREADS,)

BY_KEY: dict[str, FixEntry] = {f.key: f for f in FIXES}

# The entries the script plan names where it lays out a case or reads the pre-flight's facts (the
# user's batch is the batch fix's parameter, the loss never read its sync pair's other side):
# by these, not by a string of their key, so that the catalogue alone spells a fix.
BATCH = BY_KEY[fixkeys.BATCH]
SYNC = BY_KEY[fixkeys.SYNC]
STEPS_PER_EXECUTION = BY_KEY[fixkeys.STEPS_PER_EXECUTION]
NUM_WORKERS = BY_KEY[fixkeys.NUM_WORKERS]
# ... and those the rest of the package names where it reads or lays out a case's parameter, an
# option holding one, or a variant's fix (the analyses, the presenters, the commands).
JIT_COMPILE = BY_KEY[fixkeys.JIT_COMPILE]
PRECISION = BY_KEY[fixkeys.PRECISION]
PREFETCH = BY_KEY[fixkeys.PREFETCH]
PYFUNC = BY_KEY[fixkeys.PYFUNC]
PIN_MEMORY = BY_KEY[fixkeys.PIN_MEMORY]


def params_of(spec: CaseSpec) -> dict[str, Scalar]:
    """A case's parameters with its variant's, laid out as the catalogue entry says (its ``param``,
    and ``fix`` too for an entry whose cases name it): what the analysis pairs cases by, and how
    cases named their fix before they carried a variant. Without a variant: ``spec.params``."""
    v = spec.variant
    if v is None:
        return spec.params
    e = BY_KEY.get(v.fix)
    if e is None or not e.param:  # a fix this catalogue does not hold: its own name for a parameter
        return {**spec.params, v.fix: v.value}
    return {**spec.params, **({"fix": v.fix} if e.named else {}), e.param: v.value}


def entry(key: str) -> FixEntry:
    return BY_KEY[key]


def grouped(kind: str) -> tuple[str, ...]:
    """The parameters of the fixes whose cases are timed interleaved in train ``kind``'s groups."""
    return tuple(dict.fromkeys(f.param for f in FIXES if f.group == kind))


def for_framework(framework: str, kind: str) -> tuple[FixEntry, ...]:
    """The fixes of ``framework`` (its name, or "keras") measured as pairs of train ``kind`` cases."""
    return tuple(f for f in FIXES if f.framework == framework and f.group == kind)


def repeated(workload: str, params: dict[str, Any]) -> bool:
    """Whether a case measures a fix whose claims round 2 must repeat (``FixEntry.repeat``)."""
    return any(f.repeat and f.cases(workload, params) for f in FIXES)
