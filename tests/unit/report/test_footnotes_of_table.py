"""A table's own footnotes: each names only the environments in that table, and footnotes
that read alike are one (four alike under one table of seed 002, 2026-11-28)."""

from __future__ import annotations

from guestbench.analysis.cells import Cell
from guestbench.report import select
from guestbench.report.model import Footnotes, Table


def _cell(env: str, flags=(), problems=()) -> Cell:
    return Cell(env, "boot", "boot_powered_off", "ms", [1.0, 2.0], [1, 1],
                flags=list(flags), problems=list(problems), runs=2)


def test_a_flag_s_footnote_names_only_the_table_s_environments():
    footnotes = Footnotes()
    footnotes.mark(_cell("native", ["unstable"]))  # marked for another table of the report
    mark = footnotes.mark(_cell("uml", ["unstable"]))
    table = Table("Boot", ["phase", "uml", "qemu"], [["total", f"12 {mark}", "10"]],
                  label_columns=1)
    select.own_footnotes([table], footnotes)
    assert table.footnotes[0].startswith("[1] unstable (uml): its runs vary"), table.footnotes
    assert "native" not in table.footnotes[0]


def test_footnotes_that_read_alike_under_a_table_are_one():
    """Two reasons that differ only where the reader's form leaves out (a path, an aside)
    read alike: one footnote, one mark per cell."""
    from guestbench.report.model import for_readers
    footnotes = Footnotes()
    with for_readers():
        marks = [footnotes.mark(_cell("kvm", problems=[(
            "unavailable", f"a test guest did not boot under KVM within 8 s (tested by {user}, "
                           f"at 06:{minute:02d}; to test again: rm /root/{user}/kvm.json)")]))
            for minute, user in enumerate(("ann", "bob", "cy", "dee"))]
        table = Table("Boot", ["phase", "kvm"], [[f"row{index}", f"n/a {mark}"]
                                                  for index, mark in enumerate(marks)],
                      label_columns=1)
        select.own_footnotes([table], footnotes)
    assert len({row[1] for row in table.rows}) == 1 and table.rows[0][1] == "n/a [1]"
    assert [line for line in table.footnotes if line.startswith("[")] == [
        "[1] kvm: ⊘ unavailable: a test guest did not boot under KVM within 8 s"]
