"""Keras 3 on the torch backend. Import the modules, not this package, in the parent process:
``env`` is the only one that does not import Keras/torch. Device handling is torch's
(``frameworks/torch``); ops and data are Keras' (``frameworks/_keras.py``)."""
