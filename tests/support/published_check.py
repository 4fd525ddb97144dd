"""What a published Markdown must not hold, counted: raw ids where a reader expects words,
footnotes naming an environment outside their table, negative boot phases, and scientific
notation. Used by the tests of the seeds' tables, and by hand on any report:

    .venv/bin/guestbench report --style examples/seeds/004-style.toml --format markdown > 004.md
    .venv/bin/python -m tests.support.published_check 004.md
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

RAW_ID = re.compile(r"(?<![\w./-])[a-z][a-z0-9]*_[a-z0-9_]+(?![\w(])")
SCIENTIFIC = re.compile(r"\d(?:\.\d+)?[eE][+-]?\d+")
NEGATIVE = re.compile(r"^-\d")
MARKS = re.compile(r"\s*(\[\d+\]|§)")
FLAGS = ("unstable", "multimodal", "clock-drift", "console-latency", "placement-drift",
         "vmm-exit", "too-fast")
FLAGGED = re.compile(rf"^\[\d+\] (?:{'|'.join(FLAGS)})[^(:]* \(([^()]+)\): ")  # "[1] unstable (uml): ..."
# "[2] KVM: not run here: ...", "[2] kvm: ⊘ unavailable: ..." (not a plain flag's "unstable:")
PROBLEM = re.compile(r"^\[\d+\] ([^:]+?)(?: §)?: (?:[✗◷☠‡∅⊘‖] |not run here|not supported there|"
                     r"not run:|failed|timed out|crashed|could not be started)")
# names that are words in their field: system calls and C functions a reader knows
KNOWN = {"sched_yield", "clock_gettime"}


@dataclass
class Table:
    title: str
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    footnotes: list[str] = field(default_factory=list)


def tables(markdown: str) -> list[Table]:
    """Each "### title", its table's header and rows, and its footnote lines."""
    found: list[Table] = []
    for line in markdown.splitlines():
        if line.startswith("### "):
            found.append(Table(line[4:].strip()))
        elif not found:
            continue
        elif line.startswith("|") and not re.fullmatch(r"\|[-:| ]+\|", line):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not found[-1].header:
                found[-1].header = cells
            else:
                found[-1].rows.append(cells)
        elif re.match(r"\[\d+\] ", line):
            found[-1].footnotes.append(line.strip())
    return found


def _names(table: Table) -> set[str]:
    """The names a table shows: its header and its cells' words, without marks."""
    return {MARKS.sub("", text).strip() for text in [*table.header, *(cell for row in
                                                                        table.rows for cell in row)]}


def raw_ids(table: Table) -> list[str]:
    texts = [table.title, *table.header, *(cell for row in table.rows for cell in row)]
    return [found for text in texts for found in RAW_ID.findall(text) if found not in KNOWN]


def foreign_footnotes(table: Table) -> list[str]:
    """Footnote lines that name an environment the table does not show."""
    names = _names(table)
    out = []
    for line in table.footnotes:
        flagged = FLAGGED.match(line)
        named = [name.strip() for name in flagged.group(1).split(",")] if flagged else []
        problem = PROBLEM.match(line) if not flagged else None
        if problem:
            named = [problem.group(1).strip()]
        # a cell named by its row and column ("tcg, 2 (disjoint)") is in the table
        if any(name not in names and not all(part in names for part in name.split(", "))
               for name in named):
            out.append(line)
    return out


def negative_phases(table: Table) -> list[str]:
    if not table.title.lower().startswith("boot phases"):
        return []
    return [cell for row in table.rows for cell in row[1:] if NEGATIVE.match(cell)]


def scientific(table: Table) -> list[str]:
    return [cell for row in table.rows for cell in row if SCIENTIFIC.search(cell)]


def counts(markdown: str) -> dict[str, list[str]]:
    """Every finding of each kind, over every table of the document."""
    found: dict[str, list[str]] = {"raw ids": [], "footnotes naming another table's "
                                   "environment": [], "negative phases": [],
                                   "scientific notation": []}
    for table in tables(markdown):
        for key, check in zip(found, (raw_ids, foreign_footnotes, negative_phases,
                                      scientific)):
            found[key] += [f"{table.title}: {item}" for item in check(table)]
    return found


def main() -> None:
    for path in sys.argv[1:]:
        for kind, items in counts(Path(path).read_text()).items():
            print(f"{path}: {kind}: {len(items)}")
            for item in items:
                print(f"    {item}")


if __name__ == "__main__":
    main()
