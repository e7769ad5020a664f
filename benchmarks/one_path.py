"""The counts of one path from a job to the screen, measured from the source.

- ``round_trips``: places in the package that start ``python -m whichdevice`` (an API or magic that
  shells out to the CLI and reads its text), target 0;
- ``presenters_importing_analysis``: modules under ``present/`` that import from
  ``whichdevice.analysis`` (at any level, type-only imports under ``TYPE_CHECKING`` excepted), target 0;
- ``presenters_writing_files``: modules under ``present/`` that write files (``write_text``,
  ``write_bytes``, ``savefig``, ``open(..., "w"...)``, ``safeio`` writers), target <= 1;
- ``framework_branches_outside``: conditions outside ``frameworks/`` that compare against a
  framework's name (``fw == "torch"``, ``framework in ("keras-jax", "keras-torch")``,
  ``name.startswith("keras")``), one per line, target <= 3;
- ``audit_hook_modules``: modules under ``audit/`` that patch a framework (their name ends in
  ``hooks`` or they call ``setattr`` on a framework module), target 0;
- ``job_skeletons``: the ways a job is run: ``jobs/`` counts as one, and so does every function
  outside it that measures with the session itself (``session.measure``, not through
  ``jobs.run``'s progress) or writes a record and its page itself (``save_run``, ``save_record``,
  ``record_then_page``, ``jobs.finish``, the audit record's ``save``), one per function, target 1.
  A command's own way to measure handed to ``jobs.run`` (``measure=``) is not a skeleton;
- ``framework_tables_outside``: dict literals outside ``frameworks/`` keyed by framework names
  (two or more keys that are framework names, or only such keys), target 0: each framework
  declares its entry in its own folder (``frameworks.declared``);
- ``import_circles``: groups of modules that import each other, directly or round a longer loop
  (strongly connected components of the package's import graph, grimp's, imports inside
  functions included, those under ``TYPE_CHECKING`` excepted), target 0;
- ``presenters_computing_significance``: modules under ``present/`` that decide whether a claim can
  be made: a comparison of an interval's end (``lo``, ``hi``, ``low``, ``high``) with a number, of a
  sample count (``n``) with a number over 1 or a threshold, or naming one of
  ``analysis/significance.py``'s thresholds (``MIN_SAMPLES``, ``MIN_ROUNDS_NO_CHANGE``,
  ``WIDE_FACTOR``, ``NOISE_THRESHOLD``), one per module, target 0;
- ``api_private_cli_calls``: places outside ``cli/`` that reach a private name (``_x``) of a
  ``whichdevice.cli`` module (``from whichdevice.cli.run import _x`` or ``module._x`` on a
  module imported from ``whichdevice.cli``), target 0;
- ``training_step_sizers``: functions that size a training step's cases against a budget: a
  function with a budget parameter (its name holds ``budget``) holding an ``if`` that compares a
  name computed from that budget (assignments followed from the parameter: ``avail = max(budget_s
  - start, ...)``, ``plan_s = share * avail``) and, on either side, adds to a list (``append``,
  ``extend``, ``insert``, ``+= [...]``: a case planned, or a line saying what was cut). A counted
  function that another one reaches by calls through functions taking a budget is part of that
  one's sizing (``suite.one_round`` inside ``size_user_cases``): one per sizer, target 1;
- ``preflights``: the pre-flight children the package can start before it measures a training
  step: each module a pre-flight runs (a module-level ``*PREFLIGHT*`` name holding
  ``"whichdevice.…"``, what ``core.process.run_module`` starts), and each function whose name
  says pre-flight that starts the script capture (``run_child``: the script's own code, no
  module of its own), target 1. Names are how it finds them: a pre-flight named otherwise is not
  counted. A function that starts a pre-flight through a counted one (``scriptplan.check_model``,
  the ``--model`` check of ``train``, ``pipeline``, ``placement``, ``predict`` and ``scale``, run
  by ``_preflight_run`` in the same child) is that pre-flight's mode, not another pre-flight;
- ``fix_names_outside``: string literals naming a fix of the catalogue outside the catalogue
  (``workloads/fixes.py``, and ``core/fixkeys.py`` where each of its keys is spelled once for the
  modules that may not import it) and the framework adapters (the modules under ``frameworks/`` whose name
  ends in ``fixes.py``: ``frameworks/<fw>/scriptfixes.py``, ``frameworks/common/kerasscriptfixes.py``,
  ``frameworks/common/fixes.py``), one per literal, target 0. A fix is
  a catalogue entry that varies a case (``FixEntry.param`` set: batch, prefetch, ..., cpu_threads;
  not the checks, placement and warm-up), read from the catalogue itself; a literal names it when
  it is the key (``"autocast"``) or begins with the key and a colon (a capture's member,
  ``f"batch:{k}"``'s ``"batch:"``). Every string constant of the module's syntax tree counts, an
  f-string's literal parts included; docstrings do not. The same word used for something else (a
  fit's ``"batch"`` keyword) counts too: the count is of the literals, which ``--list`` shows. One
  exception: in ``frameworks/torch/`` a key of a dict display, a subscript or the first argument of
  ``.get``/``.pop``/``.setdefault`` that is a keyword of torch's ``DataLoader`` (``num_workers``,
  ``pin_memory``: the setting of the script's loader that two torch fixes are named after, kept and
  read as the script passed it) is torch's word, not the fix's; a comparison with it (a member's
  name) still counts. A second: the attribute name of a ``getattr(obj, "name", ...)`` is the
  attribute of the object it reads (Keras' ``model.jit_compile``, the compile option the model
  keeps, read back to tell whether XLA ran), the framework's word, not the fix's;
- ``fix_names_in_script_path``: the same count in the script path alone, the planner
  (``workloads/scriptplan.py``, ``workloads/script.py``) and the captures (``frameworks/*/capture*.py``,
  ``frameworks/common/kerascapture.py``, ``kerasfit.py``, ``capturekit.py``), target 0;
- ``src_lines``: lines of ``src/`` Python (``wc -l``), limit 36,000;
- duplicated-code pairs are counted with the project's duplicate scanner by the lead (six or more
  shared lines); this script does not count them.

Usage::

    python benchmarks/one_path.py            # the table
    python benchmarks/one_path.py --list     # every counted place
    python benchmarks/one_path.py --json
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "whichdevice"
NAMES = {"tensorflow", "numpy", "keras-jax", "keras-torch", "torch", "jax", "keras"}
WRITERS = re.compile(r"\.write_text\(|\.write_bytes\(|savefig\(|write_atomic|atomic_write|open\([^)]*[\"'][wa]b?[\"']")


def _files(sub: str = "") -> list[Path]:
    return sorted((PACKAGE / sub).rglob("*.py"))


def _rel(p: Path) -> str:
    return str(p.relative_to(PACKAGE))


def round_trips() -> list[str]:
    out = []
    for p in _files():
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"[\"']-m[\"'],\s*[\"']whichdevice[\"']", line):
                out.append(f"{_rel(p)}:{i}")
    return out


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                lines.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return lines


def presenters_importing_analysis() -> list[str]:
    out = []
    for p in _files("present"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        typing_only = _type_checking_lines(tree)
        for node in ast.walk(tree):
            mod = None
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = node.module
            elif isinstance(node, ast.Import):
                mod = ",".join(a.name for a in node.names)
            if mod and "whichdevice.analysis" in mod and node.lineno not in typing_only:
                out.append(f"{_rel(p)}:{node.lineno} {mod}")
    return out


def presenters_writing_files() -> list[str]:
    out = []
    for p in _files("present"):
        hits = [i for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if WRITERS.search(line)]
        if hits:
            out.append(f"{_rel(p)}:{','.join(map(str, hits))}")
    return out


def _names_in(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in NAMES:
            return True
    return False


def _about_a_framework(node: ast.Compare) -> bool:
    """A comparison with a framework's name. ``"numpy"`` is also a kind of data (``data ==
    "numpy"``): it counts only where the other side names a framework (``fw``, ``framework``)."""
    sides = [node.left, *node.comparators]
    if not any(_names_in(c) for c in sides):
        return False
    strings = {s.value for c in sides for s in ast.walk(c) if isinstance(s, ast.Constant) and isinstance(s.value, str)}
    if strings & NAMES - {"numpy"}:
        return True
    return any(re.search(r"\b(fw|framework|backend)\b", ast.unparse(c)) for c in sides)


def _is_framework_test(test: ast.AST) -> bool:
    for sub in ast.walk(test):
        if isinstance(sub, ast.Compare) and _about_a_framework(sub):
            return True
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in {"startswith", "endswith"}
            and any(_names_in(a) for a in sub.args)
        ):
            return True
    return False


def framework_branches_outside() -> list[str]:
    out: set[str] = set()
    for p in _files():
        if _rel(p).startswith("frameworks/"):
            continue
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            tests: list[ast.AST] = []
            if isinstance(node, (ast.If, ast.IfExp, ast.While)):
                tests = [node.test]
            elif isinstance(node, ast.comprehension):
                tests = list(node.ifs)
            elif isinstance(node, ast.match_case):
                tests = [node.pattern]
            for t in tests:
                if _is_framework_test(t) or isinstance(node, ast.match_case) and _names_in(t):
                    out.add(f"{_rel(p)}:{t.lineno}")
    return sorted(out, key=lambda s: (s.split(":")[0], int(s.split(":")[1])))


def audit_hook_modules() -> list[str]:
    out = []
    for p in _files("audit"):
        text = p.read_text(encoding="utf-8")
        if p.stem.endswith("hooks") or p.stem == "importhook" or re.search(r"setattr\((torch|tf|jax|keras)\b", text):
            out.append(_rel(p))
    return out


SKELETON_CALLS = {"record_then_page", "save_record", "save_run"}


def _call_name(node: ast.Call) -> str:
    return ast.unparse(node.func)


def _is_skeleton_call(node: ast.Call) -> bool:
    name = _call_name(node)
    last = name.rsplit(".", 1)[-1]
    return (
        last in SKELETON_CALLS
        or name in ("session.measure", "jobs.finish")
        or (last == "save" and "audit" in name)  # the audit record's writer (audit/record.save)
    )


def _functions_calling(p: Path, test) -> set[str]:
    """``rel:function`` for each innermost function of ``p`` holding a call that ``test`` accepts."""
    out: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Call) and test(child):
                out.add(f"{_rel(p)}:{where}")
            visit(child, where)

    visit(ast.parse(p.read_text(encoding="utf-8")), "<module>")
    return out


def job_skeletons() -> list[str]:
    out = ["jobs/ (jobs.run)"]
    for p in _files():
        if not _rel(p).startswith("jobs/"):
            out += sorted(_functions_calling(p, _is_skeleton_call))
    return out


def framework_tables_outside() -> list[str]:
    out = []
    for p in _files():
        if _rel(p).startswith("frameworks/"):
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Dict):
                continue
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            named = [k for k in keys if k in NAMES]
            if len(named) >= 2 or (named and len(named) == len(node.keys) and named != ["numpy"]):
                out.append(f"{_rel(p)}:{node.lineno} {', '.join(named)}")
    return sorted(out, key=lambda s: (s.split(":")[0], int(s.split(":")[1].split()[0])))


def import_circles() -> list[str]:
    import grimp

    graph = grimp.build_graph("whichdevice", exclude_type_checking_imports=True, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[str] = []

    def connect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, []):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(" <-> ".join(sorted(group)))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in edges:
        if module not in index:
            connect(module)
    return sorted(circles)


BOUNDS = {"lo", "hi", "low", "high", "ci_low", "ci_high"}
COUNTS = {"n", "n_a", "n_b"}
THRESHOLDS = {"MIN_SAMPLES", "MIN_ROUNDS_NO_CHANGE", "WIDE_FACTOR", "NOISE_THRESHOLD"}


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _number(node: ast.AST, over: float = float("-inf")) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
        and node.value > over
    )


def _decides_a_claim(node: ast.Compare) -> bool:
    sides = [node.left, *node.comparators]
    names = {_name(s) for s in sides}
    return bool(
        names & THRESHOLDS
        or names & BOUNDS
        and any(_number(s) for s in sides)
        or names & COUNTS
        and any(_number(s, 1) for s in sides)
    )


def presenters_computing_significance() -> list[str]:
    out = []
    for p in _files("present"):
        lines = sorted(
            node.lineno
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, ast.Compare) and _decides_a_claim(node)
        )
        if lines:
            out.append(f"{_rel(p)}:{','.join(map(str, lines))}")
    return out


def api_private_cli_calls() -> list[str]:
    out = []
    for p in _files():
        if _rel(p).startswith("cli/"):
            continue
        tree = ast.parse(p.read_text(encoding="utf-8"))
        cli_aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("whichdevice.cli"):
                for a in node.names:
                    if a.name.startswith("_"):
                        out.append(f"{_rel(p)}:{node.lineno} {node.module}.{a.name}")
                    cli_aliases.add(a.asname or a.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if isinstance(node.value, ast.Name) and node.value.id in cli_aliases:
                    out.append(f"{_rel(p)}:{node.lineno} {node.value.id}.{node.attr}")
    return out


# ------------------------------------------------------------------ sizers and pre-flights


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def _budget_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The function's budget parameters and every local name computed from them (assignments,
    followed until nothing new is found: ``avail = max(budget_s - start, ...)``, ``plan_s = ... * avail``)."""
    derived = {a for a in _params(fn) if "budget" in a}
    grew = bool(derived)
    while grew:
        grew = False
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                if not used & derived:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id not in derived:
                            derived.add(n.id)
                            grew = True
    return derived


