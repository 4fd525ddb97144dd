"""The outputs of a stored default campaign stay as they were, byte for byte: the terminal's
summary and detail, Markdown, CSV, JSON and the HTML's text, and history and compare of the two.

The store holds two real default campaigns (`guestbench run` twice on a 2-core host, 2026-11-27), kept
compressed in tests/unit/data/default-campaign/ with what each command printed for it then.
A change that means to alter an output writes the expected files again with
GUESTBENCH_WRITE_EXPECTED=1 and shows the difference in its commit; any other difference is
a regression. The summary is checked twice: from the campaign's digest (the kept summary)
and derived afresh from the samples with the digest removed.
"""

from __future__ import annotations

import difflib
import gzip
import os
import re
import shutil
import sqlite3
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench.cli import main
from tests.support.default_campaign import unpacked

DATA = Path(__file__).parent / "data" / "default-campaign"
WRITE = os.environ.get("GUESTBENCH_WRITE_EXPECTED") == "1"

# expected file -> the command line after 'guestbench', and what of its output is compared
OUTPUTS = {
    "summary.txt": ["report"],
    "detail.txt": ["report", "--detail"],
    "report.md": ["report", "--format", "markdown"],
    "report.csv": ["report", "--format", "csv"],
    "report.json": ["report", "--format", "json"],
    "report-html.txt": ["report", "--format", "html"],
    "history.txt": ["history", "--detail"],
    "history.json": ["history", "--format", "json"],
    "compare.md": ["compare", "1", "2", "--format", "markdown"],
    "compare.json": ["compare", "1", "2", "--format", "json"],
}


class _Text(HTMLParser):
    """The text a reader sees in a page, a line per piece, without scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._hidden -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._hidden and data.strip():
            self.pieces.append(data.strip())


def html_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    return "\n".join(parser.pieces) + "\n"


@pytest.fixture(scope="module")
def default_campaign_file(tmp_path_factory) -> Path:
    """A copy of the stored campaign (commands keep digests in it: never in the original)."""
    return unpacked(tmp_path_factory.mktemp("default-campaign"))


def output_of(default_campaign_file: Path, name: str, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "120")
    result = CliRunner().invoke(main, [*OUTPUTS[name], "--db", f"sqlite:///{default_campaign_file}"])
    assert result.exit_code == 0, result.output
    return html_text(result.stdout) if name.endswith("-html.txt") else result.stdout


def expect(name: str, text: str) -> None:
    expected_file = DATA / f"{name}.gz"
    if WRITE:
        with gzip.GzipFile(expected_file, "wb", mtime=0) as out:
            out.write(text.encode())
    expected = gzip.decompress(expected_file.read_bytes()).decode()
    if text != expected:
        diff = difflib.unified_diff(expected.splitlines(), text.splitlines(), "expected",
                                    "now", lineterm="", n=1)
        pytest.fail(f"{name} differs from the stored output:\n" + "\n".join(list(diff)[:40]))


@pytest.mark.parametrize("name", OUTPUTS)
def test_each_output_is_as_it_was(default_campaign_file, name, monkeypatch):
    expect(name, output_of(default_campaign_file, name, monkeypatch))


def test_the_summary_derived_without_the_digest_is_the_same(default_campaign_file, tmp_path, monkeypatch):
    undigested = tmp_path / "undigested.sqlite"
    shutil.copy(default_campaign_file, undigested)
    output_of(undigested, "summary.txt", monkeypatch)  # its digest, whichever tests ran before
    with sqlite3.connect(undigested) as connection:
        assert connection.execute("DELETE FROM campaign_digest").rowcount >= 1
    expect("summary.txt", output_of(undigested, "summary.txt", monkeypatch))


@pytest.mark.parametrize("output_format", ["table", "markdown"])
def test_plain_is_values_only_in_every_table_of_values(default_campaign_file, output_format,
                                                       monkeypatch):
    """--plain printed intervals in the measured and ratio tables (1.83x [1.07-5.14x], and
    1.00x [0.41-2.42x] for the baseline) on 2026-11-27, while the docs said it had none."""
    monkeypatch.setenv("COLUMNS", "120")
    result = CliRunner().invoke(main, ["report", "--plain", "--format", output_format, "--db",
                                       f"sqlite:///{default_campaign_file}"])
    assert result.exit_code == 0, result.output
    values = result.stdout.split("Statistics per cell")[0]  # that table is the intervals'
    assert "Relative to native" in values and "Measured" in values
    assert "±" not in values and "[95% CI]" not in values
    assert not re.search(r"\[[0-9.]+-[0-9.]+x?\]", values)  # an interval; [2] is a footnote
    assert "| 1.00x " in values  # the baseline's ratio, alone
