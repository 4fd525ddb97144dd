"""Plans: the TOML file or CLI flags, validated into environments x workloads x repetitions.

Import the module you need; the folder holds: schema.py (what a plan is), build.py (a plan from a file, a stored
plan or the flags), expand.py (sweeps, labels and the checks across them), errors.py (what
is wrong, with the fix and the nearest name), ab.py (A/B plans), tables.py (a plan's
[[table]] entries), catalogue.py (every table's name), labels.py (the name rule). Only schema.py, build.py,
expand.py and ab.py load pydantic and the kinds' options (0.2 s), which report, compare
and history never need, though they use errors.py, catalogue.py and labels.py.
"""