def _grows_a_list(nodes: list[ast.stmt]) -> bool:
    for stmt in nodes:
        for n in ast.walk(stmt):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("append", "extend", "insert")
            ):
                return True
            if (
                isinstance(n, ast.AugAssign)
                and isinstance(n.op, ast.Add)
                and isinstance(n.value, (ast.List, ast.ListComp))
            ):
                return True
    return False


def _sizes_against_budget(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """An ``if`` that compares something computed from a budget parameter and, on either side,
    adds to a list (the cases planned, or the lines saying what was cut)."""
    derived = _budget_names(fn)
    if not derived:
        return False
    for node in ast.walk(fn):
        if not isinstance(node, ast.If):
            continue
        compares = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare)]
        names = {n.id for c in compares for n in ast.walk(c) if isinstance(n, ast.Name)}
        if names & derived and _grows_a_list([*node.body, *node.orelse]):
            return True
    return False


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _calls(fn: ast.AST) -> set[str]:
    return {_call_name(n).rsplit(".", 1)[-1] for n in ast.walk(fn) if isinstance(n, ast.Call)}


def training_step_sizers() -> list[str]:
    counted: list[str] = []
    budgeted: dict[str, set[str]] = {}  # each function with a budget parameter -> the names it calls
    for p in _files():
        for fn in _functions(ast.parse(p.read_text(encoding="utf-8"))):
            if any("budget" in a for a in _params(fn)):
                budgeted.setdefault(fn.name, set()).update(_calls(fn))
            if _sizes_against_budget(fn):
                counted.append(f"{_rel(p)}:{fn.name}")

    def reached(name: str) -> set[str]:  # through the functions the budget is handed on to
        seen: set[str] = set()
        todo = [name]
        while todo:
            for callee in budgeted.get(todo.pop(), set()) - seen:
                seen.add(callee)
                todo.append(callee)
        return seen

    # a counted function that another one reaches is part of that one's sizing: counted there
    inner = {callee for c in counted for callee in reached(c.split(":", 1)[1]) if callee != c.split(":", 1)[1]}
    return sorted(c for c in counted if c.split(":", 1)[1] not in inner)


