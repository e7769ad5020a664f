"""The PyTorch fixes of ``diagnose --framework torch``: what each changes, its line of code and
caveat, its measured A/B pairs on the user's model, and why one was not measured.

Pure: a record in, typed data out. The pairs are ``analysis/fixes.ab_fixes`` pairs (the cases
``workloads/torch_diagnose.py`` lists differ in one parameter); the claim rule is
``analysis/significance.py``'s, as for every other fix. Reading the loss every step
(``.item()``) is the suite's own ``sync`` each/none pair (analysis/suite.py), not listed here.
"""

from __future__ import annotations

from dataclasses import dataclass

from whichdevice.analysis.fixes import FixResult, ab_fixes
from whichdevice.core.records import RunRecord


@dataclass(frozen=True)
class TorchFix:
    param: str  # the case parameter the pair varies
    baseline: object
    title: str  # what the first screen calls it when it helps
    code: str  # the line to write ({v}: the variant's value)
    caveat: str
    short: str  # its name in a list ("No clear gain: ...")
    gpu_only: bool = False


CATALOGUE: tuple[TorchFix, ...] = (
    TorchFix(
        "set_to_none",
        False,
        "Free the gradients instead of zeroing them",
        "optimizer.zero_grad(set_to_none=True)  # not set_to_none=False, not p.grad.zero_()",
        "the default since PyTorch 2.0; code that reads .grad after zero_grad() then sees None, not zeros",
        "zero_grad(set_to_none=True)",
    ),
    TorchFix(
        "autocast",
        "off",
        "Autocast to {v}",
        "with torch.autocast(device.type, dtype=torch.{v}): loss = loss_fn(model(x), y)",
        "changes the numerics: compare the loss curve and accuracy; float16 needs torch.amp.GradScaler; "
        "a CPU without bfloat16 instructions runs it slower",
        "autocast bfloat16",
    ),
    TorchFix(
        "channels_last",
        False,
        "channels_last memory format for the convolutions",
        "model = model.to(memory_format=torch.channels_last); x = x.to(memory_format=torch.channels_last)",
        "helps convolutions only, and mostly on GPUs with tensor cores; other layers may copy back",
        "channels_last",
    ),
    TorchFix(
        "torch_compile",
        False,
        "Compile the model (torch.compile)",
        "model = torch.compile(model)",
        "the first step compiles (seconds to minutes, in the warm-up, not in this gain); a new input "
        "shape compiles again; check that the results match",
        "torch.compile",
    ),
    TorchFix(
        "cudnn_benchmark",
        False,
        "Let cuDNN pick the fastest convolution (cudnn.benchmark)",
        "torch.backends.cudnn.benchmark = True",
        "the first step of each input shape tries every algorithm; varying shapes pay it again; "
        "results are not bit-for-bit reproducible",
        "cudnn.benchmark",
        gpu_only=True,
    ),
    TorchFix(
        "num_workers",
        0,
        "Load batches in {v} DataLoader workers",
        "DataLoader(dataset, batch_size=b, shuffle=True, num_workers={v}, persistent_workers=True)",
        "each worker is a process with its own copy of the dataset object; on few cores they compete with the step",
        "DataLoader workers",
    ),
    TorchFix(
        "pin_memory",
        False,
        "Pinned batches and non_blocking copies",
        "DataLoader(..., pin_memory=True); x = x.to(device, non_blocking=True)",
        "pinned host memory is locked: very large pinned batches leave less memory to the rest of the machine",
        "pin_memory + non_blocking",
        gpu_only=True,
    ),
)
BY_PARAM = {f.param: f for f in CATALOGUE}
# Reading the loss every step, for torch: the suite's sync pair (analysis/suite.py), in torch words.
ITEM_CODE = "if step % 100 == 0: print(loss.item())  # not every step"


@dataclass(frozen=True)
class TorchPair:
    fix: TorchFix
    result: FixResult


