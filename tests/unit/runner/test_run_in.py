"""The agent's run-in (--run-in-ms) reaches the kinds whose own processes run beside the agent
(a guest kernel, a VMM, runsc's sentry), once per agent process; a plain process gets none."""

from __future__ import annotations

from types import SimpleNamespace

from guestbench import environments
from guestbench.runner.campaign import run_in


def _column(kind: str):
    return SimpleNamespace(environment=environments.kind_class(kind))


def test_guests_and_containers_get_the_run_in_first():
    for kind in ("uml", "qemu", "command", "oci"):
        args = run_in(_column(kind), ["--min-time", "0.02", "getpid"])
        assert args[:2] == ("--run-in-ms", "100"), kind
        assert args[2:] == ("--min-time", "0.02", "getpid")


def test_a_plain_process_gets_its_arguments_unchanged():
    for kind in ("native", "namespace", "qemu-user"):
        assert run_in(_column(kind), ["getpid"]) == ("getpid",), kind


def test_every_kind_that_shares_rounds_pays_its_run_in_once_a_round():
    # the run-in costs once per agent process: a kind starting one per run would pay it on
    # every run, so only kinds that share a round have one
    for kind, cls in environments.KINDS.items():
        if cls.run_in_ms:
            assert cls.shares_rounds, kind
