"""present/registry.py: one renderer per record type, looked up by the commands and by
`report` alike; `report` loads no command's module (issue #31)."""

from __future__ import annotations

import inspect
import subprocess
import sys

from whichdevice.present import registry


def test_every_renderer_resolves_to_a_render_of_console_record_png():
    for experiment in registry.RENDERERS:
        render = registry.renderer(experiment)
        assert render is not None, experiment
        params = list(inspect.signature(render).parameters)
        assert params[:3] == ["console", "record", "png"] and "loglog" in params, (experiment, params)
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
