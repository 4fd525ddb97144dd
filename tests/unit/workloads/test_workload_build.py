"""workloads.build: parameters, agent arguments, job needs (the tree, cold caches), derive."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from guestbench.environments.base import Job
from guestbench.workloads import build
from guestbench.workloads.build import source_tree as buildtree
from guestbench.workloads.base import InputError, OutputError, RunOutput

BUILD = next(w for w in build.WORKLOADS if w.name == "build")


def run_output(stdout: str) -> RunOutput:
    samples = [("elapsed", "s", 9.5), ("user", "s", 17.0), ("sys", "s", 1.0),
               ("cpu_percent", "%", 189.0), ("context_switches", "count", 900.0),
               ("sleeps", "count", 400.0), ("max_rss", "KiB", 36000.0)]
    return RunOutput(samples=samples, stdout=stdout, stderr="", records=[], artifacts={})


def test_defaults_and_limits():
    params = BUILD.params_model()
    assert (params.units, params.jobs, params.cache) == (buildtree.DEFAULT_UNITS, 2, "warm")
    for bad in ({"units": 0}, {"jobs": 0}, {"cache": "lukewarm"}, {"units": "8"},
                {"threads": 2}):
        with pytest.raises(ValidationError):
            BUILD.params_model(**bad)


def test_the_workload_declares_what_it_runs():
    assert (BUILD.name, BUILD.agent_workload, BUILD.primary_metric) == ("build", "exec", "elapsed")
    assert BUILD.tools == ("make", "gcc")
    assert not BUILD.quick


def test_warm_runs_build_once_untimed_first_and_cold_runs_do_not():
    warm = BUILD.agent_args(BUILD.params_model(jobs=4))
    assert warm == ["--warmup-runs", "1", "exec", "make", "-B", "-j4", "CC=gcc", "check"]
    cold = BUILD.agent_args(BUILD.params_model(cache="cold"))
    assert cold == ["exec", "make", "-B", "-j2", "CC=gcc", "check"]
    # environments put --cwd (and --drop-caches) before the workload's words
    job = Job("build", Path("/gbagent"), tuple(cold))
    assert job.with_agent_options("--cwd", "/scratch")[:3] == ("--cwd", "/scratch", "exec")


def test_needs_a_scratch_folder_with_the_tree_and_children(tmp_path):
    needs = BUILD.job_needs(BUILD.params_model(units=3), tmp_path)
    assert needs.scratch and needs.exec_children and needs.scratch_mib >= 16
    assert not needs.drop_caches and not needs.uncache_files
    tree = needs.scratch_files
    assert tree is not None and tree.parent == tmp_path
    assert (tree / "Makefile").is_file() and len(list((tree / "src").glob("unit*.c"))) == 3
    cold = BUILD.job_needs(BUILD.params_model(units=3, cache="cold"), tmp_path)
    assert cold.drop_caches and cold.uncache_files and cold.scratch_files == tree


def test_the_tree_is_made_once_per_size(tmp_path):
    first = build.tree(2, tmp_path)
    stamp = (first / "Makefile").stat().st_mtime_ns
    assert build.tree(2, tmp_path) == first
    assert (first / "Makefile").stat().st_mtime_ns == stamp
    assert build.tree(3, tmp_path) != first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_a_tree_without_its_mark_is_made_again(tmp_path):
    half = tmp_path / "buildtree-2"
    (half / "src").mkdir(parents=True)
    (half / "src" / "unit0000.c").write_text("half written")
    tree = build.tree(2, tmp_path)
    assert tree == half and (tree / build.TREE_MARK).is_file()
    assert (tree / "src" / "unit0000.c").read_text() != "half written"


def test_an_unwritable_inputs_folder_is_an_input_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match="cannot write the build tree"):
        build.tree(2, blocker)


def test_derive_keeps_the_agents_samples_when_the_program_printed_the_prediction():
    params = BUILD.params_model(units=3)
    stdout = ("gcc -O2 -Isrc -c -o src/main.o src/main.c\n"
              "gcc -O2 -o app src/main.o src/unit0000.o\n./app\n"
              f"{buildtree.expected_output(3)}\n")
    assert BUILD.derive(params, run_output(stdout)) == run_output("").samples


@pytest.mark.parametrize("stdout", ["", "gcc -O2 -o app src/main.o\n./app\n12345\n"])
def test_derive_fails_a_run_whose_program_printed_something_else(stdout):
    with pytest.raises(OutputError, match="expected"):
        BUILD.derive(BUILD.params_model(units=3), run_output(stdout))


def test_the_prediction_is_fixed():
    # the generator's SEED and code give these; a change to either is a different tree
    assert buildtree.expected_output(2) == "1116344093229694027"
    assert buildtree.expected_output(48) == "3655749224227238693"


@pytest.mark.skipif(not (shutil.which("make") and shutil.which("gcc")),
                    reason="make or gcc missing (install.sh installs build-essential)")
def test_the_command_builds_the_tree_and_the_program_prints_the_prediction(tmp_path):
    tree = build.tree(3, tmp_path)
    params = BUILD.params_model(units=3)
    done = subprocess.run(build.make_command(params), cwd=tree, capture_output=True, text=True,
                          timeout=300, check=True)
    assert BUILD.derive(params, run_output(done.stdout))
    assert done.stdout.split()[-1] == buildtree.expected_output(3)
