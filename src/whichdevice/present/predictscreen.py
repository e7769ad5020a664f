"""The first screen of ``whichdevice predict``: the answer (would a GPU win, from which
batch, how sure), one line per batch, why, and what to run to be sure — within 25 lines at 100
columns. The full table, the calibration and the model's assumptions follow with ``--verbose``
(present/prediction.render_predict)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from whichdevice.core.records import RunRecord
from whichdevice.core.units import seconds
from whichdevice.present import names
from whichdevice.present.claims import cpu_varied_words, gpu_decide_words, gpu_decision_words
from whichdevice.present.names import CANNOT_PREDICT
from whichdevice.present.prediction import assumption_text, extrapolation_text, winner_text

if TYPE_CHECKING:
    from whichdevice.analysis.deviceprofile import DeviceProfile
    from whichdevice.analysis.prediction import PredictReport


def model_words(record: RunRecord) -> str:
    m = str(record.options.get("model") or "")
    return names.SHORT_MODELS.get(m, f"your model ({m})" if m else "the model")


def answer_lines(report: PredictReport, record: RunRecord, gpu: str) -> list[str]:
    model = model_words(record)
    if report.cannot_predict:
        return [
            f"Answer: cannot predict a GPU for {model}: {CANNOT_PREDICT[report.cannot_predict]}.",
            "        Measure it on a machine with the GPU: whichdevice train.",
        ]
    d = report.decision
    band = "calibrated 80 % band" if report.calibrated else "the model's own band, not calibrated"
    varied = cpu_varied_words(report.cpu_varied)
    return [
        f"Answer: {model}: {gpu_decision_words(d, gpu)}.",
        f"        Predicted GPU step ({band}) against the CPU measured here, not measured on the GPU.",
    ] + ([f"        {varied}"] if varied else [])


def screen_lines(report: PredictReport, record: RunRecord, profile: DeviceProfile) -> list[tuple[str, str]]:
    gpu = profile.gpu.description if profile.gpu else "the profiled GPU"
    when = record.created_at.replace("T", " ")[:16]
    out: list[tuple[str, str]] = [
        (
            "bold",
            f"whichdevice predict · {when} UTC · {record.machine.cpu_model} vs "
            f"{names.profile_words(profile, profile.gpu.description if profile.gpu else None)} (predicted)",
        )
    ]
    out += [("answer", line) for line in answer_lines(report, record, gpu)]
    out += [("", ""), ("head", "  batch   CPU step (measured, band)    GPU step (predicted, band)   winner")]
    for r in report.rows:
        cpu = "failed" if r.cpu_s is None else f"{seconds(r.cpu_s)} ({seconds(r.cpu_q1_s)}–{seconds(r.cpu_q3_s)})"
        if r.band is None or r.gpu.step is None:
            gpu_text = "cannot predict"
        else:
            gpu_text = f"{seconds(r.band.mid)} [{seconds(r.band.low)}–{seconds(r.band.high)}]"
        out.append(("", f"  {r.batch:>5}   {cpu:<28} {gpu_text:<28} {winner_text(r)}"))
    parts = [(r, step) for r in report.rows if (step := r.gpu.step) is not None and step.mid]
    if parts and (dominant := parts[-1][0].gpu.dominant) is not None:
        r, step = parts[-1]
        share = r.gpu.parts_s[dominant] / step.mid
        out += [
            ("", ""),
            ("", f"Why: at batch {r.batch} the GPU's step would be mostly {r.gpu.dominant} ({share:.0%})."),
        ]
    decide = gpu_decide_words(report.decision, command=False)
    if decide:
        out.append(("", decide))
    if report.decision.command:
        out += [("", "The run on the GPU that decides it:"), ("code", f"  {report.decision.command}")]
    if report.assumptions or report.extrapolated:
        n = len({assumption_text(a) for a in report.assumptions}) + len(
            {extrapolation_text(e) for e in report.extrapolated}
        )
        out.append(
            ("dim", f"{n} assumption{'s' if n > 1 else ''} of the model, the calibration and the kernels: --verbose.")
        )
    if report.failures:
        out.append(("warn", f"{len(report.failures)} case{'s' if len(report.failures) > 1 else ''} failed: --verbose."))
    return out


_STYLE = {"bold": "bold", "head": "bold", "answer": "bold green", "warn": "yellow", "dim": "dim"}


def render(console: Console, report: PredictReport, record: RunRecord, profile: DeviceProfile) -> None:
    from rich.markup import escape

    soft = not console.is_terminal
    for style, text in screen_lines(report, record, profile):
        st = _STYLE.get(style)
        t = escape(text)
        console.print(f"[{st}]{t}[/{st}]" if st and text else t, soft_wrap=soft or style == "code")
