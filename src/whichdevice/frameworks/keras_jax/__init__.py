"""Keras 3 on the JAX backend. Import the modules, not this package, in the parent process:
``env`` is the only one that does not import Keras/JAX. Device handling is JAX's
(``frameworks/jax``); ops and data are Keras' (``frameworks/_keras.py``)."""
