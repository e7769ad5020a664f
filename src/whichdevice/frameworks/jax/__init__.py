"""JAX adapter (matmul). Import the modules, not this package, in the parent process:
``env`` is the only one that does not import JAX. ``keras_jax`` reuses these modules."""
