"""What the user's Keras model takes and what its loss wants, read from the model itself:
the inputs (names, shapes, dtypes; integer token ids below the ``Embedding``'s
``input_dim`` where an input feeds one), the outputs (names, shapes, activations) and the
compiled loss of each output (a string, a function or a ``Loss`` object; one for all outputs,
a list or a dict), turned into the targets ``fit`` would accept:

- one-hot rows for categorical cross-entropy (and KL divergence, categorical hinge/focal),
- integer class ids for the sparse one (one per time step when the output has one),
- {0, 1} shaped like the output for binary cross-entropy (hinge, binary focal),
- real values shaped like the output for every other loss (mse, mae, huber, ...).

An uncompiled model is compiled with the loss its last activation implies (softmax: sparse
cross-entropy, sigmoid: binary, else mean squared error); ``--classes`` overrides that (1:
binary, more: sparse cross-entropy). The result is a JSON-able dict (:func:`infer`), kept in
the case parameters as text (``io``) so every measuring child draws the same data
(:func:`make_xy`, NumPy only). Imported inside a child (it imports Keras).
"""

from __future__ import annotations

import json
import re

import numpy as np

from whichdevice.frameworks.common.userload import UserFileError

# Loss names (lower case, letters only) -> the target they need.
_ONEHOT = {
    "categoricalcrossentropy",
    "categoricalfocalcrossentropy",
    "kldivergence",
    "kld",
    "kullbackleiblerdivergence",
    "categoricalhinge",
}
_SPARSE = {"sparsecategoricalcrossentropy"}
_BINARY = {"binarycrossentropy", "binaryfocalcrossentropy", "hinge", "squaredhinge"}
# What an uncompiled model is compiled with, per output: the kind and whether the output is logits.
_DEFAULT_LOSS = {
    ("sparse", False): "sparse_categorical_crossentropy",
    ("binary", False): "binary_crossentropy",
    ("real", False): "mean_squared_error",
}
# Integer inputs that feed no Embedding: ids below this.
DEFAULT_INT_HIGH = 10


def loss_name(loss) -> str:
    """The loss as the user wrote it: ``'categorical_crossentropy'``, ``BinaryCrossentropy``,
    ``my_loss``."""
    if loss is None:
        return "none"
    if isinstance(loss, str):
        return loss
    fn = getattr(loss, "fn", None)  # keras.losses.LossFunctionWrapper
    if fn is not None and type(loss).__name__ == "LossFunctionWrapper":
        return getattr(fn, "__name__", type(fn).__name__)
    if isinstance(loss, type):
        return loss.__name__
    return getattr(loss, "__name__", None) or type(loss).__name__


def loss_kind(loss) -> str:
    key = re.sub(r"[^a-z]", "", loss_name(loss).lower())
    if key in _SPARSE:
        return "sparse"
    if key in _ONEHOT:
        return "onehot"
    if key in _BINARY:
        return "binary"
    return "real"


# ---------------- the model's inputs ----------------


def _declared_inputs(model) -> list:
    try:
        ins = model.inputs
    except (AttributeError, ValueError):
        return []
    return list(ins or [])


def _inputs_struct(model, n: int):
    """('single' | 'list' | 'dict', keys): how the model takes its inputs."""
    struct = getattr(model, "_inputs_struct", None)
    if isinstance(struct, dict):
        return "dict", list(struct.keys())
    if n > 1:
        return "list", []
    return "single", []


def _embedding_dims(model) -> dict[int, int]:
    """``id(input tensor) -> input_dim`` of the Embedding layers an input feeds directly (functional
    models), plus ``-1 -> input_dim`` of a Sequential's first layer when it is an Embedding."""
    import keras

    out: dict[int, int] = {}
    layers = list(getattr(model, "layers", []) or [])
    if isinstance(model, keras.Sequential) and layers and isinstance(layers[0], keras.layers.Embedding):
        out[-1] = int(layers[0].input_dim)
    for layer in layers:
        if not isinstance(layer, keras.layers.Embedding):
            continue
        for node in getattr(layer, "_inbound_nodes", []) or []:
            for t in getattr(node, "input_tensors", []) or []:
                out[id(t)] = min(out.get(id(t), 1 << 62), int(layer.input_dim))
    return out


