"""Commands run in this process, as typed in a terminal: the notebook magic ``%whichdevice ARGS``
and the Python API's ``whichdevice.pipeline()`` / ``whichdevice.predict()``.

No ``python -m whichdevice`` child and no reading back of its text: the command's own parser
checks the options (the API accepts exactly the command's options: its keyword arguments are
the command's, ``image_size=64`` for ``--image-size 64``), the command builds and runs its job
(``whichdevice.jobs``), and its progress comes through the job's callbacks
(``jobs.viewing``). The measuring itself runs in child processes, as every command's does;
Ctrl-C (a notebook's interrupt) stops them and is raised.

What the command prints goes to ``present/screen.py``'s consoles, redirected here as into a
pipe: no colour, no progress frames, tables at their natural width, whatever the kernel forces
(ipykernel sets ``FORCE_COLOR=1``). In a notebook the text is one HTML block updated
in place, with the progress and the elapsed time, and left as the command's output; in a
terminal (IPython, a script) it is printed as it comes.
"""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whichdevice.core import process, records
from whichdevice.core.errors import UsageError

MIN_INTERVAL_S = 0.25  # a notebook redraw at most 4x per second
_STYLE = (
    "<style>.whichdevice-report pre.whichdevice-out{white-space:pre;overflow-x:auto;margin:0;"
    "font-size:12px;line-height:1.3}.whichdevice-report .whichdevice-status{color:#555}</style>"
)


def output_html(text: str, status: str) -> str:
    """The command's text as one scoped block (wide tables scroll, never wrap), and its status."""
    return (
        f'<div class="whichdevice-report">{_STYLE}<pre class="whichdevice-out">{html.escape(text)}</pre>'
        f'<div class="whichdevice-status"><code>{html.escape(status)}</code></div></div>'
    )


class _Block:
    """The notebook's one output block for a command, redrawn in place (an IPython display
    handle) as text and progress come; ``None`` handle: nothing is drawn."""

    def __init__(self, title: str, notebook: bool) -> None:
        self.title, self._t0, self._drawn, self._handle = title, time.monotonic(), 0.0, None
        self.text: list[str] = []
        self.progress = ""
        if notebook:
            from IPython.display import display

            self._handle = display(self._data("starting"), raw=True, display_id=True)  # type: ignore[no-untyped-call]

    def _data(self, status: str) -> dict[str, str]:
        text = "".join(self.text)
        return {"text/plain": f"{text}{status}\n", "text/html": output_html(text, status)}

    def draw(self, code: int | None = None) -> None:
        if self._handle is None:
            return
        now = time.monotonic()
        if code is None and now - self._drawn < MIN_INTERVAL_S:
            return
        self._drawn = now
        took = f"{now - self._t0:.0f} s"
        if code is None:
            status = f"whichdevice {self.title}: running, {took}{self.progress}"
        else:
            status = f"whichdevice {self.title}: " + (
                f"done in {took}" if code == 0 else f"exit code {code} after {took}"
            )
        self._handle.update(self._data(status), raw=True)


class _Sink:
    """A console's stream: kept, shown in the block, echoed to ``echo`` (a terminal) if given."""

    def __init__(self, kept: list[str], block: _Block, echo: Callable[[], Any] | None) -> None:
        self.kept, self.block, self.echo = kept, block, echo

    def write(self, text: str) -> int:
        self.kept.append(text)
        self.block.text.append(text)
        self.block.draw()
        if self.echo is not None:
            stream = self.echo()  # looked up per write: a progress bar redirects it while it runs
            stream.write(text)
            stream.flush()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class _BlockProgress:
    """The jobs' progress as the block's status line: cases done of the total, what runs now."""

    live = False  # no live terminal line to print a provisional answer above (cli/run.py)

    def __init__(self, block: _Block, experiment: str) -> None:
        self.block, self.done, self.total, self.current = block, 0, 0, experiment

    def __enter__(self) -> _BlockProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.block.progress = ""

    def callbacks(self, **more: Any) -> Any:
        from whichdevice.measure import session
        from whichdevice.present.tables import describe_key

        def on_total(n: int) -> None:
            self.total = n
            self._show()

        def on_start(key: str) -> None:
            self.current = describe_key(key)
            self._show()

        def on_result(_result: object) -> None:
            self.done += 1
            self._show()

        return session.Progress(on_total=on_total, on_start=on_start, on_result=on_result, **more)

    def say(self, text: str) -> None:
        from whichdevice.present.screen import console

        console.print(text)

    def _show(self) -> None:
        self.block.progress = f", {self.done}/{self.total} cases — {self.current}"
        self.block.draw()


