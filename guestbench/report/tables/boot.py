"""The boot tables: each environment's boot by phase, and its total from VMM start to powered off.

Every environment the plan booted in has a column (phases) or a row (totals), an unavailable
or failed one with its mark and footnote as in every other table. Values are whole ms, so a
row never mixes 11.19k with 2786; the total carries its cell's flags as the measured table
does.
"""

from __future__ import annotations

import statistics

from guestbench.analysis.boot import CLOCK_ZERO_PHASES, PHASES, UPTIME_PHASE, PhaseCell
from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.report import model
from guestbench.report.model import Footnotes, Table
from guestbench.workloads import CATALOGUE

TOTAL_METRIC = "boot_powered_off"
TOTAL_PHASE = next(name for name, end, start in PHASES if end == TOTAL_METRIC and start is None)
HIDDEN = "-"  # a phase this guest has not, or one that came out negative

PHASES_NOTE = ("Phases are cut on the host's clock where the console shows them ('guestbench-init: "
               "userspace' from /init, the agent's hello record, the VMM's exit) and where the "
               "guest's clock read zero: the hello's arrival minus the guest's own clock in that "
               "hello. The uptime row is the guest's own clock when the boot workload ran, after "
               "the agent's 300 ms clock check. VMM start is the guest's own VMM process "
               "starting; inside an L1 machine (inside = \"tcg\") or a Xen dom0 (xen-pv), the "
               "host asking that machine, already booted, to start the inner VMM (`xl create` "
               "for a domU): the machine's own boot comes before it and is in no row.")
NEGATIVE_NOTE = ("{envs}: '-' for a phase that came out negative, the guest's clock zero lying "
                 "before its VMM started (a clock that did not start with this boot, as a "
                 "restored snapshot's); the total is on the host's clock and sound.")
OVER_NOTE = ("{envs}: '-' in the row of the rest, where the phases' {statistic}s add to more "
             "than the total's ({sums}): a {statistic} of parts is not the part of a "
             "{statistic}, and no phase took negative time (each run's phases add to its "
             "total exactly); a style's statistic = \"mean\" gives figures that add.")
UNPAIRED_NOTE = ("{envs}: '-' in the clock-zero rows: runs recorded before the hello's own clock "
                 "was kept (sample boot_clock_zero), whose uptime, read after the clock check, "
                 "would put the zero about 300 ms late; run the boot workload again for them.")


def boot_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """Boot phases per environment: each phase's duration over the runs (the style's
    statistic, median by default), whole ms; the total with its cell's flags."""
    columns = _booted(report)
    if not columns:
        return None
    phases = report.boot
    envs = list(columns)
    statistic = model.STYLE.get().statistic
    unit = boot_unit()
    table = Table(f"Boot phases: {statistic} duration per phase, {unit} (host clock; guest "
                  "uptime on the guest's)", [f"phase ({unit})", *envs], [], note=PHASES_NOTE,
                  label_columns=1, name="boot")
    sources = [(env, label) for env, (label, _cell) in columns.items()]
    table.add(["runs (n)", *(str(cell.n_runs) for _label, cell in columns.values())], sources)
    negative: list[str] = []
    over = [(env, sums) for env in envs if (sums := _over_total(phases.get(env)))]
    for name in _phase_rows(phases, envs):
        if name == TOTAL_PHASE:
            rest = [_rest_text(phases.get(env)) for env in envs]
            if any(text != HIDDEN for text in rest):
                rest = [text if phases.get(env) else _phase_text(None, REST_PHASE, cell,
                                                                 footnotes)
                        for text, (env, (_label, cell)) in zip(rest, columns.items())]
                table.add([REST_PHASE, *rest], sources)
            table.add([name, *(_total_text(cell, footnotes) for _label, cell in columns.values())],
                      sources)
            continue
        row = [name]
        for env, (_label, cell) in columns.items():
            text = _phase_text(phases.get(env), name, cell, footnotes)
            if text == HIDDEN and name in phases.get(env, {}) and env not in negative:
                negative.append(env)
            row.append(text)
        table.add(row, sources)
    unpaired = [env for env in envs if UPTIME_PHASE in phases.get(env, {})
                and not any(name in phases[env] for name in CLOCK_ZERO_PHASES)]
    for envs_of, note in ((negative, NEGATIVE_NOTE), (unpaired, UNPAIRED_NOTE)):
        if envs_of:
            table.note += " " + note.format(envs=", ".join(envs_of))
    machines = [said for env in report.environments if env.name in columns
                for said in [_machine_boot(env.name, env.facts or {})] if said]
    if machines:
        table.note += " " + "; ".join(machines) + "."
    if over:
        table.note += " " + OVER_NOTE.format(
            envs=", ".join(env for env, _sums in over), statistic=statistic,
            sums="; ".join(f"{env} {sums}" for env, sums in over))
    return table


