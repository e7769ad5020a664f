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
import functools
import math
import numbers
import tempfile
import typing
from dataclasses import dataclass
from pathlib import Path

from whichdevice.measure import experiment
from whichdevice.core import records
from whichdevice.core import process as _process
from whichdevice.core.errors import UsageError
from whichdevice.analysis import facade
from whichdevice.analysis.sweep import Table, analyze_sweep
from whichdevice import frameworks
from whichdevice import jobs
from whichdevice.jobs import Job, running
from whichdevice.jobs.running import stamp
from whichdevice.present import html, output, summary
from whichdevice.present.claims import crossover_text
from whichdevice.present.progress import ApiProgress
from whichdevice.present.suitepage import SuiteReport, fix_grid, suite_report  # noqa: F401 (the API's names)
from whichdevice.analysis.suite import SuiteVerdict
from whichdevice.present.pages.matmul import matmul_report  # noqa: F401 (the API's name)
from whichdevice.core.records import RunRecord
from whichdevice.core.validate import (
    parse_choice,
    parse_choice_list,
    parse_int_list,
    parse_memory_limit,
    parse_positive_float,
    parse_positive_int,
)
from whichdevice.workloads import matmul as matmul_workload
from whichdevice.workloads.defaults import MATMUL_MIN_TIME_S

MAX_MATMUL_N = 32768  # two float32 operands + result = 12 GiB: beyond that, not a laptop question


def _wrong_type(value: object, argument: str, wanted: str, example: str) -> UsageError:
    """A value of a type no command-line text could give: named as the API's keyword, with
    what it takes (the parsers then check the value itself, as the CLI's text)."""
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return UsageError(argument, f"{type(value).__name__} {shown} is not {wanted}", f"Pass e.g. {argument}={example}.")


def _is_scalar(value: object) -> bool:
    """A string or a number as the command line could spell it (numpy's numbers too; a bool
    is not: True would read as the text 'True', or as 1)."""
    return isinstance(value, (str, numbers.Real)) and not isinstance(value, (bool, _np_bools()))


def _np_bools() -> tuple[type, ...]:
    """numpy's bool type when numpy is loaded (it is no ``bool`` subclass), else nothing."""
    import sys

    np = sys.modules.get("numpy")
    return (np.bool_,) if np is not None else ()


@typing.overload
def _csv(values: None, argument: str = ..., example: str = ...) -> None: ...
@typing.overload
def _csv(values: object, argument: str = ..., example: str = ...) -> str | None: ...
def _csv(values: object, argument: str = "value", example: str = "[1, 2]") -> str | None:
    """A list argument as the CLI's comma-separated text. One value is a list of one, as the
    CLI's ``--input-shape 8``; a list holds strings or numbers; anything else is refused
    naming ``argument``."""
    if values is None or isinstance(values, str):
        return values
    if hasattr(values, "tolist") and not isinstance(values, numbers.Real):  # a numpy array
        values = values.tolist()
    if _is_scalar(values):
        return str(values)
    if isinstance(values, (list, tuple, range)) and all(_is_scalar(v) for v in values):
        return ",".join(str(v) for v in values)
    raise _wrong_type(values, argument, "a value or a list of values", example)


@typing.overload
def _opt_str(value: None, argument: str = ..., example: str = ...) -> None: ...
@typing.overload
def _opt_str(value: object, argument: str = ..., example: str = ...) -> str | None: ...
def _opt_str(value: object, argument: str = "value", example: str = "1") -> str | None:
    """One value as the CLI's text (None: the default); a list, a bool or another object is
    refused naming ``argument``, never turned into text such as '[8]' or 'True'."""
    if value is None:
        return None
    if hasattr(value, "item") and getattr(value, "shape", None) == ():  # a numpy scalar array
        value = value.item()
    if not _is_scalar(value):
        raise _wrong_type(value, argument, "a number", example)
    return str(value)


def _flag(value: object, argument: str) -> bool:
    """A switch: True or False (a string such as 'no' would read as True)."""
    if isinstance(value, bool) or (isinstance(value, numbers.Integral) and int(value) in (0, 1)):
        return bool(value)
    raise _wrong_type(value, argument, "True or False", "True")


