"""What a script would have timed on a GPU, read from its source when it stopped before timing it.

A script that asks for CUDA on a machine without it (``t.cuda()`` on a CPU-only PyTorch) stops
before its GPU timing runs, so nothing of that timing can be measured here. The cause a thread's
answer gives is often visible in the source all the same: the timed region (from ``start =
time.time()`` to ``time.time() - start``) runs CUDA tensors or modules in a loop with no
``torch.cuda.synchronize()`` (asynchronous CUDA: the clock times the launches), or runs a
Python loop of ops on tensors of a few elements (each op a kernel launch).

:func:`scan` parses the source (``ast``, nothing runs) and returns :class:`Region` s: the timed
span, the loop iterations when they are constant, the CUDA names it uses, whether anything in it
waits for the device, and the size of the tensors it uses when their shape is a constant.
The rule ``rules.rule_latent_from_source`` says these as "read from the source, not measured".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from whichdevice.audit.notebook import MAGICS
from whichdevice.frameworks.common.audit import AUDITED, HostSync, terms

_CLOCKS = {"time", "perf_counter", "monotonic", "process_time", "default_timer"}
# Attributes of a tensor that are known on the host without waiting for its values.
_HOST_ONLY = {"len", "type", "isinstance", "id", "hasattr", "callable"}
_METADATA = {"shape", "dtype", "device", "size", "ndim", "dim", "is_cuda", "requires_grad", "numel", "names"}
_MAKERS = {"rand", "randn", "ones", "zeros", "empty", "full", "eye", "tensor", "randint"}


@dataclass
class Region:
    start_line: int
    end_line: int
    text: str
    iterations: int | None = None  # product of the constant range() counts of the loops inside
    cuda_names: list[str] = field(default_factory=list)
    waits: bool = False
    waits_on: list[tuple[int, str, str]] = field(default_factory=list)  # (line, the sync as written, why)
    waits_per_iteration: bool = False  # a sync inside a loop of the region: one wait per iteration
    warmed: bool = False  # every call of device work in it ran before it too (a warm-up)
    calls: list[str] = field(default_factory=list)  # method / function names called inside
    elems: int | None = None  # the largest constant-shape tensor the region uses (elements)


def _is_clock(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, (ast.Attribute, ast.Name))
        and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in _CLOCKS
    )


def _mentions_cuda(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr == "cuda":
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("cuda"):
            return True
    return False


def _const_elems(node: ast.AST) -> int | None:
    """torch.rand(3, 3) / torch.ones((4, 4)) / .cuda() of one: the element count when constant."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("cuda", "to"):
        node = node.func.value
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MAKERS):
        return None
    dims = node.args
    if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
        dims = dims[0].elts
    n = 1
    for d in dims:
        if not (isinstance(d, ast.Constant) and isinstance(d.value, int)):
            return None
        n *= d.value
    return n if dims else None


def _range_count(node: ast.For) -> int | None:
    it = node.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("range", "xrange"):
        args = it.args
        if len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, int):
            return args[0].value
    return None


# A value moved back to the host: ``x.cpu()``, ``x.to('cpu')``, ``x.numpy()``, ``x.item()``.
_TO_HOST = {"cpu", "numpy", "item", "tolist"}


def _to_host(node: ast.AST) -> bool:
    """The value's last call brings it to the host (``x.cpu()``, ``x.item()``, ``x.to('cpu')``), or it is
    a clock read or a tensor's metadata (``x.shape``): not a device tensor."""
    if isinstance(node, ast.Attribute) and node.attr in _METADATA:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in _TO_HOST or node.func.attr in _METADATA or _is_clock(node):
            return True
        if node.func.attr == "to" and node.args and isinstance(node.args[0], ast.Constant):
            return str(node.args[0].value).startswith("cpu")
    return _is_clock(node)


