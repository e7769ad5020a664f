"""The user's nn.Module as a train case (``diagnose --framework torch``): built by calling the
user's function again in every measuring child, with the fixes the case names applied
(``fixes.py``: one adapter per fix, mapping the case's parameters to ``steps.StepOptions``).

``casemodel.CaseModel(params, torch_training)`` returns this class for ``model=user``; the train
workload then runs its create / loop / steady cases on it unchanged (``workloads/torch_diagnose.py``
plans them from the catalogue).
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import shutil
import signal
import tempfile
import threading
import time

import torch

from whichdevice.frameworks.common.casemodel import CaseModel, _shape
from whichdevice.frameworks.torch import fixes, placement
from whichdevice.frameworks.torch import steps as torch_steps
from whichdevice.frameworks.torch import usermodel

# A DataLoader worker's batch not ready in this long fails the case with torch's own message
# (instead of waiting for the case timeout): one test run's loader loop hung for 60 s once.
LOADER_TIMEOUT_S = 30.0

# The loss and optimizer each built model trains with (the user's, or the defaults).
_LOSS_OPT: dict[int, tuple[object, object]] = {}


class UserCaseModel(CaseModel):
    """The user's module, loss and optimizer (their function called again), and their data."""

    def build(self):
        LAST_BUILD.clear()
        user = usermodel.call_model_function(self.p["model_file"], str(self.p["model_fn"]))
        model = user.module
        model.train()
        options = fixes.step_options(self.p)
        if options.channels_last:
            model = model.to(memory_format=torch.channels_last)
        loss = user.loss_fn or usermodel.default_loss(self.classes)
        opt = user.optimizer or torch.optim.Adam(model.parameters(), usermodel.ADAM_LR)
        if options.compile:
            model = self._compiled(model, loss)
        torch_steps.STEP_OPTIONS[model] = options
        _LOSS_OPT[id(model)] = (loss, opt)
        return model

    def _compiled(self, model, loss):
        """``torch.compile(model)``, compiled here by one forward and backward on the case's batch
        (the gradients dropped), within the case's ``compile_limit_s``: past it the case fails with that reason
        (the report then says "not measured" and why) instead of eating the rest of the budget.
        Inductor's cache goes to a temporary folder removed when the child exits."""
        _private_inductor_cache()
        compiled = torch.compile(model)
        b = int(self.p.get("batch", 32))
        x, y = self.one_batch(None, b)  # this class's one_batch reads no training module
        device = next(model.parameters()).device
        xb, yb = torch_steps.on_device(x, y, device)
        limit = float(self.p.get("compile_limit_s", 90.0))  # workloads/torch_diagnose.compile_limit_s
        eager_s = _eager_pass_s(model, loss, xb, yb)
        t0 = time.perf_counter()
        with _time_limit(limit, _compile_unfinished(limit, eager_s)):
            loss(compiled(xb), yb).backward()
        took = time.perf_counter() - t0
        if took > limit:  # the alarm waits for Python code: inductor ran 35 s past a 7.1 s bound here once
            raise TimeoutError(_compile_unfinished(limit, eager_s, took))
        LAST_BUILD["compile_s"] = took
        model.zero_grad(set_to_none=True)
        return compiled

    def optimizer_and_loss(self, model):
        loss, opt = _LOSS_OPT.pop(id(model))
        return opt, loss

    def arrays(self, n: int):
        shape = _shape(self.p["input_shape"])
        vocab = self.p.get("vocab")
        x = usermodel.synthetic_inputs(n, shape, int(vocab) if vocab else None)
        out = _shape(self.p.get("output_shape") or "")
        return x, usermodel.synthetic_labels(n, self.classes, out)

    def _user_data(self, batch: int):
        """The user's data, made as their script makes it: on the host (``placement.host``)."""
        with placement.host():
            data = usermodel.call_data_function(self.p["data_file"], str(self.p["data_fn"]))
            if usermodel.is_loader(data):
                o = fixes.step_options(self.p)
                data = usermodel.rebuilt_loader(data, batch=batch, num_workers=o.num_workers, pin_memory=o.pin_memory)
        return data

    def dataset(self, training, n: int, batch: int, data: str):
        """The loop's batches, at most ``n`` samples an epoch: the user's data (their
        DataLoader at ``batch``, workers and pinning as the case says), or the synthetic
        arrays in numpy slices (``data=tfdata``: copied to the device in the step) or in a
        DataLoader over a TensorDataset (``data=loader``) of host tensors, as a user's script
        makes it (``placement.host``; CappedBatches reads it there too)."""
        steps = math.ceil(n / batch)
        if self.p.get("data_file"):
            return usermodel.CappedBatches(self._user_data(batch), steps, str(self.p["data_fn"]))
        x, y = self.arrays(n)
        if data.startswith("loader"):  # loader, loader_pin
            with placement.host():
                dataset = torch.utils.data.TensorDataset(torch.as_tensor(x), torch.as_tensor(y))
            o = fixes.step_options(self.p)
            workers = o.num_workers or 0
            loader = torch.utils.data.DataLoader(
                dataset,
                batch_size=batch,
                shuffle=True,
                num_workers=workers,
                pin_memory=bool(o.pin_memory),
                persistent_workers=False,  # fresh workers each pass: persistent ones hung across passes
                timeout=LOADER_TIMEOUT_S if workers > 0 else 0,
                # workers started afresh (spawn), not forked from this child: forked from it after
                # its steady cases, they hung (a lock held by one of its threads at fork time)
                multiprocessing_context="spawn" if workers > 0 else None,
            )
            return usermodel.CappedBatches(loader, steps)
        return training.dataset(x, y, batch)

    def one_batch(self, training, batch: int):
        if self.p.get("data_file"):
            return usermodel.concat_batch(self._user_data(batch), batch, str(self.p["data_fn"]))
        return self.arrays(batch)


