"""Install a framework's audit hooks the moment the script's own ``import <framework>`` ends.

One finder per framework (``tf_hooks.TFHookFinder``, ``torch_hooks.TorchHookFinder``,
``jax_hooks.JaxHookFinder``) sits at the front of ``sys.meta_path`` while the script runs. On
the first import of its framework it takes itself off the path, lets the normal loader run,
then calls the hooks module's ``install(module, state)``: the hooks are in place before the
script's next line, and a script that never imports the framework pays nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import traceback
from collections.abc import Callable
from typing import Any


class AfterImportFinder(importlib.abc.MetaPathFinder):
    """Calls ``install(module, st)`` right after the script's ``import <name>`` finishes, once
    (``st.<installed_attr>`` set by ``install`` says it is done). A hook that fails must not stop
    the script: the audit sees less, and the traceback says why on the real stderr."""

    def __init__(self, name: str, installed_attr: str, install: Callable[[Any, Any], None], st: Any) -> None:
        self.name = name
        self.installed_attr = installed_attr
        self.install = install
        self.st = st

    def find_spec(self, fullname, path, target=None):  # type: ignore[no-untyped-def]
        if fullname != self.name or getattr(self.st, self.installed_attr):
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module
        install, st = self.install, self.st

        def exec_module(module):  # type: ignore[no-untyped-def]
            orig_exec(module)
            try:
                install(module, st)
            except Exception:  # a hook that fails must not stop the script: audit less, say why
                traceback.print_exc(file=sys.__stderr__)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