def _first_embedding(model) -> int | None:
    """A subclassed model whose first layer with weights is an Embedding: its input_dim."""
    import keras

    try:
        layers = list(model._flatten_layers(include_self=False))
    except Exception:
        layers = list(getattr(model, "layers", []) or [])
    for layer in layers:
        if isinstance(layer, keras.layers.Embedding):
            return int(layer.input_dim)
        if getattr(layer, "weights", None) or type(layer).__name__ in ("Dense", "Conv1D", "Conv2D", "LSTM", "GRU"):
            return None
    return None


def _int_dtype(dtype) -> bool:
    return "int" in str(dtype)


def infer_inputs(model, input_shape: tuple[int, ...] | None) -> dict:
    """The inputs to draw: ``{"inputs": [{name, shape, dtype, high}], "in_struct", "in_keys"}``."""
    import keras

    declared = _declared_inputs(model)
    embeds = _embedding_dims(model)
    entries = []
    if declared:
        for i, t in enumerate(declared):
            shape = list(t.shape[1:])
            name = str(getattr(t, "name", f"input_{i}"))
            if input_shape is not None and len(declared) == 1:
                if len(input_shape) == len(shape) and all(d is None or d == s for d, s in zip(shape, input_shape)):
                    shape = list(input_shape)
                elif any(d is None for d in shape):
                    raise UserFileError(
                        "--input-shape",
                        f"{tuple(input_shape)} does not fit the model's input '{name}' of shape "
                        f"{tuple(shape)} (None: any size)",
                        f"Pass {len(shape)} sizes, e.g. --input-shape {','.join(str(d or 100) for d in shape)}",
                    )
                else:
                    shape = list(input_shape)  # the forward pass says whether the model takes it
            if any(d is None for d in shape):
                many = len(declared) > 1
                raise UserFileError(
                    "--data" if many else "--input-shape",
                    f"the model's input '{name}' has a size it does not declare {tuple(shape)}".replace("None", "?"),
                    "Pass your own batches with --data FILE.py:FUNCTION"
                    if many
                    else f"Pass it, e.g. --input-shape {','.join(str(d or 100) for d in shape)}",
                )
            high = embeds.get(id(t)) or (embeds.get(-1) if i == 0 else None)
            dtype = str(t.dtype)
            if high is None and _int_dtype(dtype):
                high = min(embeds.values()) if embeds else DEFAULT_INT_HIGH
            entries.append({"name": name, "shape": [int(d) for d in shape], "dtype": dtype, "high": high})
    else:
        if input_shape is None:
            raise UserFileError(
                "--input-shape",
                "is missing and the model does not declare its input shape",
                "Pass e.g. --input-shape 100 (or 28,28,1)",
            )
        high = embeds.get(-1)
        if high is None and not isinstance(model, keras.Sequential):
            high = _first_embedding(model)
        entries.append(
            {
                "name": "input",
                "shape": list(input_shape),
                "dtype": "int32" if high is not None else "float32",
                "high": high,
            }
        )
    kind, keys = _inputs_struct(model, len(entries))
    return {"inputs": entries, "in_struct": kind, "in_keys": keys}


def draw_inputs(spec: dict, n: int, rng):
    arrays = []
    for e in spec["inputs"]:
        shape = (n, *e["shape"])
        if e.get("high") is not None:
            arrays.append(rng.integers(0, max(1, int(e["high"])), size=shape).astype("int32"))
        elif _int_dtype(e["dtype"]):
            arrays.append(rng.integers(0, DEFAULT_INT_HIGH, size=shape).astype(e["dtype"]))
        elif e["dtype"] == "bool":
            arrays.append(rng.integers(0, 2, size=shape).astype(bool))
        else:
            dtype = e["dtype"] if e["dtype"] in ("float16", "float32", "float64") else "float32"
            arrays.append(rng.random(shape).astype(dtype))
    if spec["in_struct"] == "dict":
        return dict(zip(spec["in_keys"], arrays))
    if spec["in_struct"] == "list":
        return tuple(arrays)  # a tuple: tf.data takes it as several components, not one stacked array
    return arrays[0]


