"""The framework plug-in contract (frameworks/contracts.py)."""

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


# ------------------------------------------------------------------ optional parts


def test_a_missing_function_of_an_optional_part_is_refused_with_its_name():
    prec = types.ModuleType("precision")
    prec.policy = lambda name: None
    prec.cpu_flags = lambda cpuinfo=None: set()  # no POLICIES, no fast_16bit
    with pytest.raises(contracts.IncompleteFramework, match=r"'mine': precision.py lacks POLICIES, fast_16bit"):
        contracts.check("mine", "precision", prec)
    cal = types.ModuleType("calibration")
    cal.describe_train = lambda *a: {}
    contracts.check("mine", "calibration", cal)  # enough for predict's describe
    with pytest.raises(contracts.IncompleteFramework, match=r"calibration.py lacks tiny_eager, .*, d2h \("):
        contracts.check("mine", "probes", cal)  # not for calibrate's probes


def test_part_refuses_a_loaded_module_that_lacks_a_function(monkeypatch):
    import sys

    fake = types.ModuleType("whichdevice.frameworks.tensorflow.profiler")
    fake.trace = fake.xprof_available = fake.xplane_files = fake.framework_op_stats = lambda *a: None
    monkeypatch.setitem(sys.modules, "whichdevice.frameworks.tensorflow.profiler", fake)
    with pytest.raises(contracts.IncompleteFramework, match=r"'tensorflow': profiler.py lacks steady_trace_callback"):
        frameworks.part("tensorflow", "profiler")
    fake.steady_trace_callback = lambda logdir: None
    assert frameworks.part("tensorflow", "profiler") is fake


def test_part_of_a_framework_without_it_is_a_key_error_naming_those_with_it():
    with pytest.raises(KeyError, match=r"numpy has no training part \(frameworks with one: tensorflow, keras-jax"):
        frameworks.part("numpy", "training")
    with pytest.raises(KeyError, match=r"torch has no precision part \(frameworks with one: tensorflow\)"):
        frameworks.part_module("torch", "precision")
    assert frameworks.part_module("keras-jax", "scale") == "whichdevice.frameworks.keras_jax.scale"
    assert frameworks.having("training") == ("tensorflow", "keras-jax", "keras-torch", "torch")


def _defined(path) -> set[str]:
    """The names a module defines or imports at its top level (read, not imported; a star
    import brings the ``__all__`` of the module it names)."""
    import ast
    from pathlib import Path

    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom) and [a.name for a in node.names] == ["*"]:
            source = Path(frameworks.__file__).parents[2].joinpath(*(node.module or "").split("."))
            names.update(_star(source.with_suffix(".py")))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Assign):  # ``a = ...`` and ``a, b = ...``
            targets = [n for t in node.targets for n in (t.elts if isinstance(t, ast.Tuple) else [t])]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _star(path) -> list[str]:
    """The ``__all__`` a module declares (read, not imported)."""
    import ast

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{path.name} is star-imported but declares no __all__")


def test_every_listed_part_defines_its_protocol_members_read_without_importing():
    """Fast, for every framework (installed or not): each part ``PARTS`` lists has its file and
    names every member of its protocol; ``conformance.py`` (mypy's check of the signatures)
    names every listed part."""
    from pathlib import Path

    root = Path(frameworks.__file__).parent
    conformance = (root / "conformance.py").read_text()
    for name, parts in frameworks.PARTS.items():
        assert name in frameworks.FRAMEWORKS
        for kind in parts:
            filename, protocol = contracts.OPTIONAL[kind]
            path = root / frameworks.folder(name) / f"{filename}.py"
            assert path.is_file(), f"{name}: {path.name} missing"
            lacking = [m for m, _ in contracts._members(protocol) if m not in _defined(path)]
            assert not lacking, f"{name}: {path.name} lacks {lacking}"
            assigned = f"_{frameworks.folder(name)}_{filename}: contracts."
            assert assigned in conformance, f"conformance.py does not check {name}'s {filename}.py"
    assert set(frameworks.PARTS) == set(frameworks.FRAMEWORKS)


@pytest.mark.slow
@pytest.mark.frameworks
@pytest.mark.parametrize("name", [n for n in frameworks.FRAMEWORKS if frameworks.PARTS[n]])
def test_every_listed_part_loads_and_satisfies_its_protocol(name):
    """Each framework's parts loaded as a measuring child loads them (its own process, the
    framework's env), through ``frameworks.part``: the runtime protocol check passes. Only for
    frameworks installed here (~7-15 s each: the framework's import)."""
    import importlib.util
    import os
    import subprocess
    import sys

    missing = [m for m in frameworks.REQUIRES[name] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    code = (
        "import sys\n"
        "from whichdevice import frameworks\n"
        "for kind in frameworks.PARTS[sys.argv[1]]:\n"
        "    frameworks.part(sys.argv[1], kind)\n"
        "print('parts ok')\n"
    )
    env = {**os.environ, **frameworks.env_module(name).child_env("cpu")}
    done = subprocess.run([sys.executable, "-c", code, name], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "parts ok" in done.stdout, done.stderr[-2000:]
