"""Environment for a PyTorch child process, decided before ``import torch``."""

from __future__ import annotations

from whichdevice.core import fixkeys

from whichdevice.frameworks.common.ladders import DATA_LOADER
from whichdevice.frameworks.common.writers import SAFETENSORS

# The trainers a script's step may run under (Lightning, the HF Trainer), declared for the parent
# (frameworks.declared): their names and the lines their users write for each fix; the capture
# records which one ran the step.
from whichdevice.frameworks.torch.trainers import TRAINERS as TRAINERS

# Whose words a report uses for this framework (frameworks.declared; default: TensorFlow's).
WORDS_FAMILY = "torch"
# More work per step, in this framework's words (frameworks.declared; default: Keras' steps_per_execution).
MORE_WORK = "CUDA graphs or torch.compile to fuse ops"

# What a report calls reading a result back to the host (frameworks.declared; default .numpy()).
READ_BACK = ".item()"
# What a script's measured wait for input is (frameworks.declared): the capture times the
# DataLoader's __next__ (default: the loop's own work between steps).
INPUT_WAIT = "waits for the next batch from its DataLoader"
# Why that wait can be missing from a record (frameworks.declared; default: none said): the
# capture times only a DataLoader's __next__.
INPUT_WAIT_UNSEEN = "no DataLoader seen"
# The capture counts host reads (.item(), .numpy(), ...), so a step with none recorded had none
# (frameworks.declared; default: not counted, a missing count is no measurement).
COUNTS_HOST_READS = True
# Where a batch fed from NumPy lives on the host before its copy (default: NumPy memory).
NUMPY_FEED = "torch.from_numpy"

# What a script's capture watches (frameworks.declared), for the line that says none was reached.
CAPTURE_WATCHES: tuple[str, ...] = ("torch optimizer.step()", "loss.backward()")
# The registry's entry for this framework (frameworks/__init__.py: what each name means).
PARTS: tuple[str, ...] = (
    "training",
    "calibration",
    "probes",
    "scale",
    "pipeline",
    "audit",
    "optrace",
    "pitfalls",
    "scriptfixes",
)
REQUIRES: tuple[str, ...] = ("torch",)
# The files torch writes from native code, which Python's audit events do not show
# (workloads/scriptwrites.py; frameworks.declared; common/writers.py): torch.save to a path,
# whose zip writer opens the file in C++, and safetensors' files, written in Rust
# (safetensors.torch.save_file and save_model, a Hugging Face model's save_pretrained, the
# Trainer's checkpoints; safetensors' numpy and flax savers call the same function).
NATIVE_WRITERS: tuple[tuple[str, str, str, str, str], ...] = (
    ("torch.serialization", "_open_zipfile_writer_file.__init__", "name", "", "file"),
    SAFETENSORS,
)
INSTALL = "pip install 'whichdevice[torch]'"
KERAS = False
# Declarations read by the parent (frameworks.declared): pitfalls time every step (a first step,
# torch.compile's own case); a script's batch variant re-batches its DataLoader; its loop gets the
# trained module's fixes (autocast, channels_last, cudnn.benchmark, torch.compile).
PITFALLS_TIMING = "eager"
# ``pitfalls``' words (frameworks.declared): how the wrong and the right figure of each mistake
# are taken in torch (frameworks/torch/pitfalls.py), and --quick's line.
PITFALLS_METHODS: dict[str, tuple[str, str]] = {
    "no_sync": ("clock read after each call, no torch.cuda.synchronize", "the same clock after a synchronize"),
    "sync_each": (".item() after every step", "one sync per block of steps"),
    "first_step": ("the first step timed alone", "median of the later steps of the same loop"),
    "compile_in_timing": (
        "100-step loop timed with torch.compile's compile in its first step",
        "the same loop's steady steps (median)",
    ),
    "device_put": ("", ""),
}
PITFALLS_QUICK = (
    "[yellow]--quick:[/yellow] 0.05 s of steady samples per point, torch.compile with "
    "backend='aot_eager' (no code generation; the full run compiles with Inductor), DataLoader passes of 512 "
    "samples (the full run: whichdevice pitfalls --framework torch)"
)
REBATCHES = "DataLoader"
# A loop with no DataLoader that slices its own batches (frameworks/torch/rebatch.py): its batch
# variant tiles the batches the step slices, inputs and targets; what the record says of that.
STEP_REBATCHED = (
    "The batch sweep re-batched the captured step, not the script: the script slices its own batches, so "
    "each batch the step sliced (inputs and targets) was tiled (its rows repeated) to the larger batch."
)
# The line a larger batch is, for such a loop (frameworks.declared; ``{v}``: the batch).
STEP_BATCH_CODE = "for i in range(0, len(X), {v}): xb, yb = X[i : i + {v}], Y[i : i + {v}]"
# A fix's line where torch's differs from the catalogue's ``code`` (frameworks.declared, by fix).
FIX_CODE: dict[str, str] = {fixkeys.BATCH: "DataLoader(dataset, batch_size={v}, shuffle=True)"}
# A fix's "how" where this framework's differs from the catalogue's (frameworks.declared, by fix).
FIX_HOW: dict[str, str] = {fixkeys.CPU_THREADS: "torch.set_num_threads(n) (or OMP_NUM_THREADS=n) before training"}
# What the pre-flight's traced step is read from, in the no-GPU answer's line (frameworks.declared;
# default: "its ops").
STEP_TRACE_WORDS = "its ATen ops"
# ``diagnose --model``'s script trains as a torch user does (frameworks.declared; default: Keras'
# compile and model.fit, workloads/modelscript.py): who, and the script's loop.
MODEL_SCRIPT_USER = "torch"
# Epochs enough for the pre-flight and every case's warm-up and timed steps: the capture ends the
# script once it has them, so a longer loop costs nothing.
MODEL_SCRIPT_EPOCHS = 1000


