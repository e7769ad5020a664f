"""typer's help renderer (``typer.rich_utils``) imported without the two rich modules it
imports at its top for features this app does not use.

``typer.rich_utils`` imports ``rich.markdown`` (markdown-it, and pygments through
``rich.syntax``) for ``rich_markup_mode="markdown"``, and ``rich.traceback`` (pygments, attrs)
for pretty exceptions. This app renders its help in the "rich" markup mode and turns pretty
exceptions off, so neither module is ever used; together they are most of what ``--help``
imports beyond typer and rich. The renderer is imported once with a stand-in for each of the two
classes it takes from them: a stand-in imports its real module when it is first called or read,
so that output is the same should a later typer use it. Nothing else sees the stand-ins: the two
module names are taken back out of ``sys.modules`` right after, so any other import of them
gets the real module.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

# The rich modules typer.rich_utils imports at its top but uses only for a feature switched off
# here, each with the one class it takes from it.
_DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


class _Deferred(type):
    """The type of a stand-in class: calling it, or reading any attribute it lacks (a
    classmethod such as ``Traceback.from_exception``), uses the real class, imported then."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _real(cls)(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(_real(cls), name)


def _real(stand_in: type) -> Any:
    return getattr(importlib.import_module(stand_in.__module__), stand_in.__name__)


def import_renderer() -> None:
    """Import ``typer.rich_utils`` with stand-ins for the classes of ``_DEFERRED`` (nothing when
    it is imported already, or a real module of them is; as it is, should its imports change)."""
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = {}
    for module_name, class_name in _DEFERRED.items():
        if module_name in sys.modules:
            continue
        module = types.ModuleType(module_name)
        setattr(module, class_name, _Deferred(class_name, (), {"__module__": module_name}))
        stand_ins[module_name] = module
    sys.modules.update(stand_ins)
    try:
        importlib.import_module("typer.rich_utils")
    except ImportError:  # the renderer wants more of them than the stand-ins hold
        sys.modules.pop("typer.rich_utils", None)
    finally:
        for module_name, module in stand_ins.items():
            if sys.modules.get(module_name) is module:
                del sys.modules[module_name]
    importlib.import_module("typer.rich_utils")
