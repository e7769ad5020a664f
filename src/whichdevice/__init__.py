"""whichdevice: measure when the GPU pays off against the CPU, and why it does not.

Data flows one way (see CONTRIBUTING.md "How it works"):

    measure (one child process per framework x device)
      -> immutable records on disk (records.py, raw samples kept)
      -> pure analysis functions (analysis/)
      -> presenters (present/: terminal, JSON, plots)
"""

from whichdevice.core.version import __version__

_API = ("matmul", "load", "Result", "SuiteResult", "RecordResult")
_COMMANDS = ("predict", "pipeline", "run", "diagnose")

__all__ = [
    "__version__",
    "RecordResult",
    "Result",
    "SuiteResult",
    "UsageError",
    "diagnose",
    "load",
    "load_ipython_extension",
    "matmul",
    "pipeline",
    "predict",
    "run",
]


def __dir__() -> list[str]:
    """The API, for tab completion: the names are loaded lazily, so ``dir`` would miss them."""
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 (IPython's own shell type)
    """``%load_ext whichdevice``: ``%whichdevice ARGS`` and ``%%whichdevice_audit`` (whichdevice/magics.py)."""
    from whichdevice import magics

    magics.register(ipython)


def __getattr__(name: str):
    # Lazy: `import whichdevice` stays cheap, and child processes (which import
    # whichdevice.measure.child) never load matplotlib or jinja2 they do not need.
    if name in _COMMANDS:  # the commands' own options, run in this process (whichdevice/commands.py)
        from whichdevice import commands

        return getattr(commands, name)
    if name in _API:
        from whichdevice import api

        return getattr(api, name)
    if name == "UsageError":
        from whichdevice.core.errors import UsageError

        return UsageError
    raise AttributeError(f"module 'whichdevice' has no attribute {name!r}")