@dataclass
class Outcome:
    """A command's exit code and what it printed on stdout and stderr."""

    code: int
    stdout: str
    stderr: str


@contextmanager
def _argv(args: list[str]) -> Iterator[None]:
    saved = sys.argv
    sys.argv = ["whichdevice", *args]
    try:
        yield
    finally:
        sys.argv = saved


def run_command(
    args: list[str], *, echo: bool = True, progress: bool = True, raising: tuple[type[Exception], ...] = ()
) -> Outcome:
    """``whichdevice ARGS`` in this process: its text kept (and shown, ``echo``: in a notebook
    as one block updated in place, elsewhere printed as it comes), its progress shown
    (``progress``). Returns its exit code and text; ``raising``: errors raised as they are
    (cli/app.main). Ctrl-C stops its measuring children, then is raised."""
    from whichdevice import jobs
    from whichdevice.cli import app
    from whichdevice.present import screen
    from whichdevice.present.progress import ApiProgress, in_notebook

    notebook = echo and in_notebook()
    block = _Block(args[0] if args else "whichdevice", notebook)
    out: list[str] = []
    err: list[str] = []
    terminal = echo and not notebook
    sinks = (
        _Sink(out, block, (lambda: sys.stdout) if terminal else None),
        _Sink(err, block, (lambda: sys.stderr) if terminal else None),
    )

    def view(experiment: str) -> Any:
        return _BlockProgress(block, experiment) if notebook else ApiProgress(experiment, enabled=progress)

    code = 0
    try:
        with screen.redirected(*sinks), jobs.viewing(view), _argv(args):
            app.main(args, raising=raising)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except KeyboardInterrupt:
        process.kill_all()
        raise
    block.draw(code)
    return Outcome(code, "".join(out), "".join(err))


def _args(options: dict) -> list[str]:
    """Keyword arguments as the command's options: ``image_size=64`` -> ``--image-size 64``,
    ``quick=True`` -> ``--quick`` (False or None: left out), a list -> ``1,2,3``."""
    out: list[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, str(value)]
    return out


def _known(name: str, options: dict) -> None:
    """Every keyword is one of the command's options (its own parameter names)."""
    from whichdevice.cli import app, base

    app.load_commands([name])
    command = base.click_command().commands[name]  # type: ignore[attr-defined]
    known = {p.name for p in command.params} - {"out", "json_path", "resume"}
    for key in options:
        if key not in known:
            raise UsageError(
                key, f"is not an option of `whichdevice {name}`", f"Pass one of: {', '.join(sorted(known))}."
            )


_counter = [0]


def api_command(name: str, options: dict, *, out: str | Path, progress: bool) -> Any:
    """``whichdevice NAME --options`` for the Python API: the same checks, cases, record, report
    files and history entry as typed in a terminal; nothing printed, the page returned with the
    record (``result.page``). Bad input raises the command's ``UsageError``; a failed run,
    RuntimeError."""
    import os

    from whichdevice.api import RecordResult

    _known(name, options)
    folder = Path(out)
    _counter[0] += 1
    json_path = folder / f"{name}-{os.getpid()}-{_counter[0]}.json"
    args = [name, *_args(options), "--out", str(folder), "--json", str(json_path)]
    done = run_command(args, echo=False, progress=progress, raising=(UsageError,))
    if done.code != 0 or not json_path.exists():
        raise RuntimeError(f"whichdevice {name} exited {done.code}: {done.stderr.strip()[-500:] or done.stdout[-500:]}")
    return RecordResult(records.load_run(json_path), json_path, page=done.stdout)


def pipeline(*, out: str | Path = "whichdevice-results", progress: bool = True, **options: Any) -> Any:
    """``whichdevice pipeline`` from Python: is the model waiting for data (seed 003's pipeline,
    or ``model="my_model.py:build", data="my_data.py:make_dataset"``)? The keyword arguments are
    the command's options (``quick=True``, ``image_size=64``, ``no_stages=True`` is
    ``--no-stages``; see ``whichdevice pipeline --help``). The record, its plot and page are
    written in ``out`` and indexed in the history, like the command's."""
    return api_command("pipeline", options, out=out, progress=progress)


