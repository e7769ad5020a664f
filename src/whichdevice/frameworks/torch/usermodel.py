"""The user's own PyTorch model (``diagnose --framework torch --model FILE:FUNCTION``) and data
(``--data FILE:FUNCTION``), loaded and checked in the script's process (imports torch).

``FUNCTION`` (a function or an ``nn.Module`` class, called with no arguments) returns an
``nn.Module``, ``(module, loss_fn)`` or ``(module, loss_fn, optimizer)``. Defaults: a
``CrossEntropyLoss`` with ``--classes`` (``BCEWithLogitsLoss`` for one output), ``MSELoss``
without, ``torch.optim.Adam(lr=1e-3)``. The data function returns a ``DataLoader`` or any
iterable of ``(x, y)`` batches.

The script ``diagnose --model`` writes loads the model and data through here
(``modelscript.py``): it builds the model and runs one forward pass on the input it will get,
so that a wrong shape or output is one line naming its option, before anything is measured.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from whichdevice.frameworks.common.userload import call_user_function, is_out_of_memory, out_of_memory, user_frame
from whichdevice.frameworks.common.usermodel import (
    UserFileError,
    UserFunction,
    _exc_line,
)

ADAM_LR = 1e-3  # torch.optim.Adam's own default, as the seeds' Keras Adam


@dataclass
class TorchUserModel:
    """What the user's model function returned, completed with the defaults."""

    module: torch.nn.Module
    loss_fn: Callable[..., Any] | None  # None: the default for the labels (default_loss)
    optimizer: torch.optim.Optimizer | None  # None: Adam on the module's parameters
    returned: str  # "module", "(module, loss_fn)" or "(module, loss_fn, optimizer)"


def _is_module(obj) -> bool:
    return isinstance(obj, torch.nn.Module)


def call_model_function(path, function: str) -> TorchUserModel:
    """Call the user's function (or class) and check what it returns."""
    got = call_user_function(path, function, "--model")
    if _is_module(got):
        return TorchUserModel(got, None, None, "module")
    if isinstance(got, (tuple, list)) and 2 <= len(got) <= 3 and _is_module(got[0]):
        loss_fn, opt = got[1], got[2] if len(got) == 3 else None
        if not callable(loss_fn):
            raise UserFileError(
                "--model",
                f"{function}() returned a {type(loss_fn).__name__} as the loss, not a callable",
                "Return (module, loss_fn) with loss_fn(output, target) -> a tensor, e.g. nn.CrossEntropyLoss()",
            )
        if opt is not None and not isinstance(opt, torch.optim.Optimizer):
            raise UserFileError(
                "--model",
                f"{function}() returned a {type(opt).__name__} as the optimizer, not a torch.optim.Optimizer",
                "Return (module, loss_fn, torch.optim.Adam(module.parameters()))",
            )
        if opt is not None:
            own = {id(p) for p in got[0].parameters()}
            theirs = [p for g in opt.param_groups for p in g["params"]]
            if theirs and not any(id(p) in own for p in theirs):
                raise UserFileError(
                    "--model",
                    f"the optimizer {function}() returned updates none of the module's parameters",
                    "Build it from this module: torch.optim.SGD(module.parameters(), lr=...)",
                )
        returned = "(module, loss_fn, optimizer)" if opt is not None else "(module, loss_fn)"
        return TorchUserModel(got[0], loss_fn, opt, returned)
    what = f"a {len(got)}-tuple" if isinstance(got, (tuple, list)) else type(got).__name__
    hint = " (a Keras model: use --framework tensorflow, keras-jax or keras-torch)" if _is_keras(got) else ""
    raise UserFileError(
        "--model",
        f"{function}() returned {what}, not an nn.Module{hint}",
        "Return an nn.Module, (module, loss_fn) or (module, loss_fn, optimizer)",
    )


def _is_keras(obj) -> bool:
    return any(getattr(c, "__module__", "").startswith("keras") for c in type(obj).__mro__)


