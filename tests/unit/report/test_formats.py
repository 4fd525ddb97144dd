"""The one registry of output formats (report/formats/) that report, compare and history
offer: every format's module has a function, taking what it renders and the Request, for
each command it renders and for none other; the command line offers exactly what the
registry lists, and a format added to it is rendered with no other change."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import types
from pathlib import Path

import click
import pytest

from guestbench import cli
from guestbench.report import formats


@pytest.mark.parametrize("name", formats.FORMATS)
def test_each_format_s_module_renders_exactly_the_commands_it_is_registered_for(name):
    format_ = formats.FORMATS[name]
    module = format_.module()
    assert module.__name__.startswith("guestbench.report.formats.")
    for command in formats.COMMANDS:
        function = getattr(module, command, None)
        assert callable(function) == (command in format_.renders), (name, command)
        if callable(function):
            assert list(inspect.signature(function).parameters)[1:] == ["request"]


@pytest.mark.parametrize("command", formats.COMMANDS)
def test_the_command_line_offers_the_registry_s_formats(command):
    option = next(param for param in cli.main.commands[command].params
                  if param.name == "output_format")
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == formats.names(command)
    assert option.default == formats.DEFAULT


def test_today_s_formats_stay_offered():
    assert formats.names("report") == ["table", "markdown", "csv", "json", "html", "bmf",
                                       "github-action-benchmark"]
    assert formats.names("compare") == ["table", "markdown", "json"]
    assert formats.names("history") == ["table", "json", "html"]


def test_cli_names_no_format_but_the_default():
    """No if-chain over format names: the only format cli.py names is the default, which it
    takes from the registry."""
    tree = ast.parse(Path(cli.__file__).read_text())
    named = {node.value for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and node.value in formats.FORMATS}
    assert named == set(), named


def test_a_new_format_is_one_module_and_its_registry_line(monkeypatch):
    module = types.ModuleType("tsv_for_test")
    module.report = lambda results, request: f"{results}\t{request.detail}\n"
    monkeypatch.setitem(formats.FORMATS, "tsv", formats.Format(lambda: module, ("report",)))
    assert "tsv" in formats.names("report") and "tsv" not in formats.names("compare")
    assert formats.render("report", "tsv", "loaded", formats.Request(detail=True)) == \
        "loaded\tTrue\n"
    with pytest.raises(ValueError, match="compare has no tsv format"):
        formats.render("compare", "tsv", "result")


def test_links_are_relative_to_the_output_file_s_folder(tmp_path):
    assert formats.Request(tmp_path / "page.html").link_base == tmp_path
    assert formats.Request().link_base is None


def test_help_imports_no_renderer():
    """--help and --version stay fast: the registry imports no renderer until one is asked for."""
    code = ("import sys; from guestbench import cli; "
            "print(sorted(m for m in sys.modules if m.startswith('guestbench.report.')))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True)
    assert shown.stdout.strip() == ("['guestbench.report.formats', "
                                    "'guestbench.report.formats.request']"), shown.stdout