def _word(value: object, argument: str, default: str) -> str:
    """A choice's text (None: ``default``); a list or another object is refused naming ``argument``."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise _wrong_type(value, argument, "a name", repr(default))
    return value


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
        # line naming --resume, not a TypeError in the middle of a run.
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
        sizes,
        modes,
        dtype,
        devices,
        quick,
        min_time_s,
        cpu_threads,
        case_timeout_s,
        framework,
        memory_limit_gib,
    ) -> MatmulOptions:
        """The options as given (the CLI's text or the API's values; the defaults are theirs), checked."""
        # None is an argument's default, as an option left out of the command line
        fw = parse_choice(_word(framework, "framework", "tensorflow"), "--framework", frameworks.offering("matmul"))
        quick = _flag(quick, "quick")
        size_list = parse_int_list(
            _csv(sizes, "sizes", "[100, 1000]"), "--sizes", maximum=MAX_MATMUL_N, example="100,1000,4000"
        )
        if size_list is None:
            size_list = list(matmul_workload.QUICK_SIZES if quick else matmul_workload.SEED_SIZES)
        mode_text = _csv(modes, "modes", '["steady"]')
        return cls(
            framework=fw,
            sizes=size_list,
            modes=parse_choice_list(mode_text, "--mode", matmul_workload.MODES) or list(matmul_workload.MODES),
            dtype=parse_choice(_word(dtype, "dtype", "float32"), "--dtype", matmul_workload.DTYPES),
            devices=experiment.parse_device_filter(_csv(devices, "devices", '["CPU"]')),
            min_time_s=parse_positive_float(_opt_str(min_time_s, "min_time_s", "0.2"), "--min-time", "0.2")
            or MATMUL_MIN_TIME_S,
            quick=quick,
            cpu_threads=parse_positive_int(_opt_str(cpu_threads, "cpu_threads", "4"), "--cpu-threads", "4"),
            case_timeout_s=parse_positive_float(
                _opt_str(case_timeout_s, "case_timeout_s", "900"), "--case-timeout", "900"
            )
            or 900.0,
            memory_limit_bytes=parse_memory_limit(_opt_str(memory_limit_gib, "memory_limit_gib", "8")),
        )


# A matmul point that does not converge after its minimum time (workloads/defaults.py's
# MATMUL_MIN_TIME_S) samples up to this long.
MATMUL_POINT_CAP_S = 1.0


@dataclass(kw_only=True)
class MatmulJob(Job):
    """A matmul sweep's job: its plot's path beside the record's (none for the API's)."""

    png_file: str | None = None


def matmul_job(opts: MatmulOptions, command: list[str], json_file: str = "", png_file: str | None = None):
    """The sweep's job and its request: one child per device, ``command`` the record's command line."""
    job = MatmulJob(
        json_file=json_file,
        png_file=png_file,
        command=command,
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
        {"sizes": opts.sizes, "modes": opts.modes, "dtype": opts.dtype, "quick": opts.quick},
        # A noisy point keeps sampling up to 1 s (what the old 0.2 s floor gave it: 5 x 0.2 s).
        point_cap_s=max(MATMUL_POINT_CAP_S, 5 * opts.min_time_s),
    )
    return job, request


def _api_command(name: str, **kwargs) -> list[str]:
    """The record's command for an API call: the call itself, e.g. ``whichdevice.matmul(quick=True)``
    (``sys.argv`` is the notebook kernel's or the script's, not this call's)."""
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if v is not None)
    return [f"whichdevice.{name}({args})"]


@dataclass(frozen=True)
class _Report:
    """A record with its page: shown in a notebook, saved as the CLI saves a command's."""

    record: RunRecord
    path: Path | None = None  # where the record is (kept and indexed in the history), if anywhere
    _FRAGMENT_PNG: typing.ClassVar[str] = "plot"  # the notebook fragment's plot, in a temporary folder

    def _page(self, png: Path) -> str:
        """The HTML page, its plots drawn beside ``png``."""
        raise NotImplementedError

    def _stem(self) -> str:
        """The files' name when ``save`` is given none."""
        return self.record.experiment

    def __repr__(self) -> str:
        return summary.short_repr(type(self).__name__, self.record)

    def _repr_html_(self) -> str:
        return self._fragment

    @functools.cached_property
    def _fragment(self) -> str:
        """The report as a notebook fragment (no page, CSS scoped), its plot drawn once: a
        notebook redisplays a result on every scroll back and every ``display``."""
        with tempfile.TemporaryDirectory() as tmp:
            return html.fragment_of(self._page(Path(tmp) / f"{self._FRAGMENT_PNG}.png"))

    def save(self, folder: str | Path, name: str | None = None) -> Path:
        """Write NAME.json, NAME.png and NAME.html into ``folder`` (the record first, as a
        command writes it: ``jobs.write_record``); returns the JSON path."""
        png = Path(folder) / f"{name or self._stem()}.png"
        return jobs.write_record(
            self.record,
            png.with_suffix(".json"),
            draw=lambda: output.write_html(png.with_suffix(".html"), self._page(png)),
        )


