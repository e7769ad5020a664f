"""Python API mirroring the command line, for scripts and notebooks.

    import whichdevice
    result = whichdevice.matmul(sizes=[100, 1000], modes=["steady"])
    result              # in a notebook: the HTML report, plots inlined
    print(result)       # the crossover per mode
    result.save("out")  # JSON record + PNG + HTML, like the CLI

Bad arguments raise ``whichdevice.UsageError`` (a ValueError) naming the argument and the
fix, exactly as the CLI reports them. Measurements run in child processes, as in the CLI.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import sys
import tempfile
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from whichdevice.measure import experiment, session
from whichdevice.core import records
from whichdevice.core import process as _process
from whichdevice.core.errors import UsageError
from whichdevice.analysis import facade
from whichdevice.analysis.sweep import Table, analyze_sweep
from whichdevice import frameworks
from whichdevice.jobs import Job
from whichdevice.measure.journal import Journal, JournalState
from whichdevice.present import html, output, plots, summary
from whichdevice.present.claims import crossover_text
from whichdevice.present.progress import ApiProgress
from whichdevice.present.suitepage import SuiteReport, fix_grid, suite_report  # noqa: F401 (the API's names)
from whichdevice.analysis.suite import SuiteVerdict
from whichdevice.present.pages.matmul import matmul_report  # noqa: F401 (the API's name)
from whichdevice.workloads.suite import parse_budget, suite_cases, user_cases
from whichdevice.core.records import CaseResult, RunRecord
from whichdevice.core.validate import (
    parse_choice,
    parse_choice_list,
    parse_int_list,
    parse_memory_limit,
    parse_positive_float,
    parse_positive_int,
    parse_shape,
)
from whichdevice.workloads import matmul as matmul_workload

if typing.TYPE_CHECKING:
    from whichdevice.workloads.userfile import UserFunction

MAX_MATMUL_N = 32768  # two float32 operands + result = 12 GiB: beyond that, not a laptop question


def _stops_children_on_interrupt(fn):
    """Ctrl-C (KeyboardInterrupt) in an API call: every measuring child this process started
    is killed with its group before the interrupt reaches the caller (issue 18) — a notebook
    that catches it keeps no child measuring in the background."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            _process.kill_all()
            raise

    return call


@typing.overload
def _csv(values: None) -> None: ...
@typing.overload
def _csv(values: str | Sequence) -> str: ...
@typing.overload
def _csv(values: str | Sequence | None) -> str | None: ...
def _csv(values: str | Sequence | None) -> str | None:
    if values is None or isinstance(values, str):
        return values
    return ",".join(str(v) for v in values)