def predict(*, out: str | Path = "whichdevice-results", progress: bool = True, **options: Any) -> Any:
    """``whichdevice predict`` from Python: would a GPU win, modelled from this CPU's traced
    operations (``profile="h100"``, the default, or one saved by ``whichdevice calibrate``). The
    keyword arguments are the command's options (``quick=True``, ``model="m.py:build"``,
    ``input_shape=(28, 28, 1)``; see ``whichdevice predict --help``); the record is written in
    ``out`` and indexed in the history, like the command's."""
    return api_command("predict", options, out=out, progress=progress)


# ---------------------------------------------------------------- run / diagnose from Python
# The commands' own jobs (cli/run.py's RunPlan and DiagnosePlan), requests and measuring, from
# the API's arguments, each checked by the CLI's parser; the record is kept in the history
# (jobs.running.keep) instead of a folder of files, and returned as a SuiteResult.


def _job_fields(name: str, devices: Any, cpu_threads: Any, memory_limit_gib: Any, case_timeout_s: Any = None) -> dict:
    """The API's shared arguments as the ``Job`` fields the CLI's options set."""
    from whichdevice.api import _api_command, _csv, _opt_str
    from whichdevice.core.validate import parse_memory_limit, parse_positive_float, parse_positive_int
    from whichdevice.measure import experiment

    return {
        "json_file": "",  # no record path: the record is kept in the history (jobs.running.keep)
        "command": _api_command(name),
        "devices_wanted": experiment.parse_device_filter(_csv(devices, "devices", '["CPU"]')),
        "cpu_threads": parse_positive_int(_opt_str(cpu_threads, "cpu_threads", "4"), "--cpu-threads", "4"),
        "case_timeout_s": parse_positive_float(
            _opt_str(case_timeout_s, "case_timeout_s", "600"), "--case-timeout", "600"
        ),
        "memory_limit_bytes": parse_memory_limit(_opt_str(memory_limit_gib, "memory_limit_gib", "8")),
    }


def _suite(plan: Any, request: Any) -> Any:
    """Run a run or diagnose job as the command measures it (its provisional answer kept in the
    record), its progress a line updated in place; no journal: an interrupted API call has no
    command line to resume it from. A diagnose's script is run with the user's folder kept as it
    was, as the command does."""
    from functools import partial

    from whichdevice import jobs
    from whichdevice.api import SuiteResult
    from whichdevice.cli import run as run_command_module
    from whichdevice.jobs import running
    from whichdevice.present.progress import ApiProgress

    with jobs.viewing(ApiProgress):
        if getattr(plan, "user", {}).get("script"):  # a diagnose: its script, its folder watched
            measure = partial(run_command_module.measure_script, plan, True)
        else:
            measure = partial(run_command_module.measure_suite, quiet=True)
        record = jobs.run(plan, request, loglog=True, resumed=None, measure=measure)
    return SuiteResult(record, running.written)


@process.stops_children_on_interrupt
def run(
    budget_s: float = 90,
    devices: Any = None,
    cpu_threads: Any = None,
    framework: str = "tensorflow",
    memory_limit_gib: Any = None,
    case_timeout_s: Any = None,
) -> Any:
    """``whichdevice run`` from Python: the default suite, its verdict and measured fixes."""
    from whichdevice import frameworks
    from whichdevice.api import _opt_str, _word
    from whichdevice.cli import run as run_command_module
    from whichdevice.core.validate import parse_choice
    from whichdevice.workloads.suite import parse_budget

    fw = parse_choice(_word(framework, "framework", "tensorflow"), "--framework", frameworks.offering("run"))
    plan = run_command_module.RunPlan(
        frameworks=[fw],
        budget_s=parse_budget(_opt_str(budget_s, "budget_s", "90"), "budget_s"),
        **_job_fields("run", devices, cpu_threads, memory_limit_gib, case_timeout_s),
    )
    return _suite(plan, run_command_module.run_request(plan, fw))


