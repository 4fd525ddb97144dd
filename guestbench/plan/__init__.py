"""Plans: the TOML file or CLI flags, validated into environments x workloads x repetitions.

The face of the folder: schema.py (what a plan is), build.py (a plan from a file, a stored
plan or the flags), expand.py (sweeps, labels and the checks across them), errors.py (what
is wrong, with the fix and the nearest name), ab.py (A/B plans), tables.py (a plan's
[[table]] entries), catalogue.py (every table's name), labels.py (the name rule).
"""

from __future__ import annotations

from typing import Any

__all__ = ["AUTO", "QUICK_AUTO", "AutoSection", "Overrides", "Plan", "PlanError", "WorkloadCase",
           "ab_plan", "assignments", "from_flags", "load", "repeat_flag", "stored"]


def __getattr__(name: str) -> Any:
    """The face's names, each from its module on first use: a plan's schema loads pydantic
    and every kind's options (0.2 s), which report, compare and history never need, though
    they use errors.py's did_you_mean, catalogue.py and labels.py."""
    # deferred, each: the reason above
    if name in ("ab_plan", "assignments"):
        from guestbench.plan import ab as module
    elif name in ("QUICK_AUTO", "from_flags", "load", "stored"):
        from guestbench.plan import build as module
    elif name == "PlanError":
        from guestbench.plan import errors as module
    elif name in ("AUTO", "AutoSection", "Overrides", "Plan", "WorkloadCase", "repeat_flag"):
        from guestbench.plan import schema as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