@typing.overload
def _opt_str(value: None) -> None: ...
@typing.overload
def _opt_str(value: str | float) -> str: ...
@typing.overload
def _opt_str(value: object) -> str | None: ...
def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class MatmulOptions:
    """Checked options of a matmul sweep (the CLI and the API build the same thing)."""

    framework: str
    sizes: list[int]
    modes: list[str]
    dtype: str
    devices: list[str] | None
    min_time_s: float
    quick: bool
    cpu_threads: int | None
    case_timeout_s: float
    memory_limit_bytes: int | None = None  # None: the runner's default (90 % of RAM)

    def __post_init__(self) -> None:
        # ``matmul --resume`` builds this from a journal's header: a damaged or forged one is one
        # line naming --resume, not a TypeError in the middle of a run (issue 18).
        def count(v, lo=1):
            return isinstance(v, int) and not isinstance(v, bool) and v >= lo

        def seconds(v):
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0

        def words(v):
            return isinstance(v, list) and all(isinstance(x, str) for x in v)

        ok = (
            isinstance(self.framework, str)
            and isinstance(self.sizes, list)
            and bool(self.sizes)
            and all(count(n) and n <= MAX_MATMUL_N for n in self.sizes)
            and words(self.modes)
            and isinstance(self.dtype, str)
            and (self.devices is None or words(self.devices))
            and seconds(self.min_time_s)
            and isinstance(self.quick, bool)
            and (self.cpu_threads is None or count(self.cpu_threads))
            and seconds(self.case_timeout_s)
            and (self.memory_limit_bytes is None or count(self.memory_limit_bytes))
        )
        if not ok:
            raise UsageError(
                "--resume",
                "the journal holds matmul options this version of whichdevice cannot read",
                "Start a new run.",
            )

    @classmethod
    def parse(
        cls,
        *,
        sizes=None,
        modes="steady,seed",
        dtype="float32",
        devices=None,
        quick=False,
        min_time_s=None,
        cpu_threads=None,
        case_timeout_s=900,
        framework="tensorflow",
        memory_limit_gib=None,
    ) -> MatmulOptions:
        fw = parse_choice(str(framework), "--framework", frameworks.offering("matmul"))
        size_list = parse_int_list(_csv(sizes), "--sizes", maximum=MAX_MATMUL_N, example="100,1000,4000")
        if size_list is None:
            size_list = list(matmul_workload.QUICK_SIZES if quick else matmul_workload.SEED_SIZES)
        return cls(
            framework=fw,
            sizes=size_list,
            modes=parse_choice_list(_csv(modes), "--mode", matmul_workload.MODES),
            dtype=parse_choice(str(dtype), "--dtype", matmul_workload.DTYPES),
            devices=experiment.parse_device_filter(_csv(devices)),
            min_time_s=parse_positive_float(_opt_str(min_time_s), "--min-time", "0.2") or MATMUL_MIN_TIME_S,
            quick=bool(quick),
            cpu_threads=parse_positive_int(_opt_str(cpu_threads), "--cpu-threads", "4"),
            case_timeout_s=parse_positive_float(_opt_str(case_timeout_s), "--case-timeout", "900"),
            memory_limit_bytes=parse_memory_limit(_opt_str(memory_limit_gib)),
        )


# Issue 21, item 3: a point samples at least this long, then stops as soon as its median's 95 %
# CI is within 5 % (core/timing.py) — a steady matmul point converges in ~0.05 s here; before,
# every point paid a fixed 0.2 s. A point that does not converge samples up to the cap.
MATMUL_MIN_TIME_S = 0.05
MATMUL_POINT_CAP_S = 1.0


def run_matmul(
    opts: MatmulOptions,
    *,
    on_start: Callable[[str], None] | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    journal_to: Path | None = None,
    journal_header: dict | None = None,
    resumed: JournalState | None = None,
    command: list[str] | None = None,
) -> RunRecord:
    """Discover devices, run the sweep (one child per device), return the record.

    ``journal_to``: append every finished case there (created once devices are known,
    or continued when ``resumed`` holds what an interrupted run had finished). ``command``:
    the record's command line (default: this process's)."""
    journal = None
    if journal_to is not None:  # created once the devices are checked (bad input: nothing written)

        def journal() -> Journal:
            return (
                Journal(journal_to)
                if resumed
                else Journal.create(
                    journal_to, {"experiment": "matmul", "options": dataclasses.asdict(opts), **(journal_header or {})}
                )
            )

    options = {"sizes": opts.sizes, "modes": opts.modes, "dtype": opts.dtype, "quick": opts.quick}
    job = Job(
        json_file=str(journal_to or ""),
        command=command or ["whichdevice", *sys.argv[1:]],
        devices_wanted=opts.devices,
        min_time_s=opts.min_time_s,
        cpu_threads=opts.cpu_threads,
        case_timeout_s=opts.case_timeout_s,
        memory_limit_bytes=opts.memory_limit_bytes,
    )
    request = job.request(
        "matmul",
        opts.framework,
        lambda found, d: matmul_workload.build_cases(opts.framework, d.name, opts.sizes, opts.modes, opts.dtype),
        options,
        # A noisy point keeps sampling up to 1 s (what the old 0.2 s floor gave it: 5 x 0.2 s).
        point_cap_s=max(MATMUL_POINT_CAP_S, 5 * opts.min_time_s),
    )
    return session.measure(
        request,
        journal=journal,
        resumed=resumed,
        progress=session.Progress(
            on_total=on_total, on_start=on_start, on_result=on_result, while_child_starts=plots.pyplot
        ),
    )


