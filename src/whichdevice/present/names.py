"""People's names for what whichdevice measures, the article each comes from (a footnote
only), and the glossary of the few terms that must stay.

The suite's cases carry the project's own parameters (``model=seed001 example=ex2``); a user
reads "small MLP, 1,000 samples, batch 10, custom training loop". Every presenter names a
workload through :func:`workload_name`; the article it reproduces goes in a footnote, from
``SOURCES``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

# The thresholds analysis/verdict.py writes into its findings; read from there, never copied.
from whichdevice import frameworks
from whichdevice.core.records import CaseSpec
from whichdevice.workloads import fixes
from whichdevice.workloads.fixes import params_of

if TYPE_CHECKING:
    from whichdevice.analysis.deviceprofile import DeviceProfile

# The case parameters of the catalogue's fixes a label names, as the catalogue spells them.
_BATCH, _SYNC, _SPE = fixes.BATCH.param, fixes.SYNC.param, fixes.STEPS_PER_EXECUTION.param
_JIT, _PRECISION = fixes.JIT_COMPILE.param, fixes.PRECISION.param
_WORKERS, _PIN = fixes.NUM_WORKERS.param, fixes.PIN_MEMORY.param

# The models the suite trains, by what they are (frameworks/common/models.py).
MODELS = {
    "seed001": "small MLP (100 inputs, 128 hidden, 10 classes)",
    "seed002": "MLP (128 inputs, 256 and 128 hidden, 1 output)",
}
SHORT_MODELS = {"seed001": "small MLP", "seed002": "3-layer MLP"}
# Why a GPU prediction could not be made (analysis/prediction.PredictReport.cannot_predict).
CANNOT_PREDICT = {
    "no_ops": "the traced step has no ops",
    "host_unmeasured": "the predicted step is all host time, which is modelled, not measured, for a jitted JAX step",
}

# Where each workload comes from: public articles (the seed workloads, not shipped).
SOURCES = {
    "seed000": "the matrix-multiplication timing of the Q&A 'Training a simple model in Tensorflow GPU slower than "
    "CPU'",
    "seed001": "the model and training loops of the post 'Why is TensorFlow GPU slower than CPU when creating and "
    "training models?'",
    "seed002": "the network of the post 'Keras Tensorflow backend slower on GPU than on CPU when training certain "
    "networks'",
    "seed003": "the image input pipeline of the post 'Why is TensorFlow Keras training slower on GPU than CPU?'",
}

_KIND = {
    "loop": "custom training loop",
    "fit": "model.fit",
    "steady": "training step",
    "create": "building the model",
    "placement": "op placement check",
    fixes.PRECISION_KIND: "model.fit",
    "callback": "model.fit with a callback",
    "describe": "op trace",  # the training step's ops traced for the no-GPU prediction (calibrate probe)
}
_DATA = {
    "numpy": "NumPy arrays",
    "tfdata": "tf.data with prefetch",
    "tfdata_noprefetch": "tf.data without prefetch",
    "tfdata_shuffle": "tf.data, shuffled",
    "loader": "DataLoader",
    "loader_pin": "DataLoader",
}
# Outside TensorFlow the seeds' tf.data input is NumPy batches (frameworks/common/keras.dataset,
# frameworks/torch/training.dataset: no tf.data, no prefetch): the words follow the framework.
_DEFAULT_DATA = "numpy"  # the seeds' default input (NumPy arrays): not named in a label
_DATA_NOT_TF = {
    "tfdata": "NumPy batches",
    "tfdata_noprefetch": "NumPy batches",
    "tfdata_shuffle": "NumPy batches, shuffled",
}
PIPELINE_VARIANTS = {
    "serial": "serial map",
    "prefetch": "parallel map + prefetch",
    "pyfunc": "augmentation in tf.py_function",
    "parallel": "parallel map",
    "cache": "cached",
}
MATMUL_MODES = {
    "steady": "back-to-back, operands on the device",
    "seed": "operands created and the result read back in each timed call",
}

GLOSSARY = {
    "input-bound": "the training step waits for the next batch of data: a faster model does not help until the "
    "input pipeline keeps up (measured as the share of each step spent waiting for input).",
    "launch-bound": "the step time stays flat as the work grows: it sits at a fixed per-step cost (Python, "
    "framework dispatch, GPU kernel launches) rather than arithmetic; larger batches or more steps per call "
    "amortize it.",
    "compute-bound": "the step time grows with the work: the arithmetic itself is the cost, which is where a GPU pays.",
    "crossover": "the size (matrix n, batch) from which one device is faster than the other.",
    "warm-up": "the first steps, which include graph tracing, kernel compilation and memory allocation; they are "
    "timed apart and never mixed into the steady figures.",
    "IQR": "interquartile range: the middle half of the samples. 'median ± IQR/2' reads as the typical time and "
    "how much it varies.",
    "95 % CI": "the range that holds the true ratio with 95 % confidence, given the samples; a change is claimed "
    "only when the whole range lies beyond the noise threshold (5 %: 1.05× faster or slower).",
    "samples/s": "training examples processed per second: the fair measure when the batch size changes.",
}


def _n(v: object) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def model_name(params: Mapping[str, object], *, short: bool = False) -> str:
    m = params.get("model")
    if params.get("example") == "user" or m == "user" or m is None and params.get("example") is None:
        return "your model"
    table = SHORT_MODELS if short else MODELS
    return table.get(str(m), str(m))


def workload_name(params: Mapping[str, object], workload: str = "train", *, framework: str | None = None) -> str:
    """'small MLP, 1,000 samples, batch 10, custom training loop' from a case's parameters;
    ``framework`` (else ``params['framework']``) words the input as that framework feeds it."""
    p = params
    framework = framework or (str(params["framework"]) if params.get("framework") else None)
    if (
        framework is not None
        and not frameworks.declared(framework, "FEEDS_TF_DATA", False)
        and params.get("data") in _DATA_NOT_TF
    ):
        p = {**params, "data": _DATA_NOT_TF[str(params["data"])]}
    fw = f"{p['framework']}: " if p.get("framework") else ""
    if workload == "matmul" or ("n" in p and "mode" in p):
        return fw + _matmul_name(p)
    if workload == "pipeline" or "variant" in p:
        return fw + _pipeline_name(p)
    if p.get("kind") == "create":
        return fw + _creation_name(p)
    return fw + ", ".join(_training_bits(p))


def _matmul_name(p: Mapping[str, object]) -> str:
    """'matrix multiply 1024×1024 (back-to-back, operands on the device)'."""
    mode = MATMUL_MODES.get(str(p.get("mode")), str(p.get("mode")))
    return f"matrix multiply {p.get('n')}×{p.get('n')} ({mode})"


_PIPELINE_PARTS = {"pipeline": "input pipeline alone", "model": "model alone", "both": "pipeline + model"}


def _pipeline_name(p: Mapping[str, object]) -> str:
    """'image input pipeline (2,000 images 64px, batch 32): parallel map + prefetch, pipeline + model'."""
    v = PIPELINE_VARIANTS.get(str(p.get("variant")), str(p.get("variant")))
    part = _PIPELINE_PARTS.get(str(p.get("part")), "")
    size = f"{_n(p['images'])} images {p.get('image_size')}px, " if "images" in p else ""
    return f"image input pipeline ({size}batch {p.get(_BATCH)}): {v}" + (f", {part}" if part else "")


def _creation_name(p: Mapping[str, object]) -> str:
    """'building the small MLP', 'cloning your model'."""
    model = model_name(p, short=True)
    op = "cloning" if p.get("op") == "clone" else "building"
    the = "" if model.startswith("your ") else "the "  # "building your model", not "the your model"
    return f"{op} {the}{model}"


def _training_bits(p: Mapping[str, object]) -> list[str]:
    """The model, its size and batch, the kind of training, then the settings that differ from the defaults."""
    bits = [model_name(p, short=True)]
    if "samples" in p:
        bits.append(f"{_n(p['samples'])} samples")
    if p.get(_BATCH):  # 0: a script's loop whose batch the pre-flight could not read
        bits.append(f"batch {_n(p[_BATCH])}")
    kind = p.get("kind") or p.get("probe")  # a calibrate probe has no kind ("None" in compare's table)
    bits.append(_KIND.get(str(kind), str(kind)))
    return bits + _setting_bits(p)


def _setting_bits(p: Mapping[str, object]) -> list[str]:
    """'tf.data with prefetch', 'steps_per_execution=8', 'jit_compile=True', 'mixed_float16', 'loss read
    back every step': only those the case sets away from the default."""
    bits = []
    if p.get("data") and p.get("data") != _DEFAULT_DATA:
        bits.append(_DATA.get(str(p["data"]), str(p["data"])))
    if _SPE in p:
        bits.append(f"{_SPE}={p[_SPE]}")
    if p.get(_JIT):  # False is Keras' default on the CPU: said only when XLA was asked for
        bits.append("jit_compile=True")
    if p.get("kind") == fixes.PRECISION_KIND and p.get(_PRECISION):
        bits.append(str(p[_PRECISION]))
    if p.get(_SYNC) == "each":
        bits.append("loss read back every step")
    if str(p.get("fix")) in p:  # one side of a torch fix's pair: 'autocast bfloat16', 'channels_last False'
        bits.append(f"{p['fix']} {p[str(p['fix'])]}")
    bits += [f"{k}={p[k]}" for k in (_WORKERS, _PIN) if k in p]  # a DataLoader variant
    return bits


