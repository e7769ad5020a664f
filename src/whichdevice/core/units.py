"""Human-readable numbers with units."""

from __future__ import annotations


def seconds(s: float | None) -> str:
    if s is None:
        return "—"
    a = abs(s)
    if a >= 1:
        return f"{s:.3g} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if a >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def rate(per_s: float | None, unit: str = "FLOP/s") -> str:
    if per_s is None:
        return "—"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if per_s >= scale:
            return f"{per_s / scale:.3g} {prefix}{unit}"
    return f"{per_s:.3g} {unit}"


def nbytes(n: int | None) -> str:
    if n is None:
        return "—"
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"