def _api_command(name: str, **kwargs) -> list[str]:
    """The record's command for an API call: the call itself, e.g. ``whichdevice.matmul(quick=True)``
    (``sys.argv`` is the notebook kernel's or the script's, not this call's)."""
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if v is not None)
    return [f"whichdevice.{name}({args})"]


def _keep(record: RunRecord) -> Path | None:
    """An API run is kept like a command's: its record written under the history's folder
    (``$WHICHDEVICE_HOME/records/``) and indexed, so ``whichdevice history`` lists it and
    ``whichdevice compare`` takes its id. Never fails the call: a history that cannot be
    written is said in one warning line."""
    import secrets
    import sqlite3
    import time
    import warnings

    from whichdevice.measure import history

    try:
        folder = history.home() / "records"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{record.experiment}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}.json"
        records.save_run(record, path)
        history.add(record, path)
        return path
    except (OSError, sqlite3.Error) as e:
        warnings.warn(f"whichdevice: the run was not kept in the history ({e})", stacklevel=3)
        return None


@dataclass(frozen=True)
class Result:
    """A measured (or loaded) record with its analysis; shows itself in a notebook."""

    record: RunRecord
    path: Path | None = None  # where the record is (kept and indexed in the history), if anywhere

    @property
    def tables(self) -> list[Table]:
        return analyze_sweep(self.record, "n", work_metric="flops_per_call")

    def crossovers(self) -> dict[str, str]:
        """Per table title and device: the crossover sentence."""
        return {f"{t.title} {d}": crossover_text(c, "n") for t in self.tables for d, c in t.crossovers.items()}

    def __str__(self) -> str:
        return summary.matmul_text(self.record, self.tables)

    def __repr__(self) -> str:
        return summary.short_repr("Result", self.record)

    def _repr_html_(self) -> str:
        return self._fragment

    @functools.cached_property
    def _fragment(self) -> str:
        """The report as a notebook fragment (no page, CSS scoped), its plot drawn once: a
        notebook redisplays a result on every scroll back and every ``display``."""
        with tempfile.TemporaryDirectory() as tmp:
            page = matmul_report(facade.matmul(self.record), Path(tmp) / "plot.png")
        return html.fragment_of(page)

    def save(self, folder: str | Path, name: str | None = None) -> Path:
        """Write NAME.json, NAME.png and NAME.html into ``folder``; returns the JSON path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        stem = name or f"{self.record.experiment}-{self.record.created_at.replace(':', '').replace('+0000', '')}"
        png = folder / f"{stem}.png"
        page = matmul_report(facade.matmul(self.record), png)
        output.write_html(png.with_suffix(".html"), page)
        records.save_run(self.record, png.with_suffix(".json"))
        return png.with_suffix(".json")


@_stops_children_on_interrupt
def matmul(
    sizes=None,
    modes=("steady", "seed"),
    dtype="float32",
    devices=None,
    quick=False,
    min_time_s=None,
    cpu_threads=None,
    case_timeout_s=900,
    framework="tensorflow",
    memory_limit_gib=None,
    progress: bool = True,
) -> Result:
    """Seed 000's sweep: matmul time vs size on every device (see ``whichdevice matmul``).

    ``progress``: show a bar (terminal) or a line updated in place (notebook) while measuring.
    The record is kept and indexed in ``whichdevice history`` (``result.path``)."""
    opts = MatmulOptions.parse(
        sizes=sizes,
        modes=modes,
        dtype=dtype,
        devices=devices,
        quick=quick,
        min_time_s=min_time_s,
        cpu_threads=cpu_threads,
        case_timeout_s=case_timeout_s,
        framework=framework,
        memory_limit_gib=memory_limit_gib,
    )
    with ApiProgress("matmul", enabled=progress) as bar:
        cb = bar.callbacks()
        record = run_matmul(
            opts,
            on_total=cb.on_total,
            on_start=cb.on_start,
            on_result=cb.on_result,
            command=_api_command("matmul", sizes=sizes, modes=modes, dtype=dtype, devices=devices, quick=quick or None),
        )
    return Result(record, _keep(record))


@dataclass(frozen=True)
class RecordResult:
    """A loaded record of an experiment with no richer Python type (train, pipeline, placement,
    pitfalls, predict, ...): the record, and a short text of it. ``whichdevice report FILE``
    renders its tables and plots."""

    record: RunRecord
    path: Path | None = None
    page: str = ""  # the command's own first screen, when the API ran the command (predict, pipeline)

    def __str__(self) -> str:
        return self.page.rstrip() if self.page else summary.record_text(self.record)

    def __repr__(self) -> str:
        return summary.short_repr("RecordResult", self.record)

    def _repr_html_(self) -> str:
        """The text in a scoped fragment; ``whichdevice report PATH`` draws its tables and plots."""
        import html as _html

        hint = (
            f"<p>Tables and plots: <code>whichdevice report {_html.escape(str(self.path))}</code></p>"
            if self.path
            else ""
        )
        return f'<div class="{html.SCOPE}"><pre>{_html.escape(str(self))}</pre>{hint}</div>'


def load(path: str | Path) -> Result | SuiteResult | RecordResult:
    """A saved record, without measuring, as the type of the experiment that wrote it:
    ``matmul`` -> Result, ``run``/``diagnose`` -> SuiteResult, any other -> RecordResult."""
    record = records.load_run(path)
    if record.experiment == "matmul":
        return Result(record, Path(path))
    if record.experiment in ("run", "diagnose"):
        return SuiteResult(record, Path(path))
    return RecordResult(record, Path(path))


# ---------------------------------------------------------------- the suite (run / diagnose)


@dataclass(frozen=True)
class SuiteResult:
    """The result of ``whichdevice.run()`` / ``diagnose()``: the record, its verdict, a notebook view."""

    record: RunRecord
    path: Path | None = None

    @property
    def verdict(self) -> SuiteVerdict:
        return facade.suite(self.record).verdict

    def __str__(self) -> str:
        return summary.suite_text(self.record, self.verdict)

    def __repr__(self) -> str:
        return summary.short_repr("SuiteResult", self.record)

    def _repr_html_(self) -> str:
        return self._fragment

    @functools.cached_property
    def _fragment(self) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            return html.fragment_of(suite_report(facade.suite(self.record), Path(tmp) / "run.png").page)

    def save(self, folder: str | Path, name: str | None = None) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        png = folder / f"{name or self.record.experiment}.png"
        output.write_html(png.with_suffix(".html"), suite_report(facade.suite(self.record), png).page)
        records.save_run(self.record, png.with_suffix(".json"))
        return png.with_suffix(".json")


def _suite(
    name: str,
    cases_for,
    *,
    budget_s,
    devices,
    cpu_threads,
    framework,
    options,
    memory_limit_gib=None,
    case_timeout_s=None,
    point_cap_s=None,
    rounds=None,
) -> SuiteResult:
    """The CLI's suite, parsed by the same functions: one ``measure.session`` Request."""
    budget = parse_budget(_opt_str(budget_s), "budget_s")
    timeout_s = parse_positive_float(_opt_str(case_timeout_s), "--case-timeout", "600") or max(budget, 60.0)
    job = Job(  # no record path: the record is kept in the history (_keep)
        json_file="",
        command=_api_command(name),
        devices_wanted=experiment.parse_device_filter(_csv(devices)),
        min_time_s=0.05,
        cpu_threads=parse_positive_int(_opt_str(cpu_threads), "--cpu-threads", "4"),
        case_timeout_s=timeout_s,
        memory_limit_bytes=parse_memory_limit(_opt_str(memory_limit_gib)),
    )
    request = job.request(name, framework, cases_for, options, budget_s=budget, point_cap_s=point_cap_s, rounds=rounds)
    # No journal: an API call that is interrupted has no command line to resume it from.
    with ApiProgress(name) as bar:
        record = session.measure(request, progress=bar.callbacks(while_child_starts=plots.pyplot))
    return SuiteResult(record, _keep(record))


