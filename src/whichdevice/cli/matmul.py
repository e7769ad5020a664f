"""`whichdevice matmul`: seed 000's sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from whichdevice.cli.base import app
from whichdevice.cli import options as opt
from whichdevice.workloads.defaults import MATMUL_MIN_TIME_S


@app.command()
def matmul(
    ctx: typer.Context,
    sizes: Optional[str] = typer.Option(
        None,
        "--sizes",
        help="Matrix sizes n (n x n), comma-separated. Default: the article's 1,10,100,500,1000,2000,3000,4000,5000,8000,10000.",
    ),
    mode: str = typer.Option(
        "steady,seed",
        "--mode",
        help="steady (operands on the device: the kernel) and/or seed (as the matmul article timed it: create+init+multiply+read back).",
    ),
    dtype: str = typer.Option("float32", "--dtype", help="float32, float16 or bfloat16."),
    device: Optional[str] = opt.device(),
    quick: bool = opt.quick("Sizes up to 2000 (~20 s on 2 cores)."),
    min_time: Optional[str] = opt.min_time(
        "point at least", MATMUL_MIN_TIME_S, note="then until the median is within 5 %, at most 1 s"
    ),
    cpu_threads: Optional[str] = opt.cpu_threads(),
    memory_limit: Optional[str] = opt.memory_limit(),
    case_timeout: str = opt.case_timeout(900),
    framework: str = opt.framework("matmul"),
    out: Path = opt.out("the PNG plot"),
    json_path: Optional[Path] = opt.json("matmul"),
    linear: bool = opt.linear(),
    resume: Optional[Path] = opt.resume("sweep", kept=None),
) -> None:
    """Matrix multiplication time vs size on every device; where the GPU starts to win."""
    from whichdevice.api import MatmulOptions
    from whichdevice.cli.common import (
        command_line,
        read_plan,
        record_paths,
        reject_options_with_resume,
        unreadable_resume,
    )

    reject_options_with_resume(ctx)
    resumed = None
    if resume is not None:
        opts, resumed = read_plan(resume, "matmul", MatmulOptions)  # as every command reads its plan
        try:  # the output paths of a header this version cannot read
            json_file = Path(resumed.header["json_file"])
            png = Path(resumed.header["png_file"])
        except (KeyError, TypeError):
            raise unreadable_resume(resume, "matmul") from None
        linear = bool(resumed.header.get("linear", False))
        command = resumed.header.get("command")
    else:
        command = command_line()
        opts = MatmulOptions.parse(
            sizes=sizes,
            modes=mode,
            dtype=dtype,
            devices=device,
            quick=quick,
            min_time_s=min_time,
            cpu_threads=cpu_threads,
            case_timeout_s=case_timeout,
            framework=framework,
            memory_limit_gib=memory_limit,
        )
        json_file, png = record_paths(out, json_path, "matmul")
    _measure(opts, resumed, json_file, png, linear, command)


def _measure(opts, resumed, json_file: Path, png: Path, linear: bool, command) -> None:
    """The sweep measured with its progress (journaled for --resume), then its record and page."""
    import dataclasses

    from whichdevice import jobs
    from whichdevice.api import matmul_job
    from whichdevice.measure import experiment
    from whichdevice.measure.journal import Journal, journal_path

    experiment.require_installed(opts.framework)
    job, request = matmul_job(opts, command, str(json_file), str(png))  # a resumed run keeps its own command
    header = {"json_file": str(json_file.absolute()), "png_file": str(png.absolute()), "linear": linear}
    path = journal_path(json_file)

    def journal() -> Journal:  # created once the devices are checked (bad input: nothing written)
        if resumed:
            return Journal(path)
        options = dataclasses.asdict(opts)
        return Journal.create(path, {"experiment": "matmul", "options": options, **header, "command": command})

    jobs.run(job, request, loglog=not linear, resumed=resumed, journal=journal)
