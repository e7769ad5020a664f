"""NumPy adapter: the CPU-only reference (BLAS matmul with no framework dispatch), and a
framework that starts in a fraction of a second, which the harness's own tests use."""
