"""Rebuild the edited records in this folder from the real record they start from.

Each is the CPU:0 half of ``tests/data/h200/diag_keras_jax.json`` (a real ``diagnose
--framework keras-jax`` of a Keras convnet, user batch 32; its GPU:0 results and session left
out) with only its batch sweep edited, to reproduce what public models showed, and a note in the
record saying so:

- ``diagnose_batch8_slower.json``: the keras-io weather LSTM / siamese network pattern: the batch
  grid around the user's 32 is 8 and 128 only (512 dropped); batch 8's samples scaled so it is
  3.3x slower per sample than 32, batch 128's rounds scaled so one is 1.8x faster and the other
  0.95x (faster, not significantly). A smaller batch is slower; no larger batch was.
- ``diagnose_nothing_above_32.json``: the text CNN pattern: only batch 8 measured beside 32
  (128 and 512 dropped), batch 8 scaled to 32's time per sample (no clear change). Nothing
  larger than 32 was measured.

One more starts from another real record, with one option added:

- ``diagnose_script_torch_cnn_traced_busy.json``: ``tests/data/diagnose_script_torch_cnn_traced_budget60_cpu_2core.json``
  (a real script diagnose at load average 13.2 before and 13.4 after on 2 cores, tests/data/README.md), recorded
  before the record kept the pre-flight's load, with ``preflight_load_per_core`` set to 6.6 (its load before, 13.2,
  per core): a step timed on a busy machine, as the record says it now.

Run: ``python tests/data/edited/make.py`` (writes the three files beside it).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = HERE.parent / "h200" / "diag_keras_jax.json"
DEVICE = "CPU:0"


def _steady(r: dict, batch: int) -> bool:
    p = r["spec"]["params"]
    return p.get("kind") == "steady" and p.get("sync") == "none" and p.get("batch") == batch


def _scale(r: dict, factor: float, per_round: list[float] | None = None) -> None:
    t = r["timing"]
    rounds = t.get("rounds_s")
    if rounds and per_round:
        t["rounds_s"] = [[x * f for x in rnd] for rnd, f in zip(rounds, per_round)]
        t["samples_s"] = [x for rnd in t["rounds_s"] for x in rnd]
    else:
        t["samples_s"] = [x * factor for x in t["samples_s"]]
        if rounds:
            t["rounds_s"] = [[x * factor for x in rnd] for rnd in rounds]
    t["first_call_s"] *= factor
    t["warmup_s"] = [x * factor for x in t["warmup_s"]]
    for k in ("median_s", "q1_s", "q3_s", "iqr_s", "rel_iqr", "n_samples"):
        t.pop(k, None)  # derived: recomputed on reading


def _per_sample(r: dict) -> float:
    return statistics.median(r["timing"]["samples_s"]) / r["spec"]["params"]["batch"]


def _build(drop: tuple[int, ...], ratio8: float, rounds128: list[float] | None, note: str) -> dict:
    rec = json.loads(SOURCE.read_text())
    rec["sessions"] = [s for s in rec["sessions"] if s["device"]["name"] == DEVICE]
    rec["devices_seen"] = {fw: [d for d in ds if d["name"] == DEVICE] for fw, ds in rec["devices_seen"].items()}
    rec["options"]["devices"] = [DEVICE]
    keep = [r for r in rec["results"] if r["spec"]["device"] == DEVICE]
    rec["results"] = [r for r in keep if not any(_steady(r, b) for b in drop)]
    by = {b: next(r for r in rec["results"] if _steady(r, b)) for b in (8, 32, 128) if b not in drop}
    _scale(by[8], ratio8 * _per_sample(by[32]) / _per_sample(by[8]))
    if rounds128 is not None:
        base = _per_sample(by[32]) / _per_sample(by[128])
        _scale(by[128], 1.0, [base / want for want in rounds128])
    rec["notes"] = [*rec["notes"], note]
    return rec


BUSY_SOURCE = HERE.parent / "diagnose_script_torch_cnn_traced_budget60_cpu_2core.json"
BUSY_LOAD_PER_CORE = 6.6  # the load average before the run, 13.2 (tests/data/README.md), on its 2 cores


def _busy() -> dict:
    rec = json.loads(BUSY_SOURCE.read_text())
    rec["options"]["preflight_load_per_core"] = BUSY_LOAD_PER_CORE
    rec["notes"] = [
        *rec["notes"],
        "EDITED for a test, not a measurement as it stands: tests/data/"
        f"{BUSY_SOURCE.name} with preflight_load_per_core set to {BUSY_LOAD_PER_CORE} (its load average "
        "before the run, 13.2, on 2 cores), which the record did not keep then (tests/data/edited/make.py).",
    ]
    return rec


def main() -> None:
    origin = (
        "EDITED for a test (issue 39), not a measurement as it stands: the CPU:0 results of "
        "tests/data/h200/diag_keras_jax.json with "
    )
    slower = _build(
        (512,),
        3.3,
        [1.8, 0.95],
        origin + "batch 512 dropped, batch 8 scaled to 3.3x slower per sample than 32, batch 128's "
        "rounds to 1.8x and 0.95x faster (tests/data/edited/make.py).",
    )
    nothing = _build(
        (128, 512),
        1.0,
        None,
        origin + "batch 128 and 512 dropped, batch 8 scaled to batch 32's time per sample (tests/data/edited/make.py).",
    )
    (HERE / "diagnose_batch8_slower.json").write_text(json.dumps(slower, indent=1) + "\n")
    (HERE / "diagnose_nothing_above_32.json").write_text(json.dumps(nothing, indent=1) + "\n")
    (HERE / "diagnose_script_torch_cnn_traced_busy.json").write_text(json.dumps(_busy(), indent=1) + "\n")


if __name__ == "__main__":
    main()
