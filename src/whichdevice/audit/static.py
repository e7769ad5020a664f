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

_CLOCKS = {"time", "perf_counter", "monotonic", "process_time", "default_timer"}
_WAITS = {"synchronize", "item", "cpu", "numpy", "tolist", "block_until_ready"}
_MAKERS = {"rand", "randn", "ones", "zeros", "empty", "full", "eye", "tensor", "randint"}


@dataclass
class Region:
    start_line: int
    end_line: int
    text: str
    iterations: int | None = None  # product of the constant range() counts of the loops inside
    cuda_names: list[str] = field(default_factory=list)
    waits: bool = False
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


def _names_assigned(tree: ast.AST) -> tuple[dict[str, list[tuple[int, bool]]], dict[str, int]]:
    """Each name's assignments in line order, (line, whether the value is a CUDA tensor), so a region
    reads the device of the tensors it really uses (pytorch/pytorch#7459's pattern: ``x = x.cuda()``,
    a GPU timing, then ``x = x.cpu()`` and a CPU timing: the second is CPU work); and the constant
    element counts of the tensors made."""
    cuda: dict[str, list[tuple[int, bool]]] = {}
    sizes: dict[str, int] = {}
    for n in ast.walk(tree):
        if not isinstance(n, ast.Assign):
            continue
        for name, value in _targets(n):
            cuda.setdefault(name, []).append((n.lineno, _is_cuda_value(value)))
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


def scan(source: str) -> list[Region]:
    """The timed regions of the script: ``X = <clock>()`` ... ``<clock>() - X`` (or ``Y - X``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    cuda_names, sizes = _names_assigned(tree)
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
        regions.append(_region(tree, lines, start, n.lineno, cuda_names, sizes))
    # one region per start line (the first end after it)
    out: dict[int, Region] = {}
    for r in sorted(regions, key=lambda r: (r.start_line, r.end_line)):
        out.setdefault(r.start_line, r)
    return list(out.values())


def _region(
    tree: ast.AST,
    lines: list[str],
    a: int,
    b: int,
    cuda_names: dict[str, list[tuple[int, bool]]],
    sizes: dict[str, int],
) -> Region:
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
        if isinstance(n, ast.Call):
            fn = (
                n.func.attr
                if isinstance(n.func, ast.Attribute)
                else (n.func.id if isinstance(n.func, ast.Name) else "")
            )
            if fn:
                r.calls.append(fn)
            if fn in _WAITS:
                r.waits = True
        if isinstance(n, ast.Assign):
            r.cuda_names.extend(name for name, value in _targets(n) if _is_cuda_value(value))
    r.iterations = iters
    r.cuda_names = sorted(set(r.cuda_names) | {x for x in used if x in cuda_names and _cuda_at(cuda_names[x], a)})
    known = [sizes[x] for x in used if x in sizes]
    r.elems = max(known) if known else None
    return r
