"""Only the command line ends the process: below it, code raises typed errors that the
command line turns into exit codes (2 for bad input, 130 or 143 for a stopped campaign)."""

from __future__ import annotations

import ast
from pathlib import Path

import guestbench

COMMAND_LINE = {"__main__.py", "cli.py"}  # the entry point and the command group; commands/ too


def exits(path: Path) -> list[int]:
    """Lines that call sys.exit or raise SystemExit. (A forked child's os._exit ends only
    the child, which must not run on in the parent's code: forked.py.)"""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "exit" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "sys":
            found.append(node.lineno)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name) and raised.id == "SystemExit":
                found.append(node.lineno)
    return sorted(found)


def test_nothing_below_the_command_line_ends_the_process():
    root = Path(guestbench.__file__).parent
    found = {f"{path.relative_to(root)}:{line}" for path in root.rglob("*.py")
             if str(path.relative_to(root)) not in COMMAND_LINE
             and path.relative_to(root).parts[0] != "commands" for line in exits(path)}
    assert not found, f"exits below the command line: {sorted(found)}"


def test_the_check_sees_each_way_to_exit(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import os, sys\ndef a():\n    sys.exit(1)\ndef b():\n    os._exit(3)\n"
                      "def c():\n    raise SystemExit(2)\ndef d():\n    raise SystemExit\n"
                      "def e():\n    raise ValueError\n")
    assert exits(module) == [3, 7, 9]
