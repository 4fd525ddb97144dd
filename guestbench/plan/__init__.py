"""Plans: the TOML file or CLI flags, validated into environments x workloads x repetitions.

The face of the folder: schema.py (what a plan is), build.py (a plan from a file, a stored
plan or the flags), expand.py (sweeps, labels and the checks across them), errors.py (what
is wrong, with the fix and the nearest name), ab.py (A/B plans), tables.py (a plan's
[[table]] entries).
"""

from guestbench.plan.ab import ab_plan, assignments
from guestbench.plan.build import QUICK_AUTO, from_flags, load, stored
from guestbench.plan.errors import PlanError
from guestbench.plan.schema import AUTO, AutoSection, Overrides, Plan, WorkloadCase, repeat_flag

__all__ = ["AUTO", "QUICK_AUTO", "AutoSection", "Overrides", "Plan", "PlanError", "WorkloadCase",
           "ab_plan", "assignments", "from_flags", "load", "repeat_flag", "stored"]