@_stops_children_on_interrupt
def run(
    budget_s: float = 90,
    devices=None,
    cpu_threads=None,
    framework: str = "tensorflow",
    memory_limit_gib=None,
    case_timeout_s=None,
) -> SuiteResult:
    """``whichdevice run`` from Python: the default suite, its verdict and measured fixes."""
    fw = parse_choice(str(framework), "--framework", frameworks.offering("run"))
    return _suite(
        "run",
        lambda found, d: suite_cases(fw, d.name, gpu_present=bool(found.gpus)),
        budget_s=budget_s,
        devices=devices,
        cpu_threads=cpu_threads,
        framework=fw,
        options={},
        memory_limit_gib=memory_limit_gib,
        case_timeout_s=case_timeout_s,
    )


@contextlib.contextmanager
def _kept_folder(kind: str):
    """A new folder under ``$WHICHDEVICE_HOME/models/`` that outlives the call (issue #34): the
    record and its first screen name the saved model's loader (``whichdevice predict --model
    LOADER:build`` is the next step they suggest), so it must still exist when they are read."""
    import secrets
    import time

    from whichdevice.measure import history

    folder = history.home() / "models" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    folder.mkdir(parents=True, exist_ok=False)
    yield str(folder)


def _materialize(model, data, folder: Path) -> tuple[str, str | None]:
    """A Keras model object (and ``(x, y)`` arrays) from a notebook -> files a child can load:
    the model saved as .keras, a tiny loader module with ``build()`` / ``data()``."""
    import numpy as np

    lines = ["import keras", "import numpy as np", ""]
    model.save(folder / "model.keras")
    lines += ["def build():", f"    return keras.models.load_model({str(folder / 'model.keras')!r})", ""]
    data_spec = None
    if data is not None:
        if isinstance(data, str):
            data_spec = data
        else:
            x, y = data
            np.savez(folder / "data.npz", x=np.asarray(x), y=np.asarray(y))
            lines += [
                "def data():",
                "    import tensorflow as tf",
                f"    d = np.load({str(folder / 'data.npz')!r})",
                "    return tf.data.Dataset.from_tensor_slices((d['x'], d['y']))",
                "",
            ]
            data_spec = f"{folder / 'loader.py'}:data"
    (folder / "loader.py").write_text("\n".join(lines))
    return f"{folder / 'loader.py'}:build", data_spec