def _is_cuda_value(node: ast.AST) -> bool:
    """Whether an assigned value is a CUDA tensor, read from its text: it mentions CUDA and its last
    call does not bring it back to the host (``x.cuda().cpu()``, ``x.to('cpu')``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in _TO_HOST:
            return False
        if node.func.attr == "to" and node.args and isinstance(node.args[0], ast.Constant):
            return str(node.args[0].value).startswith("cuda")
    return _mentions_cuda(node)


def _targets(n: ast.Assign) -> list[tuple[str, ast.AST]]:
    """(name, value) for ``x = v`` and ``x, y = v1, v2`` (a tuple target from one value: each name gets it)."""
    out: list[tuple[str, ast.AST]] = []
    for t in n.targets:
        if isinstance(t, ast.Name):
            out.append((t.id, n.value))
        elif isinstance(t, (ast.Tuple, ast.List)):
            values = n.value.elts if isinstance(n.value, (ast.Tuple, ast.List)) else [n.value] * len(t.elts)
            out.extend((e.id, v) for e, v in zip(t.elts, values) if isinstance(e, ast.Name))
    return out


def _names_assigned(tree: ast.AST, derive: bool = False) -> tuple[dict[str, list[tuple[int, bool]]], dict[str, int]]:
    """Each name's assignments in line order, (line, whether the value is a CUDA tensor), so a region
    reads the device of the tensors it really uses (pytorch/pytorch#7459's pattern: ``x = x.cuda()``,
    a GPU timing, then ``x = x.cpu()`` and a CPU timing: the second is CPU work); and the constant
    element counts of the tensors made."""
    cuda: dict[str, list[tuple[int, bool]]] = {}
    sizes: dict[str, int] = {}
    assigns = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assign)), key=lambda n: n.lineno)
    for n in assigns:
        for name, value in _targets(n):
            # a value computed from CUDA tensors is on CUDA too (``r = conv2d(s, d)``), unless moved to the host
            derived = (
                derive
                and not _to_host(value)
                and any(
                    isinstance(u, ast.Name) and u.id in cuda and _cuda_at(cuda[u.id], n.lineno) for u in ast.walk(value)
                )
            )
            cuda.setdefault(name, []).append((n.lineno, _is_cuda_value(value) or derived))
    for n in assigns:
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            name = n.targets[0].id
            e = _const_elems(n.value)
            if e is None and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute):
                base = n.value.func.value
                if isinstance(base, ast.Name) and base.id in sizes and n.value.func.attr in ("cuda", "to"):
                    e = sizes[base.id]
            if e is not None:
                sizes[name] = e
    for history in cuda.values():
        history.sort()
    return cuda, sizes


def _cuda_at(history: list[tuple[int, bool]], line: int) -> bool:
    """Whether the name holds a CUDA tensor when a region starting at ``line`` runs: its last assignment
    before that line says so (none before it: any assignment of it does, as a function's argument may)."""
    before = [is_cuda for at, is_cuda in history if at < line]
    return before[-1] if before else any(is_cuda for _, is_cuda in history)


def all_syncs() -> tuple[HostSync, ...]:
    """Every audited framework's table of host syncs (their audit parts' ``HOST_SYNCS``)."""
    return tuple(s for name in AUDITED for s in terms(name).HOST_SYNCS)


def scan(source: str, syncs: tuple[HostSync, ...] | None = None) -> list[Region]:
    """The timed regions of the script: ``X = <clock>()`` ... ``<clock>() - X`` (or ``Y - X``); what in
    each waits for the device is read with ``syncs`` (a framework's ``HOST_SYNCS``; all of them by default)."""
    table = all_syncs() if syncs is None else syncs
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    cuda_names, sizes = _names_assigned(tree)
    values_on_cuda, _ = _names_assigned(tree, derive=True)
    starts: dict[str, list[int]] = {}
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and _is_clock(n.value)
        ):
            starts.setdefault(n.targets[0].id, []).append(n.lineno)
    regions: list[Region] = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and isinstance(n.right, ast.Name)):
            continue
        before = [x for x in starts.get(n.right.id, []) if x < n.lineno]
        if not before:
            continue
        start = max(before)  # the latest read of that name before the subtraction
        # the clock read that ends the region: the left operand's own assignment, or the subtraction's line
        regions.append(_region(tree, lines, start, n.lineno, (cuda_names, values_on_cuda), sizes, table))
    regions += _magic_regions(tree, (cuda_names, values_on_cuda), sizes, table)
    # one region per start line (the first end after it)
    out: dict[int, Region] = {}
    for r in sorted(regions, key=lambda r: (r.start_line, r.end_line)):
        out.setdefault(r.start_line, r)
    return list(out.values())


# What a notebook's timing magics become in its translated cells (audit/notebook.py): a call of
# the audit's Magics object (named MAGICS) whose first argument is the timed code, as text.
_MAGIC_METHODS = {"timeit": "%timeit", "time": "%time"}


