"""Seed 000's experiment: square matrix multiplication across sizes, per device.

Two modes (both by default):

- ``steady``: operands already on the device and warm; the device synchronized around
  blocks of calls. The cost of the kernel (plus the framework's per-op dispatch).
- ``seed``: what seed 000 timed, set-up included: create two random (n, n) variables on
  the device, initialize them, multiply, read the product back to the host.

FLOPs per call: 2 n^3 (n^2 outputs, n multiply-adds each).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whichdevice.frameworks.contracts import Framework

from whichdevice.core.records import CaseSpec, Timing, scalar_int
from whichdevice.core.timing import TimingPolicy, measure

# Seed 000's own list of sizes.
SEED_SIZES: tuple[int, ...] = (1, 10, 100, 500, 1000, 2000, 3000, 4000, 5000, 8000, 10000)
QUICK_SIZES: tuple[int, ...] = (1, 10, 100, 500, 1000, 2000)
MODES: tuple[str, ...] = ("steady", "seed")
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def flops(n: int) -> float:
    return 2.0 * n**3


def build_cases(framework: str, device: str, sizes, modes, dtype: str) -> list[CaseSpec]:
    """Cases for one device: every mode, sizes ascending (small first, so a crash at a
    huge size does not lose the small ones)."""
    return [
        CaseSpec(workload="matmul", framework=framework, device=device, params={"n": n, "mode": mode, "dtype": dtype})
        for mode in modes
        for n in sorted(sizes)
    ]


def run_case(spec: CaseSpec, fw: Framework, policy: TimingPolicy, overhead_s: float) -> tuple[Timing, dict]:
    n = scalar_int(spec.params["n"])
    dtype = str(spec.params["dtype"])
    builder = fw.ops.matmul_steady if spec.params["mode"] == "steady" else fw.ops.matmul_seed
    fn = builder(n, dtype, spec.device)
    raw = measure(fn, sync=fw.sync.sync, policy=policy, overhead_s=overhead_s)
    return raw, {"flops_per_call": flops(n), "bytes_operands": 2.0 * n * n * DTYPE_BYTES[dtype]}
