"""`whichdevice pitfalls`: each benchmarking mistake measured next to the correct method on
the same workload (seed 001's model), with the distortion as a ratio."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, cast

import typer

from whichdevice import frameworks
from whichdevice.cli.base import app
from whichdevice.cli import options as opt
from whichdevice.jobs import Job
from whichdevice.core.validate import (
    parse_choice,
)

if TYPE_CHECKING:
    from whichdevice.core import records
    from whichdevice.measure.journal import JournalState


QUICK_MIN_TIME_S = 0.05
MIN_TIME_S = 0.2


@dataclass
class PitfallsPlan(Job):
    """A checked `pitfalls` run: everything its cases and its record need (JSON values only),
    journaled in the header so that ``--resume`` runs the same thing."""

    framework: str


@app.command()
def pitfalls(
    ctx: typer.Context,
    device: Optional[str] = opt.device(),
    quick: bool = opt.quick(f"Shorter points ({QUICK_MIN_TIME_S:g} s of steady samples, 2 epochs): < 60 s on 2 cores."),
    min_time: Optional[str] = opt.min_time("point", MIN_TIME_S, quick=QUICK_MIN_TIME_S),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(300),
    framework: str = opt.framework("pitfalls"),
    out: Path = opt.out("the HTML report"),
    json_path: Optional[Path] = opt.json("pitfalls"),
    resume: Optional[Path] = opt.resume(),
) -> None:
    """Each timing mistake of the framework (no sync, the first epoch or step, a compile in the timing, a sync every step, num_workers=0, device_put every step, one CPU thread, tiny batch) next to the correct measurement, with the distortion as a ratio."""  # noqa: E501
    from whichdevice import jobs
    from whichdevice.cli.common import resume_if_asked

    if resume_if_asked(ctx, resume, "pitfalls", PitfallsPlan, run_pitfalls):
        return
    fw = parse_choice(framework, "--framework", frameworks.offering("pitfalls"))
    min_time_s = QUICK_MIN_TIME_S if quick else MIN_TIME_S
    fields = jobs.checked(ctx.params, "pitfalls", min_time=(min_time_s, "0.2"), case_timeout="300", png=False)
    plan = PitfallsPlan(
        framework=fw,
        **fields,
    )
    run_pitfalls(plan, None)


def _own_sessions(resumed: JournalState | None, one_thread: bool) -> JournalState | None:
    """``resumed`` with only the sessions of one of the two children (all cores, or one
    thread): each measuring call keeps its own child's session, as a fresh run has both."""
    if resumed is None:
        return None
    own = [s for s in resumed.sessions if s.cpu_threads_source.startswith("default") != one_thread]
    return dataclasses.replace(resumed, sessions=own)


def run_pitfalls(plan: PitfallsPlan, resumed: JournalState | None) -> None:
    """Measure ``plan`` (continuing ``resumed``'s journal), render it, write the record.

    The one-thread case runs in a child of its own (threads are fixed when TensorFlow starts):
    two measuring calls, all cores then one thread, into the same journal and one record."""
    from whichdevice import jobs
    from whichdevice.cli.common import find_devices, measure_with_progress, open_journal
    from whichdevice.measure import experiment
    from whichdevice.workloads import pitfalls as pitfalls_workload

    fw = plan.framework
    experiment.require_installed(fw)
    found = find_devices(fw)
    chosen = experiment.select_devices(found, plan.devices_wanted)  # a --device this machine lacks: before any journal
    journal = open_journal("pitfalls", plan, resumed)

    def cases(d, one_thread: bool):
        main_cases, one = pitfalls_workload.build_cases(fw, d.name, quick=plan.quick, is_cpu=d.kind == "cpu")
        return one if one_thread else main_cases

    options = {"quick": plan.quick, "model": "seed001"}

    def measure(*_: object, **__: object) -> records.RunRecord:
        parts = []
        for one_thread, threads in ((False, None), (True, 1)):
            if one_thread and not any(cases(d, True) for d in chosen):  # no CPU chosen: no one-thread child
                continue

            def cases_for(_found: object, d: records.DeviceInfo, o: bool = one_thread) -> list[records.CaseSpec]:
                return cases(d, o)

            request = plan.request("pitfalls", fw, cases_for, options, cpu_threads=threads)
            own = _own_sessions(resumed, one_thread)
            parts.append(measure_with_progress(request, journal=journal, resumed=own, found=found))
        return _merge(parts)

    jobs.run(plan, None, loglog=True, resumed=resumed, journal=journal, measure=measure)


def _merge(parts: list[records.RunRecord]) -> records.RunRecord:
    """One record of the two children's: the options of the all-cores one (``cpu_threads``
    None), each device's sessions and results together, in device order as a single loop
    over the devices would give them."""
    from whichdevice.measure import experiment

    merged = experiment.merge_records(parts, parts[0].options)
    order = {
        d: i for i, d in enumerate(cast("list[records.Scalar]", parts[0].options["devices"]))
    }  # a list: the plan's
    return merged.model_copy(
        update={
            "sessions": sorted(merged.sessions, key=lambda s: order.get(s.device.name, len(order))),
            "results": sorted(merged.results, key=lambda r: order.get(r.spec.device, len(order))),
        }
    )
