"""The native writers that more than one framework declares (``NATIVE_WRITERS`` in its ``env.py``;
workloads/scriptwrites.py's ``Writer``: module, attribute, the argument naming the path, the
argument with its mode or '', and what the path is). Parent-safe: data only."""

from __future__ import annotations

# .h5 and .weights.h5 through h5py (Keras' ModelCheckpoint, BackupAndRestore), on every Keras backend.
H5PY: tuple[str, str, str, str, str] = ("h5py._hl.files", "make_fid", "name", "mode", "file")
# safetensors' files, written in Rust (its torch, tensorflow, numpy and flax savers call the same function).
SAFETENSORS: tuple[str, str, str, str, str] = ("safetensors", "serialize_file", "filename", "", "file")
