"""docs/seeds.md shows guestbench's tables of each seed plan as `report --format markdown`
printed them (benchmarks/seed_tables.py writes them): the plan's [[table]] entries, in its
order, under their titles, in the plain form a write-up pastes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "seeds.md").read_text()
SEEDS = ("000", "001", "002", "004")


def block(seed: str) -> str:
    found = re.search(rf"<!-- seed {seed}: begin -->\n(.*?)<!-- seed {seed}: end -->", PAGE,
                      re.S)
    assert found, f"docs/seeds.md has no block for seed {seed}"
    return found.group(1)


@pytest.mark.parametrize("seed", SEEDS)
def test_each_seed_s_tables_are_the_plan_s_in_its_order(seed) -> None:
    plan = tomllib.loads((ROOT / "examples" / "seeds" / f"{seed}.toml").read_text())
    entries = plan.get("table", [])
    assert entries, f"examples/seeds/{seed}.toml has no [[table]] entries"
    text = block(seed)
    assert f".venv/bin/guestbench run examples/seeds/{seed}.toml" in text
    titles = [line[4:] for line in text.splitlines() if line.startswith("### ")]
    wanted = [entry["title"] for entry in entries if "title" in entry]
    # an entry's title heads its table; a family gives one table per member ("title: ...")
    shown = [next((want for want in wanted if title == want or title.startswith(want + ": ")),
                  None) for title in titles]
    assert [title for title in dict.fromkeys(shown) if title] == wanted, titles


@pytest.mark.parametrize("seed", SEEDS)
def test_each_seed_s_tables_can_be_pasted(seed) -> None:
    text = block(seed)
    assert "](" not in text  # no links to logs that are not in the repository
    assert "±" not in text
    assert max(map(len, text.splitlines())) <= 160
    for table in text.split("### ")[1:]:
        marks = {int(n) for row in table.splitlines() if row.startswith("| ")
                 for n in re.findall(r"\[(\d+)\]", row)}
        said = [int(n) for n in re.findall(r"^\[(\d+)\] ", table, re.M)]
        assert sorted(marks) == said == list(range(1, len(said) + 1)), table[:200]
