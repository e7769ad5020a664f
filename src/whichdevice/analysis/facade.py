"""From a saved record to what its page shows: the analysis runs here, once.

After HolisticTraceAnalysis's ``trace_analysis.py``: :func:`analyze` takes a record and
delegates to the analyzer of its experiment, returning one typed result per page kind. The
pages (present/pages/*, looked up by ``result.experiment`` in present/registry.py) only format
that result; the command that measured the record and ``whichdevice report`` both call
``analyze`` and hand its result to the page.

Every result carries the record (its machine, sessions, notes and failed cases are shown as
they are), the record's measurement warnings (analysis/quality.py), typed, and each skipped
case's own reason (``skipped``); the page words them.
"""

from __future__ import annotations

from dataclasses import dataclass

from whichdevice.analysis import calibration, deviceprofile, errormodel, placement, precision, prediction, quality
from whichdevice.analysis.pipeline import DeviceReport, analyze_pipeline, block_timed, step_jitter
from whichdevice.analysis.pitfalls import PitfallRow, analyze_pitfalls, framework_of, not_measured
from whichdevice.analysis.scale import ScaleReport, analyze_scale
from whichdevice.analysis.fixes import NotMeasured
from whichdevice.analysis.suite import SuiteVerdict, skip_reasons, suite_verdict
from whichdevice.analysis.sweep import Table, analyze_sweep
from whichdevice.analysis.train import TrainReport, analyze_training
from whichdevice.core.records import RunRecord, known
from whichdevice.workloads.fixes import BATCH


@dataclass(frozen=True)
class Analysis:
    """What every page reads: the record and its measurement warnings, typed."""

    record: RunRecord
    warnings: list[quality.TimingWarning]

    @property
    def experiment(self) -> str:
        return self.record.experiment

    @property
    def skipped(self) -> list[NotMeasured | None]:
        """Each skipped case's own reason, in the record's order (None: the time budget skipped it):
        what the notes word a skipped case with (analysis/suite.skip_reasons)."""
        return skip_reasons(self.record)


@dataclass(frozen=True)
class Suite(Analysis):
    """``run`` and ``diagnose``: the verdict (findings, fixes, causes, the GPU prediction)."""

    verdict: SuiteVerdict

    @property
    def skipped(self) -> list[NotMeasured | None]:
        return self.verdict.skipped


@dataclass(frozen=True)
class Matmul(Analysis):
    tables: list[Table]


@dataclass(frozen=True)
class Train(Analysis):
    report: TrainReport
    precision_rows: list[precision.PrecisionRow]
    cpu_16bit: precision.Cpu16Bit | None  # what the precision cases say of this CPU's 16-bit math


@dataclass(frozen=True)
class Pipeline(Analysis):
    reports: list[DeviceReport]
    block_warnings: list[quality.TimingWarning]  # of the block-timed parts only
    jitter: tuple[float, float] | None  # analysis/pipeline.step_jitter


@dataclass(frozen=True)
class Pitfalls(Analysis):
    rows: list[PitfallRow]
    framework: str  # the one the record's cases ran on
    not_measured: list[tuple[str, str]]  # (mistake, CPU device): GPU-only, said and not measured


@dataclass(frozen=True)
class Placement(Analysis):
    placements: list[placement.DevicePlacement]
    # (device, op type) -> why it ran on the CPU (analysis/placement.cpu_op_cause)
    causes: dict[tuple[str, str], placement.CpuOpCause]
    traced: list[tuple[str, placement.TracedPlacement]]  # torch and JAX: (framework, traced step) per device


@dataclass(frozen=True)
class Calibration(Analysis):
    profile: deviceprofile.DeviceProfile  # fitted from the record: what `calibrate` saves


@dataclass(frozen=True)
class Prediction(Analysis):
    profile: deviceprofile.DeviceProfile  # the one embedded in the record
    report: prediction.PredictReport


@dataclass(frozen=True)
class Scale(Analysis):
    report: ScaleReport  # each framework's verdicts: FrameworkScale.verdicts


def suite(record: RunRecord) -> Suite:
    batch = int(str(record.options.get(BATCH.param, 10))) if record.experiment == "diagnose" else 10
    v = suite_verdict(record, seed_batch=batch)
    return Suite(record, v.warnings, v)


def matmul(record: RunRecord) -> Matmul:
    return Matmul(record, quality.measurement_warnings(record), analyze_sweep(record, "n", "flops_per_call"))


def train(record: RunRecord) -> Train:
    rows = precision.precision_rows(record)
    return Train(
        record,
        quality.measurement_warnings(record),
        analyze_training(record),
        rows,
        precision.cpu_16bit(record) if rows else None,
    )


def pipeline(record: RunRecord) -> Pipeline:
    w = quality.measurement_warnings
    return Pipeline(record, w(record), analyze_pipeline(record), w(block_timed(record)), step_jitter(record))


def pitfalls(record: RunRecord) -> Pitfalls:
    w = quality.measurement_warnings(record)
    return Pitfalls(record, w, analyze_pitfalls(record), framework_of(record), not_measured(record))


def placements(record: RunRecord) -> Placement:
    cases = [
        r
        for r in record.results
        if r.status == "ok" and r.spec.params.get("kind") == "placement" and r.timing is not None
    ]
    found = [
        placement.device_placement(r.spec.device, r.metrics, known(r.timing).median_s)
        for r in cases
        if not placement.is_traced(r.metrics)
    ]
    traced = [
        (r.spec.framework, placement.traced_placement(r.spec.device, r.metrics, known(r.timing).median_s))
        for r in cases
        if placement.is_traced(r.metrics)
    ]
    causes = {
        (p.device, o.op_type): placement.cpu_op_cause(
            o.op_type, None if o.has_gpu_kernel is None else ({"GPU"} if o.has_gpu_kernel else {"CPU"})
        )
        for p in found
        for o in p.ops
    }
    return Placement(record, quality.measurement_warnings(record), found, causes, traced)


def calibrate(record: RunRecord) -> Calibration:
    """The device profile fitted from the record (a non-positive fitted value raises UsageError)."""
    return Calibration(record, [], calibration.profile_from_record(record, str(record.options.get("name") or "local")))


def predict(record: RunRecord) -> Prediction:
    prof = deviceprofile.parse(str(record.options["profile_json"]), "the record's embedded profile", "RESULT")
    return Prediction(record, [], prof, prediction.predict_report(record, prof, errormodel.shipped()))


def scale(record: RunRecord) -> Scale:
    return Scale(record, [], analyze_scale(record))


# record.experiment -> its analyzer; a record with none (a reference GPU run) is shown as it is
ANALYZERS = {
    "run": suite,
    "diagnose": suite,
    "matmul": matmul,
    "train": train,
    "pipeline": pipeline,
    "pitfalls": pitfalls,
    "placement": placements,
    "calibrate": calibrate,
    "predict": predict,
    "scale": scale,
}


def analyze(record: RunRecord) -> Analysis:
    """The record's analysis, once: the typed result its page formats."""
    analyzer = ANALYZERS.get(record.experiment)
    return Analysis(record, []) if analyzer is None else analyzer(record)