def _magic_regions(
    tree: ast.AST,
    histories: tuple[dict[str, list[tuple[int, bool]]], dict[str, list[tuple[int, bool]]]],
    sizes: dict[str, int],
    table: tuple[HostSync, ...],
) -> list[Region]:
    """The timed regions of a notebook's ``%timeit`` / ``%%timeit`` / ``%time`` / ``%%time``: the
    code they time is text in the translated cell, so it is parsed here and read as a region of
    the magic's line (``%timeit pt_x @ pt_w`` on CUDA tensors: nothing in it waits for the GPU)."""
    out = []
    for n in ast.walk(tree):
        if not (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == MAGICS
            and n.func.attr in _MAGIC_METHODS
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and isinstance(n.args[0].value, str)
        ):
            continue
        try:
            body = ast.parse(n.args[0].value)
        except SyntaxError:
            continue
        # the timed code's lines just after the magic's line: the region (a, b) holds them alone
        ast.increment_lineno(body, n.lineno)
        last = max((getattr(x, "lineno", 0) for x in ast.walk(body)), default=n.lineno)
        r = _region(body, [], n.lineno, last + 1, histories, sizes, table)
        r.end_line = n.lineno
        code = "; ".join(x.strip() for x in n.args[0].value.splitlines() if x.strip())
        r.text = f"{_MAGIC_METHODS[n.func.attr]} {code}"[:200]
        out.append(r)
    return out


def _call_name(n: ast.Call) -> str:
    """``x.f(...)`` -> "f", ``f(...)`` -> "f"."""
    return n.func.attr if isinstance(n.func, ast.Attribute) else (n.func.id if isinstance(n.func, ast.Name) else "")


def _region(
    tree: ast.AST,
    lines: list[str],
    a: int,
    b: int,
    histories: tuple[dict[str, list[tuple[int, bool]]], dict[str, list[tuple[int, bool]]]],
    sizes: dict[str, int],
    table: tuple[HostSync, ...] = (),
) -> Region:
    """One region: the names it uses that hold CUDA tensors as written (``histories[0]``), and what in
    it waits for the device, read with values computed from CUDA tensors counted as CUDA too (``[1]``)."""
    cuda_names, values_on_cuda = histories
    r = Region(start_line=a, end_line=b, text=lines[b - 1].strip()[:200] if b - 1 < len(lines) else "")
    used: set[str] = set()
    iters = None
    for n in ast.walk(tree):
        line = getattr(n, "lineno", 0)
        if not (a < line < b):
            continue
        if isinstance(n, ast.For):
            c = _range_count(n)
            if c is not None:
                iters = c if iters is None else iters * c
        if isinstance(n, ast.Name):
            used.add(n.id)
        if isinstance(n, ast.Call) and _call_name(n):
            r.calls.append(_call_name(n))
        if isinstance(n, ast.Assign):
            r.cuda_names.extend(name for name, value in _targets(n) if _is_cuda_value(value))
    r.iterations = iters
    r.cuda_names = sorted(set(r.cuda_names) | {x for x in used if x in cuda_names and _cuda_at(cuda_names[x], a)})
    known = [sizes[x] for x in used if x in sizes]
    r.elems = max(known) if known else None
    _read_syncs(r, tree, values_on_cuda, table)
    work = {c for c in r.calls if c not in _NOT_WORK}
    before = {_call_name(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n, "lineno", 0) < a}
    r.warmed = bool(work) and work <= before
    return r


# Calls that are no device work of their own: a region whose other calls all ran before it was warmed up.
_NOT_WORK = _CLOCKS | {
    "print", "range", "len", "format", "str", "repr", "float", "int", "bool", "list", "enumerate", "zip",
    "item", "cpu", "numpy", "tolist", "synchronize", "view", "reshape", "cuda", "to", "append",
}  # fmt: skip