def _eager_pass_s(model, loss, xb, yb) -> float:
    """One eager forward and backward (the second of two: the first pays one-time costs)."""
    for _ in range(2):
        t0 = time.perf_counter()
        loss(model(xb), yb).backward()
        if xb.device.type == "cuda":
            torch.cuda.synchronize(xb.device)
        took = time.perf_counter() - t0
    model.zero_grad(set_to_none=True)
    return took


def _compile_unfinished(limit: float, eager_s: float, took: float | None = None) -> str:
    """The measured lower bound, when compiling did not finish within its bound: compiling took
    more than ``limit`` (``took`` when it ended past it); even if the compiled step cost nothing,
    it would pay back only after more than that / (an eager forward and backward) steps."""
    spent = took if took is not None else limit
    steps = spent / eager_s if eager_s > 0 else float("inf")
    how = (
        f"{took:.3g} s here, past its bound of {limit:g} s"
        if took is not None
        else f"more than {limit:g} s here (stopped at its bound)"
    )
    return (
        f"torch.compile: compiling took {how}; an eager forward and backward took {eager_s * 1e3:.3g} ms, "
        f"so compiling would pay back only after more than {steps:,.0f} steps, even if it made them free"
    )


# One-time costs of the model the case built last (``compile_s``: torch.compile's compile), read
# into the case's metrics by the train workload (``training.build_metrics``).
LAST_BUILD: dict[str, float] = {}


@contextlib.contextmanager
def _time_limit(seconds: float, message: str):
    """Raise TimeoutError(message) in the main thread after ``seconds`` (SIGALRM; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _alarm(signum, frame):
        raise TimeoutError(message)

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _private_inductor_cache() -> None:
    """Inductor's compiled kernels in a temporary folder of this child, removed at its exit (not
    in /tmp/torchinductor_USER, which would outlive the run and warm the next one's compile)."""
    if os.environ.get("WHICHDEVICE_INDUCTOR_CACHE"):
        return
    path = tempfile.mkdtemp(prefix="whichdevice-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.environ["WHICHDEVICE_INDUCTOR_CACHE"] = path
    atexit.register(shutil.rmtree, path, True)
