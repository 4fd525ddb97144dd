"""Markdown values link to their cell's log folder, relative to where the Markdown goes."""

from __future__ import annotations

from pathlib import Path

from guestbench.report.formats import markdown
from guestbench.store.records import RunRecord
from tests.support.campaigns import Campaign
from tests.support.samples import THREE
from tests.support.facts import STARTED
from guestbench.commands import reading


def test_values_link_to_the_cells_log_folders(store, tmp_path: Path) -> None:
    campaign = Campaign(store, {"native": {}, "uml": {"kind": "uml"}}, baseline="native")
    logs = tmp_path / "guestbench-logs" / "20261125T1200-ab"
    for repetition, jitter in enumerate(THREE):
        for env, value in (("native", 100.0), ("uml", 5000.0)):
            folder = logs / env / "getpid" / f"rep{repetition}"
            folder.mkdir(parents=True)
            store.add_run(campaign.id, RunRecord(
                campaign.env_ids[env], "getpid", "getpid", {}, repetition, "ok", "", STARTED,
                0.5, str(folder), (("time_per_op", "ns", value * jitter),)))
    report = reading.load(store, str(campaign.id))
    text = markdown.render(report, tmp_path, links=True)
    assert "[100 ±0.1%](guestbench-logs/20261125T1200-ab/native/getpid/)" in text
    assert "(guestbench-logs/20261125T1200-ab/uml/getpid/)" in text
    elsewhere = markdown.render(report, tmp_path / "out", links=True)  # a file written one folder down
    assert "(../guestbench-logs/20261125T1200-ab/native/getpid/)" in elsewhere
    # a label column is no link
    assert "| getpid | time per op (ns) | [" in text
    # links are asked for: a table pasted into a write-up has none by default
    assert "](" not in markdown.render(report, tmp_path)


def test_program_output_quoted_in_a_footnote_is_shown_not_run() -> None:
    """A reason that quotes a VMM's stderr went into the Markdown as raw HTML (fault run of
    2026-11-25); it is now entities, and a pipe cannot split a table's row."""
    from guestbench.report.model import Table
    table = Table("Boot", ["environment", "workload", "ms"], [],
                  footnotes=["1: qemu said <script>alert(4)</script> & left"])
    table.add(["qemu <b>", "boot | x", "12"])
    table.add(["VMM start -> ready", "boot", "13"])  # an arrow in a label stays readable
    text = markdown.render_tables([table])
    assert "<script>" not in text and "<b>" not in text
    assert "&lt;script>alert(4)&lt;/script> & left" in text
    assert "| qemu &lt;b> | boot \\| x | 12 |" in text
    assert "| VMM start -> ready | boot | 13 |" in text
