"""Kernels of an XLA-compiled step from its HLO text (no framework import): used for
Keras/JAX (``jax.jit(...).lower(...).compile().as_text()``) and TensorFlow with
``jit_compile=True`` (``experimental_get_compiler_ir(...)(stage="optimized_hlo")``).

The kernels are the instructions of the ENTRY computation that launch work — fusions, dots,
custom calls, copies, reductions — not parameters, constants, tuples or bitcasts. Each
kernel's bytes are its operands' and result's sizes from the HLO shapes; a dot (or a fusion
around a ``dot_general``) is costed as a matmul of 2·m·n·k FLOPs (exact for 2-D operands).
"""

from __future__ import annotations

import math
import re

_SHAPE = re.compile(r"\b(pred|s8|s16|s32|s64|u8|u16|u32|u64|f16|bf16|f32|f64|c64|c128)\[([0-9,]*)\]")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([a-z][\w\-]*)\((.*)$")
_SIZE = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4}
FREE = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "partition-id"})


def _shapes(text: str) -> list[tuple[int, int]]:
    """(elements, bytes per element) of every array shape in ``text``."""
    out = []
    for dtype, dims in _SHAPE.findall(text):
        n = math.prod(int(d) for d in dims.split(",") if d) if dims else 1
        out.append((n, _SIZE.get(dtype, 8)))
    return out


def kernels_from_hlo(text: str) -> list[dict]:
    """The entry computation's kernels (costmodel.OpCost fields) from compiled HLO text."""
    start = text.find("ENTRY")
    if start < 0:
        return []
    sizes: dict[str, list[tuple[int, int]]] = {}
    ops: list[dict] = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("}"):
            break
        m = _INSTR.match(line)
        if not m:
            continue
        name, shape_text, opcode, rest = m.groups()
        result = _shapes(shape_text)
        sizes[name] = result
        if opcode in FREE:
            ops.append({"op_type": opcode, "kind": "free", "flops": 0.0, "bytes": 0.0})
            continue
        args = rest.split(")", 1)[0]
        operands = [sizes.get(a.strip().lstrip("%"), []) for a in args.split(",") if a.strip()]
        in_shapes = [s for shapes in operands for s in shapes] + _shapes(args)
        nbytes = float(sum(n * b for n, b in result) + sum(n * b for n, b in in_shapes))
        is_dot = opcode == "dot" or "dot_general" in rest or "__onednn$matmul" in rest or "gemm" in rest
        if is_dot and len(operands) >= 2 and operands[0] and operands[1] and result:
            lhs, rhs, out = operands[0][0][0], operands[1][0][0], result[0][0]
            flops = 2.0 * math.sqrt(float(lhs) * float(rhs) * float(out))  # 2mnk for [m,k]x[k,n]
            ops.append({"op_type": f"{opcode} (dot)", "kind": "matmul", "flops": flops, "bytes": nbytes})
        else:
            ops.append({"op_type": opcode, "kind": "elementwise", "flops": 0.0, "bytes": nbytes})
    return ops
