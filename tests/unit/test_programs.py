"""guestbench's own programs (gbagent, gbgate) are found in a checkout's agent/ or in an
installed package's _bin/, a checkout's first; where neither has them, the error says how
to get them for the way guestbench was installed."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from guestbench import agent, programs


def _program(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def folders(tmp_path, monkeypatch) -> tuple[Path, Path]:
    source, packaged = tmp_path / "checkout" / "agent", tmp_path / "site" / "guestbench" / "_bin"
    monkeypatch.setattr(programs, "SOURCE_DIR", source)
    monkeypatch.setattr(programs, "PACKAGED_DIR", packaged)
    monkeypatch.delenv(agent.AGENT_ENV_VAR, raising=False)
    return source, packaged


def test_an_installed_package_s_agent_is_found(folders) -> None:
    _, packaged = folders
    built = _program(packaged, "gbagent")
    assert programs.find("gbagent") == built
    assert agent.path() == built


def test_a_checkout_s_own_build_comes_first(folders) -> None:
    source, packaged = folders
    _program(packaged, "gbgate")
    rebuilt = _program(source, "gbgate")
    assert programs.find("gbgate") == rebuilt


def test_a_program_that_cannot_run_is_not_taken(folders) -> None:
    source, _ = folders
    source.mkdir(parents=True)
    (source / "gbgate").write_text("not executable")
    assert programs.find("gbgate") is None


def test_without_a_checkout_the_error_says_to_install_the_wheel(folders) -> None:
    with pytest.raises(agent.AgentMissing) as caught:
        agent.path()
    message = str(caught.value)
    assert f"missing at {folders[1] / 'gbagent'}" in message
    assert "pip install guestbench-*.whl" in message and "make -C" not in message


def test_in_a_checkout_the_error_says_to_build_it(folders) -> None:
    source, _ = folders
    source.mkdir(parents=True)
    with pytest.raises(agent.AgentMissing) as caught:
        agent.path()
    assert f"build it with 'make -C {source}'" in str(caught.value)
    assert agent.AGENT_ENV_VAR in str(caught.value)


def _setup_module():
    import importlib.util
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("guestbench_setup", root / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not as __main__: setup() does not run
    return module


def test_a_wheel_built_without_a_compiler_says_what_to_install(tmp_path, monkeypatch) -> None:
    setup = _setup_module()
    monkeypatch.setenv("CC", "no-such-cc-here")
    with pytest.raises(SystemExit) as caught:
        setup.build_programs(tmp_path / "_bin")
    message = str(caught.value)
    assert "needs a C compiler (gcc), make and a static C library" in message
    assert "apt-get install gcc make libc6-dev" in message and "not found: no-such-cc-here" in message


def test_a_build_that_fails_says_what_the_compiler_said(tmp_path) -> None:
    setup = _setup_module()
    import shutil
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("no gcc or make here")
    broken = tmp_path / "agent"
    broken.mkdir()
    (broken / "Makefile").write_text("gbagent gbgate:\n\tgcc -o $@ missing.c\n")
    with pytest.raises(SystemExit) as caught:
        setup.build_programs(tmp_path / "_bin", broken)
    assert "its agent did not build" in str(caught.value)
    assert "missing.c" in str(caught.value)
    assert not (tmp_path / "_bin").exists()


def test_the_example_plans_are_a_checkout_s_or_else_the_package_s(tmp_path, monkeypatch) -> None:
    checkout, packaged = tmp_path / "examples", tmp_path / "guestbench" / "examples"
    monkeypatch.setattr(programs, "EXAMPLES_DIRS", (checkout, packaged))
    packaged.mkdir(parents=True)
    assert programs.examples() == packaged
    checkout.mkdir()
    assert programs.examples() == checkout
