"""Does XProf (TensorBoard's profile plugin) see the training steps of a `--trace` profile?
(before, its overview page said "No step marker observed" and 0.0 ms everywhere.)

Runs a traced command (default `whichdevice train --quick --parts fit --trace DIR`), then
converts every profile it wrote with xprof's own tools, as the plugin does, and prints per
profile XProf's average step time and input-pipeline verdict next to whichdevice's own
steady step for the same run.

    python benchmarks/trace_steps.py --xprof-python /tmp/xpvenv/bin/python
    python benchmarks/trace_steps.py --command "pipeline --quick --variants serial,prefetch --no-stages"

`--xprof-python`: an interpreter with xprof installed (`pip install xprof`), when the one
running whichdevice has none. `--src`: run another checkout's code (e.g. main, for "before").
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

CONVERT = r"""
import json, re, sys
from xprof.convert import raw_to_tool_data as r
out = {}
for tool in ("overview_page", "input_pipeline_analyzer"):
    data, _ = r.xspace_to_tool_data([sys.argv[1]], tool, {})
    s = data.decode() if isinstance(data, bytes) else str(data)
    m = re.search(r'"steptime_ms_average":"([0-9.]+)"', s)
    out[tool] = {
        "steptime_ms_average": float(m.group(1)) if m else None,
        "no_step_marker": "No step marker observed" in s,
        "input_conclusion": (re.search(r'"input_conclusion":"([^"]*)"', s) or [None, None])[1],
    }
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--command", default="train --quick --parts fit")
    ap.add_argument("--xprof-python", default=sys.executable)
    ap.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    o = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace, out = Path(tmp) / "trace", Path(tmp) / "out"
        env = dict(os.environ, PYTHONPATH=o.src, WHICHDEVICE_HOME=str(Path(tmp) / "home"))
        cmd = [sys.executable, "-m", "whichdevice", *shlex.split(o.command), "--trace", str(trace), "--out", str(out)]
        print("$", " ".join(cmd[2:]), f"(code: {o.src})")
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            sys.exit(r.stderr[-2000:])
        record = json.loads(next(out.glob("*.json")).read_text())
        ours = {}
        for c in record["results"]:
            t = c.get("timing")
            if t and t.get("samples_s"):
                s = sorted(t["samples_s"])
                ours[json.dumps(c["spec"]["params"], sort_keys=True)] = s[len(s) // 2] * 1e3
        for xplane in sorted(trace.glob("*/plugins/profile/*/*.xplane.pb")):
            conv = subprocess.run([o.xprof_python, "-c", CONVERT, str(xplane)], capture_output=True, text=True)
            if conv.returncode != 0:
                print(f"{xplane.parts[-5]}: xprof failed: {conv.stderr.strip().splitlines()[-1:]}")
                continue
            doc = json.loads(conv.stdout.strip().splitlines()[-1])
            ov, ip = doc["overview_page"], doc["input_pipeline_analyzer"]
            marker = "NO STEP MARKER" if ov["no_step_marker"] else "step markers found"
            print(
                f"{xplane.parts[-5]}: XProf average step {ov['steptime_ms_average']} ms ({marker}); "
                f"input pipeline: {ip['input_conclusion'] or '-'}"
            )
        print("whichdevice's own steady steps (median, ms):")
        for params, ms in ours.items():
            p = json.loads(params)
            label = " ".join(f"{k}={p[k]}" for k in ("example", "kind", "variant", "part", "batch") if k in p)
            print(f"  {label}: {ms:.3g} ms")
        print("load:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())
