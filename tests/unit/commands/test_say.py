"""The command's own lines on stderr fit a terminal; in a log or a pipe they stay whole."""

from __future__ import annotations

import os

from guestbench.commands import arguments

LONG = ("not in the default campaign: qemu-kvm-nested (boots an L1 machine under TCG first, "
        "about a minute); add it with --env native,qemu-kvm-nested, and see "
        "/tmp/a/rather/long/path/that/is/not/cut/guestbench-logs/20261130T120819-41bfae")


def test_a_long_line_is_wrapped_to_the_terminal_indented_and_no_path_cut():
    wrapped = arguments.fitted(LONG, 80).split("\n")
    assert len(wrapped) > 1 and all(line.startswith("  ") for line in wrapped[1:])
    assert all(len(line) <= 80 for line in wrapped if "/" not in line)
    assert " ".join(line.strip() for line in wrapped) == LONG  # nothing lost or cut


def test_a_wide_terminal_still_gets_the_tables_width_at_most():
    assert max(len(line) for line in arguments.fitted(LONG * 2, 400).split("\n")) <= 116


def test_a_short_line_is_left_as_it_is():
    assert arguments.fitted("campaign 1 stored in sqlite:///x", 80) == \
        "campaign 1 stored in sqlite:///x"


def test_on_a_terminal_say_wraps_and_elsewhere_it_does_not(monkeypatch, capsys):
    monkeypatch.setattr(arguments, "_on_a_terminal", lambda: True)
    monkeypatch.setattr(arguments.shutil, "get_terminal_size", lambda: os.terminal_size((80, 24)))
    arguments.say(LONG)
    assert capsys.readouterr().err == arguments.fitted(LONG, 80) + "\n"
    monkeypatch.setattr(arguments, "_on_a_terminal", lambda: False)
    arguments.say(LONG)
    assert capsys.readouterr().err == LONG + "\n"
