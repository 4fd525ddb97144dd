#!/usr/bin/env python3
"""Rewrites the example summary of the README and docs/reading-results.md from a real run.

    .venv/bin/python benchmarks/readme_example.py [--env native,runsc,qemu-user]
        [--workload getpid,fork_exit,stream_triad] [PAGE.md ...]

It runs `guestbench run --env ENV --workload WORKLOAD` with this checkout's installed CLI
(.venv/bin/guestbench) in a new temporary folder (its store and logs go there and are
removed), takes what the command printed on standard output (the summary; the progress and
the host's warnings go to standard error, shown as they come), and writes it, with the
command and the date, between the two marker lines of each page (README.md's "What you
get" and docs/reading-results.md's "A real table", unless pages are named)

    <!-- example:begin -->
    <!-- example:end -->

A campaign that does not finish (exit code other than 0) leaves the pages as they were.
tests/unit/test_readme.py fails when a block no longer has the shape of what the
program prints: run this script again then. It takes about a minute on a 2-core host.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUESTBENCH = ROOT / ".venv/bin/guestbench"
PAGES = (ROOT / "README.md", ROOT / "docs/reading-results.md")
BEGIN = "<!-- example:begin -->"
END = "<!-- example:end -->"
# what the README shows as the command: what a newcomer types in the clone
SHOWN_PROGRAM = ".venv/bin/guestbench"
MAX_LINE_BYTES = 120  # as `awk '{ print length }'` counts them with mawk: bytes


class ExampleError(Exception):
    """Why the pages could not be rewritten, with the fix."""


def run_campaign(envs: str, workloads: str) -> str:
    """The standard output of a real `guestbench run`, in a folder of its own."""
    if not GUESTBENCH.exists():
        raise ExampleError(f"{GUESTBENCH} is missing (fix: bash install.sh)")
    with tempfile.TemporaryDirectory(prefix="guestbench-readme-") as folder:
        done = subprocess.run([str(GUESTBENCH), "run", "--env", envs, "--workload", workloads],
                              cwd=folder, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise ExampleError(f"guestbench run exited with {done.returncode}; the pages are "
                           "unchanged (its messages are above)")
    return done.stdout


def block(envs: str, workloads: str, output: str, day: datetime.date) -> str:
    """A page's lines between the markers: where the example comes from, then the
    command and its output as a terminal shows them (trailing spaces dropped)."""
    lines = [line.rstrip() for line in output.rstrip("\n").splitlines()]
    command = f"$ {SHOWN_PROGRAM} run --env {envs} --workload {workloads}"
    too_wide = [line for line in [command, *lines] if len(line.encode()) > MAX_LINE_BYTES]
    if too_wide:
        raise ExampleError(f"{len(too_wide)} line(s) of the output are wider than "
                           f"{MAX_LINE_BYTES} bytes, e.g. {too_wide[0]!r}; the pages are "
                           "unchanged")
    return "\n".join([
        f"Printed by a real run on {day.isoformat()} "
        "(`.venv/bin/python benchmarks/readme_example.py` writes this block again):",
        "",
        "```",
        command,
        *lines,
        "```",
    ])


def rewritten(page: Path, new_block: str) -> str:
    """The page's text with new_block between its markers."""
    text = page.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ExampleError(f"{page} needs one line {BEGIN} and, after it, one line {END}")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{new_block}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="native,runsc,qemu-user")
    parser.add_argument("--workload", default="getpid,fork_exit,stream_triad")
    parser.add_argument("pages", nargs="*", type=Path, default=list(PAGES))
    args = parser.parse_args()
    try:
        for page in args.pages:  # every page has its markers before the campaign runs
            rewritten(page, "")
        output = run_campaign(args.env, args.workload)
        new_block = block(args.env, args.workload, output,
                          datetime.datetime.now(datetime.UTC).date())
        for page in args.pages:
            page.write_text(rewritten(page, new_block))
    except (ExampleError, OSError) as error:
        print(f"readme_example: {error}", file=sys.stderr)
        return 2
    print(f"readme_example: {', '.join(map(str, args.pages))} rewritten between {BEGIN} "
          f"and {END}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
