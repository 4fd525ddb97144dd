"""No two modules of guestbench import each other, directly or round a longer loop.

The graph is read from the source with `ast`: every import statement counts, at module
level or inside a function (a function-level import is still a dependency, only a later
one). An import names the module it loads: `from guestbench.report import model` is an
edge to guestbench.report.model, `from guestbench.runner import Runner` one to the
package guestbench.runner. That Python also runs a package's __init__ on the way to its
submodules is left out, or every package that re-exports its submodules would be a loop.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import guestbench

PACKAGE_ROOT = Path(guestbench.__file__).parent


def module_files(root: Path = PACKAGE_ROOT) -> dict[str, Path]:
    """Dotted module name -> its file, for every module of the package."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def parsed(path: Path) -> tuple[str, ast.Module]:
    """A module's text and tree, parsed once per version of the file (four tests read
    every module of the package: 2 s each when each parsed them again)."""
    stat = path.stat()
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, _mtime_ns: int, _size: int) -> tuple[str, ast.Module]:
    text = path.read_text()
    return text, ast.parse(text, str(path))


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the package that this module imports, anywhere in its source."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(parsed(path)[1]):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from its package (a package's own __init__ is one)
                package = name.split(".")
                package = package if is_package else package[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in known else base)
    return {target for target in targets if target in known and target != name}


def import_graph(root: Path = PACKAGE_ROOT) -> dict[str, set[str]]:
    files = module_files(root)
    return _graph(tuple((name, path, path.stat().st_mtime_ns) for name, path in files.items()))


@functools.lru_cache(maxsize=None)
def _graph(files: tuple[tuple[str, Path, int], ...]) -> dict[str, set[str]]:
    """The graph of these versions of these files, made once (three tests walk the
    package's: 2 s each)."""
    known = {name for name, _path, _mtime in files}
    return {name: frozenset(imported_modules(name, path, known)) for name, path, _ in files}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop of each group of modules that reach each other (Tarjan's strongly connected
    components, then a shortest path back round each), as module names, first = last."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth: at most the number of modules
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_loop(graph, component) for component in components]


def _loop(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """The shortest way from the component's first module back to itself, inside it."""
    start, inside = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & inside):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no loop in {component}")


def test_no_module_imports_one_that_imports_it_back():
    found = cycles(import_graph())
    assert not found, "modules that import each other:\n" + "\n".join(
        "  " + " -> ".join(loop) for loop in found)


def folder_graph(graph: dict[str, set[str]], depth: int) -> dict[str, set[str]]:
    """The graph of folders: each module as the folder it is in, `depth` names below the
    package (depth 1: guestbench.report; 2: guestbench.report.tables), a folder's imports
    the union of its modules' imports of other folders."""
    def folder(name: str) -> str:
        return ".".join(name.split(".")[:depth + 1])
    folders: dict[str, set[str]] = {}
    for name, targets in graph.items():
        folders.setdefault(folder(name), set()).update(
            folder(target) for target in targets if folder(target) != folder(name))
    for targets in list(folders.values()):
        for target in targets:
            folders.setdefault(target, set())
    return folders


@pytest.mark.parametrize("depth", [1, 2])
def test_no_folder_imports_one_that_imports_it_back(depth):
    found = cycles(folder_graph(import_graph(), depth))
    assert not found, "folders that import each other:\n" + "\n".join(
        "  " + " -> ".join(loop) for loop in found)


# -- the test's own parts, on a made-up package ----------------------------------------

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for relative, text in {"__init__.py": "", **files}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_two_folders_that_import_each_other_are_a_loop(tmp_path):
    root = _package(tmp_path, {
        "a/__init__.py": "", "a/x.py": "from pkg.b import y\n",
        "b/__init__.py": "", "b/y.py": "def later():\n    from pkg.a import z\n",
        "a/z.py": "",
    })
    assert cycles(import_graph(root)) == []  # no two modules import each other
    assert cycles(folder_graph(import_graph(root), 1)) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_a_function_level_import_closes_a_loop(tmp_path):
    root = _package(tmp_path, {
        "a.py": "from pkg import b\n",
        "b.py": "def later():\n    from pkg import a\n",
        "c.py": "import pkg.a\n",
    })
    assert cycles(import_graph(root)) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_a_longer_loop_is_named_whole(tmp_path):
    root = _package(tmp_path, {
        "sub/__init__.py": "from .x import thing\n",
        "sub/x.py": "from pkg.y import other\nthing = 1\n",
        "y.py": "from pkg.sub.z import more\nother = 2\n",
        "sub/z.py": "def f():\n    from pkg.sub import x\nmore = 3\n",
    })
    assert cycles(import_graph(root)) == [["pkg.sub.x", "pkg.y", "pkg.sub.z", "pkg.sub.x"]]


def test_a_package_that_reexports_its_submodules_is_no_loop(tmp_path):
    root = _package(tmp_path, {
        "run/__init__.py": "from pkg.run.part import Part\n",
        "run/part.py": "from pkg.run.other import Other\nclass Part: pass\n",
        "run/other.py": "class Other: pass\n",
        "user.py": "from pkg.run import Part\n",
    })
    assert cycles(import_graph(root)) == []


def deferred_imports(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of each import made inside a function of this module."""
    text, tree = parsed(path)
    lines = text.splitlines()
    found = set()
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.update(node.lineno for node in ast.walk(function)
                         if isinstance(node, (ast.Import, ast.ImportFrom)))
    return [(number, lines[number - 1]) for number in sorted(found)]


def test_every_import_inside_a_function_says_why_on_its_line():
    """An import is deferred only for a start-up cost that was measured, and says so where
    it is made (docs/architecture.md, Imports): `# deferred: scipy, 55 ms`."""
    silent = [f"{path.relative_to(PACKAGE_ROOT.parent)}:{number}: {line.strip()}"
              for path in module_files().values()
              for number, line in deferred_imports(path) if "#" not in line]
    assert not silent, "deferred imports without their reason:\n" + "\n".join(silent)


def test_the_deferred_import_check_sees_one_without_a_reason(tmp_path: Path):
    module = tmp_path / "module.py"
    module.write_text("import os\n\ndef f():\n    import json\n    import re  # deferred: why\n"
                      "    return json, re\n")
    assert deferred_imports(module) == [(4, "    import json"), (5, "    import re  # deferred: why")]
