"""A result's notebook view: its size, whether it is a fragment whose CSS is scoped,
and what displaying it costs the first time and every time after.

    python benchmarks/notebook_repr.py tests/data/run_cpu_2core_budget300.json
"""

from __future__ import annotations

import os
import re
import sys
import time

import whichdevice


def main(path: str) -> None:
    result = whichdevice.load(path)
    t0 = time.perf_counter()
    frag = result._repr_html_()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(100):
        result._repr_html_()
    again = (time.perf_counter() - t0) / 100
    css = "".join(re.findall(r"<style>(.*?)</style>", frag, re.S))
    selectors = [s.strip() for b in re.findall(r"([^{}]+)\{[^{}]*\}", css) for s in b.split(",")]
    unscoped = [s for s in selectors if not s.startswith(".whichdevice-report")]
    images = [len(x) for x in re.findall(r"base64,([A-Za-z0-9+/=]+)", frag)]
    print(f"{path}: {len(frag) / 1e3:.0f} kB ({sum(images) / 1e3:.0f} kB of it {len(images)} inlined PNG plots)")
    print(f"  page tags: {[t for t in ('<html', '<body', '<head', '<!doctype') if t in frag.lower()] or 'none'}")
    print(f"  CSS selectors: {len(selectors)}, unscoped: {unscoped or 'none'}")
    print(f"  first display {first:.2f} s (analysis + plots drawn), each later display {again * 1e6:.1f} µs (cached)")
    print("load:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/run_cpu_2core_budget300.json")