def default_loss(label_classes: int | None):
    """CrossEntropyLoss for classes > 1 (logits, integer labels), BCEWithLogitsLoss for one
    output (float 0/1 labels), MSELoss without classes: what a torch user writes for each."""
    if label_classes is None:
        return torch.nn.MSELoss()
    if label_classes == 1:
        return torch.nn.BCEWithLogitsLoss()
    return torch.nn.CrossEntropyLoss()


def _first_leaf(module: torch.nn.Module) -> torch.nn.Module | None:
    """The first submodule that holds parameters: the layer the input meets, for the usual
    Sequential or __init__-ordered model (a guess; the forward pass checks it)."""
    for m in module.modules():
        if not list(m.children()) and any(True for _ in m.parameters(recurse=False)):
            return m
    return None


def input_hint(module: torch.nn.Module) -> tuple[tuple[int, ...] | None, str, bool]:
    """(shape, example for --input-shape, integer inputs) from the first layer: a Linear's
    in_features is a whole sample; a convolution, recurrent or attention layer names only the
    channels or features, so the user must give the rest."""
    nn = torch.nn
    leaf = _first_leaf(module)
    if isinstance(leaf, nn.Linear):
        return (leaf.in_features,), str(leaf.in_features), False
    if isinstance(leaf, nn.Conv2d):
        return None, f"{leaf.in_channels},28,28 (channels, height, width)", False
    if isinstance(leaf, nn.Conv1d):
        return None, f"{leaf.in_channels},100 (channels, length)", False
    if isinstance(leaf, nn.Conv3d):
        return None, f"{leaf.in_channels},16,32,32 (channels, depth, height, width)", False
    if isinstance(leaf, (nn.RNN, nn.LSTM, nn.GRU)):
        order = "steps, features" if leaf.batch_first else "steps, batch: use batch_first=True"
        return None, f"20,{leaf.input_size} ({order})", False
    if isinstance(leaf, nn.Embedding):
        return None, "20 (tokens per sample; the inputs are token ids)", True
    if isinstance(leaf, (nn.TransformerEncoderLayer, nn.MultiheadAttention)):
        d = getattr(leaf, "embed_dim", None) or getattr(getattr(leaf, "self_attn", None), "embed_dim", 64)
        return None, f"20,{d} (steps, features)", False
    if leaf is not None and isinstance(leaf, nn.modules.linear.LazyLinear):
        return None, "100", False
    return None, "100 (or 3,32,32)", False


def _embedding_vocab(module: torch.nn.Module) -> int | None:
    leaf = _first_leaf(module)
    return int(leaf.num_embeddings) if isinstance(leaf, torch.nn.Embedding) else None


def synthetic_inputs(n: int, input_shape: tuple[int, ...], vocab: int | None, seed: int = 0) -> np.ndarray:
    """Random float32 inputs, or token ids below ``vocab`` for a model that starts with an Embedding."""
    rng = np.random.default_rng(seed)
    if vocab:
        return rng.integers(0, vocab, size=(n, *input_shape))
    return rng.random((n, *input_shape)).astype("float32")


def synthetic_labels(n: int, label_classes: int | None, output_shape: tuple[int, ...], seed: int = 1) -> np.ndarray:
    """Labels the loss takes: class ids (int64), 0/1 floats of the output's shape, or floats
    of the output's shape (regression)."""
    rng = np.random.default_rng(seed)
    if label_classes is not None and label_classes > 1:
        return rng.integers(0, label_classes, size=(n, *output_shape[:-1]))
    if label_classes == 1:
        return rng.integers(0, 2, size=(n, *output_shape)).astype("float32")
    return rng.random((n, *output_shape)).astype("float32")


# ------------------------------------------------------------------ the user's data


def _as_tensor(a) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a
    t = torch.as_tensor(np.asarray(a))
    return t.float() if t.dtype == torch.float64 else t


