"""The ``scale`` workload: the same training step on 1…N replicas, on each framework's own
distribution engine (``frameworks/<name>/scale.py``).

Parent side: :func:`build_cases` — one case per (replicas N, global batch B, variant): ``step``
(the synchronized training step) and, for N > 1, the variant that isolates the gradient
all-reduce (``no_sync`` for DDP, ``allreduce`` and ``allreduce_base`` for TensorFlow and JAX; see
``frameworks/common/scaleworker.py``).

Child side: :func:`run_case`. The engines need their environment before the framework starts
(TensorFlow's logical devices, JAX's host device count) or N processes (DDP), so the measuring
child cannot run the step itself: it starts the framework's *worker* through ``core.process``
(own process group, memory watched) — one worker for all points of TensorFlow / JAX, N worker
processes per N for DDP — and hands each point to the runner as the worker streams it. The runner
holds the whole tree to the memory limit and the per-case timeout (it reads the resident memory
of the child and of everything under it); the workers die with the measuring child
(``PR_SET_PDEATHSIG``) and are killed when it exits, so none outlives the run.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path

from whichdevice import frameworks
from whichdevice.core.process import POLL_S, Child, JsonLines, stderr_tail
from whichdevice.core.records import CaseSpec, Timing

DEFAULT_BATCHES: tuple[int, ...] = (32, 256, 2048)
MAX_BATCH = 1 << 20
MODEL_PARAMS = ("model_file", "model_fn", "input_shape", "label_classes", "output_shape")


def engine(framework: str) -> str:
    """The framework's data-parallel engine, by name (its ``env.py``'s ``SCALE_ENGINE``)."""
    return frameworks.declared(framework, "SCALE_ENGINE", framework)


def build_cases(
    framework: str, device: str, replicas: list[int], batches: list[int], model: dict | None
) -> list[CaseSpec]:
    """Every (N, B, variant) case of a run, in the order the workers measure them."""
    model = model or {"model": "seed001"}
    base = {
        "model": model["model"],
        "replicas_all": ",".join(map(str, replicas)),
        "batches_all": ",".join(map(str, batches)),
        **{k: model.get(k) for k in MODEL_PARAMS if model["model"] == "user"},
    }
    cases = []
    for n in replicas:
        for b in batches:
            for variant in ("step", *frameworks.declared(framework, "SCALE_VARIANTS", ())) if n > 1 else ("step",):
                params = {**base, "replicas": n, "global_batch": b, "variant": variant}
                cases.append(CaseSpec(workload="scale", framework=framework, device=device, params=params))
    return cases


def job_points(framework: str, replicas: list[int], batches: list[int], group: int | None) -> list[list]:
    """The points one worker (group) measures: every N (TensorFlow, JAX) or one N (DDP)."""
    return [
        [c.params["replicas"], c.params["global_batch"], c.params["variant"]]
        for c in build_cases(framework, "-", replicas, batches, {"model": "-"})
        if group is None or c.params["replicas"] == group
    ]


def worker_envs(framework: str, replicas: int | None, max_replicas: int) -> list[dict[str, str]]:
    """The environment of each worker process (before the framework is imported): the
    framework's own (``scale_worker_envs`` in its env.py: DDP's one process per replica, JAX's
    host devices), else one worker with this process's environment."""
    base = {**os.environ, "PYTHONUNBUFFERED": "1"}
    own = getattr(frameworks.env_module(framework), "scale_worker_envs", None)
    return [base] if own is None else own(base, replicas, max_replicas)


class Workers:
    """One engine's worker processes and the points they have streamed so far."""

    def __init__(self, framework: str, job: dict, envs: list[dict[str, str]]) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="whichdevice-scale-")
        folder = Path(self.tmp.name)
        job_path, out_path = folder / "job.json", folder / "out.jsonl"
        job_path.write_text(json.dumps(job))
        out_path.touch()
        self.lines = JsonLines(out_path)
        self.points: dict[tuple, dict] = {}
        self.hello: dict | None = None
        self.err_paths = [folder / f"err{i}.txt" for i in range(len(envs))]
        module = frameworks.part_module(framework, "scale")  # started as python -m, never imported here
        self.children: list[Child] = []
        for env, err_path in zip(envs, self.err_paths):
            with open(err_path, "wb") as err:
                self.children.append(Child(module, [str(job_path), str(out_path)], env=env, stderr=err))

    def _read(self) -> None:
        for msg in self.lines.read():
            if msg["type"] == "point":
                self.points[tuple(msg["key"])] = msg
            elif msg["type"] == "hello":
                self.hello = msg

    def wait_for(self, key: tuple) -> dict:
        """The point ``key`` once a worker has streamed it; RuntimeError if the workers end
        (or one of them dies) without it."""
        while True:
            codes = [c.poll() for c in self.children]  # before the read: an ended worker's lines are all in
            self._read()
            if key in self.points:
                return self.points[key]
            failed = [(i, rc) for i, rc in enumerate(codes) if rc not in (None, 0)]
            if failed or all(rc == 0 for rc in codes):
                self.close()
                if failed:
                    i, rc = failed[0]
                    who = f"worker process {i}" if len(codes) > 1 else "the worker"
                    tail = next((t for path in self.err_paths if (t := stderr_tail(path))), "")
                    raise RuntimeError(f"{who} exited with code {rc}" + (f"; last error line: {tail}" if tail else ""))
                raise RuntimeError("the worker ended without measuring this point")
            time.sleep(POLL_S)

    def close(self) -> None:
        for c in self.children:
            if c.poll() is None:
                c.kill()
            else:
                c.proc.wait()


_GROUPS: dict[tuple, Workers] = {}


def _close_all() -> None:
    for g in list(_GROUPS.values()):
        g.close()
    _GROUPS.clear()


atexit.register(_close_all)


def _group(spec: CaseSpec, policy) -> Workers:
    p = spec.params
    replicas = [int(x) for x in str(p["replicas_all"]).split(",")]
    batches = [int(x) for x in str(p["batches_all"]).split(",")]
    per_n = spec.framework == "torch"  # DDP: N processes per N
    group = int(p["replicas"]) if per_n else None  # type: ignore[arg-type]
    key = (
        spec.framework,
        tuple(sorted((k, str(v)) for k, v in p.items() if k not in ("replicas", "global_batch", "variant"))),
        group,
    )
    if key in _GROUPS:
        return _GROUPS[key]
    _close_all()  # one engine at a time: two would compete for the cores
    model = {"model": p["model"], **{k: p.get(k) for k in MODEL_PARAMS}}
    policy_dict = {k: v for k, v in dataclasses.asdict(policy).items() if k not in ("window", "telemetry_period_s")}
    job = {
        "points": job_points(spec.framework, replicas, batches, group),
        "model": model,
        "policy": policy_dict,
        "max_replicas": max(replicas),
    }
    _GROUPS[key] = Workers(spec.framework, job, worker_envs(spec.framework, group, max(replicas)))
    return _GROUPS[key]


def run_case(spec: CaseSpec, fw, policy, overhead_s: float) -> tuple[Timing, dict[str, float]]:
    """Child side: the point of ``spec``, measured by its engine's worker(s)."""
    p = spec.params
    point = _group(spec, policy).wait_for((int(p["replicas"]), int(p["global_batch"]), str(p["variant"])))  # type: ignore[arg-type]
    if "error" in point:
        raise RuntimeError(point["error"])
    return Timing.model_validate(point["timing"]), dict(point.get("metrics", {}))
