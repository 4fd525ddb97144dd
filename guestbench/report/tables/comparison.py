"""`guestbench compare`: the comparison as tables (terminal, markdown) or a JSON document."""

from __future__ import annotations

import math
from typing import Any

from guestbench import __version__
from guestbench.analysis.compare import (FASTER, SAME, SLOWER, Comparison, CellComparison, Side,
                                         hosts_warning, is_memory)
from guestbench.analysis.cells import CONFIDENCE
from guestbench.analysis.results import RATIO_RULE
from guestbench.analysis.stats import PERMUTATIONS
from guestbench.store.records import FUNCTIONAL
from guestbench.report import functional
from guestbench.report.model import (Table, format_interval, format_percent, format_value,
                                     value_scale)

JSON_SCHEMA_VERSION = 1


def _name(side: Side) -> str:
    campaign = side.campaign
    return f"campaign {campaign.id} '{campaign.name}' ({campaign.created_at:%Y-%m-%d %H:%M} UTC)"


def tables(comparison: Comparison, every: bool = True) -> list[Table]:
    """The compared cells, then those not compared. every=False (the terminal's default)
    lists only the cells judged slower or faster: a campaign of thousands of cells is
    otherwise thousands of lines of "same"; the note counts them all."""
    a, b = comparison.a, comparison.b
    tails = comparison.gate != ("p50",)  # a percentile judged: each row says which
    table = Table(f"Compare: A = {_name(a)}, B = {_name(b)}",
                  ["environment", "workload", "metric", *(("A", "B") if tails else
                                                          ("A median", "B median")),
                   f"B x A [{CONFIDENCE:.0%} CI]", "p", "verdict", "notes"], [], label_columns=3,
                  name="compare", note=_note(comparison))
    shown = comparison.cells if every else [cell for cell in comparison.cells
                                            if cell.verdict != SAME]
    if len(shown) < len(comparison.cells):
        table.note += (f" Listed: the {len(shown)} cells judged slower or faster; every cell "
                       "with --all, or --format markdown|json.")
    for cell in shown:
        a_value, b_value = cell.value("a").value, cell.value("b").value
        unit, divisor = value_scale(cell.unit, [a_value, b_value])
        statistic = f" {cell.statistic}" if tails else ""
        table.add([cell.environment, cell.label, f"{cell.metric}{statistic} ({unit})",
                   f"{format_value(a_value / divisor)} n={cell.a.count_text}",
                   f"{format_value(b_value / divisor)} n={cell.b.count_text}", _ratio(cell),
                   "-" if cell.pvalue is None else f"{cell.pvalue:.3g}",
                   verdict_text(cell),
                   "; ".join(cell.notes) or "-"],
                  [(cell.environment, cell.label)] * 6)
    if not shown:  # the note counts them: no empty grid above it
        table.header, table.label_columns = ["verdicts"], 1
        table.add([f"none of the {len(comparison.cells)} cells was judged slower or faster"
                   if comparison.cells else "no cell was judged"
                   + (" (the broken ones are listed above)" if comparison.broken else "")])
    out = [broken_table(comparison), table] if comparison.broken else [table]
    if comparison.across_hosts:  # said before any verdict
        out[0].lead = hosts_warning(comparison.across_hosts)
    if comparison.noise is not None:
        out.append(noise_table(comparison))
    if _class_differences(comparison):
        out.append(host_class_table(comparison))
    if comparison.unpaired:
        unpaired = Table("Not compared", ["what", "why"], [], label_columns=1, name="unpaired")
        for what, why in comparison.unpaired:
            unpaired.add([what, why])
        out.append(unpaired)
    # a functional environment's name marked wherever a table names it, its legend once
    functional.mark_tables(out, functional.kept(comparison.functional), {}, legend_each=False)
    return out


def broken_table(comparison: Comparison) -> Table:
    """What ran in A and not in B: regressions whatever the ratios say, listed above them."""
    table = Table("Broken in B: ok in A, not in B, not always, or not the same",
                  ["environment", "workload", "in B", "why"],
                  [], label_columns=4, name="broken",
                  note=f"{len(comparison.broken)} workload(s) that gave ok runs in A gave none "
                       "in B, lost a larger share of their runs there (flaky), or ran with "
                       "another spec or parameters (* is every one). --fail-on-regression "
                       "counts each as a regression (unless --allow-missing; "
                       "--max-failure-rate allows flaky runs, --ignore-spec KEY pairs a "
                       "difference).")
    for broken in comparison.broken:
        table.add([broken.environment, broken.label, broken.outcome, broken.reason or "-"])
    return table