def _pair(batch, function: str):
    """(x, y) of one batch: a tuple/list of two (more are ignored: sample weights), or a dict
    with 'x'/'y' or 'input'/'label'-like keys."""
    if isinstance(batch, dict):
        keys = list(batch)
        xs = [k for k in keys if k.lower() in ("x", "input", "inputs", "image", "images", "data")]
        ys = [k for k in keys if k.lower() in ("y", "label", "labels", "target", "targets")]
        if xs and ys:
            return _as_tensor(batch[xs[0]]), _as_tensor(batch[ys[0]])
    if isinstance(batch, (tuple, list)) and len(batch) >= 2:
        return _as_tensor(batch[0]), _as_tensor(batch[1])
    raise UserFileError(
        "--data",
        f"{function}() yields {type(batch).__name__} batches, not (inputs, labels) pairs",
        "Yield (x, y) pairs, as a DataLoader over a TensorDataset(x, y) does",
    )


def call_data_function(path, function: str):
    """The user's data: a DataLoader, or any iterable of (x, y) batches."""
    data = call_user_function(path, function, "--data")
    if type(data).__module__.startswith("tensorflow"):
        raise UserFileError(
            "--data",
            f"{function}() returned a {type(data).__name__} (TensorFlow), not PyTorch batches",
            "Return a torch DataLoader, or use --framework tensorflow for a tf.data pipeline",
        )
    try:
        iter(data)
    except TypeError:
        raise UserFileError(
            "--data",
            f"{function}() returned {type(data).__name__}, which is not iterable",
            "Return a torch.utils.data.DataLoader or a list of (x, y) batches",
        ) from None
    return data


def is_loader(data) -> bool:
    return isinstance(data, torch.utils.data.DataLoader)


def rebuilt_loader(loader, *, batch: int | None = None, num_workers: int | None = None, pin_memory=None):
    """The user's DataLoader with another batch size, workers or pinning: the same dataset,
    order (a shuffling loader shuffles), collate function and drop_last."""
    DataLoader = torch.utils.data.DataLoader
    shuffle = isinstance(loader.sampler, torch.utils.data.RandomSampler)
    workers = loader.num_workers if num_workers is None else num_workers
    kw = dict(
        batch_size=batch or loader.batch_size,
        shuffle=shuffle,
        num_workers=workers,
        collate_fn=loader.collate_fn,
        drop_last=loader.drop_last,
        pin_memory=loader.pin_memory if pin_memory is None else bool(pin_memory),
    )
    if workers > 0:
        kw["timeout"] = loader.timeout or 30.0  # a stuck worker fails the case, not the whole budget
        if not type(loader.dataset).__module__.startswith("whichdevice_user_"):
            # started afresh (spawn), not forked from the measuring child (whose threads' locks
            # hung forked workers; forkserver's socket path was too long in a deep TMPDIR); a
            # dataset class of the user's own file cannot be pickled to a fresh process
            kw["multiprocessing_context"] = "spawn"
    return DataLoader(loader.dataset, **kw)


def loader_batch(loader) -> int | None:
    return loader.batch_size if is_loader(loader) else None


def _output_tensor(out, has_loss: bool, function: str):
    if isinstance(out, torch.Tensor) or has_loss:
        return out
    raise UserFileError(
        "--model",
        f"the module returns a {type(out).__name__}, not one tensor (e.g. an RNN's (output, state))",
        "Return the logits only from forward(), or pass (module, loss_fn) whose loss takes that output",
    )


@dataclass
class _Sample:
    """The batch the pre-flight trains on, and how to name its shape in an error."""

    x: torch.Tensor
    y: torch.Tensor | None  # None: synthetic labels, made once the output's shape is known
    data_batch: int | None  # the data's own batch size (None without --data)
    shape_arg: str  # the argument that set the input's shape
    shape_text: str