def model_script(prepare_args: str, batch: int | None, data: bool) -> str:
    """The script's training after its imports: ``frameworks/torch/modelscript.prepare`` (given
    ``prepare_args``, and ``batch`` for the user's ``--data``) builds the model, its loss and
    optimizer and the data; a DataLoader at ``batch`` (None: 32) over the synthetic data, or the
    user's own (re-batched to ``batch`` when given), feeds the loop."""
    size = batch or 32
    if data:
        prepare_args += f", batch={batch}" if batch is not None else ""
        loader = "loader = prepared.data  # your --data" + (f", re-batched to {size}" if batch else "")
    else:
        loader = f"loader = DataLoader(prepared.data, batch_size={size}, shuffle=True)"
    lines = [
        "import torch",
        "from torch.utils.data import DataLoader",
        "",
        "from whichdevice.frameworks.torch import modelscript",
        "",
        "# Your function builds the model (its loss and optimizer, else CrossEntropyLoss or MSELoss and Adam);",
        "# the data is drawn as diagnose draws it (or your --data is loaded).",
        f"prepared = modelscript.prepare({prepare_args})",
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
        "model, loss_fn, optimizer = prepared.model.to(device), prepared.loss_fn, prepared.optimizer",
        loader,
        "model.train()",
        f"for epoch in range({MODEL_SCRIPT_EPOCHS}):",
        "    for x, y in loader:",
        "        x, y = x.to(device), y.to(device)",
        "        optimizer.zero_grad()",
        "        loss = loss_fn(model(x), y)",
        "        loss.backward()",
        "        optimizer.step()",
        "",
    ]
    return "\n".join(lines)


# Torch's own CPU thread count without a setting: one per physical core (frameworks.declared;
# default: every logical core, as TensorFlow's). A script's thread variants leave out the count
# its default already is.
DEFAULT_CPU_THREADS = "physical"
# ``scale`` (frameworks.declared): its data-parallel engine (the record's name; the report's
# words) and how the all-reduce is isolated for N > 1 replicas: the step without gradient sync
# (DDP's no_sync), beside gradient accumulation, a fix (frameworks/torch/scale.py).
SCALE_ENGINE = "torch.nn.parallel.DistributedDataParallel (gloo)"
SCALE_ENGINE_WORDS = "torch DistributedDataParallel (gloo)"
SCALE_METHOD = "no_sync"
SCALE_VARIANTS: tuple[str, ...] = ("no_sync", "accum4")
SAYS: dict[str, str] = {
    "scale": "DDP",
    "replicas": "local processes",
    "predict": "eager ops + measured Python per step",
    "diagnose": "an nn.Module",
    "pipeline": "DataLoader",
}

