"""Each framework's own words for what the audit counts (issue #39, What to build #4): a JAX script's
finding says "jax.jit trace", never "tf.function trace"; a PyTorch loop's steps are "nn.Module calls",
never "tf.function calls". The counters are shared (``audit/state.py``: ``traces``, ``fn_calls``,
``setup_<kind>_s``); what they are called depends on which framework's hooks filled them."""

from __future__ import annotations

# What a step (``fn_calls``) is: a traced function's call, a top-level module call, a jitted call.
_STEP = {"tensorflow": "tf.function call", "torch": "nn.Module call", "jax": "jax.jit call"}
# What a trace (``traces``) is: TensorFlow's tf.function, JAX's jit (torch's hooks count none).
_TRACE = {"tensorflow": "tf.function trace", "torch": "torch.compile trace", "jax": "jax.jit trace"}
_NAME = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}

# Set-up kinds (``setup_<kind>_s``) whose words depend on the framework that filled them; the
# others are one framework's own (Session, tf.data iterator, DataLoader) and read the same.
_SETUP = {
    ("trace", "tensorflow"): "tf.function tracing / graph set-up (first calls, with their run)",
    ("trace", "torch"): "tracing (first calls)",
    ("trace", "jax"): "jax.jit tracing (first calls)",
    ("compile", "tensorflow"): "XLA compilation (first calls)",
    ("compile", "torch"): "torch.compile compilation (first calls)",
    ("compile", "jax"): "jax.jit compilation: trace and XLA compile (first calls)",
}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def steps(n: int, framework: str) -> str:
    """'125 nn.Module calls', '3 jax.jit calls', '1 tf.function call'."""
    return _plural(n, _STEP.get(framework, _STEP["tensorflow"]))


def traces(n: int, framework: str) -> str:
    """'1 jax.jit trace', '2 tf.function traces'."""
    return _plural(n, _TRACE.get(framework, _TRACE["tensorflow"]))


def name(framework: str) -> str:
    """'TensorFlow', 'PyTorch', 'JAX'."""
    return _NAME.get(framework, framework)


def setup_kind(kind: str, framework: str, default: str) -> str:
    """The words of one set-up kind in this framework's terms (``default``: the kind's shared words)."""
    return _SETUP.get((kind, framework), default)