@process.stops_children_on_interrupt
def diagnose(
    model: Any,
    data: Any = None,
    *,
    input_shape: Any = None,
    classes: Any = None,
    samples: int = 10_000,
    batch: int = 32,
    budget_s: float = 90,
    devices: Any = None,
    cpu_threads: Any = None,
    framework: str | None = None,
) -> Any:
    """``whichdevice diagnose`` from Python.

    PyTorch: ``model`` an ``nn.Module`` or ``(module, loss_fn[, optimizer])`` (or
    "FILE.py:FUNCTION" with ``framework="torch"``); ``data`` a DataLoader, ``(x, y)`` or
    "FILE.py:FUNCTION".

    ``model``: a Keras model object, or "FILE.py:FUNCTION" returning one. ``data``: ``(x, y)``
    arrays, or "FILE.py:FUNCTION" returning a tf.data.Dataset, or None for synthetic data.
    Model objects are saved under ``$WHICHDEVICE_HOME/models/`` (a .keras file, or a pickled PyTorch module)
    that each measuring child loads; the folder is kept, since the record names its loader.
    """
    from whichdevice import api, frameworks
    from whichdevice.core.validate import parse_choice

    held = api._samples_in(data)
    # (x, y) arrays that hold fewer samples than asked: an epoch is what they hold
    # (2,000 samples were labelled with the 4,992 the budget allowed).
    from_data = held is not None and isinstance(samples, int) and held < samples
    guessed = "torch" if not isinstance(model, str) and api._is_torch_object(model) else "tensorflow"
    fw = parse_choice(api._word(framework, "framework", guessed), "--framework", frameworks.offering("diagnose"))
    if fw == "torch" and not isinstance(model, str) and not api._is_torch_object(model):
        # what is not a module would be pickled and fail only in the measuring child
        raise UsageError(
            "model",
            f"{type(model).__name__} is not a PyTorch module",
            'Pass an nn.Module, (module, loss_fn[, optimizer]) or "my_model.py:build".',
        )
    if data is not None and fw in frameworks.KERAS and fw not in frameworks.TFDATA:
        raise UsageError(
            "data",
            f"a tf.data dataset is TensorFlow's; framework {fw} measures your Keras model on synthetic data",
            "Leave data out, or use framework='tensorflow'",
        )
    if not isinstance(model, str):
        model, data = api._model_files(model, data, fw)
    if data is not None and not isinstance(data, str):
        if fw in frameworks.KERAS:
            raise UsageError("data", "(x, y) arrays need a model object", 'Pass data as "my_data.py:make_dataset".')
        raise UsageError("data", "a DataLoader or (x, y) needs a model object", 'Pass data as "my_data.py:loader".')
    from whichdevice.cli import run as run_command_module

    given = {"input_shape": input_shape, "classes": classes, "samples": held if from_data else samples, "batch": batch}
    plan = _diagnose_plan(model, data, fw, given | {"budget_s": budget_s, "from_data": from_data}, devices, cpu_threads)
    return _suite(plan, run_command_module.diagnose_request(plan))


def _diagnose_plan(model: str, data: str | None, fw: str, given: dict, devices: Any, cpu_threads: Any) -> Any:
    """The CLI's ``DiagnosePlan`` of ``model`` and ``data`` (FILE.py:FUNCTION): each option checked
    by the CLI's parser (the first bad one is the error), then the CLI's pre-flight."""
    from whichdevice.api import _csv, _opt_str
    from whichdevice.cli import run as run_command_module
    from whichdevice.core.validate import parse_positive_int, parse_shape
    from whichdevice.workloads import userfile
    from whichdevice.workloads.suite import parse_budget

    model_fn = userfile.parse_spec(model, "--model")
    data_fn = userfile.parse_spec(data, "--data") if data else None
    # the CLI's parser: keeps order and repeats (28,28,1); one number is a shape of one, as --input-shape 8
    shape = parse_shape(_csv(given["input_shape"], "input_shape", "(28, 28, 1)"))
    n_classes = parse_positive_int(_opt_str(given["classes"], "classes", "10"), "--classes", "10", maximum=1_000_000)
    n_batch = parse_positive_int(_opt_str(given["batch"], "batch", "32"), "--batch", "32", maximum=65536)
    n_samples = (
        parse_positive_int(_opt_str(given["samples"], "samples", "10000"), "--samples", "10000", maximum=10_000_000)
        or 10_000
    )
    budget = parse_budget(_opt_str(given["budget_s"], "budget_s", "90"), "budget_s")
    samples_given = "the data's " if given["from_data"] else n_samples != 10_000
    fields = _job_fields("diagnose", devices, cpu_threads, None)
    return run_command_module.diagnose_plan(
        model_fn, data_fn, fw, shape, n_classes, n_batch, n_samples, budget, samples_given, fields
    )