# ---------------- the model's outputs and loss ----------------


def _output_layers(model, n: int) -> list:
    import keras

    outs = _declared_outputs(model)
    if outs and len(outs) == n:
        layers = []
        for t in outs:
            hist = getattr(t, "_keras_history", None)
            layers.append(getattr(hist, "operation", None) if hist is not None else None)
        return layers
    if isinstance(model, keras.Sequential) and model.layers and n == 1:
        return [model.layers[-1]]
    return [None] * n


def _declared_outputs(model) -> list:
    try:
        return list(model.outputs or [])
    except (AttributeError, ValueError):
        return []


def _activation(layer, values) -> str:
    """'softmax', 'sigmoid' or 'linear' (or another name): the layer's, else read from the values."""
    act = getattr(layer, "activation", None) if layer is not None else None
    name = getattr(act, "__name__", None) if act is not None else None
    if layer is not None and type(layer).__name__ == "Softmax":
        name = "softmax"
    if name and name != "linear":
        return name
    if name == "linear":
        return "linear"
    v = np.asarray(values, dtype="float64")
    if v.size and np.all(v >= 0) and np.all(v <= 1):
        if v.shape[-1] > 1 and np.allclose(v.sum(axis=-1), 1.0, atol=1e-3):
            return "softmax"
        return "sigmoid"
    return "linear"


def _per_output_losses(loss, names: list[str]) -> list:
    n = len(names)
    if isinstance(loss, dict):
        return [loss.get(k) for k in names]
    if isinstance(loss, (list, tuple)):
        if len(loss) == n:
            return list(loss)
        if len(loss) == 1:
            return [loss[0]] * n
        return (list(loss) + [None] * n)[:n]
    return [loss] * n


def _output_structure(y_pred) -> tuple[list, str, list]:
    """The model's outputs as (values, structure, keys): a dict's values by key, a list's
    (``single`` for a list of one), or one tensor."""
    if isinstance(y_pred, dict):
        keys = list(y_pred.keys())
        return [y_pred[k] for k in keys], "dict", keys
    if isinstance(y_pred, (list, tuple)):
        values = list(y_pred)
        return values, "list" if len(values) > 1 else "single", []
    return [y_pred], "single", []


def infer_outputs(model, y_pred, classes: int | None, compiled: bool) -> dict:
    """The targets to draw, per output: ``{"outputs": [{name, shape, kind, classes, loss}],
    "out_struct", "out_keys", "compile_loss"}`` (``compile_loss``: what to compile an
    uncompiled model with, per output; None when the user compiled it)."""
    import keras

    values, struct, keys = _output_structure(y_pred)
    names = list(keys)
    if not names:
        model_names = list(getattr(model, "output_names", None) or [])
        names = model_names if len(model_names) == len(values) else [f"output_{i}" for i in range(len(values))]
    layers = _output_layers(model, len(values))
    user_loss = getattr(model, "loss", None) if compiled else None
    per_loss = _per_output_losses(user_loss, names) if user_loss is not None else [None] * len(values)
    if isinstance(user_loss, dict):
        struct, keys = "dict", list(names)  # fit takes targets keyed by the loss's output names
    outputs, compile_loss = [], []
    for name, v, layer, loss in zip(names, values, layers, per_loss):
        arr = keras.ops.convert_to_numpy(v)
        shape = [int(d) for d in arr.shape[1:]]
        act = _activation(layer, arr)
        last = shape[-1] if shape else 1
        if loss is not None:
            kind = loss_kind(loss)
        elif compiled and user_loss is not None:
            kind = "real"  # an output the user's loss leaves out: any target
        elif classes is not None and len(values) == 1:
            kind = "binary" if classes == 1 or last == 1 else "sparse"
        elif act == "softmax" and last > 1:
            kind = "sparse"
        elif act == "sigmoid":
            kind = "binary"
        else:
            kind = "real"
        if not compiled or user_loss is None:
            logits = act not in ("softmax", "sigmoid") and kind in ("sparse", "binary")
            compile_loss.append(_DEFAULT_LOSS[(kind, False)] + ("_logits" if logits else ""))
        out_classes = (
            int(classes) if (classes is not None and kind in ("sparse", "onehot") and last == classes) else last
        )
        outputs.append(
            {
                "name": name,
                "shape": shape,
                "kind": kind,
                "classes": out_classes,
                "loss": loss_name(loss) if loss is not None else (compile_loss[-1] if compile_loss else "none"),
                "activation": act,
            }
        )
    return {
        "outputs": outputs,
        "out_struct": struct,
        "out_keys": keys,
        "compile_loss": compile_loss if compile_loss and not (compiled and user_loss is not None) else None,
    }


