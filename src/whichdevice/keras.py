"""A Keras 3 callback that times every training batch and says what it found.

    from whichdevice.keras import StepTimer
    model.fit(ds, epochs=3, callbacks=[StepTimer("run.json", warmup_batches=5, sync=True, batch_size=64)])
    # prints: StepTimer: steady step 1.2 ms ± 0.1 ms (median ± IQR/2, ...), 52 000 samples/s ...
    # then: whichdevice report run.json; whichdevice compare baseline.json run.json --fail-on-regression

The method and its cost are in ``whichdevice/frameworks/common/steptimer.py`` (the same
callback the training workloads use); this module adds ``write()`` (the record, as a command
writes it), ``result()`` and ``compare()``.
"""

from __future__ import annotations

from pathlib import Path

from whichdevice.frameworks.common import steptimer as _steptimer

__all__ = ["StepTimer"]


class StepTimer(_steptimer.StepTimer):
    __doc__ = _steptimer.StepTimer.__doc__

    def write(self, path: str | Path) -> Path:
        """Write a whichdevice ``RunRecord`` (experiment ``train``) that ``whichdevice report``
        renders, through the output step every record takes (``jobs.write_record``)."""
        from whichdevice import jobs

        return jobs.write_record(self.record(), Path(path))

    def result(self):
        """The run as the Python API's result object (what ``whichdevice.load`` gives for the
        record: ``RecordResult``), without writing a file."""
        from whichdevice.api import RecordResult

        if not self.batch_times_s:
            raise ValueError("no batch was timed yet: call model.fit(..., callbacks=[timer]) first.")
        return RecordResult(self.record(), self.path if self.path is not None and self.path.exists() else None)

    def compare(self, baseline, *, threshold: float = 0.05) -> dict:
        """This run against a baseline record (a path, e.g. an earlier ``StepTimer`` record), by
        the rule ``whichdevice compare --fail-on-regression`` applies: the comparison as the JSON
        ``compare --json`` prints (``["regression"]``: True when the step is slower beyond the
        threshold; ``["points"][0]["text"]``: the claim in words).

        One process per side: the interval is the steps' own spread, not how much two runs of
        your job differ; set ``threshold`` to cover that (README "In CI")."""
        from pathlib import Path

        from whichdevice.analysis.diff import diff_runs
        from whichdevice.core import records
        from whichdevice.present.comparison import comparison_json

        if not self.batch_times_s:
            raise ValueError("no batch was timed yet: call model.fit(..., callbacks=[timer]) first.")
        if not (isinstance(threshold, (int, float)) and 0 < threshold <= 10):
            raise ValueError(f"threshold must be a relative change in (0, 10], e.g. 0.1 for 10 %, got {threshold!r}.")
        before = records.load_run(Path(baseline), "baseline")
        after = self.record()
        d = diff_runs(before, after, default_threshold=float(threshold))
        if not d.points:
            raise ValueError(
                f"the baseline {baseline} has no case of this run (its model, batch size, sync, backend or device "
                "differ): compare a StepTimer record of the same training."
            )
        here = str(self.path) if self.path is not None else "(this run)"
        return comparison_json(
            d,
            before,
            after,
            refs=(str(baseline), here),
            paths=(str(baseline), here),
            threshold=float(threshold),
            learned=0,
        )
