"""whichdevice: measure when the GPU pays off against the CPU, and why it does not.

Data flows one way (see README "How it works"):

    measure (one child process per framework x device)
      -> immutable records on disk (records.py, raw samples kept)
      -> pure analysis functions (analysis/)
      -> presenters (present/: terminal, JSON, plots)
"""

from whichdevice.core.version import __version__

__all__ = ["__version__", "RecordResult", "Result", "SuiteResult", "UsageError", "diagnose", "load", "matmul", "run"]


def __getattr__(name: str):
    # Lazy: `import whichdevice` stays cheap, and child processes (which import
    # whichdevice.measure.child) never load matplotlib or jinja2 they do not need.
    if name in ("matmul", "load", "Result", "run", "diagnose", "SuiteResult", "RecordResult"):
        from whichdevice import api

        return getattr(api, name)
    if name == "UsageError":
        from whichdevice.core.errors import UsageError

        return UsageError
    raise AttributeError(f"module 'whichdevice' has no attribute {name!r}")