def pairs(record: RunRecord) -> list[TorchPair]:
    """Every measured A/B pair of a torch fix, in the catalogue's order."""
    train = record.model_copy(update={"results": [r for r in record.results if r.spec.workload == "train"]})
    return [TorchPair(f, r) for f in CATALOGUE for r in ab_fixes(train, f.param, f.baseline)]


def _has_gpu(record: RunRecord) -> bool:
    return any(s.device.kind == "gpu" for s in record.sessions) or any(
        r.spec.device.startswith("GPU") for r in record.results
    )


def not_measured(record: RunRecord) -> dict[str, str]:
    """The torch fixes of a torch diagnose with no measured pair, by name, with why: no GPU here,
    the model has no convolution, the case failed (its reason), or the time budget ran out."""
    if record.experiment != "diagnose" or record.options.get("framework") != "torch":
        return {}
    measured = {p.fix.param for p in pairs(record)}
    gpu = _has_gpu(record)
    out: dict[str, str] = {}
    for f in CATALOGUE:
        if f.param in measured:
            continue
        mine = [r for r in record.results if r.spec.workload == "train" and f.param in r.spec.params]
        failed = [r for r in mine if r.status == "failed"]
        if f.gpu_only and not gpu:
            why = "not measured here (no GPU)"
        elif f.param == "channels_last" and not mine:
            why = "does not apply (no Conv2d on image input)"
        elif any(r.failure == "skipped" for r in failed):
            why = "not measured (the time budget ran out: raise --budget)"
        elif failed:
            why = f"not measured ({_first_line(failed[0].error)})"
        else:
            why = "not measured"
        out[f.short] = why
    return out


def _first_line(error: str | None) -> str:
    """The error's first line, from our own words when they are in it (torch wraps the compile
    bound's TimeoutError: "InductorError: TimeoutError: torch.compile did not finish ...")."""
    line = (error or "failed").strip().splitlines()[0] if (error or "").strip() else "failed"
    own = line.find("torch.compile did not finish")
    return line[own if own >= 0 else 0 :][:120]


def recommendation_rows(record: RunRecord) -> list[tuple[TorchFix, list[FixResult], str]]:
    """Per fix of the catalogue (torch diagnose only): its measured pairs and, without any, why."""
    if record.options.get("framework") != "torch" or record.experiment != "diagnose":
        return []
    got = pairs(record)
    missing = not_measured(record)
    return [(f, [p.result for p in got if p.fix is f], missing.get(f.short, "")) for f in CATALOGUE]


def recommendations(record: RunRecord, first_order: int = 10) -> list:
    """The torch fixes as ``analysis/suite.Recommendation`` entries (the verdict's fix list,
    ``--verbose`` and the report): each fix's measured lines, or why it was not measured."""
    from whichdevice.analysis.suite import Recommendation, _fix_gains, _fix_lines

    out = []
    for i, (f, results, why) in enumerate(recommendation_rows(record)):
        out.append(
            Recommendation(
                first_order + i,
                f.title.format(v="bfloat16" if f.param == "autocast" else "N"),
                f.code.format(v="bfloat16" if f.param == "autocast" else "N"),
                bool(results),
                _fix_lines(results),
                note=why,
                gains=_fix_gains(results),
            )
        )
    return out


# The suite's recommendations that are Keras or TensorFlow settings: not a plain-torch user's.
KERAS_ONLY = (
    "Use tf.data with prefetch",
    "Reduce Python-side preprocessing",
    "Check that the important ops run on the GPU",
    "steps_per_execution",
    "jit_compile (XLA)",
    "Mixed precision",
)


def with_torch_fixes(record: RunRecord, recs: list) -> list:
    """A torch diagnose's recommendations: the suite's that apply to plain torch (batch, warm-up,
    reading the loss every step), then the PyTorch fixes. Any other record: ``recs`` unchanged."""
    if record.experiment != "diagnose" or record.options.get("framework") != "torch":
        return recs
    return [r for r in recs if r.name not in KERAS_ONLY] + recommendations(record)
