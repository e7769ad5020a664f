"""Orchestrate an experiment in the parent: discover devices, run one child per device,
collect everything into one ``RunRecord``. No framework is imported in this process."""

from __future__ import annotations

from typing import Any

import dataclasses
import importlib.metadata
import importlib.util
import platform
from collections.abc import Callable
from dataclasses import dataclass, field

from whichdevice import frameworks
from whichdevice.frameworks.common import nvidia
from whichdevice.measure import runner
from whichdevice.measure.journal import Journal, JournalState
from whichdevice.core.errors import UsageError
from whichdevice.core.machine import cpu_model, describe_machine
from whichdevice.core.records import CaseResult, CaseSpec, DeviceInfo, FrameworkInfo, RunRecord, Session, now_iso
from whichdevice.core.timing import TimingPolicy


@dataclass(frozen=True)
class Discovery:
    framework: FrameworkInfo
    devices: list[DeviceInfo]
    no_gpu_reasons: list[str]
    import_s: float
    # Made by the parent without a child (:func:`discover` with ``fold=True`` on a machine with
    # no NVIDIA driver): CPU:0 only; the first measuring child reports the real one
    # (:func:`from_child`), which replaces it in the record.
    provisional: bool = False

    @property
    def gpus(self) -> list[DeviceInfo]:
        return [d for d in self.devices if d.kind == "gpu"]


class FrameworkUnavailable(Exception):
    pass


def require_installed(framework: str) -> None:
    # keras-jax needs keras and jax, ...: every module the framework imports must be there.
    for module in frameworks.REQUIRES.get(framework, (framework,)):
        if importlib.util.find_spec(module) is None:
            what = framework if module == framework else f"{module} (needed by {framework})"
            hint = frameworks.INSTALL_HINT.get(framework, "pip install " + module)
            raise UsageError("--framework", f"{what} is not installed in this Python", f"Install it: {hint}.")


def needs_discovery_child(framework: str) -> bool:
    """False where the parent can tell, without importing the framework, that only the CPU
    exists for it: numpy; or Linux without an NVIDIA driver (every GPU build of TensorFlow,
    torch and JAX this tool measures needs CUDA, and CUDA needs the driver)."""
    if framework in frameworks.CPU_ONLY:
        return False
    return not (platform.system() == "Linux" and not nvidia.driver_present())


def discover(framework: str, timeout_s: float = runner.DEFAULT_STARTUP_TIMEOUT_S, *, fold: bool = False) -> Discovery:
    """Ask a child process which devices ``framework`` sees (GPUs not hidden).

    ``fold=True`` (the measuring commands): where :func:`needs_discovery_child` is
    False, no child is started — a framework import costs 2-20 s on a small machine — and a
    provisional discovery (CPU:0) is returned; the CPU's measuring child then reports what it
    sees (``runner.Job.report_devices``) and :func:`from_child` makes the real one from it."""
    require_installed(framework)
    if fold and not needs_discovery_child(framework):
        return Discovery(
            framework=FrameworkInfo(name=framework, version=_dist_version(framework)),
            devices=[DeviceInfo(name="CPU:0", kind="cpu", description=cpu_model())],
            no_gpu_reasons=[] if framework in frameworks.CPU_ONLY else [nvidia.NO_DRIVER],
            import_s=0.0,
            provisional=True,
        )
    out = runner.run_job(runner.Job(framework, None, "discover"), case_timeout_s=timeout_s, startup_timeout_s=timeout_s)
    if out.discovery is None:
        raise FrameworkUnavailable(f"{framework} could not start: {out.error}")
    return from_child(out.discovery)


def _dist_version(framework: str) -> str:
    """The installed version of the framework's first module's distribution ("?" if unknown)."""
    module = frameworks.REQUIRES.get(framework, (framework,))[0]
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def from_child(d: dict[str, Any]) -> Discovery:
    """A discovery from a child's ``devices`` line."""
    return Discovery(
        framework=FrameworkInfo.model_validate(d["framework"]),
        devices=[DeviceInfo.model_validate(x) for x in d["devices"]],
        no_gpu_reasons=list(d["no_gpu_reasons"]),
        import_s=float(d["import_s"]),
    )