@dataclass(frozen=True, repr=False)
class Result(_Report):
    """A measured (or loaded) record with its analysis; shows itself in a notebook."""

    @property
    def tables(self) -> list[Table]:
        return analyze_sweep(self.record, "n", work_metric="flops_per_call")

    def crossovers(self) -> dict[str, str]:
        """Per table title and device: the crossover sentence."""
        return {f"{t.title} {d}": crossover_text(c, "n") for t in self.tables for d, c in t.crossovers.items()}

    def __str__(self) -> str:
        return summary.matmul_text(self.record, self.tables)

    def _page(self, png: Path) -> str:
        return matmul_report(facade.matmul(self.record), png)

    def _stem(self) -> str:
        return f"{self.record.experiment}-{self.record.created_at.replace(':', '').replace('+0000', '')}"


@_process.stops_children_on_interrupt
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
    command = _api_command("matmul", sizes=sizes, modes=modes, dtype=dtype, devices=devices, quick=quick or None)
    job, request = matmul_job(opts, command)
    with jobs.viewing(lambda experiment: ApiProgress(experiment, enabled=progress)):
        record = jobs.run(job, request, loglog=True, resumed=None)
    return Result(record, running.written)


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


@dataclass(frozen=True, repr=False)
class SuiteResult(_Report):
    """The result of ``whichdevice.run()`` / ``diagnose()``: the record, its verdict, a notebook view."""

    _FRAGMENT_PNG: typing.ClassVar[str] = "run"

    @property
    def verdict(self) -> SuiteVerdict:
        return facade.suite(self.record).verdict

    def __str__(self) -> str:
        return summary.suite_text(self.record, self.verdict)

    def _page(self, png: Path) -> str:
        return suite_report(facade.suite(self.record), png).page


@contextlib.contextmanager
def _kept_folder(kind: str):
    """A new folder under ``$WHICHDEVICE_HOME/models/`` that outlives the call: the
    record and its first screen name the saved model's loader (``whichdevice predict --model
    LOADER:build`` is the next step they suggest), so it must still exist when they are read."""
    from whichdevice.measure import history

    folder = history.home() / "models" / f"{kind}-{stamp()}"
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


def _is_torch_object(obj) -> bool:
    """An nn.Module (or a tuple starting with one), told without importing torch."""
    first = obj[0] if isinstance(obj, (tuple, list)) and obj else obj
    return any(getattr(c, "__module__", "").startswith("torch.nn") for c in type(first).__mro__)


def _model_files(model, data, fw: str) -> tuple[str, str | None]:
    """A model object (and its data) saved to a kept folder (``_kept_folder``) each measuring
    child loads -> ``(model_spec, data_spec)``: a Keras model as .keras with a loader
    (``_materialize``), a PyTorch one pickled (frameworks/torch/usermodel.materialize)."""
    if fw in frameworks.KERAS:
        if not hasattr(model, "save"):
            raise UsageError(
                "model", f"{type(model).__name__} is not a Keras model", 'Pass a keras.Model or "my_model.py:build".'
            )
        with _kept_folder("model") as tmp:
            return _materialize(model, data, Path(tmp))
    from whichdevice.frameworks.common.usermodel import UserFileError
    from whichdevice.frameworks.torch import usermodel as torch_usermodel

    with _kept_folder("torch-model") as tmp:  # as a Keras model's: the record names its loader
        try:
            return torch_usermodel.materialize(model, data, Path(tmp))
        except UserFileError as e:
            raise UsageError(e.argument, e.problem, e.fix + ".") from None