def _machine_boot(env: str, facts: dict) -> str:
    """The boot of the machine env's guests ran in, once for the campaign and in no row:
    an L1 machine's, or a Xen dom0's with its toolstack's start."""
    if facts.get("dom0_boot_s"):
        toolstack = facts.get("dom0_toolstack_s")
        return (f"{env}'s dom0 booted in {facts['dom0_boot_s']:.1f} s"
                + (f" and started Xen's toolstack in {toolstack:.1f} s" if toolstack else "")
                + ", once for the campaign")
    if facts.get("l1_boot_s"):
        return f"{env}'s L1 machine booted in {facts['l1_boot_s']:.1f} s, once for the campaign"
    return ""


def boot_totals_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """One row per environment: its boot from VMM start to powered off, ms, and its runs."""
    columns = _booted(report)
    if not columns:
        return None
    statistic = model.STYLE.get().statistic
    unit = boot_unit()
    table = Table(f"Boot time: VMM start to powered off, {statistic} of the runs, {unit}",
                  ["environment", f"boot ({unit})", "n"], [], label_columns=1,
                  name="boot-totals",
                  note="On the host's clock: from the VMM's process start to its exit after "
                       "the guest powered off.")
    for env, (label, cell) in columns.items():
        table.add([env, _total_text(cell, footnotes), str(cell.n_runs)], [(env, label), None])
    return table


def _booted(report: CampaignResults) -> dict[str, tuple[str, Cell]]:
    """{environment: (boot label, its total's cell)} for every environment a boot workload
    was planned in: it has a run of it, whatever its status (an unavailable environment
    records one run that says why)."""
    labels = [label for label in dict.fromkeys(label for label, _m, _u in report.results.rows)
              if getattr(CATALOGUE.get(report.workload_of.get(label, "")), "boot_phases", False)]
    booted: dict[str, tuple[str, Cell]] = {}
    for env in report.results.environments:
        for label in labels:
            cell = _total_cell(report, label, env)
            if cell is not None and cell.runs > 0:
                booted[env] = (label, cell)
                break
    return booted


def _total_cell(report: CampaignResults, label: str, env: str) -> Cell | None:
    """The label's boot_powered_off cell of env; without one (no run gave any sample), the
    label's first cell, which carries the same runs and problems."""
    cells = report.results.cells
    row = cells.get((label, TOTAL_METRIC)) or next(
        (row for (row_label, _metric), row in cells.items() if row_label == label), {})
    return row.get(env)


# the phases that follow one another from the VMM's start to its exit: their figures and
# the rest add up to the total
CHAIN = tuple(name for name, end, start in PHASES[:4])
REST_PHASE = "not in a phase above (the total's figure minus theirs)"


def _rest_text(env_phases: dict[str, PhaseCell] | None) -> str:
    """What the total's figure has beyond the sum of the chain's: medians (or means of
    phases some runs lack) do not add, so the rows above add to the total with it."""
    if not env_phases or not all(name in env_phases for name in CHAIN) \
            or TOTAL_PHASE not in env_phases:
        return HIDDEN
    rest = _phase_value(env_phases[TOTAL_PHASE]) - sum(_phase_value(env_phases[name])
                                                       for name in CHAIN)
    return HIDDEN if round(rest) < 0 else whole_ms(rest)  # said in the note (_over_total)