def _read_syncs(r: Region, tree: ast.AST, values_on_cuda: dict[str, list[tuple[int, bool]]], table) -> None:  # type: ignore[no-untyped-def]
    """What in region ``r`` waits for the device (``table``: a framework's ``HOST_SYNCS``), and whether a
    wait is inside one of its loops (once per iteration)."""
    a, b = r.start_line, r.end_line

    def cuda_here(name: str) -> bool:
        """A name assigned inside the region holds what that assignment made; else what it held before."""
        if name not in values_on_cuda:
            return False
        inside = [is_cuda for at, is_cuda in values_on_cuda[name] if a < at < b]
        return inside[0] if inside else _cuda_at(values_on_cuda[name], a)

    in_loops = {
        id(x)
        for loop in ast.walk(tree)
        if isinstance(loop, (ast.For, ast.While)) and a < getattr(loop, "lineno", 0) < b
        for x in ast.walk(loop)
        if x is not loop
    }
    for n in ast.walk(tree):
        line = getattr(n, "lineno", 0)
        hit = _sync_at(n, table, lambda node: _uses_device_value(node, cuda_here)) if a < line < b else None
        if hit is not None:
            r.waits = True
            r.waits_on.append((line, hit.written, hit.why))
            r.waits_per_iteration = r.waits_per_iteration or id(n) in in_loops


# ---------------------------------------------------------------- the syncs of a region


def _uses_device_value(node: ast.AST, is_device: object) -> bool:
    """Whether ``node`` uses the values of a device tensor: a device name appears in it other than as the
    owner of its metadata (``x.shape``, ``x.device``, ``x.size()``)."""
    meta = {
        id(n.value)
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and n.attr in _METADATA and isinstance(n.value, ast.Name)
    }
    meta |= {  # len(x), type(x), isinstance(x, ...): read on the host without the values
        id(arg)
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _HOST_ONLY
        for arg in n.args
        if isinstance(arg, ast.Name)
    }
    return any(
        isinstance(n, ast.Name) and id(n) not in meta and is_device(n.id)  # type: ignore[operator]
        for n in ast.walk(node)
    )


def _owner(node: ast.AST) -> str:
    """The last name of a call's owner: ``torch.linalg`` -> "linalg", ``np`` -> "np"."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _is_mask(node: ast.AST) -> bool:
    """An index that is a boolean mask written in place: a comparison, or ``~`` / ``&`` / ``|`` of them."""
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return _is_mask(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        return _is_mask(node.left) or _is_mask(node.right)
    return False


def _sync_at(node: ast.AST, table: tuple[HostSync, ...], on_device) -> HostSync | None:  # type: ignore[no-untyped-def]
    """The entry of ``table`` that ``node`` is, if any (``HostSync.form`` says how each is written)."""
    for s in table:
        if _matches(node, s, on_device):
            return s
    return None


def _matches(node: ast.AST, s: HostSync, on_device) -> bool:  # type: ignore[no-untyped-def]
    owners = set(s.within.split("|")) if s.within else set()
    if s.form == "fstring":
        return isinstance(node, ast.FormattedValue) and on_device(node.value)
    if s.form == "mask":
        return isinstance(node, ast.Subscript) and _is_mask(node.slice) and on_device(node.value)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if s.form == "builtin":
        args = [*node.args, *(k.value for k in node.keywords)]
        return isinstance(func, ast.Name) and func.id in s.names and any(on_device(x) for x in args)
    if not (isinstance(func, ast.Attribute) and func.attr in s.names):
        return False
    if s.form == "method":
        if s.arg:
            first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
            return isinstance(first, ast.Constant) and str(first.value).startswith(s.arg)
        return True
    if s.form == "function":
        return not owners or _owner(func.value) in owners
    if s.form == "host_function":
        return _owner(func.value) in owners and any(on_device(x) for x in node.args)
    return False


# ---------------------------------------------------------------- what the script imports and calls


def imported(source: str) -> set[str]:
    """The top-level modules the script imports (``import cupy as cp``, ``from numba import cuda``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out.update(a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.add(n.module.split(".")[0])
    return out


def calls_method(source: str, names: set[str]) -> bool:
    """Whether the script calls a method of one of ``names`` (``model.fit(...)``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in names for n in ast.walk(tree)
    )


def local_sources(source: str, folder: Path) -> dict[str, str]:
    """The sources of the modules the script imports from its own folder (``from helpers import
    train`` with ``helpers.py`` beside it), by module name: where a project keeps its training
    loop and its timing apart from the script. Read only, one level deep; unreadable ones left out."""
    out: dict[str, str] = {}
    for name in sorted(imported(source)):
        path = folder / f"{name}.py"
        try:
            if path.is_file():
                out[name] = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return out
