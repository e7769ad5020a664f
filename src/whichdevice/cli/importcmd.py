"""`whichdevice import`: reference GPU runs (gpu_probe.py's probe_torch.json, keras_probe.py's
keras_<backend>_<device>.json) become normal whichdevice records (analysis/reference.py),
written beside the other results; `whichdevice report` renders them (it also reads the
reference files directly)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import List

import typer
from rich.markup import escape

from whichdevice.cli.options import DEFAULT_OUT
from whichdevice.cli.base import app, console
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import check_output_dir


@app.command("import")
def import_(
    files: List[Path] = typer.Argument(..., help="Reference run files: probe_torch.json, keras_*_{cpu,gpu}.json."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="Folder for the records (one <file name>.json each)."),
) -> None:
    """Turn reference GPU runs (gpu_probe.py / keras_probe.py output) into whichdevice records."""
    from whichdevice.analysis import deviceprofile, reference
    from whichdevice.core import records
    from whichdevice.jobs import write_record

    converted = []
    for f in files:  # every file checked before anything is written
        data = records.read_json(f, "FILE", what="reference run file")
        if not reference.is_reference(data):
            raise UsageError(
                "FILE",
                f"'{f}' is not a reference run file",
                "Pass gpu_probe.py's probe_torch.json or keras_probe.py's keras_<backend>_<device>.json.",
            )
        try:
            converted.append((f, reference.record_from_reference(data, str(f), deviceprofile.file_date(f))))
        except reference.BadReference as e:
            raise UsageError(
                "FILE",
                f"'{f}' looks like a reference run but does not fit its format ({e})",
                "Pass the file as gpu_probe.py / keras_probe.py wrote it.",
            ) from None
    out_dir = check_output_dir(out, "--out")
    for f, record in converted:
        target = out_dir / f"reference-{f.stem}.json"
        said = f"{escape(str(f))} -> {escape(str(target))} ({len(record.results)} values)"
        write_record(record, target, announce=functools.partial(console.print, said))
    console.print(
        f"Show one with: whichdevice report {escape(str(out_dir / f'reference-{converted[0][0].stem}.json'))}"
    )
