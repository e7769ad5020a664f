"""present/registry.py: one renderer per record type, looked up by the commands and by
`report` alike; `report` loads no command's module."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from whichdevice.present import registry


def test_every_renderer_resolves_to_a_render_of_console_result_png():
    for experiment in registry.RENDERERS:
        render = registry.renderer(experiment)
        assert render is not None, experiment
        params = list(inspect.signature(render).parameters)
        # the record's analysis (analysis/facade.analyze); the audit's record carries its own
        what = "record" if experiment == "audit" else "result"
        assert params[:3] == ["console", what, "png"] and "loglog" in params, (experiment, params)
    assert registry.renderer("no-such-experiment") is None


def test_the_pages_with_a_first_screen_take_verbose():
    assert {e for e in registry.RENDERERS if registry.takes_verbose(registry.renderer(e))} == {
        "run",
        "diagnose",
        "predict",
    }


def test_report_imports_no_command_module():
    code = (
        "import sys\n"
        "import whichdevice.cli.report\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('whichdevice.cli.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    assert loaded <= {
        "whichdevice.cli.report",
        "whichdevice.cli.base",
        "whichdevice.cli.common",
        "whichdevice.cli.options",
    }, sorted(loaded)


def test_every_measuring_command_s_record_has_a_renderer():
    """Each command that writes a record draws its page with jobs.page: its experiment has an
    analysis (facade.analyze) and a renderer in the registry."""
    from whichdevice.analysis import facade
    from whichdevice.cli.app import COMMANDS

    measuring = {
        "run",
        "diagnose",
        "matmul",
        "train",
        "pipeline",
        "pitfalls",
        "placement",
        "calibrate",
        "predict",
        "scale",
    }
    assert measuring <= set(COMMANDS)
    for name in measuring:
        assert registry.renderer(name) is not None and name in facade.ANALYZERS, name


def test_report_draws_an_audit_record_through_the_registry_without_the_audit_command():
    """The audit's page is present/pages/audit.py: `report` on an audit record loads no cli.audit."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from whichdevice.cli.report import report\n"
        "report(Path('tests/data/audit_record_cpu.json'), out=None, linear=False, force=False, verbose=False,"
        " markdown=False, as_csv=False)\n"
        "print('MODULES', ' '.join(m for m in sys.modules if m.startswith('whichdevice.cli.')))\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root).stdout
    assert "whichdevice audit" in out and "What the script timed" in out, out
    loaded = set(out.rsplit("MODULES", 1)[1].split())
    assert "whichdevice.cli.audit" not in loaded, sorted(loaded)
    assert registry.renderer("audit") is not None