@_stops_children_on_interrupt
def diagnose(
    model,
    data=None,
    *,
    input_shape=None,
    classes=None,
    samples: int = 10_000,
    batch: int = 32,
    budget_s: float = 90,
    devices=None,
    cpu_threads=None,
    framework: str | None = None,
) -> SuiteResult:
    """``whichdevice diagnose`` from Python.

    PyTorch: ``model`` an ``nn.Module`` or ``(module, loss_fn[, optimizer])`` (or
    "FILE.py:FUNCTION" with ``framework="torch"``); ``data`` a DataLoader, ``(x, y)`` or
    "FILE.py:FUNCTION" (:func:`_diagnose_torch`).

    ``model``: a Keras model object, or "FILE.py:FUNCTION" returning one. ``data``: ``(x, y)``
    arrays, or "FILE.py:FUNCTION" returning a tf.data.Dataset, or None for synthetic data.
    Model objects are saved under ``$WHICHDEVICE_HOME/models/`` (a .keras file, or a pickled PyTorch module)
    that each measuring child loads; the folder is kept, since the record names its loader.
    """
    opts = _DiagnoseOptions(input_shape, classes, samples, batch, budget_s, devices, cpu_threads)
    held = _samples_in(data)
    if held is not None and isinstance(samples, int) and held < samples:
        # (x, y) arrays hold fewer samples than asked: an epoch is what they hold (issue #39:
        # 2,000 samples were labelled with the 4,992 the budget allowed).
        opts = dataclasses.replace(opts, samples=held, samples_from_data=True)
    guessed = "torch" if not isinstance(model, str) and _is_torch_object(model) else "tensorflow"
    fw = parse_choice(str(framework or guessed), "--framework", frameworks.offering("diagnose"))
    if fw not in frameworks.KERAS:  # an nn.Module
        return _diagnose_torch(model, data, opts)
    if data is not None and fw not in frameworks.TFDATA:
        raise UsageError(
            "data",
            f"a tf.data dataset is TensorFlow's; framework {fw} measures your Keras model on synthetic data",
            "Leave data out, or use framework='tensorflow'",
        )
    return _diagnose_keras(model, data, opts, fw)