def preflights() -> list[str]:
    out = []
    for p in _files():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in tree.body:  # a pre-flight child's module: PREFLIGHT = "whichdevice.…"
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and "PREFLIGHT" in t.id for t in node.targets)
                and isinstance(node.value, ast.Constant)
                and str(node.value.value).startswith("whichdevice.")
            ):
                names = ", ".join(t.id for t in node.targets if isinstance(t, ast.Name))
                out.append(f"{_rel(p)}:{node.lineno} {names} = {node.value.value}")
        for fn in _functions(tree):  # a pre-flight of the script capture: no module of its own
            if "preflight" in fn.name.lower() and _calls(fn) & {"run_child"}:
                out.append(f"{_rel(p)}:{fn.name} (the script capture)")
    return out


def _fix_keys() -> set[str]:
    """The catalogue's keys of the fixes a case varies (``FixEntry.param`` set), from the catalogue."""
    from whichdevice.workloads import fixes

    return {f.key for f in fixes.FIXES if f.param}


# The catalogue: its entries, and the keys they are built from (spelled once, in core, for the
# modules that may not import workloads: the records' migrations and the frameworks).
CATALOGUE = ("workloads/fixes.py", "core/fixkeys.py")


def _adapter_or_catalogue(rel: str) -> bool:
    return rel in CATALOGUE or (rel.startswith("frameworks/") and rel.endswith("fixes.py"))


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the module's, classes' and functions' docstring constants."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


