"""The command line's own cost and manners (its papercuts): `--help` and
`--version` load none of the heavy modules, `-h` works, every option shows its type."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

from whichdevice.cli.app import COMMANDS
from whichdevice.core.version import __version__

HEAVY = ("matplotlib", "pydantic", "jinja2", "numpy", "whichdevice.measure", "whichdevice.core.records")
# What typer's help renderer imports at its top for markdown help and pretty tracebacks, which
# this app uses neither of (cli/helprender.py).
RENDERER_EXTRAS = ("markdown_it", "pygments", "rich.markdown", "rich.syntax", "rich.traceback")


def _modules_after(argv: list[str]) -> tuple[int, str, set[str]]:
    code = (
        "import sys, io, contextlib\n"
        "from whichdevice.cli.app import main\n"
        "out = io.StringIO()\n"
        "rc = 0\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit as e:\n"
        "        rc = e.code or 0\n"
        "print(rc)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
        "print('=====')\n"
        "print(out.getvalue())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env())
    assert out.returncode == 0, out.stderr[-3000:]
    head, _, printed = out.stdout.partition("=====\n")
    lines = head.splitlines()
    return int(lines[0]), printed, set(lines[1:])


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["COLUMNS"] = "120"
    return env


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["-h"], ["-V"]])
def test_help_and_version_import_nothing_heavy(argv):
    rc, printed, modules = _modules_after(argv)
    assert rc == 0
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert loaded == [], f"{argv} imported {loaded[:10]}"
    if argv[0] in ("--version", "-V"):
        assert printed.strip() == f"whichdevice {__version__}"
    else:
        for name in COMMANDS:
            assert f" {name} " in printed, f"--help does not list {name}"


def test_the_listed_help_is_each_commands_own_first_line():
    from whichdevice.cli.base import app

    for module in sorted({m for m, _ in COMMANDS.values()}):
        importlib.import_module(f"whichdevice.cli.{module}")
    real = {}
    for command in app.registered_commands:
        if command.callback is None or command.callback.__name__ == "_stand_in":
            continue
        name = command.name or command.callback.__name__.replace("_", "-")
        doc = inspect.getdoc(command.callback) or ""
        real[name] = " ".join(doc.split("\n\n")[0].split())
    for group in app.registered_groups:  # a command with subcommands (`profile import|list|show`)
        help_text = group.help or group.typer_instance.info.help or ""
        real[group.name] = " ".join(str(help_text).split("\n\n")[0].split())
    assert set(real) == set(COMMANDS), "a command is registered but not in cli/app.py's COMMANDS, or the reverse"
    for name, (_, short) in COMMANDS.items():
        assert short == real[name], f"{name}: COMMANDS says {short!r}, its docstring {real[name]!r}"


def test_a_named_command_loads_only_its_own_module():
    rc, _, modules = _modules_after(["history", "--help"])
    assert rc == 0
    others = {f"whichdevice.cli.{m}" for m, _ in COMMANDS.values()} - {"whichdevice.cli.history"}
    assert not (others & modules), sorted(others & modules)


def test_every_option_shows_its_type_not_str_or_bool(capsys, monkeypatch):
    from whichdevice.cli.app import main

    monkeypatch.setenv("COLUMNS", "120")
    for name in COMMANDS:
        main([name, "--help"])
        printed = capsys.readouterr().out
        option_rows = [line for line in printed.splitlines() if line.lstrip("│ ").startswith("-")]
        assert option_rows, name
        bad = [row for row in option_rows if "<str>" in row or "<bool>" in row]
        assert not bad, f"{name} --help:\n" + "\n".join(bad)
    main(["matmul", "--help"])
    printed = capsys.readouterr().out
    assert "INTEGER" in printed and "FLOAT" in printed and "PATH" in printed


def test_an_unknown_command_is_one_line_and_exit_2():
    out = subprocess.run(
        [sys.executable, "-m", "whichdevice", "bogus"], capture_output=True, text=True, timeout=60, env=_env()
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["error: No such command 'bogus'. (see --help)"]


def test_shell_completion_is_typers_own(capsys, monkeypatch):
    """`--install-completion` / `--show-completion` exist (typer's, not
    switched off), show no type in --help, and the completion script's callback completes a
    command's name and that command's own options."""
    from whichdevice.cli.app import main

    monkeypatch.setenv("COLUMNS", "120")
    main(["--help"])
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if "-completion" in line]
    assert len(rows) == 2 and not any("<bool>" in r for r in rows), printed
    # what the installed script runs: the program `whichdevice` with the shell's words
    as_installed = "import sys; sys.argv[0] = 'whichdevice'; from whichdevice.cli.app import main; main()"

    def complete(words: str, cword: int) -> list[str]:
        env = {**_env(), "_WHICHDEVICE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
        r = subprocess.run([sys.executable, "-c", as_installed], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout.split()

    assert complete("whichdevice hist", 1) == ["history"]
    assert "--framework" in complete("whichdevice matmul --fr", 2)
    assert complete('whichdevice train --model "half', 3) == []  # an open quote is no crash
    shown = subprocess.run(
        [sys.executable, "-c", as_installed, "--show-completion", "bash"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert shown.returncode == 0 and "_WHICHDEVICE_COMPLETE=complete_bash" in shown.stdout, shown.stderr


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_commands_help_imports_nothing_heavy(name):
    rc, printed, modules = _modules_after([name, "--help"])
    assert rc == 0 and "Usage:" in printed
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY + RENDERER_EXTRAS))
    assert loaded == [], f"{name} --help imported {loaded[:10]}"


def test_the_help_renderer_leaves_the_real_rich_modules_to_everyone_else():
    """typer's renderer is imported with stand-ins for rich.markdown's and rich.traceback's
    classes: none of the stand-ins stays in sys.modules, a later import gets the real module,
    and the renderer's own name for each class makes the real one when used."""
    code = (
        "import sys, io, contextlib\n"
        "from whichdevice.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "assert 'rich.markdown' not in sys.modules and 'rich.traceback' not in sys.modules\n"
        "import rich, typer.rich_utils as ru\n"
        "assert not hasattr(rich, 'markdown') or hasattr(rich.markdown, '__file__')\n"
        "import rich.markdown, rich.traceback\n"
        "assert rich.markdown.__file__ and rich.traceback.__file__\n"
        "md = ru.Markdown('# title', style='')\n"
        "assert type(md) is rich.markdown.Markdown, type(md)\n"
        "try:\n"
        "    raise ValueError('x')\n"
        "except ValueError as e:\n"
        "    tb = ru.Traceback.from_exception(type(e), e, e.__traceback__)\n"
        "assert type(tb) is rich.traceback.Traceback, type(tb)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env())
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_the_pipeline_help_reads_each_frameworks_own_ladder():
    from whichdevice.cli.pipeline import PIPELINE_FRAMEWORKS, _ladder
    from whichdevice.workloads import pipeline as wl

    for framework in PIPELINE_FRAMEWORKS:
        assert _ladder(framework) is wl.ladder(framework)