def noise_table(comparison: Comparison) -> Table:
    """Each side's host noise (host_noise.py), and what it explains."""
    table = Table("Host noise", ["side", "campaign", "load (1 min)", "steal", "typical CV"], [],
                  label_columns=2, name="host-noise", note=_noise_note(comparison))
    for name, side, noise in zip("AB", (comparison.a, comparison.b), comparison.noise or ()):
        table.add([name, str(side.campaign.id), *noise.cells()])
    return table


def _noise_note(comparison: Comparison) -> str:
    explanation = comparison.explanation
    if explanation is None:
        return ("The hosts' noise does not differ enough to explain a verdict (a side's load "
                "must reach 3/4 of its CPUs and exceed the other's by a quarter of them, at "
                "least 1; or its steal time exceed the other's by 1%).")
    marked = len(comparison.host_explained)
    return (f"{explanation.reason}: {marked} verdict(s) that go the way that noise pushes are "
            f"marked '(host)' and may be the host's, not the change's. Rerun both on a quiet "
            "host, or use 'guestbench ab', which interleaves A and B under the same noise. "
            "--fail-on-regression counts them unless --forgive-host-noise.")


def host_class_table(comparison: Comparison) -> Table:
    """The classes of A's host and B's (host.HostClass), fact by fact."""
    class_a, class_b = comparison.host_classes
    if comparison.across_hosts:
        note = ("Their CPUs or kernels differ: a verdict may be the host's, not the change's. "
                "--fail-on-regression exits 2 unless --across-hosts.")
    else:
        note = (f"The hosts differ ({'; '.join(_class_differences(comparison))}) but share "
                "their CPU and kernel: compared as hosts of one class (only another CPU model or "
                "kernel sets hosts apart; a fact a side did not record is no difference).")
    table = Table("Host classes", ["fact", "A", "B"], [], label_columns=1, name="host-classes",
                  note=note)
    for (name, shown_a), (_name, shown_b) in zip(class_a.shown(), class_b.shown()):
        table.add([name, shown_a, shown_b])
    return table


def _class_differences(comparison: Comparison) -> list[str]:
    return comparison.host_classes[0].differences(comparison.host_classes[1]) \
        if comparison.host_classes else []


def _ratio(cell: CellComparison) -> str:
    """B against A under the one rule (above 1 is worse), and the change of B's number."""
    if math.isnan(cell.ratio.value):
        return "-"
    return f"{format_interval(cell.worse_ratio)} ({cell.change * 100:+.1f}%)"


def _note(comparison: Comparison) -> str:
    hosts = ""
    facts_a, facts_b = comparison.a.campaign.host_facts, comparison.b.campaign.host_facts
    # a pool host's name counts too: two pool hosts may share a hostname (or a machine)
    facts_a = {**facts_a, "pool host": comparison.a.campaign.pool_host}
    facts_b = {**facts_b, "pool host": comparison.b.campaign.pool_host}
    # the class's facts (CPU, kernel, ...) are the host classes' table's
    differing = [f"{key} ({facts_a.get(key)} / {facts_b.get(key)})"
                 for key in ("pool host", "hostname", "logical_cpus")
                 if facts_a.get(key) != facts_b.get(key)]
    if _class_differences(comparison):
        differing.append("class (listed below)")
    if differing:
        hosts = " The hosts differ in " + ", ".join(differing) + "."
    broken = (f"{len(comparison.broken)} broken in B (listed above); " if comparison.broken
              else "")
    return (broken + f"{len(comparison.cells)} cells compared: {comparison.count('slower')} slower, "
            f"{comparison.count('faster')} faster, {comparison.count('same')} same; "
            + (f"{len(comparison.unpaired)} not compared (listed below)." if comparison.unpaired
               else "every cell paired.") + hosts +
            f" A verdict needs both a permutation-test p < {comparison.alpha:g} (difference of "
            f"mean log values, up to {PERMUTATIONS} permutations, exact when fewer splits exist) "
            "and a "
            f"change beyond {format_percent(comparison.threshold)} (the ratio's whole interval, "
            "not only its point estimate); slower means a larger time or a smaller throughput "
            "in B. B x A: " + RATIO_RULE.replace("baseline", "A") + "; the % in brackets is the "
            "change of B's number itself." + _gate_note(comparison))


