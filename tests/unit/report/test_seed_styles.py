"""Seeds 004's and 002's tables from campaigns whose plans had no [[table]] entries, shaped by
a style file alone (examples/seeds/NNN-style.toml), compared with the seed's tables cell
shape by cell shape. The campaigns are real ones: examples/seeds/NNN.toml without its
[[table]] entries, run on 2026-11-29 on an AMD EPYC VM (tests/unit/data/seed-NNN)."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench.cli import main
from tests.support import published_check

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "unit" / "data"
SEEDS = ROOT / "examples" / "seeds"
ROWS = ["host (native)", "kvm vm cache=on (TCG, IDE)", "kvm vm cache=off (TCG, IDE)",
        "kvm virtio disk cache=on (TCG)", "kvm virtio disk cache=off (TCG)", "xen pv (UML)"]
MARK = r"( \[\d\])?"
BONNIE = rf"(\d+|\+\+\+\+\+|\+\+\+|-){MARK}"
# each table of the seed: its title's start, its header (in the seed's words where the style's
# `headers` give them), and the shape of its value cells
SEED = [
    ("bonnie++ Sequential Output", ["platform", "Per Chr KB/sec", "%CPU", "Block KB/sec", "%CPU",
                                    "Rewrite KB/sec", "%CPU"], BONNIE),
    ("bonnie++ Sequential Input", ["platform", "Per Chr KB/sec", "%CPU", "Block KB/sec",
                                   "%CPU"], BONNIE),
    ("bonnie++ random Seeks", ["platform", "Seeks /sec", "%CPU"], BONNIE),
    ("bonnie++ Sequential Create", ["platform", "Create /sec", "%CPU", "Read /sec", "%CPU",
                                    "Delete /sec", "%CPU"], BONNIE),
    ("bonnie++ Random Create", ["platform", "Create /sec", "%CPU", "Read /sec", "%CPU",
                                "Delete /sec", "%CPU"], BONNIE),
    ("comparison to native", ["platform", "out per chr", "out block", "rewrite",
                              "in per chr", "in block", "seeks"], r"\d+(\.\d+)?|n/a|-"),
    ("platforms and their versions", ["environment", "what ran", "accelerator",
                                      "guest memory", "vCPUs"], r".+"),
    ("dbench: the best of the runs", ["platform", "Throughput in MB/sec", "% of native"],
     rf"\d+(\.\d+)?{MARK}"),
    ("kernbench", ["platform", "Elapsed Time (s)", "System Time (s)", "User Time (s)",
                   "Percent CPU", "Context Switches", "Sleeps", "Elapsed time /native"],
     rf"\d+(\.\d+)?( \(\d+(\.\d+)?\))?{MARK}"),
    ("Kernel compilation benchmark", ["environment", "build", "time", "run 1", "run 2",
                                      "mean (stdev)"], r"\d+m\d\d\.\d( \(\d+m\d\d\.\d\))?"),
    ("Guest system boot-up time", ["platform", "time in seconds", "n"], rf"\d+(\.\d)?{MARK}"),
]


def styled(folder: Path, seed: str) -> str:
    """The seed's stored campaign, reported with its style file alone."""
    with gzip.open(DATA / f"seed-{seed}" / "guestbench.sqlite.gz") as packed, \
            (folder / "guestbench.sqlite").open("wb") as out:
        shutil.copyfileobj(packed, out)
    shown = CliRunner().invoke(main, ["report", "--style", str(SEEDS / f"{seed}-style.toml"),
                                      "--format", "markdown",
                                      "--db", f"sqlite:///{folder / 'guestbench.sqlite'}"])
    assert shown.exit_code == 0, shown.output
    return shown.stdout


@pytest.fixture(scope="module")
def markdown(tmp_path_factory) -> str:
    return styled(tmp_path_factory.mktemp("seed-004"), "004")


def test_the_style_gives_the_seed_s_tables_in_its_order_and_shapes(markdown):
    found = published_check.tables(markdown)
    assert len(found) == len(SEED), [table.title for table in found]
    for table, (title, header, shape) in zip(found, SEED):
        assert table.title.startswith(title), (table.title, title)
        assert table.header == header, (title, table.header)
        names = [row[0] for row in table.rows]
        if title.startswith("Guest system"):  # native does not boot
            assert names == ROWS[1:], names
        elif title.startswith("Kernel compilation"):  # a row per figure of each
            assert list(dict.fromkeys(names)) == ROWS, names
        else:
            assert names == ROWS, (title, names)
        values = [cell for row in table.rows for cell in row[3 if title.startswith(
            "Kernel compilation") else 1:]]
        odd = [cell for cell in values if not re.fullmatch(shape, cell)]
        assert not odd, (title, odd)


def test_nothing_a_reader_should_not_see(markdown):
    assert {kind: items for kind, items in published_check.counts(markdown).items()
            if items} == {}


def test_seed_002_s_scaling_table_from_its_style_names_its_cells_as_it_heads_them(tmp_path):
    """kernel/vcpu by 1 (s), 1 (d), 2 (s), 2 (d) with the change against 1 (d); the cell this
    2-CPU host cannot place is n/a, its footnote naming it as its column ("2 (disjoint)"), not
    by a setup name the table never shows ("tcg 2 vCPU disjoint")."""
    shown = styled(tmp_path, "002")
    found = {table.title.split(":")[0]: table for table in published_check.tables(shown)}
    scaling = found["kernel/vcpu"]
    assert scaling.header == ["environment", "1 (same)", "1 (disjoint)", "2 (same)",
                              "2 (disjoint)"]
    assert [re.fullmatch(r"\d+\.\d \([+-]\d+%\)( \[\d\])?|n/a \[\d\]", cell) is not None
            for cell in scaling.rows[0][1:]] == [True] * 4, scaling.rows
    assert any(re.match(r"\[\d\] 2 \(disjoint\): not supported there: placement disjoint", line)
               for line in scaling.footnotes), scaling.footnotes
    assert {kind: items for kind, items in published_check.counts(shown).items() if items} == {}
