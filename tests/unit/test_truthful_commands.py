"""Commands that tell the truth: report -o writes what standard output shows, and every
table is drawn in one ASCII style within 120 bytes a line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from guestbench import environments, images, listings
from guestbench.environments.base import Availability
from tests.unit.test_cli import GOOD_FAKE_PLAN, fake_agent, invoke  # noqa: F401 - fixture

ASCII_RULE = re.compile(r"^\+(-+\+)+$")  # rich's ASCII2 box: +-----+------+
BOX_DRAWING = re.compile("[\u2500-\u257f]")  # ┏━┃│└ ...: 3 bytes each, 360-byte lines


@pytest.fixture
def stored(tmp_path: Path, fake_agent: Path):  # noqa: F811 - the fixture imported above
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


def command(stored, *args: str):
    return invoke(list(args), stored.agent)


# -- report -o writes what standard output shows ---------------------------------------

@pytest.mark.parametrize("detail", [[], ["--detail"]], ids=["summary", "detail"])
def test_report_to_a_file_holds_what_standard_output_shows(stored, tmp_path, detail):
    url = stored(1)
    shown = command(stored, "report", "--db", url, *detail)
    target = tmp_path / "report.txt"
    written = command(stored, "report", "--db", url, *detail, "-o", str(target))
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


def test_envs_images_and_report_draw_one_ascii_style(stored, monkeypatch):
    url = stored(1)
    assert_one_ascii_style(command(stored, "report", "--db", url).stdout)
    class Answers:
        def __init__(self, spec):
            self.spec = spec

        def probe(self, host):  # a long answer, as UML's note on vm.max_map_count is
            return Availability.no("cannot run here: " + "the reason goes on " * 12)
    monkeypatch.setattr(environments, "create", Answers)
    assert_one_ascii_style(command(stored, "envs").stdout)
    monkeypatch.setattr(images, "cached", lambda: [])
    empty = command(stored, "images").stdout
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


def test_images_fit_120_bytes(stored, long_images):
    result = command(stored, "images")
    assert result.exit_code == 0, result.output
    assert_one_ascii_style(result.stdout)


@pytest.mark.parametrize("width", [120, 80, 72])
def test_images_never_break_a_time_or_an_id(long_images, width):
    drawn = listings.images(width)
    assert max(len(line) for line in drawn.splitlines()) <= width
    for n in range(3):
        assert re.search(rf"\| 9959eaf59e0720{n}f \|.*\| 2026-11-2{n} 20:18 \|", drawn), drawn


