"""What changed between two runs, point by point: the same case (workload, framework,
device, parameters) measured twice, its ratio and whether the change is outside the noise."""

from __future__ import annotations

from dataclasses import dataclass

from whichdevice.analysis.compare import Comparison, compare
from whichdevice.core.records import RunRecord


@dataclass(frozen=True)
class PointChange:
    key: str
    label: str
    before_s: float | None
    after_s: float | None
    comparison: Comparison | None  # before vs after: ratio > 1 means faster now
    before_failure: str | None = None  # the failure kind (failures.py) where a side failed
    after_failure: str | None = None

    @property
    def failure_text(self) -> str | None:
        """What a failed side says, e.g. 'failed before (timeout), ok now'; None if both ran."""
        a, b = self.before_failure, self.after_failure
        words = lambda k: k.replace("_", " ")  # noqa: E731
        if a and b:
            return f"failed in both ({words(a)} -> {words(b)})" if a != b else f"failed in both ({words(a)})"
        if a:
            return f"failed before ({words(a)}), ran now"
        if b:
            return f"ran before, failed now ({words(b)})"
        return None


@dataclass(frozen=True)
class RunDiff:
    context: list[str]  # differences in machine, framework versions, options
    points: list[PointChange]
    only_before: list[str]
    only_after: list[str]


def _label(spec) -> str:
    return f"{spec.framework} {spec.device} {spec.workload} " + " ".join(f"{k}={v}" for k, v in spec.params.items())


def _context(a: RunRecord, b: RunRecord) -> list[str]:
    out = []
    ma, mb = a.machine, b.machine
    for field in ("hostname", "cpu_model", "cpu_cores_logical", "ram_bytes", "os", "python"):
        va, vb = getattr(ma, field), getattr(mb, field)
        if va != vb:
            out.append(f"machine {field}: {va} -> {vb}")
    fa = {f"{s.device.name}": f"{s.framework.name} {s.framework.version}" for s in a.sessions}
    fb = {f"{s.device.name}": f"{s.framework.name} {s.framework.version}" for s in b.sessions}
    for dev in sorted(set(fa) | set(fb)):
        if fa.get(dev) != fb.get(dev):
            out.append(f"{dev}: {fa.get(dev, 'not measured')} -> {fb.get(dev, 'not measured')}")
    da = {s.device.name: s.device.description for s in a.sessions}
    db = {s.device.name: s.device.description for s in b.sessions}
    for dev in sorted(set(da) & set(db)):
        if da[dev] != db[dev]:
            out.append(f"{dev} is another device: {da[dev]} -> {db[dev]}")
    for k in sorted(set(a.options) | set(b.options)):
        if a.options.get(k) != b.options.get(k):
            out.append(f"option {k}: {a.options.get(k)} -> {b.options.get(k)}")
    return out


def diff_runs(before: RunRecord, after: RunRecord) -> RunDiff:
    ra = {r.spec.key: r for r in before.results}
    rb = {r.spec.key: r for r in after.results}
    points = []
    for key in [k for k in ra if k in rb]:
        a, b = ra[key], rb[key]
        comp = None
        if a.timing is not None and b.timing is not None:
            comp = compare("before", a.timing, "after", b.timing)
        points.append(
            PointChange(
                key,
                _label(a.spec),
                a.timing.median_s if a.timing else None,
                b.timing.median_s if b.timing else None,
                comp,
                a.failure,
                b.failure,
            )
        )
    return RunDiff(
        _context(before, after),
        points,
        [_label(ra[k].spec) for k in ra if k not in rb],
        [_label(rb[k].spec) for k in rb if k not in ra],
    )
