"""The framework plug-in contract (frameworks/contracts.py, issue #15)."""

from __future__ import annotations

import types

import pytest

from whichdevice import frameworks
from whichdevice.frameworks import contracts


def test_a_framework_loads_as_a_typed_adapter():
    fw = frameworks.load("numpy")
    assert isinstance(fw, contracts.Framework)
    assert fw.name == "numpy"
    assert isinstance(fw.discovery, contracts.Discovery) and isinstance(fw.ops, contracts.Ops)
    assert fw.discovery.framework_info().name == "numpy"
    with fw.placement.scope("CPU:0"):
        fw.sync.sync(fw.ops.matmul_steady(4, "float32", "CPU:0")())


def test_a_folder_missing_a_function_is_refused_with_its_name():
    ops = types.ModuleType("ops")
    ops.matmul_steady = lambda n, dtype, device: lambda: None  # no matmul_seed
    with pytest.raises(contracts.IncompleteFramework, match=r"'mine': ops.py lacks matmul_seed"):
        contracts.check("mine", "ops", ops)


def test_every_framework_folder_has_the_four_modules():
    from pathlib import Path

    root = Path(frameworks.__file__).parent
    for name in frameworks.FRAMEWORKS:
        folder = root / frameworks.folder(name)
        for part in contracts.PROTOCOLS:
            assert (folder / f"{part}.py").is_file(), f"{name}: {part}.py missing"