def _samples_in(data) -> int | None:
    """How many samples ``(x, y)`` arrays hold (the first input's length; x may be a dict or a
    list of inputs); None for anything else (a file's function, a DataLoader)."""
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        return None
    x = data[0]
    if isinstance(x, dict):
        x = next(iter(x.values()), None)
    elif isinstance(x, (tuple, list)) and x and hasattr(x[0], "shape"):
        x = x[0]
    shape = getattr(x, "shape", None)
    if shape is not None and len(shape) >= 1 and isinstance(shape[0], int):
        return int(shape[0])
    return len(x) if isinstance(x, (list, tuple)) else None


@dataclass(frozen=True)
class _DiagnoseOptions:
    """``diagnose``'s options besides the model and its data, as the caller gave them
    (``samples`` cut to what ``(x, y)`` arrays hold: ``samples_from_data``)."""

    input_shape: typing.Any
    classes: typing.Any
    samples: int
    batch: int
    budget_s: float
    devices: typing.Any
    cpu_threads: typing.Any
    samples_from_data: bool = False


@dataclass(frozen=True)
class _UserModel:
    """The user's model and data functions and the options about them, checked by the CLI's parsers."""

    model_fn: UserFunction
    data_fn: UserFunction | None
    shape: tuple[int, ...] | None
    classes: int | None
    batch: int  # as diagnose() types it; None if the caller passed None (torch: the DataLoader's batch)
    samples: int


def _parse_user_model(model: str, data: str | None, opts: _DiagnoseOptions) -> _UserModel:
    """``model`` and ``data`` (FILE.py:FUNCTION) and their options, each checked as the CLI
    checks its option, in the CLI's order: the first bad one is the error."""
    from whichdevice.workloads import userfile

    return _UserModel(
        model_fn=userfile.parse_spec(model, "--model"),
        data_fn=userfile.parse_spec(data, "--data") if data else None,
        shape=parse_shape(_csv(opts.input_shape)),  # the CLI's parser: keeps order and repeats (28,28,1)
        classes=parse_positive_int(_opt_str(opts.classes), "--classes", "10", maximum=1_000_000),
        batch=parse_positive_int(_opt_str(opts.batch), "--batch", "32", maximum=65536),
        samples=parse_positive_int(_opt_str(opts.samples), "--samples", "10000", maximum=10_000_000),
    )


