"""The model and data of one train case (the ``params`` of its CaseSpec): a seed's built-in
Keras model, the user's (``--model``/``--data`` files), or a framework's own (plain torch).
Imported inside a measuring child only (it imports Keras)."""

from __future__ import annotations

import json

from whichdevice.frameworks.common import fixes, iospec, models, userload


def _shape(text) -> tuple[int, ...]:
    return tuple(int(t) for t in str(text).split(",") if t.strip())


def is_compiled(model) -> bool:
    return bool(getattr(model, "compiled", False)) and getattr(model, "optimizer", None) is not None


def custom_train_step(model) -> bool:
    """Whether the model's class overrides Keras' ``train_step`` (its own training logic)."""
    for cls in type(model).__mro__:
        if "train_step" in vars(cls):
            return not str(getattr(cls, "__module__", "")).startswith("keras")
    return False


def compile_config(model) -> dict:
    """The arguments the user's ``compile`` was called with (Keras 3 keeps them), so a fix case
    changes only the setting it varies (metrics, loss weights kept)."""
    cfg = getattr(model, "_compile_config", None)
    cfg = getattr(cfg, "config", None)
    if isinstance(cfg, dict):
        return {k: v for k, v in cfg.items() if v is not None}
    return {"optimizer": model.optimizer, "loss": getattr(model, "loss", None)}


class CaseModel:
    """Builds the case's model and its data, built-in or the user's."""

    def __init__(self, params: dict, training=None):
        self.p = params
        self.name = str(params["model"])
        # A framework without Keras models (plain torch) builds its own: build_model(name).
        self.own = training if hasattr(training, "build_model") else None

    def build(self):
        if self.own is not None:
            return self.own.build_model(self.name)
        if self.name == "user":
            return userload.call_model_function(self.p["model_file"], str(self.p["model_fn"]))
        return models.build(self.name)

    @property
    def io(self) -> dict | None:
        """The user's model's inputs and targets as read from the model (frameworks/common/iospec.py);
        None for built-in models and for records written before it existed."""
        if self.name != "user" or not self.p.get("io"):
            return None
        if not hasattr(self, "_io"):
            self._io = json.loads(str(self.p["io"]))
        return self._io

    def ensure_compiled(self, model, **kw) -> None:
        """An uncompiled user model compiled as ``diagnose`` trains it: Adam(0.001) and the loss
        its outputs imply (``io``'s ``compile_loss``)."""
        import keras

        if not is_compiled(model):
            assert self.io is not None  # its callers call it only for a model whose outputs ``io`` read
            model.compile(optimizer=keras.optimizers.Adam(0.001), loss=iospec.compile_losses(self.io), **kw)

    def train_step(self, training, model):
        """The custom loop's step for this case's model: the framework's ``train_step`` with
        :meth:`optimizer_and_loss`; a user model with its own ``train_step`` is stepped through
        it (``training.model_train_step``, where the framework has one)."""
        if self.io is not None and custom_train_step(model) and hasattr(training, "model_train_step"):
            self.ensure_compiled(model)
            return training.model_train_step(model)
        opt, loss = self.optimizer_and_loss(model)
        return training.train_step(model, opt, loss)

    @property
    def classes(self):
        if self.name == "user":
            c = self.p.get("label_classes")
            return int(c) if c is not None else None
        return models.SPECS[self.name].classes

    def optimizer_and_loss(self, model):
        if self.own is not None:
            return self.own.optimizer_and_loss(self.name, model)
        import keras

        if self.name != "user":
            return models.optimizer_and_loss(self.name)
        if self.io is not None:
            # The loss as fit computes it (Keras' compiled-loss path: per output, ranks squeezed
            # or expanded, dict and list outputs, regularization losses), never the bare function.
            self.ensure_compiled(model)
            if keras.backend.backend() != "jax":  # JAX's step is stateless: its loss must be pure
                return model.optimizer, lambda y, y_pred: model.compute_loss(None, y, y_pred, None)
            if isinstance(model.loss, (dict, list, tuple)) or model.loss is None:  # several outputs
                return model.optimizer, lambda y, y_pred: model.compute_loss(None, y, y_pred, None)
            loss = model.loss if not isinstance(model.loss, str) else keras.losses.get(model.loss)
            if not isinstance(loss, keras.losses.Loss) and callable(loss):
                from keras.src.losses.losses import LossFunctionWrapper  # not public in Keras 3.15

                loss = LossFunctionWrapper(loss)  # squeezes ranks as fit's wrapper does
            return model.optimizer, loss
        compiled = getattr(model, "optimizer", None) is not None and getattr(model, "loss", None) is not None
        if compiled:
            loss = model.loss if callable(model.loss) else keras.losses.get(model.loss)
            return model.optimizer, loss
        return keras.optimizers.Adam(0.001), models.default_loss(self.classes)

    def compile_for_fit(self, model) -> None:
        # The fixes `run` tries are compile arguments (fixes.py); absent, Keras' defaults apply.
        kw = fixes.compile_options(self.p)
        if self.io is not None:
            if not is_compiled(model):
                self.ensure_compiled(model, **kw)
            elif kw:
                model.compile(**{**compile_config(model), **kw})
            return
        if self.name == "seed002":
            model.compile(optimizer="adam", loss="binary_crossentropy", **kw)  # the seed's own line
        elif self.name == "seed001":
            opt, loss = models.optimizer_and_loss("seed001")
            model.compile(optimizer=opt, loss=loss, **kw)
        elif getattr(model, "optimizer", None) is None or not getattr(model, "compiled", False):
            model.compile(optimizer="adam", loss=models.default_loss(self.classes), **kw)
        elif kw:
            model.compile(optimizer=model.optimizer, loss=model.loss, **kw)

    def arrays(self, n: int):
        if self.io is not None:
            return iospec.make_xy(self.io, n)
        if self.name == "user":
            out = _shape(self.p["output_shape"]) if self.p.get("output_shape") else None
            return models.synthetic_data(n, _shape(self.p["input_shape"]), self.classes, output_shape=out)
        return models.seed_data(self.name, n)

    def dataset(self, training, n: int, batch: int, data: str):
        """The case's input: numpy arrays (``data=numpy``) or a tf.data pipeline."""
        if self.name == "user" and self.p.get("data_file"):
            ds = userload.call_data_function(self.p["data_file"], str(self.p["data_fn"]))
            return training.user_dataset(ds, batch, n)
        x, y = self.arrays(n)
        if data == "numpy":
            return x, y
        return training.dataset(
            x, y, batch, shuffle=n if data == "tfdata_shuffle" else None, prefetch=data != "tfdata_noprefetch"
        )

    def step_and_batch(self, training, batch: int):
        """A fresh model's train step and one batch of ``batch`` examples (called under the
        device's scope, the model is built there): ``(step, x, y)``."""
        model = self.build()
        step = self.train_step(training, model)
        x, y = self.one_batch(training, batch)
        return step, x, y

    def one_batch(self, training, batch: int):
        if self.name == "user" and self.p.get("data_file"):
            ds = self.dataset(training, batch, batch, "tfdata")
            x, y = next(iter(ds))
            return x.numpy(), y.numpy()
        return self.arrays(batch)