def parse_device_filter(text: str | None) -> list[str] | None:
    """``--device``: comma list of CPU, GPU, CPU:0, GPU:1 ... (case-insensitive)."""
    if text is None:
        return None
    items = [t.strip().upper() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError("--device", "is empty", "Pass e.g. --device CPU:0,GPU:0 (or leave it out for every device).")
    for it in items:
        kind, _, idx = it.partition(":")
        if kind not in ("CPU", "GPU") or (idx and not idx.isdigit()):
            raise UsageError(
                "--device",
                f"'{it}' is not a device name",
                "Use CPU, GPU, CPU:0, GPU:0 ... (see `whichdevice devices`).",
            )
    return items


def select_devices(discovery: Discovery, wanted: list[str] | None) -> list[DeviceInfo]:
    if wanted is None:
        return list(discovery.devices)
    names = [d.name for d in discovery.devices]
    chosen: list[DeviceInfo] = []
    for w in wanted:
        matches = [d for d in discovery.devices if d.name == w or (":" not in w and d.name.startswith(w + ":"))]
        if not matches:
            seen = ", ".join(names)
            hint = "; TensorFlow sees no GPU here" if w.startswith("GPU") and not discovery.gpus else ""
            raise UsageError(
                "--device",
                f"{w} does not exist on this machine (devices: {seen}){hint}",
                "Pick one of those, or leave --device out.",
            )
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def no_gpu_note(framework: str, discovery: Discovery, *, measured: bool = True) -> str | None:
    """Why ``framework`` sees no GPU (None when it sees one); ``measured``: a measuring command's
    record, which then says only the CPU was measured."""
    if discovery.gpus:
        return None
    reasons = "; ".join(discovery.no_gpu_reasons) or "unknown"
    then = ", so only the CPU was measured" if measured else ""
    return f"{framework} sees no GPU on this machine{then}. Likely reasons: {reasons}."


def run_devices(  # noqa: PLR0913 (the session's limits and callbacks, keyword-only (tests read them by name))
    framework: str,
    devices: list[DeviceInfo],
    cases_for: Callable[[DeviceInfo], list[CaseSpec]],
    *,
    policy: TimingPolicy,
    cpu_threads: int | None,
    case_timeout_s: float,
    on_result: Callable[[CaseResult], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    deadline: float | None = None,
    journal: Journal | None = None,
    resumed: JournalState | None = None,
    memory_limit_bytes: int | None = None,
    repeat_for: Callable[[list[CaseSpec]], list[str]] | None = None,
    repeat_deadline: float | None = None,
    repeat_window_s: float = 0.0,
    fresh_round_before: float | None = None,
    on_round: Callable[[CaseResult], None] | None = None,
    on_discovery: Callable[[Discovery], None] | None = None,
    while_starting: Callable[[], None] | None = None,
    warm: runner.Warm | None = None,
    expected_s: dict[str, float] | None = None,
) -> tuple[list[Session], list[CaseResult], list[str]]:
    """One child per device, one after the other (never two at once: they would compete
    for the CPU cores and distort each other's timings). ``while_starting``: see
    ``runner.run_job`` (the parent's own work while a child imports, before it measures);
    ``warm``: a child started ahead for the first device's job (``runner.start_warm``; its
    owner closes it if no job needed it); ``expected_s``: each case's expected wall seconds
    (``runner.Job.expected_s``).

    With a ``journal``, every result and session is appended to it as it arrives; with
    ``resumed`` (a journal read back), its finished cases are kept and not run again.
    """
    done = resumed.done if resumed else {}
    got = _Collected(framework, journal, on_result, list(resumed.sessions) if resumed else [])
    order: dict[str, int] = {}  # the order the cases were defined in, kept whatever was resumed
    for dev in devices:
        cases = cases_for(dev)
        order.update((c.key, i) for i, c in enumerate(cases))
        got.resumed(cases, done)
        todo = [c for c in cases if c.key not in done]
        if not todo:
            continue
        job = runner.Job(
            framework,
            dev.name,
            dev.kind,
            todo,
            cpu_threads,
            _policy_dict(policy),
            deadline,
            repeat=repeat_for(todo) if repeat_for else [],
            repeat_deadline=repeat_deadline,
            repeat_window_s=repeat_window_s,
            fresh_round_before=fresh_round_before,
            expected_s=dict(expected_s or {}),
            report_devices=on_discovery is not None,
        )
        out = runner.run_job(
            job,
            case_timeout_s=case_timeout_s,
            on_result=got.record_result,
            on_start=on_start,
            on_session=got.record_session,
            memory_limit_bytes=memory_limit_bytes,
            while_starting=while_starting,
            warm=warm,
        )
        warm = None  # the first device's only
        got.take(out, dev.name)
        if on_discovery is not None and out.discovery is not None:
            on_discovery(from_child(out.discovery))
        for r in out.rounds:  # the child's second pass (round 2), for the session to merge
            if on_round:
                on_round(r)
    got.results.sort(key=lambda r: (r.spec.device, order.get(r.spec.key, 1 << 30)))
    return got.sessions, got.results, got.notes


def _policy_dict(policy: TimingPolicy) -> dict[str, Any]:
    """The timing policy as a child's job holds it (its fields but the window)."""
    return {k: v for k, v in dataclasses.asdict(policy).items() if k != "window"}


@dataclass
class _Collected:
    """What :func:`run_devices` gathers over its devices: a session per device, the results
    and the notes; each result and new session is journaled as it arrives."""

    framework: str
    journal: Journal | None
    on_result: Callable[[CaseResult], None] | None
    sessions: list[Session]
    results: list[CaseResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def record_result(self, r: CaseResult) -> None:
        if self.journal:
            self.journal.add_result(r)
        if self.on_result:
            self.on_result(r)

    def record_session(self, s: Session) -> None:
        if self.journal and all(x.device.name != s.device.name for x in self.sessions):
            self.journal.add_session(s)

    def resumed(self, cases: list[CaseSpec], done: dict[str, CaseResult]) -> None:
        """The cases a resumed journal had finished, kept in the cases' order (each told to
        ``on_result``, not journaled again)."""
        for c in cases:
            if c.key in done:
                self.results.append(done[c.key])
                if self.on_result:
                    self.on_result(done[c.key])

    def take(self, out: runner.Outcome, device: str) -> None:
        """One device's outcome: its session (one per device), why it could not start, its results."""
        if out.session and all(x.device.name != out.session.device.name for x in self.sessions):
            self.sessions.append(out.session)
        if out.error:
            self.notes.append(f"{self.framework} on {device} could not start: {out.error}")
        self.results.extend(out.results)


def merge_records(parts: list[RunRecord], options: dict[str, Any]) -> RunRecord:
    """One record of several frameworks' records (``run --framework a,b``), side by side:
    sessions, devices seen (per framework already), results and notes of each, in order.
    The analysis groups by framework whenever a record holds more than one."""
    first = parts[0]
    notes = list(dict.fromkeys(n for p in parts for n in p.notes))
    return first.model_copy(
        update={
            "options": options,
            "sessions": [s for p in parts for s in p.sessions],
            "devices_seen": {k: v for p in parts for k, v in p.devices_seen.items()},
            "results": [r for p in parts for r in p.results],
            "no_gpu_reasons": {k: v for p in parts for k, v in p.no_gpu_reasons.items()},
            "notes": notes,
        }
    )


def make_record(
    experiment: str,
    command: list[str],
    options: dict[str, Any],
    framework: str,
    discovery: Discovery,
    sessions: list[Session],
    results: list[CaseResult],
    notes: list[str],
) -> RunRecord:
    all_notes = (
        [n for n in [no_gpu_note(framework, discovery)] if n] + frameworks.record_notes(framework, experiment) + notes
    )
    return RunRecord(
        experiment=experiment,
        command=command,
        created_at=now_iso(),
        options=options,
        machine=describe_machine(),
        sessions=sessions,
        devices_seen={framework: discovery.devices},
        results=results,
        notes=all_notes,
        no_gpu_reasons={} if discovery.gpus else {framework: list(discovery.no_gpu_reasons) or ["unknown"]},
    )