def _diagnose_keras(model, data, opts: _DiagnoseOptions, fw: str = "tensorflow") -> SuiteResult:
    """``diagnose`` of a Keras model: an object is saved to a kept folder (``_materialize``)
    each measuring child loads; then the CLI's Keras path."""
    if not isinstance(model, str):
        if not hasattr(model, "save"):
            raise UsageError(
                "model", f"{type(model).__name__} is not a Keras model", 'Pass a keras.Model or "my_model.py:build".'
            )
        with _kept_folder("model") as tmp:
            model_spec, data_spec = _materialize(model, data, Path(tmp))
            return _diagnose_keras(model_spec, data_spec, opts, fw)
    if data is not None and not isinstance(data, str):
        raise UsageError("data", "(x, y) arrays need a model object", 'Pass data as "my_data.py:make_dataset".')
    u = _parse_user_model(model, data, opts)
    from whichdevice.workloads.suite import plan_user_suite, sizing_options

    user, sizing = plan_user_suite(  # the pre-flight's training step; the cases sized to the budget
        u.model_fn,
        u.shape,
        u.classes,
        u.data_fn,
        fw,
        batch=u.batch,
        samples=u.samples,
        budget_s=parse_budget(_opt_str(opts.budget_s), "budget_s"),
        samples_given="the data's " if opts.samples_from_data else u.samples != 10_000,
    )
    return _suite(
        "diagnose",
        lambda found, d: [  # what does not apply on another Keras backend is left out, as the CLI does
            c
            for c in user_cases(fw, d.name, user=user, batch=u.batch, samples=u.samples, sizing=sizing)
            if frameworks.unsupported(fw, c.params) is None
        ],
        budget_s=opts.budget_s,
        devices=opts.devices,
        cpu_threads=opts.cpu_threads,
        framework=fw,
        options={
            "model": u.model_fn.text,
            "data": u.data_fn.text if u.data_fn else None,
            "batch": u.batch,
            "samples": u.samples,
            **sizing_options(sizing),
        },
        point_cap_s=sizing.get("point_cap_s"),
        rounds=sizing.get("rounds"),
    )


def _is_torch_object(obj) -> bool:
    """An nn.Module (or a tuple starting with one), told without importing torch."""
    first = obj[0] if isinstance(obj, (tuple, list)) and obj else obj
    return any(getattr(c, "__module__", "").startswith("torch.nn") for c in type(first).__mro__)


def _diagnose_torch(model, data, opts: _DiagnoseOptions) -> SuiteResult:
    """``diagnose`` of a PyTorch model: objects are pickled to a kept folder (``_kept_folder``,
    as a Keras model object's) each measuring child loads (frameworks/torch/usermodel.materialize), then the CLI's torch path."""
    if not isinstance(model, str):
        from whichdevice.frameworks.common.usermodel import UserFileError
        from whichdevice.frameworks.torch import usermodel as torch_usermodel

        with _kept_folder("torch-model") as tmp:  # as a Keras model's: the record names its loader
            try:
                model_spec, data_spec = torch_usermodel.materialize(model, data, Path(tmp))
            except UserFileError as e:
                raise UsageError(e.argument, e.problem, e.fix + ".") from None
            return _diagnose_torch(model_spec, data_spec, opts)
    if data is not None and not isinstance(data, str):
        raise UsageError("data", "a DataLoader or (x, y) needs a model object", 'Pass data as "my_data.py:loader".')
    from whichdevice import frameworks
    from whichdevice.workloads import torch_diagnose

    u = _parse_user_model(model, data, opts)
    env = frameworks.env_module("torch").child_env("cpu")
    from whichdevice.workloads.suite import sizing_options

    budget = parse_budget(_opt_str(opts.budget_s), "budget_s")
    user, n_batch, sizing = torch_diagnose.plan(
        u.model_fn, u.shape, u.classes, u.data_fn, u.batch, env, budget_s=budget, samples=u.samples
    )
    return _suite(
        "diagnose",
        lambda found, d: torch_diagnose.cases(
            d.name, user=user, batch=n_batch, samples=u.samples, budget_s=budget, sizing=sizing
        ),
        budget_s=opts.budget_s,
        devices=opts.devices,
        cpu_threads=opts.cpu_threads,
        framework="torch",
        point_cap_s=sizing.get("point_cap_s"),
        rounds=sizing.get("rounds"),
        options={
            "model": u.model_fn.text,
            "data": u.data_fn.text if u.data_fn else None,
            "batch": n_batch,
            "samples": u.samples,
            "framework": "torch",
            **sizing_options(sizing),
        }
        | {f"torch_{k}": user.get(k) for k in torch_diagnose.INFO_KEYS},
    )
