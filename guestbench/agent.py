"""Where the gbagent binary is, and the one error that says how to build it."""

from __future__ import annotations

import os
from pathlib import Path

from guestbench import programs
from guestbench.process import proc
from guestbench.protocol import parse_line

AGENT_ENV_VAR = "GUESTBENCH_AGENT"


class AgentMissing(Exception):
    """gbagent has not been built (or GUESTBENCH_AGENT points nowhere)."""


def path() -> Path:
    """The agent binary: $GUESTBENCH_AGENT, else a checkout's agent/gbagent, else the one in
    the installed package (programs.py)."""
    configured = os.environ.get(AGENT_ENV_VAR)
    if configured:
        candidate, where = Path(configured), f"${AGENT_ENV_VAR}={configured}"
        hint = f"point {AGENT_ENV_VAR} at a built gbagent, or unset it"
    else:
        candidate = programs.find("gbagent") or programs.expected("gbagent")
        where, hint = str(candidate), f"{programs.build_hint()}, or point {AGENT_ENV_VAR} at one"
    if not candidate.is_file():
        raise AgentMissing(f"the agent binary is missing at {where}: {hint}")
    if not os.access(candidate, os.X_OK):
        raise AgentMissing(
            f"the agent binary at {where} is not executable (fix: chmod +x {candidate}, or "
            f"{hint})")
    return candidate


def host_tsc_khz() -> int | None:
    """The host's TSC rate, measured by the agent: TSC ticks per op over ns per op."""
    try:
        output = proc.run([str(path()), "--min-time", "0.02", "clock_gettime"],
                          timeout_s=10).stdout
    except (AgentMissing, proc.ProcessError, proc.DeadlineExceeded):
        return None
    values = {}
    for text in output.splitlines():
        record = parse_line(text.encode())
        if record is not None and record.type == "sample":
            values[record.body["metric"]] = record.body["value"]
    if not values.get("time_per_op") or not values.get("tsc_per_op"):
        return None
    return round(values["tsc_per_op"] / values["time_per_op"] * 1e6)