def _first_batch(data, function: str):
    """The data's first batch, or one line naming what is wrong with it."""
    try:
        return next(iter(data))
    except StopIteration:
        raise UserFileError("--data", f"{function}() yields no batches", "Return at least one batch") from None
    except UserFileError:
        raise
    except Exception as e:
        raise UserFileError(
            "--data", f"reading the first batch raised {_exc_line(e)}", "Fix the data function or its dataset"
        ) from None


def _data_sample(data_fn: UserFunction, input_shape: tuple[int, ...] | None, batch: int | None) -> _Sample:
    """The first batch of the user's data (re-batched to ``batch`` when it is a DataLoader),
    checked against ``--batch`` and ``--input-shape``."""
    data = call_data_function(data_fn.path, data_fn.function)
    data_batch = loader_batch(data)
    if batch and is_loader(data):
        data = rebuilt_loader(data, batch=batch)
    x, y = _pair(_first_batch(data, data_fn.function), data_fn.function)
    data_batch = data_batch or int(x.shape[0])
    if batch and not is_loader(data) and int(x.shape[0]) != batch:
        raise UserFileError(
            "--batch",
            f"{batch}, but the data's batches hold {int(x.shape[0])} samples and are not a DataLoader "
            "(whichdevice cannot re-batch them)",
            f"Leave --batch out (it is then {int(x.shape[0])}) or return a DataLoader",
        )
    if input_shape is not None and tuple(x.shape[1:]) != tuple(input_shape):
        raise UserFileError(
            "--input-shape",
            f"{','.join(map(str, input_shape))}, but the data's inputs are {tuple(x.shape[1:])}",
            "Leave --input-shape out when --data is given",
        )
    return _Sample(x, y, data_batch, "--data", f"the data's inputs {tuple(x.shape[1:])}")


def _synthetic_sample(module: torch.nn.Module, input_shape: tuple[int, ...] | None, vocab: int | None) -> _Sample:
    """Two random inputs of ``--input-shape`` (or the shape the first layer tells)."""
    guess, example, _ = input_hint(module)
    if input_shape is None:
        if guess is None:
            raise UserFileError(
                "--input-shape",
                f"is missing and the module's first layer ({type(_first_leaf(module)).__name__}) "
                "does not tell the whole shape of a sample",
                f"Pass one sample's shape without the batch, e.g. --input-shape {example}",
            )
        input_shape = guess
    x = torch.as_tensor(synthetic_inputs(2, tuple(input_shape), vocab))
    return _Sample(x, None, None, "--input-shape", f"input of shape {tuple(input_shape)}")


def _not_the_input(e: BaseException, model_path: Path | None, batch: int | None) -> UserFileError | None:
    """A step's error that is not about the input's shape or the labels (each was
    reported against --input-shape or --classes): the model's own code moving tensors to CUDA
    in a child without a GPU, or memory running out."""
    text = str(e).lower()
    if not torch.cuda.is_available() and ("cuda" in text or "nvidia" in text):
        where = user_frame(e, model_path) if model_path is not None else None
        at = f"'{model_path.name}' line {where[1]}, in {where[0]}: " if model_path is not None and where else ""
        return UserFileError(
            "--model",
            f"your model's forward moves tensors to CUDA ({at}{_exc_line(e)}), which a run without a GPU cannot do "
            "(this check and the CPU cases run without one)",
            "Use the device of the input instead of .cuda() or 'cuda' (x.device, e.g. torch.zeros(n, device=x.device))"
            ", so that the model runs on either device",
        )
    if is_out_of_memory(e):
        return out_of_memory(e, batch)
    return None


def _forward(module: torch.nn.Module, sample: _Sample, model_path: Path | None = None):
    """One forward pass in training mode; a model that rejects the input names the shape."""
    module.train()
    try:
        return module(sample.x)
    except Exception as e:
        other = _not_the_input(e, model_path, len(sample.x))
        if other is not None:
            raise other from None
        _, example, _ = input_hint(module)
        raise UserFileError(
            sample.shape_arg,
            f"the model rejects {sample.shape_text}: {_exc_line(e)}",
            f"Pass the shape one sample has for the model's first layer, e.g. --input-shape {example}",
        ) from None


