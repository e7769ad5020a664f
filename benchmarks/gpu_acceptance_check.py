"""Read the records of a GPU acceptance run (benchmarks/gpu_acceptance.sh) and check the issue-#39 properties.

    python benchmarks/gpu_acceptance_check.py OUT

For each record: its command, the devices it saw, how many cases were measured, not measured (skipped by the
budget) and failed, each failure with its message (first line); for an audit record its findings. Then the
checks, each PASS / FAIL / NOT MEASURED with the reason:

- no case failed (a crash, OOM or timeout is a failure; a case the budget skipped is "not measured");
- the torch DataLoader cases (num_workers, pin_memory) were measured on the GPU (a loader once timed on the CPU while the model ran on the GPU);
- on a multi-framework run, each answer line names its framework (re-rendered with `whichdevice report`);
- every step of the script exited 0.

Exit 0 when every check passed or was not measured, 1 otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def _skipped(case: dict[str, Any]) -> bool:
    return case.get("status") == "skipped" or (case.get("status") == "failed" and case.get("failure") == "skipped")


def _failed(case: dict[str, Any]) -> bool:
    return case.get("status") not in ("ok", "skipped") and not _skipped(case)


def _what(case: dict[str, Any]) -> str:
    spec = case.get("spec", {})
    params = spec.get("params", {})
    keep = ("kind", "fix", "batch", "n", "num_workers", "pin_memory", "data", "mode", "op", "variant")
    bits = ", ".join(f"{k}={params[k]}" for k in keep if k in params)
    return f"{spec.get('framework', '?')} {spec.get('device', '?')} {spec.get('workload', '?')} ({bits})"


def describe(path: Path) -> tuple[list[str], dict[str, Any]]:
    rec = json.loads(path.read_text())
    lines = [f"{path.name}: {rec.get('experiment')} · {' '.join(map(str, rec.get('command', [])))[:150]}"]
    facts: dict[str, Any] = {"experiment": rec.get("experiment"), "failed": [], "loader_gpu_ok": 0}
    if rec.get("experiment") == "audit":
        kinds = [f.get("rule") or f.get("kind", "?") for f in rec.get("findings", [])]
        lines.append(
            f"  framework {rec.get('framework')}, exit {rec.get('exit_code')}, findings: {', '.join(kinds) or 'none'}"
        )
        return lines, facts
    seen = {
        fw: [f"{d.get('name')} {d.get('description') or ''}".strip() for d in devs]
        for fw, devs in (rec.get("devices_seen") or {}).items()
    }
    lines.append(f"  devices seen: {seen}")
    results = rec.get("results", [])
    ok = [c for c in results if c.get("status") == "ok"]
    skipped = [c for c in results if _skipped(c)]
    failed = [c for c in results if _failed(c)]
    lines.append(f"  {len(ok)} measured, {len(skipped)} not measured (skipped), {len(failed)} failed")
    for c in failed:
        msg = (
            (c.get("error") or c.get("failure") or "").splitlines()[0][:160]
            if (c.get("error") or c.get("failure"))
            else ""
        )
        lines.append(f"    FAILED {_what(c)}: {msg}")
    facts["failed"] = failed
    facts["loader_gpu_ok"] = sum(
        1
        for c in ok
        if str(c.get("spec", {}).get("device", "")).startswith("GPU")
        and str(c.get("spec", {}).get("params", {}).get("data", "")).startswith("loader")
    )
    facts["frameworks"] = sorted({c.get("spec", {}).get("framework") for c in results} - {None})
    facts["pinned_gpu_ok"] = sum(  # pipeline --framework torch: its GPU-only rung
        1
        for c in ok
        if str(c.get("spec", {}).get("device", "")).startswith("GPU")
        and c.get("spec", {}).get("params", {}).get("variant") == "pinned"
    )
    return lines, facts


def answer_lines(path: Path) -> list[str]:
    """The first screen's answer lines, re-rendered from the record by `whichdevice report`."""
    proc = subprocess.run(
        [sys.executable, "-m", "whichdevice", "report", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = proc.stdout.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith("Answer:"):
            out.append(line)
            out.extend(x for x in lines[i + 1 : i + 6] if x.startswith("        "))
            break
    return out


def issue42_checks(out: Path) -> list[tuple[str, str, str]]:
    """Placement traced ops and copies on the GPU, pitfalls' no-sync case measured there."""
    checks: list[tuple[str, str, str]] = []
    for fw in ("torch", "keras-jax"):
        for name, want in (
            ("placement", "ops traced on the GPU and its copies"),
            ("pitfalls", "no-sync case on the GPU"),
        ):
            path = out / f"{name}_{fw}.json"
            if not path.exists():
                checks.append((f"{fw} {name}: {want}", "NOT MEASURED", f"no {path.name}"))
                continue
            gpu = [
                c
                for c in json.loads(path.read_text()).get("results", [])
                if c.get("status") == "ok" and str(c.get("spec", {}).get("device", "")).startswith("GPU")
            ]
            if not gpu:
                checks.append((f"{fw} {name}: {want}", "NOT MEASURED", "no GPU case in it (a CPU-only run)"))
                continue
            if name == "placement":
                m = gpu[0].get("metrics", {})
                ops = sum(1 for k in m if k.startswith("op_calls|GPU"))
                ok, why = ops > 0 and "copies|H2D" in m, f"{ops} op types on the GPU, H2D copies {m.get('copies|H2D')}"
            else:
                n = sum(1 for c in gpu if c.get("spec", {}).get("params", {}).get("kind") == "nosync")
                ok, why = n > 0, f"{n} no-sync cases measured on the GPU"
            checks.append((f"{fw} {name}: {want}", "PASS" if ok else "FAIL", why))
    return checks


def main(folder: str) -> int:
    out = Path(folder)
    checks: list[tuple[str, str, str]] = []
    any_failed: list[str] = []
    loader_ok = None
    pinned_ok = None
    for path in sorted(out.glob("*.json")):
        try:
            lines, facts = describe(path)
        except (OSError, ValueError, KeyError) as e:
            print(f"{path.name}: unreadable ({type(e).__name__}: {e})")
            continue
        print("\n".join(lines))
        any_failed += [f"{path.name}: {_what(c)}" for c in facts["failed"]]
        if path.name.startswith("diag_torch"):
            loader_ok = facts["loader_gpu_ok"]
        if path.name.startswith("pipeline_torch"):
            pinned_ok = facts["pinned_gpu_ok"]
        if facts.get("experiment") == "run" and len(facts.get("frameworks", [])) > 1:
            ans = answer_lines(path)
            named = all(any(fw in line for fw in facts["frameworks"]) for line in ans) and bool(ans)
            checks.append(("answer lines name their framework", "PASS" if named else "FAIL", " | ".join(ans)[:300]))
    if not list(out.glob("*.json")):
        checks.append(("no case failed", "NOT MEASURED", "no record written"))
    else:
        checks.append(("no case failed", "FAIL" if any_failed else "PASS", "; ".join(any_failed)[:400]))
    checks.append(
        (
            "pipeline --framework torch: pin_memory + non_blocking measured on the GPU",
            "NOT MEASURED" if pinned_ok is None else ("PASS" if pinned_ok >= 2 else "FAIL"),
            "no pipeline_torch record" if pinned_ok is None else f"{pinned_ok} measured",
        )
    )
    if loader_ok is None:
        checks.append(("torch DataLoader cases measured on the GPU", "NOT MEASURED", "no diag_torch record"))
    else:
        checks.append(
            (
                "torch DataLoader cases measured on the GPU",
                "PASS" if loader_ok >= 2 else "FAIL",
                f"{loader_ok} measured",
            )
        )
    checks += issue42_checks(out)
    steps = out / "steps.tsv"
    if steps.exists():
        bad = [r.split("\t")[0] for r in steps.read_text().splitlines()[1:] if r.split("\t")[1] != "0"]
        checks.append(("every step exited 0", "FAIL" if bad else "PASS", ", ".join(bad)))
    print("\nChecks")
    for name, verdict, why in checks:
        print(f"  {verdict:12} {name}" + (f" — {why}" if why else ""))
    return 1 if any(v == "FAIL" for _, v, _ in checks) else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python benchmarks/gpu_acceptance_check.py OUT", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
