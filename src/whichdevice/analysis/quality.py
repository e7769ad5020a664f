"""Measurements that flag their own problems; every warning says what to do next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from whichdevice.analysis import significance
from whichdevice.analysis.utilization import describe as describe_telemetry
from whichdevice.analysis.utilization import summarize
from whichdevice.core import stats
from whichdevice.core.records import CaseSpec, RunRecord, Timing
from whichdevice.core.stats import NOISY_REL_IQR

# Above this share of a per-call time, the harness's own timer + sync cost matters.
OVERHEAD_WARN_FRACTION = 0.05


# Parameters that say where a user's model comes from: true, but noise in a one-line label.
_HIDDEN_IN_LABELS = {"model_file", "model_fn", "input_shape", "output_shape", "data_file", "data_fn", "label_classes"}


def _label(spec: CaseSpec) -> str:
    p = " ".join(f"{k}={v}" for k, v in spec.params.items() if k not in _HIDDEN_IN_LABELS and v is not None)
    return f"{spec.device} {p}"


# A run timed step by step (one call per sample) with at least this many steps: its spread
# is the steps' own variation, which more --min-time cannot remove.
_STEP_SERIES_MIN = 10


def _is_step_series(t: Timing) -> bool:
    return t.number_per_sample == 1 and len(t.samples_s) >= _STEP_SERIES_MIN


# The kinds of measurement warning, each with its threshold's source:
# bimodal: process medians in two clusters (significance.rounds_bimodal, issue 16);
# not_converged: the point's median CI stayed wider than the target when its cap stopped it
#   (core/timing.py's precision-targeted sampling, MATLAB runperf's 5 %);
# uneven_steps / noisy: IQR/median above NOISY_REL_IQR (torch.utils.benchmark's 10 %), for a
#   step-by-step series and for block means;
# overhead: the harness's timer+sync cost above OVERHEAD_WARN_FRACTION of a call.
WarningKind = Literal["bimodal", "not_converged", "uneven_steps", "noisy", "overhead"]


@dataclass(frozen=True)
class TimingWarning:
    """One measurement that flags its own problem: what kind, on which case, the measured value
    against its threshold (both relative: 0.12 is 12 %), and the sentence for the lists."""

    kind: WarningKind
    case: CaseSpec
    value: float
    threshold: float
    message: str  # what it means and what to do, without the case's label

    @property
    def text(self) -> str:
        return f"{_label(self.case)}: {self.message}"


def measurement_warnings(record: RunRecord, rel_iqr_limit: float = NOISY_REL_IQR) -> list[TimingWarning]:
    """Bimodal rounds, unsettled points, noise (IQR/median > 10 %, torch.utils.benchmark's
    threshold) and harness overhead, typed."""
    out = []
    for r in record.results:
        t = r.timing
        if t is None:
            continue
        modes = significance.rounds_bimodal(t.rounds) if t.rounds_s else None
        if modes is not None:  # issue 16: say so instead of averaging two modes
            out.append(
                TimingWarning(
                    "bimodal",
                    r.spec,
                    modes.high / modes.low - 1,  # the relative gap between the clusters
                    significance.BIMODAL_GAP,
                    f"bimodal between rounds ({modes.describe()}): its median describes "
                    "neither; every ratio on it carries that spread",
                )
            )
        if t.stop_reason in ("time cap", "sample cap"):  # precision-targeted sampling (issue 16)
            hw = stats.median_rel_halfwidth(t.samples_s)
            ci = f"±{hw:.0%}" if hw != float("inf") else "not yet formed"
            busy = f"; during it: {describe_telemetry(summarize(t.telemetry))}" if t.telemetry is not None else ""
            out.append(
                TimingWarning(
                    "not_converged",
                    r.spec,
                    hw,
                    significance.TARGET_REL_HALFWIDTH,
                    f"did not converge — its median's 95 % interval is {ci} (target ±5 %) when its "
                    f"{t.stop_reason} stopped it after {len(t.samples_s)} samples{busy}; the machine was busy or "
                    "the point is noisy: close other programs, or raise --min-time",
                )
            )
        elif len(t.samples_s) >= 2 and t.rel_iqr > rel_iqr_limit and _is_step_series(t):
            out.append(
                TimingWarning(
                    "uneven_steps",
                    r.spec,
                    t.rel_iqr,
                    rel_iqr_limit,
                    f"individual steps vary by {t.rel_iqr:.0%} of the median (IQR/median > "
                    f"{rel_iqr_limit:.0%}); the median is robust to it, but periodic slow steps point at input "
                    "stalls, garbage collection or another busy process",
                )
            )
        elif len(t.samples_s) >= 2 and t.rel_iqr > rel_iqr_limit:
            out.append(
                TimingWarning(
                    "noisy",
                    r.spec,
                    t.rel_iqr,
                    rel_iqr_limit,
                    f"the spread is {t.rel_iqr:.0%} of the median "
                    f"(IQR/median > {rel_iqr_limit:.0%}): the machine was busy or the point is short; "
                    "close other programs or raise --min-time and measure again",
                )
            )
        per_call_overhead = t.overhead_s / t.number_per_sample
        if t.median_s > 0 and per_call_overhead / t.median_s > OVERHEAD_WARN_FRACTION:
            share = per_call_overhead / t.median_s
            out.append(
                TimingWarning(
                    "overhead",
                    r.spec,
                    share,
                    OVERHEAD_WARN_FRACTION,
                    f"the harness's timer+sync cost is {share:.0%} of each call; this point only bounds the time "
                    "from above",
                )
            )
    return out


def timing_warnings(record: RunRecord, rel_iqr_limit: float = NOISY_REL_IQR) -> list[str]:
    """:func:`measurement_warnings` as lines, each led by its case's label."""
    return [w.text for w in measurement_warnings(record, rel_iqr_limit)]


# What each failure kind (failures.py) means, and the next step, by the device's kind.
_FAILURE_WORDS = {
    "error": "error",
    "crash": "crashed",
    "timeout": "timed out",
    "out_of_memory": "out of memory",
    "not_started": "did not start",
    "skipped": "skipped",
}


def failure_advice(kind: str | None, device: str) -> str | None:
    on_gpu = device.upper().startswith("GPU")
    if kind == "out_of_memory" and on_gpu:
        return (
            "the GPU's memory ran out: lower the batch or model size, or free the GPU (another process may "
            "hold its memory: nvidia-smi)"
        )
    if kind == "out_of_memory":
        return "host memory ran out: lower the size, or raise --memory-limit if the machine has room"
    if kind == "timeout":
        return "raise --case-timeout, or lower the size"
    if kind == "crash":
        return "the process died (a native library crashed, or the OS killed it); the other cases ran in a fresh one"
    if kind == "not_started":
        return "the framework could not start on this device: check it with `whichdevice devices`"
    if kind == "skipped":
        return "raise --budget to measure it"
    return None


def failures(record: RunRecord) -> list[str]:
    """One line per failed case: where, which kind of failure, the error and what to do
    (presenters put "Failed" in front)."""
    out = []
    for r in record.results:
        if r.status != "failed":
            continue
        error = r.error or ""
        words = _FAILURE_WORDS.get(r.failure or "", "failed")
        said = r.failure in (None, "error") or error.lower().startswith(words)  # the error already says it
        advice = failure_advice(r.failure, r.spec.device)
        out.append(f"{_label(r.spec)} — {error if said else f'{words}: {error}'}" + (f" → {advice}" if advice else ""))
    return out