def _over_total(env_phases: dict[str, PhaseCell] | None) -> str:
    """"12345 against 12316 ms" where the chain's figures add to more than the total's (in
    the table's unit), else "": the rest would be negative, which no phase is."""
    if not env_phases or not all(name in env_phases for name in CHAIN) \
            or TOTAL_PHASE not in env_phases:
        return ""
    total = _phase_value(env_phases[TOTAL_PHASE])
    chain = sum(_phase_value(env_phases[name]) for name in CHAIN)
    if round(total - chain) >= 0:
        return ""
    return f"{whole_ms(chain)} against {whole_ms(total)} {boot_unit()}"


def _phase_rows(phases: dict[str, dict[str, PhaseCell]], envs: list[str]) -> list[str]:
    """The phases any of these guests has (the ready line only an own image's), the total
    always, and the clock-zero phases wherever a guest has an uptime but no clock zero."""
    had = {name for env in envs for name in phases.get(env, {})}
    if UPTIME_PHASE in had:
        had |= set(CLOCK_ZERO_PHASES)
    return [name for name, _end, _start in PHASES if name in had or name == TOTAL_PHASE]


def _phase_text(env_phases: dict[str, PhaseCell] | None, name: str, cell: Cell,
                footnotes: Footnotes) -> str:
    if not env_phases:  # no run gave boot samples: what happened to its runs
        if cell.values:  # results read from a digest, which keeps no boot samples
            return HIDDEN
        return model.problem_text(cell, footnotes) if cell.problems else model.empty_text(cell)
    phase = env_phases.get(name)
    if phase is None:
        return HIDDEN
    value = _phase_value(phase)
    return HIDDEN if value < 0 else whole_ms(value)


def _phase_value(phase: PhaseCell) -> float:
    """A phase's figure in the style's statistic: the median of its runs' durations, their
    mean, or the shortest (best)."""
    statistic = model.STYLE.get().statistic
    if statistic == "mean" and phase.durations_ms:
        return statistics.fmean(phase.durations_ms)
    if statistic == "best" and phase.durations_ms:
        return min(phase.durations_ms)
    return phase.median_ms


def _total_text(cell: Cell, footnotes: Footnotes) -> str:
    """The total's cell as the measured table marks it, its figure in whole ms."""
    if not cell.values:
        return model.problem_text(cell, footnotes) if cell.problems else model.empty_text(cell)
    text = whole_ms(model.central(cell))
    style = model.STYLE.get()
    if style.spread:  # the report's default; a plain table only when it asks
        text += _spread(cell, style.statistic)
    return model.decorate(text, cell, footnotes)


def _spread(cell: Cell, statistic: str) -> str:
    """' ±12%' (the median's interval) or ' (212)' (the stdev, ms, beside a mean); ''."""
    stats = cell.stats
    if stats is None:
        return ""
    if statistic == "mean":
        return f" ({whole_ms(stats.stdev)})" if stats.stdev is not None else ""
    if statistic == "median" and stats.half_width is not None:
        return f" ±{model.format_percent(stats.half_width)}"
    return ""


# ms in each time unit a report's style may give the boot tables
PER_MS = {"ns": 1e6, "us": 1e3, "ms": 1.0, "s": 1e-3}


def boot_unit() -> str:
    """The boot tables' unit: ms, or the one the report's style or the [[table]] entry gives."""
    return model.TIME_UNIT.get() or "ms"


def whole_ms(value: float) -> str:
    """A duration of `value` ms as the seeds write them: whole ms (11190, 2786), or in the
    style's unit (3.9 s, 1m53) with its decimals (whole ms, 2 decimals of a second)."""
    unit = boot_unit()
    if unit == model.CLOCK:
        return model.format_clock(value / 1000)
    decimals = model.STYLE.get().decimals
    if decimals is None:
        decimals = 2 if unit == "s" else 0
    text = f"{value * PER_MS[unit]:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # never "-0"