def _gate_note(comparison: Comparison) -> str:
    """What --gate judged beyond the medians, and how."""
    higher = [name for name in comparison.gate if name != "p50"]
    if not higher:
        return ""
    counts = ", ".join(f"{name} {comparison.judged(name)}" for name in comparison.gate)
    return (f" Judged (--gate): {counts} cells. A percentile above p50 is judged by a "
            "bootstrap of its ratio instead (runs, then values within runs, resampled; p: "
            "twice the share of replicates beyond 1), with the same threshold; A and B show "
            "that percentile, and a pair with fewer values than it needs is not compared "
            "(listed below).")


def document(comparison: Comparison) -> dict[str, Any]:
    return {
        "schema": "guestbench-compare",
        "schema_version": JSON_SCHEMA_VERSION,
        "generated_by": f"guestbench {__version__}",
        "a": _campaign(comparison.a), "b": _campaign(comparison.b),
        "threshold": comparison.threshold, "alpha": comparison.alpha,
        "gate": list(comparison.gate),
        "bootstrap_resamples": comparison.resamples,
        "summary": {verdict: comparison.count(verdict) for verdict in ("slower", "faster", "same")},
        "broken": [{"environment": broken.environment, "workload": broken.label,
                    "outcome": broken.outcome, "reason": broken.reason}
                   for broken in comparison.broken],
        "host_classes": None if comparison.host_classes is None else {
            "a": comparison.host_classes[0].document(),
            "b": comparison.host_classes[1].document(),
            "differences": _class_differences(comparison),
            # another CPU or kernel: a difference may be the host's (None: one class)
            "apart": comparison.across_hosts or None},
        "host_noise": None if comparison.noise is None else {
            "a": comparison.noise[0].document(), "b": comparison.noise[1].document(),
            "explained_by": None if comparison.explanation is None else {
                "side": comparison.explanation.side, "reason": comparison.explanation.reason}},
        "cells": [_cell(cell) for cell in comparison.cells],
        "unpaired": [{"what": what, "why": why} for what, why in comparison.unpaired],
        # environment -> why its figures are functional only (report's JSON says it so too)
        "functional": {env: told[FUNCTIONAL] for env, told in comparison.functional.items()},
    }


def _campaign(side: Side) -> dict[str, Any]:
    campaign = side.campaign
    return {"id": campaign.id, "name": campaign.name,
            "created_at": campaign.created_at.isoformat(), "host": campaign.host_facts}


def _cell(cell: CellComparison) -> dict[str, Any]:
    def described(stats, judged) -> dict[str, Any]:
        # value: the statistic judged (the median for p50), with its interval
        return {"n": stats.n, "median": stats.median, "ci": [stats.ci_low, stats.ci_high],
                "cv": stats.cv, "flags": stats.flags,
                "value": judged.value, "value_ci": [judged.low, judged.high]}

    ratio = cell.worse_ratio
    return {"environment": cell.environment, "workload": cell.label, "metric": cell.metric,
            "unit": cell.unit, "statistic": cell.statistic,
            "a": described(cell.a, cell.value("a")), "b": described(cell.b, cell.value("b")),
            "ratio": None if math.isnan(ratio.value) else ratio.value,
            "ratio_ci": [ratio.low, ratio.high], "ratio_rule": RATIO_RULE.replace("baseline", "A"),
            "change": None if math.isnan(cell.ratio.value) else cell.change, "pvalue": cell.pvalue, "verdict": cell.verdict,
            "host_explained": cell.host_explained or None, "notes": cell.notes}


def verdict_text(cell: CellComparison) -> str:
    """SLOWER, faster, same; for memory (compare.is_memory) MORE MEMORY, less memory."""
    if cell.a_cell is not None and is_memory(cell.a_cell):
        return {SLOWER: "MORE MEMORY", FASTER: "less memory"}.get(cell.verdict, cell.verdict)
    text = cell.verdict.upper() if cell.verdict == SLOWER else cell.verdict
    return f"{text} (host)" if cell.host_explained else text
