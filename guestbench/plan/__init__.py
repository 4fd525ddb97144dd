"""Plans: the TOML file or CLI flags, validated into environments x workloads x repetitions.

The face of the folder: schema.py (what a plan is), build.py (a plan from a file, a stored
plan or the flags), expand.py (sweeps, labels and the checks across them), errors.py (what
is wrong, with the fix and the nearest name), ab.py (A/B plans), tables.py (a plan's
[[table]] entries).
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module of this folder that defines it
_WHERE = {"ab_plan": "ab", "assignments": "ab",
          "QUICK_AUTO": "build", "from_flags": "build", "load": "build", "stored": "build",
          "PlanError": "errors",
          "AUTO": "schema", "AutoSection": "schema", "Overrides": "schema", "Plan": "schema",
          "WorkloadCase": "schema", "repeat_flag": "schema"}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """The face's names, each loaded from its module on first use: a plan's schema loads
    pydantic and every kind's options (0.2 s), which report, compare and history never
    need, though they use errors.py's did_you_mean and tables.py."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