# torch.utils.data.DataLoader's keywords that torch fixes are named after (``_fix_literals``).
DATALOADER_KEYWORDS = {"num_workers", "pin_memory"}


def _setting_keys(tree: ast.AST) -> set[int]:
    """The ids of the string constants used as a setting's name: a dict display's key, a
    subscript, the first argument of ``.get``/``.pop``/``.setdefault``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            out.update(id(k) for k in node.keys if isinstance(k, ast.Constant))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            out.add(id(node.slice))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            out.add(id(node.args[0]))
    return out


def _attribute_names(tree: ast.AST) -> set[int]:
    """The ids of the string constants naming the attribute a ``getattr`` reads (its second argument)."""
    return {
        id(node.args[1])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
    }


def _fix_literals(p: Path, keys: set[str]) -> list[str]:
    tree = ast.parse(p.read_text(encoding="utf-8"))
    skip = _docstrings(tree) | _attribute_names(tree)  # an object's attribute: the framework's word
    if _rel(p).startswith("frameworks/torch/"):  # a DataLoader's own keyword, not the fix
        skip |= _setting_keys(tree) & {
            id(n) for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in DATALOADER_KEYWORDS
        }
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
            continue
        head = node.value.split(":", 1)[0] if ":" in node.value else None
        if node.value in keys or head in keys:
            out.append(f"{_rel(p)}:{node.lineno} {node.value!r}")
    return out


def fix_names_outside() -> list[str]:
    keys = _fix_keys()
    return [hit for p in _files() if not _adapter_or_catalogue(_rel(p)) for hit in _fix_literals(p, keys)]


SCRIPT_PATH = re.compile(
    r"^(workloads/scriptplan\.py|workloads/script\.py|frameworks/[a-z_]+/capture\w*\.py"
    r"|frameworks/common/(kerascapture|kerasfit|capturekit)\.py)$"
)


def fix_names_in_script_path() -> list[str]:
    keys = _fix_keys()
    return [hit for p in _files() if SCRIPT_PATH.match(_rel(p)) for hit in _fix_literals(p, keys)]


def src_lines() -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in _files())


def measure() -> dict[str, list[str] | int]:
    return {
        "round_trips": round_trips(),
        "presenters_importing_analysis": presenters_importing_analysis(),
        "presenters_writing_files": presenters_writing_files(),
        "framework_branches_outside": framework_branches_outside(),
        "audit_hook_modules": audit_hook_modules(),
        "job_skeletons": job_skeletons(),
        "framework_tables_outside": framework_tables_outside(),
        "import_circles": import_circles(),
        "presenters_computing_significance": presenters_computing_significance(),
        "api_private_cli_calls": api_private_cli_calls(),
        "training_step_sizers": training_step_sizers(),
        "preflights": preflights(),
        "fix_names_outside": fix_names_outside(),
        "fix_names_in_script_path": fix_names_in_script_path(),
        "src_lines": src_lines(),
    }


TARGETS = {
    "round_trips": 0,
    "presenters_importing_analysis": 0,
    "presenters_writing_files": 1,
    "framework_branches_outside": 3,
    "audit_hook_modules": 0,
    "job_skeletons": 1,
    "framework_tables_outside": 0,
    "import_circles": 0,
    "presenters_computing_significance": 0,
    "api_private_cli_calls": 0,
    "training_step_sizers": 1,
    "preflights": 1,
    "fix_names_outside": 0,
    "fix_names_in_script_path": 0,
    "src_lines": 36000,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="print every counted place")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = measure()
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    for key, value in found.items():
        count = value if isinstance(value, int) else len(value)
        mark = "ok" if count <= TARGETS[key] else "over"
        print(f"{key:32} {count:>6}  (target <= {TARGETS[key]}: {mark})")
        if args.list and isinstance(value, list):
            for place in value:
                print(f"    {place}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