def _label_classes(loss_fn, classes: int | None, out_shape: tuple[int, ...], y) -> int | None:
    """What the synthetic labels are: class ids (>1), 0/1 (1) or floats (None) — from
    --classes, or from the user's own loss when it says (CrossEntropyLoss, NLLLoss, BCE*)."""
    last = out_shape[-1] if out_shape else 1
    if classes is not None:
        if y is None and last != classes and not (classes == 2 and last == 1):
            raise UserFileError(
                "--classes",
                f"{classes} classes, but the model outputs {last} values per sample (output shape {out_shape})",
                f"Pass --classes {last} or change the last layer",
            )
        return 1 if last == 1 else classes
    if isinstance(loss_fn, (torch.nn.CrossEntropyLoss, torch.nn.NLLLoss)):
        return last
    if isinstance(loss_fn, (torch.nn.BCEWithLogitsLoss, torch.nn.BCELoss)):
        return 1
    if loss_fn is None and y is not None and not torch.is_floating_point(y) and y.dim() == len(out_shape):
        return last  # the data's labels are class ids, one fewer dimension than the output: cross-entropy
    return None


# ------------------------------------------------------------------ objects from a notebook


def _pickler(obj):
    """pickle, or cloudpickle when the objects' classes or functions live in ``__main__`` (a
    notebook or script: a measuring child cannot import them) and cloudpickle is installed."""
    import pickle

    items = obj if isinstance(obj, (tuple, list)) else (obj,)
    in_main = any(
        getattr(type(o), "__module__", "") == "__main__" or getattr(o, "__module__", "") == "__main__" for o in items
    )
    if not in_main:
        return pickle
    try:
        import cloudpickle
    except ImportError:
        raise UserFileError(
            "model",
            "its class or loss is defined in the notebook (__main__), which a measuring process cannot import",
            "Put the model in a .py file and pass 'file.py:function', or pip install 'whichdevice[notebook]' (cloudpickle)",
        ) from None
    return cloudpickle


def materialize(model, data, folder: Path) -> tuple[str, str | None]:
    """A module (or tuple) and data from a notebook -> files each measuring child loads: the
    objects pickled with ``torch.save``, a small ``loader.py`` with ``build()`` / ``data()``.
    ``data``: a DataLoader (pickled), an ``(x, y)`` pair of arrays or tensors (a shuffling
    DataLoader of batch 32 over them), or ``FILE:FUNCTION``."""
    folder = Path(folder)
    try:
        torch.save(model, folder / "model.pt", pickle_module=_pickler(model))
    except UserFileError:
        raise
    except Exception as e:
        raise UserFileError(
            "model", f"cannot be saved for the measuring processes ({_exc_line(e)})", "Pass 'file.py:function'"
        ) from None
    lines = [
        "import torch",
        "",
        "def build():",
        f"    return torch.load({str(folder / 'model.pt')!r}, weights_only=False)",
    ]
    data_spec = None
    if isinstance(data, str):
        data_spec = data
    elif data is not None:
        if is_loader(data):
            torch.save(data, folder / "data.pt", pickle_module=_pickler(data.dataset))
            lines += ["", "def data():", f"    return torch.load({str(folder / 'data.pt')!r}, weights_only=False)"]
        elif isinstance(data, (tuple, list)) and len(data) == 2:
            torch.save((_as_tensor(data[0]), _as_tensor(data[1])), folder / "data.pt")
            lines += [
                "",
                "def data():",
                f"    x, y = torch.load({str(folder / 'data.pt')!r})",
                "    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)",
            ]
        else:
            raise UserFileError(
                "data", f"a {type(data).__name__} is not data it can measure", "Pass a DataLoader or (x, y)"
            )
        data_spec = f"{folder / 'loader.py'}:data"
    (folder / "loader.py").write_text("\n".join(lines) + "\n")
    return f"{folder / 'loader.py'}:build", data_spec
