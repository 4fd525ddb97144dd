"""The line of a program's message that a reason quotes: the one that says what went wrong,
not the last line of the usage text that follows it."""

from __future__ import annotations

import pytest

from guestbench.process import proc

RUNSC_BOGUS_FLAG = """flag provided but not defined: -bogus-flag
Usage: runsc <flags> <subcommand> <subcommand args>

Subcommands:
\tcheckpoint       checkpoint current state of container (experimental)
\tcreate           create a secure container

Use "runsc flags" for a list of top-level flags
"""
RUNC_BOGUS_FLAG = """NAME:
   runc - Open Container Initiative runtime
   --help, -h          show help
   --version, -v       print the version
time="2026-11-29T12:19:12Z" level=error msg="flag provided but not defined: -bogus-flag"
"""


@pytest.mark.parametrize("text, said", [
    (RUNSC_BOGUS_FLAG, "flag provided but not defined: -bogus-flag"),
    (RUNC_BOGUS_FLAG, 'time="2026-11-29T12:19:12Z" level=error msg="flag provided but not '
                      'defined: -bogus-flag"'),
    ("crun: cgroups in hybrid mode not supported, drop all controllers from cgroupv2\n",
     "crun: cgroups in hybrid mode not supported, drop all controllers from cgroupv2"),
    ("starting\nsomething odd happened\n", "something odd happened"),  # no word: the last
    ("", "no message"),
    ("\n  \n", "no message"),
])
def test_the_decisive_line_is_the_one_that_says_what_went_wrong(text, said):
    assert proc.decisive(text) == said


def test_a_reason_keeps_at_most_its_limit():
    assert proc.decisive("error: " + "x" * 500, limit=40) == "error: " + "x" * 33
