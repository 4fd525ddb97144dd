"""Commands that tell the truth: envs shows a kept KVM test boot's answer, compare says
when it compares a campaign with itself, history says how many campaigns a change point
needs, report -o writes what standard output shows, every table is drawn in one ASCII
style within 120 bytes a line, and a misspelt name gets the nearest known ones."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from guestbench import environments, images
from guestbench.plan import errors as spelling
from guestbench.commands import listings
from guestbench.analysis import history as analysis_history
from guestbench.analysis.history import Point, Series
from guestbench.environments import survey
from guestbench.environments.fullsystem import kvm
from guestbench.environments.base import Availability
from guestbench.report.formats import text
from tests.support.cli import GOOD_FAKE_PLAN, invoke

ASCII_RULE = re.compile(r"^\+(-+\+)+$")  # rich's ASCII2 box: +-----+------+
BOX_DRAWING = re.compile("[\u2500-\u257f]")  # ┏━┃│└ ...: 3 bytes each, 360-byte lines


@pytest.fixture
def good_fake_store(tmp_path: Path, fake_agent: Path):
    """A store with campaigns of GOOD_FAKE_PLAN (environments base and slow, workload
    getpid); call it with how many more to run."""
    url = f"sqlite:///{tmp_path / 'x.sqlite'}"
    plan = tmp_path / "good.toml"
    plan.write_text(GOOD_FAKE_PLAN)

    def run(count: int = 1) -> str:
        for _ in range(count):
            result = invoke(["run", str(plan), "--db", url, "--quiet"], fake_agent)
            assert result.exit_code == 0, result.output
        return url
    run.plan, run.agent = plan, fake_agent
    return run


def command(good_fake_store, *args: str):
    return invoke(list(args), good_fake_store.agent)


# -- envs: the kept answer of a KVM test boot ------------------------------------------

@pytest.fixture
def kept_kvm_answers(tmp_path, monkeypatch):
    """Test boots kept for this boot of the host, as a campaign keeps them: call it with
    (image, machine, available, reason, at)."""
    monkeypatch.setattr(kvm, "remembered_file", lambda: tmp_path / "kvm-boot.json")
    monkeypatch.setattr(kvm, "_boot", lambda: "boot-1")
    answers: dict[str, dict] = {}

    def keep(image: str, machine: str, available: bool, reason: str, at: str) -> None:
        key = json.dumps(kvm._identity(["qemu-system-x86_64", image, machine]))
        answers[key] = {"available": available, "reason": reason, "at": at}
        (tmp_path / "kvm-boot.json").write_text(json.dumps({"boot": "boot-1",
                                                            "answers": answers}))
    return keep


def test_envs_shows_the_kept_test_boot_that_said_no(kept_kvm_answers, monkeypatch, good_fake_store):
    kept_kvm_answers("image-1", "microvm", False, "a test guest did not boot under KVM "
                     "within 8 s", "2026-11-25 09:00")

    class Answers:  # every probe says yes: qemu-kvm's only sees /dev/kvm
        def __init__(self, spec):
            pass

        def probe(self, host):
            return Availability.yes("/dev/kvm; a test boot when a campaign prepares it tells")
    monkeypatch.setattr(environments, "create", Answers)
    kvm_row = {one.preset: one for one in survey.presets(None)}["qemu-kvm"]
    assert not kvm_row.answer.available
    assert kvm_row.answer.reason.startswith("a test guest did not boot under KVM within 8 s "
                                            "(a test boot at 2026-11-25 09:00")
    assert "to test again: rm " in kvm_row.answer.reason
    result = command(good_fake_store, "envs")
    assert result.exit_code == 0, result.output
    assert re.search(r"\| qemu-kvm +\| qemu: [^|]*\| no +\|", result.stdout), result.stdout
    assert re.search(r"\| qemu-tcg +\| qemu: [^|]*\| yes +\|", result.stdout), result.stdout


def test_the_kept_answer_is_the_latest_of_this_vmm_and_machine(kept_kvm_answers):
    kept_kvm_answers("image-1", "microvm", True, "KVM test guest booted in 0.40 s",
                     "2026-11-25 08:00")
    kept_kvm_answers("image-2", "microvm", False, "a test guest failed under KVM",
                     "2026-11-25 10:00")
    kept_kvm_answers("image-3", "q35", True, "KVM test guest booted in 0.50 s",
                     "2026-11-25 11:00")
    latest = kvm.remembered_for_vmm("qemu-system-x86_64", "microvm")
    assert not latest.available and "failed under KVM (a test boot at 2026-11-25 10:00" \
        in latest.reason
    assert kvm.remembered_for_vmm("qemu-system-x86_64", "pc") is None
    assert kvm.remembered_for_vmm("qemu-system-i386", "microvm") is None


def test_without_a_kept_answer_the_probe_answers(kept_kvm_answers):
    spec = environments.preset_spec("qemu-kvm")
    probed = Availability.yes("/dev/kvm; a test boot when a campaign prepares it tells")
    assert survey.with_kvm_test_boot(spec, probed) == probed
    kept_kvm_answers("image-1", "microvm", False, "did not boot", "2026-11-25 09:00")
    assert not survey.with_kvm_test_boot(spec, probed).available
    tcg = environments.preset_spec("qemu-tcg")
    assert survey.with_kvm_test_boot(tcg, Availability.yes("accel tcg")).available
    auto = tcg.model_copy(update={"accel": "auto"})
    chosen = survey.with_kvm_test_boot(auto, Availability.yes("/dev/kvm"))
    assert chosen.available and chosen.reason.startswith("auto will choose tcg: did not boot")


# -- compare A A ----------------------------------------------------------------------

def test_compare_says_when_it_compares_a_campaign_with_itself(good_fake_store):
    url = good_fake_store(2)
    for a, b, same in (("1", "1", 1), ("1", "cli-fake", None), ("2", "cli-fake", 2)):
        result = command(good_fake_store, "compare", a, b, "--db", url)  # a name: its latest campaign
        assert result.exit_code == 0, result.output
        said = re.search(r"compare: campaign (\d) \('cli-fake'\) with itself", result.stderr)
        assert (said and int(said[1])) == same, result.stderr
    assert "Compare: A = campaign 1" in command(good_fake_store, "compare", "1", "1", "--db", url).stdout


# -- history with too few campaigns ----------------------------------------------------

def test_history_with_too_few_campaigns_says_how_many_it_needs(good_fake_store):
    url = good_fake_store(1)
    result = command(good_fake_store, "history", "--db", url)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert flat.startswith("History: 1 finished campaign; a change point needs 4 campaigns")
    assert "run 3 more of the same plan" in flat and "none" not in flat
    detail = command(good_fake_store, "history", "--db", url, "--detail")
    assert "1 cli-fake" in detail.stdout and "run 3 more" in " ".join(detail.stdout.split())
    good_fake_store(3)
    enough = command(good_fake_store, "history", "--db", url)
    assert "History: 4 finished campaigns" in enough.stdout and "change points" in enough.stdout
    assert "run 0 more" not in enough.stdout


def test_the_campaigns_history_asks_for_are_the_fewest_with_a_change_point():
    """text.MIN_HISTORY_CAMPAIGNS is what analysis/history.py's find_changes needs: with
    that many campaigns a tenfold step is found, with one fewer nothing ever is."""
    def series(medians: list[float]) -> Series:
        start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
        return Series("h", "vm", "getpid", "time_per_op", "ns", False, [
            Point(i + 1, "n", start + dt.timedelta(days=i), m, None, None, 3, {})
            for i, m in enumerate(medians)])
    needed = text.MIN_HISTORY_CAMPAIGNS
    assert len(analysis_history.find_changes(series([1.0, 1.01, 10.0, 10.1][-needed:]))) == 1
    assert analysis_history.find_changes(series([1.0, 10.0, 10.1, 10.2][-(needed - 1):])) == []


# -- report -o writes what standard output shows ---------------------------------------

@pytest.mark.parametrize("detail", [[], ["--detail"]], ids=["summary", "detail"])
def test_report_to_a_file_holds_what_standard_output_shows(good_fake_store, tmp_path, detail):
    url = good_fake_store(1)
    shown = command(good_fake_store, "report", "--db", url, *detail)
    target = tmp_path / "report.txt"
    written = command(good_fake_store, "report", "--db", url, *detail, "-o", str(target))
    assert shown.exit_code == written.exit_code == 0, written.output
    assert written.stdout == "" and f"wrote {target}" in written.stderr
    assert target.read_text() == shown.stdout
    assert ("Measured: median" in shown.stdout) == bool(detail), shown.stdout


# -- one table style --------------------------------------------------------------------

def assert_one_ascii_style(text: str) -> None:
    lines = text.splitlines()
    assert max(len(line.encode()) for line in lines) <= 120, text  # bytes, as awk counts
    assert not BOX_DRAWING.search(text), text
    assert any(ASCII_RULE.match(line.strip()) for line in lines), text


def test_envs_images_and_report_draw_one_ascii_style(good_fake_store, monkeypatch):
    url = good_fake_store(1)
    assert_one_ascii_style(command(good_fake_store, "report", "--db", url).stdout)
    class Answers:
        def __init__(self, spec):
            self.spec = spec

        def probe(self, host):  # a long answer, as UML's note on vm.max_map_count is
            return Availability.no("cannot run here: " + "the reason goes on " * 12)
    monkeypatch.setattr(environments, "create", Answers)
    assert_one_ascii_style(command(good_fake_store, "envs").stdout)
    monkeypatch.setattr(images, "cached", lambda: [])
    empty = command(good_fake_store, "images").stdout
    assert_one_ascii_style(empty)
    assert "no image yet" in empty


@pytest.fixture
def long_images(monkeypatch):
    """Three cached images with many modules and a long kernel path."""
    modules = [f"virtio_module_{n}" for n in range(12)]
    rows = [{"id": f"9959eaf59e0720{n}f", "kernel": "/boot/vmlinuz-6.1.0-56-amd64-" + "x" * 30,
             "kernel_version": "6.1.0-56-amd64", "modules": modules, "tools": ["fio", "make"],
             "size_bytes": 3 << 20, "created_at": f"2026-11-2{n}T20:18:02+00:00"}
            for n in range(3)]
    monkeypatch.setattr(images, "cached", lambda: rows)


def test_images_fit_120_bytes(good_fake_store, long_images):
    result = command(good_fake_store, "images")
    assert result.exit_code == 0, result.output
    assert_one_ascii_style(result.stdout)


@pytest.mark.parametrize("width", [120, 80, 72])
def test_images_never_break_a_time_or_an_id(long_images, width):
    drawn = listings.images(width)
    assert max(len(line) for line in drawn.splitlines()) <= width
    for n in range(3):
        assert re.search(rf"\| 9959eaf59e0720{n}f \|.*\| 2026-11-2{n} 20:18 \|", drawn), drawn


# -- did you mean ----------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["run", "--env", "native,nativ"], "--env: unknown environment 'nativ'; did you mean "
                                       "'native'?"),
    (["run", "--env", "native", "--workload", "getpdi"], "unknown workload 'getpdi'; did you "
                                                        "mean 'getpid'?"),
    (["run", "PLAN", "--env", "bsae"], "--env: 'bsae' is not in the plan"),
    (["run", "PLAN", "--env", "bsae"], "; did you mean 'base'?"),
    (["history", "--env", "base,slwo"], "(--env slwo): no stored campaign has this "
                                        "environment; did you mean 'slow'?"),
    (["history", "--workload", "getpdi"], "did you mean 'getpid'?"),
    (["report", "--baseline", "bsae"], "--baseline: 'bsae' is not an environment of campaign "
                                       "1; did you mean 'base'?"),
])
def test_a_misspelt_name_gets_the_nearest_known_ones(good_fake_store, args, words):
    url = good_fake_store(1)
    args = [str(good_fake_store.plan) if arg == "PLAN" else arg for arg in args]
    result = command(good_fake_store, *args, "--db", url)
    assert result.exit_code == 2, result.output
    assert words in " ".join(result.stderr.split()), result.stderr
    assert "Traceback" not in result.output


def test_a_name_near_nothing_gets_no_guess():
    assert spelling.did_you_mean("docker", environments.PRESETS) == ""
    assert spelling.did_you_mean("qemu-kmv", environments.PRESETS) == "; did you mean " \
                                                                      "'qemu-kvm'?"
