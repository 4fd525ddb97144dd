"""Where the gbagent binary is, and the one error that says how to build it."""

from __future__ import annotations

import os
from pathlib import Path

AGENT_ENV_VAR = "GUESTBENCH_AGENT"
SOURCE_DIR = Path(__file__).resolve().parent.parent / "agent"


class AgentMissing(Exception):
    """gbagent has not been built (or GUESTBENCH_AGENT points nowhere)."""


def path() -> Path:
    """The agent binary: $GUESTBENCH_AGENT, else agent/gbagent of this source tree."""
    configured = os.environ.get(AGENT_ENV_VAR)
    candidate = Path(configured) if configured else SOURCE_DIR / "gbagent"
    if not candidate.is_file() or not os.access(candidate, os.X_OK):
        where = f"${AGENT_ENV_VAR}={configured}" if configured else str(candidate)
        raise AgentMissing(
            f"the agent binary is missing at {where}: build it with 'make -C {SOURCE_DIR}' "
            f"or point {AGENT_ENV_VAR} at a built gbagent")
    return candidate
