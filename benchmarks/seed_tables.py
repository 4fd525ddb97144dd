#!/usr/bin/env python3
"""Writes guestbench's tables of each seed plan into docs/seeds.md, from a real campaign.

    .venv/bin/python benchmarks/seed_tables.py --db-dir DIR [--run] [SEED ...]

For each seed (000, 001, 002, 004 unless named) it takes the campaign stored in
DIR/sNNN.sqlite (with --run it first runs `guestbench run examples/seeds/NNN.toml` into
that store, its logs in DIR/logsNNN) and writes what

    guestbench report --db sqlite:///DIR/sNNN.sqlite --format markdown

prints (the plan's [[table]] entries, as a write-up pastes them), with the command and the
campaign's date, between the page's marker lines

    <!-- seed NNN: begin -->
    <!-- seed NNN: end -->

unchanged: docs/seeds.md sets each seed's own tables beside them. A report that fails
leaves the page as it was. tests/unit/test_seeds_page.py checks the blocks' shape.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUESTBENCH = ROOT / ".venv/bin/guestbench"
PAGE = ROOT / "docs/seeds.md"
SEEDS = ("000", "001", "002", "004")


class SeedError(Exception):
    """Why the page could not be rewritten, with the fix."""


def run_plan(seed: str, folder: Path) -> float:
    """Runs the seed's plan into its store; the wall time in seconds."""
    store = folder / f"s{seed}.sqlite"
    store.unlink(missing_ok=True)
    started = time.monotonic()
    done = subprocess.run([str(GUESTBENCH), "run", str(ROOT / f"examples/seeds/{seed}.toml"),
                           "--db", f"sqlite:///{store}", "--logs", str(folder / f"logs{seed}"),
                           "--quiet"], check=False)
    if done.returncode != 0:
        raise SeedError(f"seed {seed}: guestbench run exited with {done.returncode} (its "
                        "messages are above); the page is unchanged")
    return time.monotonic() - started


def report(seed: str, folder: Path) -> tuple[str, str]:
    """(the command as shown, the Markdown it printed)."""
    store = folder / f"s{seed}.sqlite"
    if not store.exists():
        raise SeedError(f"{store}: no such store (fix: --run, or run the seed's plan into it)")
    argv = ["report", "--db", f"sqlite:///{store}", "--format", "markdown"]
    done = subprocess.run([str(GUESTBENCH), *argv], stdout=subprocess.PIPE, text=True,
                          check=False)
    if done.returncode != 0:
        raise SeedError(f"seed {seed}: guestbench report exited with {done.returncode}")
    shown = f".venv/bin/guestbench run examples/seeds/{seed}.toml\n" \
            ".venv/bin/guestbench report --format markdown"
    return shown, done.stdout


def campaign_day(seed: str, folder: Path) -> str:
    import sqlite3
    with sqlite3.connect(f"file:{folder / f's{seed}.sqlite'}?mode=ro", uri=True) as db:
        (created,) = db.execute("select created_at from campaign order by id desc").fetchone()
    return str(created)[:16]


def rewrite(page: str, seed: str, text: str) -> str:
    begin, end = f"<!-- seed {seed}: begin -->", f"<!-- seed {seed}: end -->"
    if begin not in page or end not in page:
        raise SeedError(f"{PAGE}: no markers {begin} ... {end} (fix: add them where the "
                        "seed's tables go)")
    head, rest = page.split(begin, 1)
    _old, tail = rest.split(end, 1)
    return f"{head}{begin}\n{text.rstrip()}\n{end}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-dir", type=Path, required=True)
    parser.add_argument("--run", action="store_true", help="run each seed's plan first")
    parser.add_argument("seeds", nargs="*", default=SEEDS)
    args = parser.parse_args()
    page = PAGE.read_text()
    try:
        for seed in args.seeds:
            took = f" (the run took {run_plan(seed, args.db_dir):.0f} s)" if args.run else ""
            command, markdown = report(seed, args.db_dir)
            indented = "\n".join(f"    {line}" for line in command.splitlines())
            text = (f"Printed by\n\n{indented}\n\nfor a campaign of {campaign_day(seed, args.db_dir)}"
                    f" UTC on the machine guestbench is developed on{took}, unedited:\n\n"
                    f"{markdown}")
            page = rewrite(page, seed, text)
    except SeedError as error:
        print(f"seed_tables: {error}", file=sys.stderr)
        return 2
    PAGE.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