def target_shape(out: dict) -> list[int]:
    if out["kind"] == "sparse":
        return list(out["shape"][:-1])
    return list(out["shape"])


def draw_targets(spec: dict, n: int, rng):
    ys = []
    for o in spec["outputs"]:
        kind, c = o["kind"], max(1, int(o["classes"]))
        if kind == "sparse":
            ys.append(rng.integers(0, c, size=(n, *target_shape(o))).astype("int32"))
        elif kind == "onehot":
            ids = rng.integers(0, c, size=(n, *o["shape"][:-1]))
            ys.append(np.eye(c, dtype="float32")[ids] if o["shape"] else np.ones((n,), "float32"))
        elif kind == "binary":
            ys.append(rng.integers(0, 2, size=(n, *o["shape"])).astype("float32"))
        else:
            ys.append(rng.random((n, *o["shape"])).astype("float32"))
    if spec["out_struct"] == "dict":
        return dict(zip(spec["out_keys"], ys))
    if spec["out_struct"] == "list":
        return tuple(ys)
    return ys[0]


def make_xy(spec: dict, n: int, seed: int = 0):
    """``n`` synthetic samples: inputs and targets as the model and its loss take them."""
    rng = np.random.default_rng(seed)
    return draw_inputs(spec, n, rng), draw_targets(spec, n, rng)


def compile_losses(spec: dict):
    """The loss an uncompiled model is compiled with: one, or one per output (list or dict)."""
    import keras

    def one(name: str):
        if name.endswith("_logits"):
            base = name[: -len("_logits")]
            cls = {
                "sparse_categorical_crossentropy": keras.losses.SparseCategoricalCrossentropy,
                "binary_crossentropy": keras.losses.BinaryCrossentropy,
            }[base]
            return cls(from_logits=True)
        return name

    losses = [one(x) for x in spec.get("compile_loss") or []]
    if len(losses) == 1:
        return losses[0]
    if spec["out_struct"] == "dict":
        return dict(zip(spec["out_keys"], losses))
    return losses


# ---------------- text ----------------


def _shape_text(n: int, shape) -> str:
    return str((n, *shape)).replace(",)", ")")


def describe_targets(spec: dict, n: int) -> str:
    """'one-hot (32, 10) for categorical_crossentropy': what the labels were, for a message."""
    words = {"onehot": "one-hot", "sparse": "integer class ids", "binary": "{0,1}", "real": "real values"}
    parts = []
    for o in spec["outputs"]:
        name = f"output '{o['name']}': " if len(spec["outputs"]) > 1 else ""
        parts.append(f"{name}{words[o['kind']]} {_shape_text(n, target_shape(o))} for the loss {o['loss']}")
    return "; ".join(parts)


def describe_outputs(spec: dict, n: int) -> str:
    return ", ".join(_shape_text(n, o["shape"]) for o in spec["outputs"])


def describe_inputs(spec: dict, n: int) -> str:
    parts = []
    for e in spec["inputs"]:
        what = f"token ids < {e['high']}" if e.get("high") is not None else e["dtype"]
        parts.append(f"{_shape_text(n, e['shape'])} {what}")
    return ", ".join(parts)


def dumps(spec: dict) -> str:
    return json.dumps(spec, separators=(",", ":"), sort_keys=True)
