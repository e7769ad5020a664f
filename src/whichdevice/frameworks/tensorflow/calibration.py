"""TensorFlow probes for ``whichdevice calibrate`` and the step description for ``predict``.

Imported by ``workloads/calibrate.py`` inside a child (it imports TensorFlow). Every probe
builder returns a zero-argument callable; ``timing.measure`` calls it in synchronized blocks.

``describe_step`` reads what one training step runs from its traced ``tf.function`` graph:
every op with its kind (matmul-like, elementwise, free, uncovered — see costmodel.py), its
FLOPs and the bytes it reads and writes, from the graph's static shapes.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from whichdevice.frameworks.common.hlo import kernels_from_hlo
from whichdevice.frameworks.tensorflow.placement import scope


def tiny_eager(device: str):
    """One add on a 1-element tensor, eagerly, no sync per call: dispatch + launch rate."""
    with scope(device):
        a = tf.ones([1])

    def call():
        with scope(device):
            return tf.add(a, a)

    return call


def tiny_sync(device: str):
    """The same add, then ``.numpy()``: adds one device->host read (a sync) per call."""
    eager = tiny_eager(device)
    return lambda: eager().numpy()


def graph_chain(device: str, k: int):
    """A ``tf.function`` running ``k`` dependent 1-element ``Sin`` ops (k = 0: returns its
    input). Sin, not Add: Grappler folds chains of adds into one AddN."""
    with scope(device):
        x = tf.ones([1])

    @tf.function
    def chain(v):
        for _ in range(k):
            v = tf.sin(v)
        return v

    def call():
        with scope(device):
            return chain(x)

    call()  # trace outside the timing
    return call


def elementwise(device: str, nbytes: int):
    """``a + b`` on float32 arrays; ``nbytes`` = bytes moved (two inputs + one output)."""
    n = max(1, int(nbytes) // 12)
    with scope(device):
        a = tf.random.uniform([n])
        b = tf.random.uniform([n])

    def call():
        with scope(device):
            return tf.add(a, b)

    return call


def h2d(device: str, nbytes: int):
    """A pageable host (numpy) array of ``nbytes`` copied to the device."""
    arr = np.ones(max(1, int(nbytes) // 4), dtype=np.float32)

    def call():
        with scope(device):
            return tf.identity(tf.convert_to_tensor(arr))

    return call


def d2h(device: str, nbytes: int):
    """A device tensor of ``nbytes`` read back to the host (``.numpy()``)."""
    with scope(device):
        t = tf.ones([max(1, int(nbytes) // 4)])
    return lambda: t.numpy()


# ---------------- the step's op list ----------------

FREE = frozenset(
    {
        "Const",
        "Placeholder",
        "NoOp",
        "Identity",
        "IdentityN",
        "ReadVariableOp",
        "VarHandleOp",
        "Shape",
        "ShapeN",
        "Size",
        "Rank",
        "StopGradient",
        "PreventGradient",
        "Reshape",
        "ExpandDims",
        "Squeeze",
        "_Arg",
        "_Retval",
        "VarIsInitializedOp",
        "BroadcastGradientArgs",
        "EnsureShape",
        "VariableShape",
        "EmptyTensorList",
        "TensorListReserve",
        "TensorListLength",
        "TensorListElementShape",
    }
)
MATMUL = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "_FusedMatMul"})
CONV = frozenset({"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"})
ELEMENTWISE = frozenset(
    {
        "Add",
        "AddV2",
        "AddN",
        "Sub",
        "Mul",
        "RealDiv",
        "Div",
        "DivNoNan",
        "FloorDiv",
        "FloorMod",
        "Maximum",
        "Minimum",
        "Pow",
        "Sqrt",
        "SqrtGrad",
        "Rsqrt",
        "RsqrtGrad",
        "Square",
        "SquaredDifference",
        "Neg",
        "Abs",
        "Sign",
        "Exp",
        "Log",
        "Log1p",
        "Reciprocal",
        "Floor",
        "Round",
        "Erf",
        "Sin",
        "Cos",
        "Relu",
        "ReluGrad",
        "Relu6",
        "Relu6Grad",
        "Elu",
        "EluGrad",
        "Selu",
        "SeluGrad",
        "LeakyRelu",
        "LeakyReluGrad",
        "Sigmoid",
        "SigmoidGrad",
        "Tanh",
        "TanhGrad",
        "Softplus",
        "SoftplusGrad",
        "Cast",
        "BiasAdd",
        "BiasAddGrad",
        "Sum",
        "Mean",
        "Max",
        "Min",
        "Prod",
        "All",
        "Any",
        "ArgMax",
        "ArgMin",
        "Softmax",
        "LogSoftmax",
        "SparseSoftmaxCrossEntropyWithLogits",
        "SoftmaxCrossEntropyWithLogits",
        "Tile",
        "Transpose",
        "ConcatV2",
        "Pack",
        "Unpack",
        "StridedSlice",
        "StridedSliceGrad",
        "Slice",
        "Fill",
        "ZerosLike",
        "OnesLike",
        "Select",
        "SelectV2",
        "Greater",
        "GreaterEqual",
        "Less",
        "LessEqual",
        "Equal",
        "NotEqual",
        "LogicalAnd",
        "LogicalOr",
        "LogicalNot",
        "IsFinite",
        "ClipByValue",
        "BroadcastTo",
        "Range",
        "GatherV2",
        "ResourceGather",
        "OneHot",
        "UnsortedSegmentSum",
        "L2Loss",
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "FusedBatchNormV3",
        "FusedBatchNormGradV3",
        "MaxPool",
        "MaxPoolGrad",
        "AvgPool",
        "AvgPoolGrad",
        "ResourceApplyAdam",
        "ResourceApplyGradientDescent",
        "ResourceApplyKerasMomentum",
        "Cumsum",
        "Mod",
        "Split",
        "SplitV",
        "Where",
        # stateless random ops (Dropout, initializers): one kernel writing the output
        "StatelessRandomGetKeyCounter",
        "StatelessRandomGetKeyCounterAlg",
        "StatelessRandomUniformV2",
        "StatelessRandomNormalV2",
        "StatelessTruncatedNormalV2",
        "StatelessRandomUniformIntV2",
        "StatelessRandomUniform",
        "StatelessRandomNormal",
        "RandomUniform",
        "RandomStandardNormal",
        "RngReadAndSkip",
        # TensorList ops (the state of an RNN's loop): a copy of one element each
        "TensorListFromTensor",
        "TensorListStack",
        "TensorListGetItem",
        "TensorListSetItem",
        "TensorListPushBack",
        "TensorListPopBack",
        "TensorListGather",
        "TensorListScatter",
        "TensorListScatterIntoExistingList",
        "TensorListConcatV2",
        "TensorListSplit",
    }
)
# Control flow: the body function's ops, once per iteration (trip count from the loop's
# TensorList inputs); a call's function expanded in place.
LOOPS = frozenset({"While", "StatelessWhile"})
CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
# An op none of the sets name: one kernel at the dispatch floor, marked "uncovered" so the
# cost model widens the band (costmodel.UNKNOWN_OP_HIGH_S) instead of refusing.
_ASSIGN = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"})


def _nbytes(t) -> float | None:
    if t.dtype == tf.resource or t.dtype == tf.variant:
        return 0.0
    dims = t.shape.as_list() if t.shape.rank is not None else None
    if dims is None or any(d is None for d in dims):
        return None
    return float(np.prod(dims, dtype=np.float64)) * t.dtype.size


def _dims(t) -> list[int]:
    return [int(d) for d in t.shape.as_list()]


def _flops(op) -> float:
    t = op.type
    if t in ("MatMul", "_FusedMatMul"):
        a, b = _dims(op.inputs[0]), _dims(op.inputs[1])
        m, k = (a[1], a[0]) if op.get_attr("transpose_a") else (a[0], a[1])
        n = b[0] if op.get_attr("transpose_b") else b[1]
        return 2.0 * m * n * k
    if t.startswith("BatchMatMul"):
        out = _dims(op.outputs[0])
        a = _dims(op.inputs[0])
        k = a[-2] if op.get_attr("adj_x") else a[-1]
        return 2.0 * float(np.prod(out, dtype=np.float64)) * k
    if t == "Conv2D":
        kh, kw, cin, _ = _dims(op.inputs[1])
        return 2.0 * float(np.prod(_dims(op.outputs[0]), dtype=np.float64)) * kh * kw * cin
    if t in ("Conv2DBackpropInput", "Conv2DBackpropFilter"):
        # Same multiply-adds as the forward convolution: out_backprop x filter window x Cin.
        grad = _dims(op.inputs[2])
        fshape = _dims(op.inputs[1]) if t == "Conv2DBackpropInput" else _dims(op.outputs[0])
        kh, kw, cin, _ = fshape
        return 2.0 * float(np.prod(grad, dtype=np.float64)) * kh * kw * cin
    return 0.0


def classify(op) -> dict:
    """One graph op as ``{"op_type", "kind", "flops", "bytes"}`` (costmodel.OpCost fields)."""
    t = op.type
    if t in FREE:
        return {"op_type": t, "kind": "free", "flops": 0.0, "bytes": 0.0}
    sizes = [_nbytes(x) for x in list(op.inputs) + list(op.outputs)]
    known = all(s is not None for s in sizes)
    if t in MATMUL or t in CONV or t in ELEMENTWISE:
        if not known:
            return {"op_type": f"{t} (unknown shape)", "kind": "uncovered", "flops": 0.0, "bytes": 0.0}
        known_sizes = [s for s in sizes if s is not None]  # all of them: ``known``
        nbytes = float(sum(known_sizes))
        if t in _ASSIGN:  # the variable is read and written as well as the value read
            nbytes += 2.0 * float(known_sizes[1])
        kind = "matmul" if t in MATMUL else "conv" if t in CONV else "elementwise"
        return {"op_type": t, "kind": kind, "flops": _flops(op) if kind != "elementwise" else 0.0, "bytes": nbytes}
    return {"op_type": t, "kind": "uncovered", "flops": 0.0, "bytes": 0.0}


def _function_ops(graph, name: str):
    """The ops of function ``name`` called from ``graph`` (None when it cannot be found)."""
    g = graph
    while g is not None:
        get = getattr(g, "_get_function", None)
        fn = get(name) if get is not None else None
        if fn is not None:
            return fn.graph.get_operations()
        g = getattr(g, "outer_graph", None)
    return None


def trip_count(op) -> int | None:
    """Iterations of a While op: its maximum-iterations input when static (Keras' RNN loop
    passes ``Max(T)``), else the element count of a TensorList it carries (an RNN's time
    steps), or None when no input says."""
    counts = []
    for i in op.inputs:
        src = i.op
        if src.type in ("Max", "Const") and i.dtype == tf.int32 and i.shape.rank == 0:
            v = tf.get_static_value(src.inputs[0] if src.type == "Max" else i)
            if v is not None and np.ndim(v) == 0 and int(v) > 1:
                counts.append(int(v))
        elif src.type == "TensorListReserve":
            v = tf.get_static_value(src.inputs[1])
            if v is not None and int(v) > 0:
                counts.append(int(v))
        elif src.type == "TensorListFromTensor":
            dims = src.inputs[0].shape.as_list() if src.inputs[0].shape.rank else None
            if dims and dims[0]:
                counts.append(int(dims[0]))
    return max(counts) if counts else None


def expand(ops, graph, depth: int = 0) -> list[dict]:
    """Classify ``ops``; loops become their body's ops x trip count, calls their function's ops."""
    out: list[dict] = []
    for op in ops:
        if op.type in LOOPS or op.type in CALLS:
            attr = "body" if op.type in LOOPS else "f"
            inner = _function_ops(graph, op.node_def.attr[attr].func.name) if depth < 8 else None
            if inner is None:
                out.append({"op_type": f"{op.type} (body not found)", "kind": "uncovered", "flops": 0.0, "bytes": 0.0})
                continue
            body = expand(inner, inner[0].graph if inner else graph, depth + 1)
            trips = trip_count(op) if op.type in LOOPS else 1
            if trips is None:  # one iteration costed, and the loop marked: the band widens
                out.append(
                    {"op_type": f"{op.type} (trip count unknown)", "kind": "uncovered", "flops": 0.0, "bytes": 0.0}
                )
                trips = 1
            out += body * trips
            continue
        out.append(classify(op))
    return out


def describe_step(step, x, y) -> list[dict]:
    """Trace ``step`` (a ``tf.function`` of (x, y)) at these exact shapes and classify its ops:
    While loops unrolled (body x trip count), function calls expanded, an op no set names
    kept as "uncovered" (the cost model gives it a default and widens the band)."""
    xs = tf.TensorSpec(x.shape, tf.as_dtype(x.dtype))
    ys = tf.TensorSpec(y.shape, tf.as_dtype(y.dtype))
    graph = step.get_concrete_function(xs, ys).graph
    return expand(graph.get_operations(), graph)


def describe_train(model, optimizer, loss_fn, training, x, y) -> dict:
    """The kernels of one training step. A model compiled with ``jit_compile=True`` runs as
    XLA: its kernels are the optimized HLO's (``experimental_get_compiler_ir``, read by
    ``frameworks/common/hlo.py``); otherwise ``training.train_step`` (a ``tf.function``): one
    kernel per graph op."""
    tf32 = bool(tf.config.experimental.tensor_float_32_execution_enabled())  # on by default
    if getattr(model, "jit_compile", None) is True:
        text = training.train_step(model, optimizer, loss_fn, jit_compile=True).experimental_get_compiler_ir(x, y)(
            stage="optimized_hlo"
        )
        return {"ops": kernels_from_hlo(text), "launch_mode": "xla", "tf32": tf32}
    ops = describe_step(training.train_step(model, optimizer, loss_fn), x, y)
    return {"ops": ops, "launch_mode": "graph", "tf32": tf32}
