"""A Keras 3 callback that times every training batch and says what it found.

    from whichdevice.keras import StepTimer
    model.fit(ds, epochs=3, callbacks=[StepTimer("run.json", warmup_batches=5, sync=True, batch_size=64)])
    # prints: StepTimer: steady step 1.2 ms ± 0.1 ms (median ± IQR/2, ...), 52 000 samples/s ...
    # then: whichdevice report run.json; whichdevice compare baseline.json run.json --fail-on-regression

The method and its cost are in ``whichdevice/frameworks/common/steptimer.py`` (the same
callback the training workloads use); this module adds ``result()``.
"""

from __future__ import annotations

from whichdevice.frameworks.common import steptimer as _steptimer

__all__ = ["StepTimer"]


class StepTimer(_steptimer.StepTimer):
    __doc__ = _steptimer.StepTimer.__doc__

    def result(self):
        """The run as the Python API's result object (what ``whichdevice.load`` gives for the
        record: ``RecordResult``), without writing a file."""
        from whichdevice.api import RecordResult

        if not self.batch_times_s:
            raise ValueError("no batch was timed yet: call model.fit(..., callbacks=[timer]) first.")
        return RecordResult(self.record(), self.path if self.path is not None and self.path.exists() else None)