def a_device(description: str) -> str:
    """'an NVIDIA H100 80GB HBM3', 'a Tesla T4': a device named with its article."""
    return ("an " if description[:1].upper() in "AEIOU" or description.upper().startswith("NVIDIA") else "a ") + (
        description
    )


def profile_words(profile: DeviceProfile, gpu: str | None) -> str:
    """A device profile as a reader knows it: the card it was measured on ('an NVIDIA H100 80GB
    HBM3'), and for a profile the user saved, the name they pass back (``--profile vm``); the
    names of the shipped profiles are file names, which say nothing on a page."""
    card = a_device(gpu) if gpu else "this machine's CPU"
    if profile.shipped:
        return card
    return f"{card} (your profile, --profile {profile.name})"


def case_name(spec: CaseSpec) -> str:
    """'tensorflow CPU:0: small MLP, batch 10, steady training step': a record's case in words."""
    return f"{spec.framework} {spec.device}: {workload_name(dict(params_of(spec)), spec.workload, framework=spec.framework)}"


# Sentences written by analysis/ still carry some of the project's own words; until each is
# data, the presenters pass them through :func:`plain` so the page speaks to people.
_PLAIN = (
    (r"\bseed ?003's augmentation\b", "the image augmentation"),
    (r"\bseed ?003's pipeline\b", "the image input pipeline"),
    (r"Input pipeline \(seed 003\)", "Image input pipeline"),
    (r"\bsteady train step of seed001\b", "small MLP training step"),
    (r"\bex2 fit\b", "small MLP, 1,000 samples, batch 10, model.fit"),
    (r"\bex2 loop\b", "small MLP, 1,000 samples, batch 10, custom loop"),
    (r"\bex3 loop\b", "small MLP, 10,000 samples, batch 32, custom loop on tf.data"),
    (r"\bseed ?002 precision\b", "3-layer MLP, batch 512, model.fit"),
    (r"\bdata tfdata_noprefetch -> tfdata\b", "tf.data without -> with prefetch"),
    (r"\bprecision float32 -> mixed_float16\b", "float32 -> mixed_float16"),
    (r"\bsync each -> none\b", "loss read every step -> never"),
    (r"\bstep of user\b", "step of your model"),
    (r"\(user (loop|fit)\)", r"(your model, \1)"),
    (r"\bseed ?001\b", "small MLP"),
    (r"\bseed ?002\b", "3-layer MLP"),
    (r"\bseed ?000\b", "matrix multiply"),
    (r"\bseed ?003\b", "image pipeline"),
    (r"\bmatmul seed\b", "matmul (operands created and read back in each timed call)"),
    (r"\bbelow the consumer's floor\b", "too fast to measure against the loop's own cost"),
)


def plain(text: str) -> str:
    """An analysis sentence in people's words (no seed numbers, no example ids)."""
    for pat, rep in _PLAIN:
        text = re.sub(pat, rep, text, flags=re.IGNORECASE)
    return text
