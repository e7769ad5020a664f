"""`whichdevice profile import|list|show`: the GPU machines `predict --profile` can predict.

- ``import FILE``: a reference probe file (gpu_probe.py's ``probe_torch.json``: run it with
  PyTorch on any machine with a GPU — the format is in analysis/deviceprofile.py), a
  profile JSON (as ``calibrate`` writes it) or a ``calibrate`` record; saved under
  ``$WHICHDEVICE_HOME/profiles/NAME.json`` where ``predict --profile NAME`` finds it.
- ``list``: shipped and saved profiles. ``show NAME|FILE``: one profile's figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape
from rich.table import Table


from whichdevice.cli.base import app, console
from whichdevice.core.errors import UsageError
from whichdevice.core.validate import check_output_dir

if TYPE_CHECKING:
    from whichdevice.analysis import deviceprofile


profile_app = typer.Typer(
    help="Device profiles for `predict --profile`: import one from a GPU run, list them, show one.",
    no_args_is_help=True,
)
app.add_typer(profile_app, name="profile")


def read_profile_file(path: Path, name: Optional[str]) -> deviceprofile.DeviceProfile:
    """A profile from any file ``profile import`` reads (see the module docstring)."""
    from whichdevice.analysis import deviceprofile
    from whichdevice.analysis.calibration import profile_from_record
    from whichdevice.core import records

    data = records.read_json(path, "FILE", what="profile or probe file")
    if isinstance(data, dict) and data.get("experiment") == "calibrate" and "results" in data:
        record = records.load_run(path, "FILE")
        return profile_from_record(record, name or str(record.options.get("name") or path.stem))
    return deviceprofile.from_data(data, str(path), "FILE", deviceprofile.file_date(path), name)


@profile_app.command("import")
def import_profile(
    file: Path = typer.Argument(..., help="probe_torch.json (gpu_probe.py), a profile JSON, or a calibrate record."),
    name: Optional[str] = typer.Option(
        None, "--name", help="Save it under this name (default: the GPU's name, or the profile's own)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace a saved profile of the same name."),
) -> None:
    """Save a GPU machine's profile so that `whichdevice predict --profile NAME` uses it."""
    from whichdevice.analysis import deviceprofile
    from whichdevice.cli.calibrate import check_name
    from whichdevice.core import records

    if name is not None:
        check_name(name)
    prof = read_profile_file(file, name)
    check_name(prof.name, "--name")
    target = deviceprofile.user_dir() / f"{prof.name}.json"
    if target.exists() and not force:
        raise UsageError(
            "--name",
            f"a profile '{prof.name}' is already saved ({target})",
            "Pass --force to replace it, or another --name.",
        )
    check_output_dir(target.parent, "WHICHDEVICE_HOME")
    target.parent.mkdir(parents=True, exist_ok=True)
    records.write_atomic(target, deviceprofile.dumps(prof))
    gpu = prof.gpu.description if prof.gpu else "no GPU"
    console.print(f"Saved profile '{escape(prof.name)}' ({escape(gpu)}) to {escape(str(target))}")
    console.print(f"Use it: whichdevice predict --profile {escape(prof.name)}")


@profile_app.command("list")
def list_profiles() -> None:
    """The shipped profiles and the ones saved by calibrate / profile import."""
    from whichdevice.analysis import deviceprofile
    from whichdevice.present.terminal import print_table

    t = Table(title="Device profiles", title_justify="left")
    for col in ("name", "where", "GPU", "framework", "made"):
        t.add_column(col)
    for where, names in (("shipped", deviceprofile.shipped_names()), ("saved", deviceprofile.saved_names())):
        for n in names:
            try:
                p = deviceprofile.load(n if where == "shipped" else str(deviceprofile.user_dir() / f"{n}.json"))
            except UsageError as e:
                t.add_row(escape(n), where, f"[red]unreadable: {escape(e.problem)}[/red]", "", "")
                continue
            gpu = p.gpu.description if p.gpu else "no GPU"
            t.add_row(escape(n), where, escape(gpu), escape(p.framework), escape(p.created_at))
    print_table(console, t)
    console.print(f"Saved profiles live in {escape(str(deviceprofile.user_dir()))}.")


@profile_app.command("show")
def show_profile(spec: str = typer.Argument(..., help="A profile name, or a profile / probe JSON file.")) -> None:
    """One profile's figures: dispatch, sync, matmul, memory and copy rates."""
    from whichdevice.analysis import deviceprofile
    from whichdevice.present import prediction as present

    prof = deviceprofile.load(spec, "NAME")
    present.render_profile(console, prof)
    console.print(f"Source: {escape(prof.source)}")
