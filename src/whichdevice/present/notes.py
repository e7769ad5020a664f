"""The notes under every page: each measurement warning (analysis/quality.py's typed
``TimingWarning``) and each failed case in words, with what it means and what to do next.

Pure formatting: which points warn, and why, is decided in analysis/quality.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from whichdevice.core.records import CaseResult, CaseSpec, RunRecord
from whichdevice.present import names
from whichdevice.present.tables import telemetry_text
from whichdevice.present.claims import modes_text
from whichdevice.workloads.fixes import params_of

if TYPE_CHECKING:
    from whichdevice.analysis.quality import TimingWarning

# Parameters that say where a user's model comes from: true, but noise in a one-line label;
# and ``example``, the project's id of a seed's example, which the model, samples and batch say.
_HIDDEN_IN_LABELS = {
    "model_file",
    "model_fn",
    "input_shape",
    "output_shape",
    "data_file",
    "data_fn",
    "label_classes",
    "example",
}


def case_label(spec: CaseSpec) -> str:
    """The case's device and parameters on one line (the notes' label)."""
    p = " ".join(
        f"{k}={names.SHORT_MODELS.get(str(v), v) if k == 'model' else v}"
        for k, v in params_of(spec).items()
        if k not in _HIDDEN_IN_LABELS and v is not None
    )
    return f"{spec.device} {p}"


def _pct(value: float, target: float) -> str:
    """``value`` as a percentage, with a decimal where the whole number would read as the
    target itself (5.4 % is outside ±5 %; "±5%" would not say so)."""
    return f"{value:.1%}" if round(value * 100) <= round(target * 100) else f"{value:.0%}"


def others_text(w: TimingWarning) -> str:
    """What other programs used while the point was measured, from its telemetry: the only
    ground for calling the machine busy (analysis/utilization.others_busy). A record from
    before this run's child processes were measured apart cannot tell them from other programs."""
    s = w.telemetry
    if s is None or s.others_cpu_cores is None:
        return ""
    who = "other programs" if s.children_cpu_cores is not None else "other programs (or this run's own child processes)"
    return f"{who} used {s.others_cpu_cores:.1f} of {s.n_cores} cores"


def busy_advice(w: TimingWarning, quiet: str) -> str:
    """Why the point spread, as far as its telemetry says: other programs kept the machine busy
    (close them), or none did (``quiet``: the point's own cause), or nothing is known."""
    s = w.telemetry
    if w.others_busy is None or s is None or s.others_cpu_cores is None:
        return f"if other programs were running, close them; else {quiet}"
    if w.others_busy:
        return f"{others_text(w)} while it ran: close them and measure again"
    own = f"; this run's own threads kept all {s.n_cores} cores busy" if s.cores_saturated == s.n_cores else ""
    return f"no other program was busy (they used {s.others_cpu_cores:.1f} of {s.n_cores} cores){own}: {quiet}"


def _round_of(w: TimingWarning) -> str:
    return f" in round {w.round_index + 1} of {w.rounds}" if w.rounds > 1 else ""


def _bimodal(w: TimingWarning) -> str:
    assert w.modes is not None
    return (
        f"bimodal between rounds ({modes_text(w.modes)}): its median describes "
        "neither; every ratio on it carries that spread"
    )


def _not_converged(w: TimingWarning) -> str:
    ci = f"±{_pct(w.value, w.threshold)}" if w.value != float("inf") else "not yet formed"
    during = f"; during it: {telemetry_text(w.telemetry)}" if w.telemetry is not None else ""
    return (
        f"did not converge — its median's 95 % interval is {ci} (target ±{w.threshold * 100:g} %) when its "
        f"{w.stop_reason} stopped it after {w.n_samples} samples{_round_of(w)}{during}; "
        + busy_advice(w, "the point varies itself: raise --min-time for more samples")
    )


def _uneven(w: TimingWarning) -> str:
    return (
        f"individual steps vary by {w.value:.0%} of the median (IQR/median > {w.threshold:.0%}{_round_of(w)}); "
        "the median is robust to it; "
        + busy_advice(w, "the steps themselves vary (input stalls, garbage collection, a slow step per epoch)")
    )


def _noisy(w: TimingWarning) -> str:
    return f"the spread is {w.value:.0%} of the median (IQR/median > {w.threshold:.0%}{_round_of(w)}); " + busy_advice(
        w, "the point is short or varies itself: raise --min-time and measure again"
    )


def _overhead(w: TimingWarning) -> str:
    return f"the harness's timer+sync cost is {w.value:.0%} of each call; this point only bounds the time from above"


_MESSAGES = {
    "bimodal": _bimodal,
    "not_converged": _not_converged,
    "uneven_steps": _uneven,
    "noisy": _noisy,
    "overhead": _overhead,
}


def warning_message(w: TimingWarning) -> str:
    """What the warning means and what to do, without the case's label."""
    return _MESSAGES[w.kind](w)


def warning_text(w: TimingWarning) -> str:
    """The warning led by its case's label."""
    return f"{case_label(w.case)}: {warning_message(w)}"


def timing_warnings(typed: list[TimingWarning]) -> list[str]:
    """analysis/quality.measurement_warnings as lines, each led by its case's label."""
    return [warning_text(w) for w in typed]


# What each failure kind (core/failures.py) means, and the next step, by the device's kind.
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


def failure_line(r: CaseResult) -> str:
    """One failed case: where (its case label), which kind of failure, the error and what to do
    (presenters put "Failed" in front)."""
    error = r.error or ""
    words = _FAILURE_WORDS.get(r.failure or "", "failed")
    said = r.failure in (None, "error") or error.lower().startswith(words)  # the error already says it
    advice = failure_advice(r.failure, r.spec.device)
    return f"{case_label(r.spec)} — {error if said else f'{words}: {error}'}" + (f" → {advice}" if advice else "")


def failures(record: RunRecord) -> list[str]:
    """One line per failed case, in the record's order."""
    return [failure_line(r) for r in record.results if r.status == "failed"]
