"""What ``whichdevice.keras.StepTimer`` says about a training run: the summary printed at the
end of ``fit``, its ``repr`` and its notebook view.

In core, not present/: the callback lives in frameworks/common/steptimer.py (the training
workloads run it in their measuring children), and frameworks/ may import only core/.

The numbers are the record's own (core/records.Timing): the steady step's median and IQR/2
(docs/commands.md "How to read the matmul table"), the first step (tracing, allocation) kept apart, the
warm-up steps counted. Samples/s needs the batch size, which Keras does not hand callbacks.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from whichdevice.core.records import Timing
from whichdevice.core.units import seconds

# The class every notebook fragment of whichdevice is scoped under (present/html.py's too).
SCOPE = "whichdevice-report"


@dataclass(frozen=True)
class StepSummary:
    steady_median_s: float
    steady_half_iqr_s: float
    steady_steps: int
    warmup_steps: int
    first_step_s: float
    epochs: int
    batch_size: int | None
    sync: bool
    # The steady steps and the wall time they took (StepTimer.steady_rate): throughput is
    # steps over wall time, between-step time and slow steps included. None: 1 / the median.
    wall: tuple[int, float] | None = None

    @classmethod
    def of(
        cls,
        timing: Timing,
        *,
        epochs: int,
        batch_size: int | None,
        sync: bool,
        wall: tuple[int, float] | None = None,
    ) -> StepSummary:
        return cls(
            timing.median_s,
            timing.iqr_s / 2,
            len(timing.samples_s),
            len(timing.warmup_s),
            timing.first_call_s,
            epochs,
            batch_size,
            sync,
            wall,
        )

    @property
    def steps_per_s(self) -> float:
        if self.wall is not None:
            return self.wall[0] / self.wall[1]
        return 1.0 / self.steady_median_s if self.steady_median_s > 0 else float("inf")

    @property
    def samples_per_s(self) -> float | None:
        return self.batch_size * self.steps_per_s if self.batch_size else None

    @property
    def spread_pct(self) -> float:
        return 100.0 * self.steady_half_iqr_s / self.steady_median_s if self.steady_median_s > 0 else 0.0

    def rate_text(self) -> str:
        over = ", over the steady epochs' wall time" if self.wall is not None else ""
        if self.samples_per_s is not None:
            return f"{_count(self.samples_per_s)} samples/s ({_count(self.steps_per_s)} steps/s{over})"
        steps = f"{_count(self.steps_per_s)} steps/s"
        return (
            f"{steps} ({over[2:]}; pass batch_size= for samples/s)"
            if over
            else f"{steps} (pass batch_size= for samples/s)"
        )

    def first_text(self) -> str:
        ratio = self.first_step_s / self.steady_median_s if self.steady_median_s > 0 else float("inf")
        times = _count(ratio) if ratio != float("inf") else "∞"
        return f"first step {seconds(self.first_step_s)} ({times}× a steady step: tracing, allocation)"

    def lines(self) -> list[str]:
        """The end-of-fit summary: two lines."""
        warm = f"{self.warmup_steps} warm-up step{'s' if self.warmup_steps != 1 else ''} apart"
        head = (
            f"StepTimer: steady step {seconds(self.steady_median_s)} ± {seconds(self.steady_half_iqr_s)} "
            f"(median ± IQR/2, {self.spread_pct:.0f} %, {self.steady_steps} steps over {self.epochs} "
            f"epoch{'s' if self.epochs != 1 else ''}), {self.rate_text()}"
        )
        sync = (
            "device synced before each reading"
            if self.sync
            else "not synced: on a GPU this is dispatch time unless Keras synced (sync=True to be sure)"
        )
        return [head, f"  {self.first_text()}; {warm}; {sync}"]

    def short(self) -> str:
        return (
            f"steady step {seconds(self.steady_median_s)} ± {seconds(self.steady_half_iqr_s)}, "
            f"{self.rate_text().split(' (')[0]}, first step {seconds(self.first_step_s)}, "
            f"{self.warmup_steps} warm-up, {self.steady_steps} steady steps"
        )

    def html(self) -> str:
        """A fragment (no page, CSS scoped under ``SCOPE``) for a notebook."""
        rows = [
            ("steady step (median ± IQR/2)", f"{seconds(self.steady_median_s)} ± {seconds(self.steady_half_iqr_s)}"),
            ("throughput", self.rate_text()),
            ("first step", self.first_text()),
            ("steps", f"{self.warmup_steps} warm-up, {self.steady_steps} steady, {self.epochs} epochs"),
            ("device sync", "before each reading" if self.sync else "none (sync=False)"),
        ]
        body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
        return (
            f'<div class="{SCOPE}"><style>.{SCOPE} table.wd-steps {{ border-collapse: collapse; }} '
            f".{SCOPE} table.wd-steps th, .{SCOPE} table.wd-steps td {{ text-align: left; padding: 0.15rem 0.6rem; "
            f"border-bottom: 1px solid #ddd; }}</style>"
            f'<table class="wd-steps"><caption style="text-align:left;font-weight:600">StepTimer</caption>'
            f"{body}</table></div>"
        )


def _count(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}".replace(",", " ")
    return f"{x:.3g}"