NOTES: dict[str, list[str]] = {
    "train": [
        "torch: plain PyTorch (nn.Sequential, Adam, cross-entropy, as the reference's gpu_probe.py); "
        "model.fit runs and --model are Keras-only and were not run; the seeds' tf.data pipelines are "
        "replaced by numpy batches copied to the device each step (no prefetch)."
    ],
}
NOTES["run"] = NOTES["train"]
NOTES["diagnose"] = [
    "torch: your nn.Module trained by a plain loop (zero_grad, forward, loss, backward, optimizer.step), "
    "with your loss and optimizer when your function returns them (else the defaults the record's options "
    "name); without --data, synthetic numpy batches copied to the device inside each step."
]
_SEED_MLP = "torch: the small MLP as plain PyTorch (nn.Sequential, Adam, cross-entropy on logits)"
NOTES["placement"] = [
    f"{_SEED_MLP}, the batch from NumPy copied to the device inside the step and the loss read with .item() "
    "each step; traced with torch.profiler (op times) and a TorchDispatchMode over one step (op devices, "
    "copies, syncs)."
]
NOTES["pitfalls"] = [
    f"{_SEED_MLP}; model.fit's first epoch and XLA are Keras' and were not run; torch's own mistakes: the first "
    "step timed, torch.compile inside the timing, DataLoader num_workers=0."
]

# ``calibrate``: the probes that do not apply (workloads/calibrate.skipped_probes). PyTorch runs
# op by op: there is no compiled step whose per-op cost differs from the eager one.
CALIBRATE_SKIPS: tuple[str, ...] = ("graph",)
NOTES["calibrate"] = [
    "torch: no compiled-chain probe — PyTorch runs op by op, so the profile has the eager per-op "
    "dispatch only (its compiled per-op and step-call figures are not measured)."
]

# ``pipeline``: the variant ladder of this framework's input-pipeline API (parent-safe).
PIPELINE = DATA_LOADER


def child_env(device_kind: str, cpu_threads: int | None = None) -> dict[str, str]:
    """``cpu``: ``CUDA_VISIBLE_DEVICES=""`` so CUDA is never initialized (a CPU run must not
    pay for, or touch, the GPU); ``gpu`` / ``discover``: devices as they are. Threads:
    ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` (read at import) and ``torch.set_num_threads`` in
    ``placement.configure``. Without ``--cpu-threads`` torch's own default stays (one thread
    per physical core), and the record says how many that was."""
    # Keras (imported for its PyDataset by frameworks/common/batches.py) on torch, so a plain
    # torch child never imports TensorFlow, Keras' default backend: with TensorFlow's threads
    # in the process, a forked DataLoader worker hung ("DataLoader timed out after 30.0 s", the
    # corpus's MLP, every run), and it cost seconds of import for nothing.
    env: dict[str, str] = {"KERAS_BACKEND": "torch"}
    if device_kind == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif device_kind not in ("gpu", "discover"):
        raise ValueError(f"device_kind must be cpu, gpu or discover, not {device_kind!r}")
    if cpu_threads is not None:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(cpu_threads)
    return env


def _free_port() -> int:
    import socket  # here, not at the top: every command's --help reads this module

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scale_worker_envs(base: dict[str, str], replicas: int | None, max_replicas: int) -> list[dict[str, str]]:
    """``scale``'s DDP workers: one process per replica, rendezvous on a free local port."""
    assert replicas is not None
    port = str(_free_port())
    return [
        {
            **base,
            "RANK": str(r),
            "LOCAL_RANK": str(r),
            "WORLD_SIZE": str(replicas),
            "LOCAL_WORLD_SIZE": str(replicas),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
        }
        for r in range(replicas)
    ]
