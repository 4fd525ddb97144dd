"""A/B comparison of two campaigns: pair like cells, then ratio, interval, p-value and a verdict."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guestbench import host
from guestbench.store import records
from guestbench.analysis import host_noise, stats, tail_compare
from guestbench.analysis.summary import analyse, summarise
from guestbench.analysis.cells import (CellStats, Interval, Cell, Results,
                                       SUCCESS_RATES, higher_is_better, is_memory)

THRESHOLD = 0.05  # a change smaller than this is noise whatever its p-value
MAX_FAILURE_RATE = 0.0  # the share of runs B may lose beyond A's before its cell is flaky
DRIFT = "spec differs"  # a Broken outcome: B's environment or workload is not A's
ANY = "*"  # a Broken's environment or workload: every one
ALPHA = 0.01  # and one with a p-value above this is not shown to be real

FASTER, SLOWER, SAME = "faster", "slower", "same"
MEMORY_THRESHOLD_MIB = 1.0  # a memory cell's change counts beyond this (cells.is_memory)
# what compare reads of each run (store.runs(only=...))
RUN_COLUMNS = ("environment_id", "workload", "label", "params", "status", "reason", "flags")


@dataclass
class Side:
    """One campaign as compare needs it: its environments' specs, its runs' parameters, its
    cells with their statistics, and the resamples those were computed with."""

    campaign: dict[str, Any]
    specs: dict[str, dict[str, Any]]  # environment name -> spec
    params: dict[str, dict[str, Any]]  # label -> the workload's resolved parameters
    results: Results
    resamples: int
    # environment name -> why it could not run there (its probe's or preparation's answer)
    unavailable: dict[str, str] = field(default_factory=dict)
    # environment name -> its functional sentence and VMM version (records.functional_facts)
    functional: dict[str, dict[str, str]] = field(default_factory=dict)


def side(campaign: dict[str, Any], environments: list[dict[str, Any]],
         runs: list[dict[str, Any]], samples: Iterable[dict[str, Any]],
         too_fast_rules: Mapping[str, str] | None = None) -> Side:
    """One side, read and described on its own (so that the two can be made at once, in
    two processes). Its cells get the resamples that the work budget allows for two
    campaigns of its size: the budget holds for both sides together, and two sides of
    one size get the same resamples."""
    params: dict[str, dict[str, Any]] = {}
    for run in runs:
        params.setdefault(run.label, run.params or {})
    results = summarise([env.name for env in environments], runs, samples,
                        too_fast_rules=too_fast_rules)
    measured = sum(cell.n for row in results.cells.values() for cell in row.values())
    resamples = analyse(results, stats.resamples_for(2 * measured))
    return Side(campaign, {env.name: env.spec or {} for env in environments}, params,
                results, resamples, _unavailable(environments),
                records.functional_facts(environments))


def _unavailable(environments) -> dict[str, str]:
    return {env.name: env.probe for env in environments if not env.available}


def side_of(results) -> Side | None:
    """One side from a campaign's results read from its digest (analysis/digest.py), where
    they describe every cell with the resamples compare's own reading would use; else None."""
    if not results.every_cell:
        return None
    measured = sum(cell.n for row in results.results.cells.values() for cell in row.values()
                   if cell.kind != "verdict")
    if stats.resamples_for(2 * measured) != results.resamples:
        return None  # a campaign this large gets fewer resamples when compared
    params: dict[str, dict[str, Any]] = {}
    for run in results.runs:
        params.setdefault(run.label, run.params or {})
    return Side(results.campaign, {env.name: env.spec or {}
                                   for env in results.environments},
                params, results.results, results.resamples,
                _unavailable(results.environments),
                records.functional_facts(results.environments))


@dataclass
class CellComparison:
    environment: str
    label: str
    metric: str
    unit: str
    a: CellStats
    b: CellStats
    ratio: Interval  # median(B) / median(A)
    pvalue: float | None
    verdict: str
    notes: list[str] = field(default_factory=list)
    a_cell: Cell | None = None
    b_cell: Cell | None = None
    host_explained: str = ""  # why the hosts' noise may explain the verdict (host_noise.py)
    statistic: str = "p50"  # what was judged: the median, or a percentile (--gate p99)
    # a percentile's value on each side with its interval (None for p50: the medians)
    a_value: Interval | None = None
    b_value: Interval | None = None

    def value(self, side: str) -> Interval:
        """The figure judged on side "a" or "b", with its interval."""
        shown = self.a_value if side == "a" else self.b_value
        if shown is not None:
            return shown
        described = self.a if side == "a" else self.b
        return Interval(described.median, described.ci_low, described.ci_high)

    @property
    def change(self) -> float:
        """Relative change of the number itself (+0.10 = B's median is 10% larger)."""
        return self.ratio.value - 1

    @property
    def higher_is_better(self) -> bool:
        return higher_is_better(self.unit, self.a_cell.declared_higher if self.a_cell else None)

    @property
    def worse_ratio(self) -> Interval:
        """B against A under the one ratio rule, above 1 is worse: median(B) / median(A)
        for a cost, median(A) / median(B) for a rate (analysis/results.py)."""
        if not self.higher_is_better or math.isnan(self.ratio.value):
            return self.ratio
        return Interval(1 / self.ratio.value if self.ratio.value else math.inf,
                        None if not self.ratio.high else 1 / self.ratio.high,
                        None if not self.ratio.low else 1 / self.ratio.low)


@dataclass(frozen=True)
class Broken:
    """A workload that gave ok runs in A and none in B, in an environment of both (or one
    that B lacks), or fewer in B than in A (flaky): a regression whatever the ratios say.
    outcome: what B's runs were (timeout, failed, crashed, ...), unavailable, missing (not
    in B's campaign), or flaky (some ok, a larger share not ok than in A)."""

    environment: str
    label: str
    outcome: str
    reason: str


@dataclass
class Comparison:
    a: Side
    b: Side
    cells: list[CellComparison]
    unpaired: list[tuple[str, str]]  # (what, why)
    threshold: float
    alpha: float
    resamples: int
    broken: list[Broken] = field(default_factory=list)
    noise: tuple[host_noise.HostNoise, host_noise.HostNoise] | None = None  # A's, B's
    explanation: host_noise.Explanation | None = None  # one host noisier than the other
    host_classes: tuple[host.HostClass, host.HostClass] | None = None  # A's, B's
    gate: tuple[str, ...] = tail_compare.DEFAULT_GATE  # the statistics judged (--gate)
    paired: int = 0  # pairs of cells, whatever the gate judged of them

    @property
    def functional(self) -> dict[str, dict[str, str]]:
        """The functional environments of A and B (B's words where both have them)."""
        return {**self.a.functional, **self.b.functional}

    @property
    def across_hosts(self) -> str:
        """What sets A's host and B's apart as classes, or "" (hosts_apart)."""
        return _apart(*self.host_classes) if self.host_classes else ""

    def count(self, verdict: str) -> int:
        return sum(cell.verdict == verdict for cell in self.cells)

    @property
    def regressions(self) -> list[CellComparison]:
        return [cell for cell in self.cells if cell.verdict == SLOWER]

    @property
    def host_explained(self) -> list[CellComparison]:
        return [cell for cell in self.cells if cell.host_explained]

    def judged(self, statistic: str) -> int:
        """How many cells were judged on that statistic (p50, p99, ...)."""
        return sum(cell.statistic == statistic for cell in self.cells)


def compare(a: Side, b: Side, threshold: float = THRESHOLD, alpha: float = ALPHA,
            ignore_spec: tuple[str, ...] = (), correction: str = "none",
            memory_threshold_mib: float = MEMORY_THRESHOLD_MIB,
            max_failure_rate: float = MAX_FAILURE_RATE,
            gate: tuple[str, ...] = tail_compare.DEFAULT_GATE) -> Comparison:
    """Pair cells whose environment spec and workload parameters match; judge each pair.

    correction "holm": the p-values are Holm-adjusted over every judgement, so that the
    chance of any false verdict among them stays below alpha (docs/statistics.md).
    max_failure_rate: the share of runs not ok that B may have beyond A's before its cell is
    flaky. gate: the statistics judged, p50 (the medians) and higher percentiles
    (tail_compare.py); a percentile a pair has too few values for is listed unpaired.
    """
    pairs, unpaired = pair_cells(a, b, ignore_spec)
    broken = broken_cells(a, b, ignore_spec, max_failure_rate)
    # each broken workload is told once, in its own list
    gone = {f"environment {item.environment}" for item in broken}
    labels = {item.label for item in broken}
    unpaired = [(what, why) for what, why in unpaired
                if why != "no successful run in B"
                and not why.startswith(("spec differs in ", "parameters differ in "))
                and not (why == "only in A" and what in gone)
                and not (why == "measured only in A" and what.rsplit(" ", 1)[0] in labels)]
    # a flaky cell's survivors would say `same` of a workload that lost runs: not judged
    flaky = {(item.environment, item.label) for item in broken if item.outcome == "flaky"}
    pairs = [(x, y) for x, y in pairs if (x.environment, x.label) not in flaky]
    medians = pairs if "p50" in gate else []
    tails = _tail_judgements(pairs, gate, unpaired, correction, alpha)
    a_stats = [x.stats for x, _ in medians]
    b_stats = [y.stats for _, y in medians]
    permutations = None
    if correction == "holm":  # the smallest p-value must be able to pass alpha / judgements
        permutations = max(stats.PERMUTATIONS,
                           math.ceil(4 * max(len(medians) + len(tails), 1) / alpha))
    pvalues = stats.permutation_pvalues([(run_units(x), run_units(y)) for x, y in medians],
                                        permutations)
    pvalues += [found.pvalue for _x, _y, _name, found in tails]
    if correction == "holm":
        pvalues = holm(pvalues)
    ratios = [stats.ratio_interval(sa, sb) for sa, sb in zip(a_stats, b_stats)]
    cells = []
    for (x, y), sa, sb, ratio, pvalue in zip(medians, a_stats, b_stats, ratios, pvalues):
        ratio = ratio or Interval(float("nan"))
        if is_memory(x):
            verdict = judge_memory(ratio, pvalue, sa.median, memory_threshold_mib, alpha)
            notes = _memory_note(ratio, sa.median, sb.median, memory_threshold_mib) \
                + _notes(x, y, sa, sb, alpha)
        else:
            verdict = judge(ratio, pvalue, x.unit, threshold, alpha, x.declared_higher)
            notes = _threshold_note(ratio, pvalue, verdict, threshold, alpha) \
                + _notes(x, y, sa, sb, alpha)
        cells.append(CellComparison(x.environment, x.label, x.metric, x.unit, sa, sb, ratio,
                                    pvalue, verdict, notes, x, y))
    for (x, y, name, found), pvalue in zip(tails, pvalues[len(medians):]):
        verdict = judge(found.ratio, pvalue, x.unit, threshold, alpha, x.declared_higher)
        notes = _threshold_note(found.ratio, pvalue, verdict, threshold, alpha) \
            + _notes(x, y, x.stats, y.stats, alpha, permutation=False)
        cells.append(CellComparison(
            x.environment, x.label, x.metric, x.unit, x.stats, y.stats, found.ratio, pvalue,
            verdict, notes, x, y, statistic=name,
            a_value=Interval(found.a.value, found.a.low, found.a.high),
            b_value=Interval(found.b.value, found.b.low, found.b.high)))
    result = Comparison(a, b, cells, unpaired, threshold, alpha,
                        min(a.resamples, b.resamples), broken, host_classes=host_classes(a, b),
                        gate=gate, paired=len(pairs))
    if a.campaign.id != b.campaign.id or a.campaign.host_checks != b.campaign.host_checks:
        mark_host_noise(result)  # the two sides of one campaign (ab) share one host
    return result


def _tail_judgements(pairs: list[tuple[Cell, Cell]], gate: tuple[str, ...],
                     unpaired: list[tuple[str, str]], correction: str, alpha: float
                     ) -> list[tuple[Cell, Cell, str, tail_compare.TailComparison]]:
    """Each percentile of the gate above p50, compared in every pair of performance cells
    with the values it needs; one unpaired line per percentile for the pairs without."""
    found = []
    for name in gate:
        q = tail_compare.GATES[name]
        if q == 0.5:
            continue
        timed = [(x, y) for x, y in pairs if x.is_performance and not is_memory(x)]
        short = [(x, y) for x, y in timed if not tail_compare.comparable(x, y, q)]
        found += [(x, y, name) for x, y in timed if tail_compare.comparable(x, y, q)]
        if short:
            most = max(min(len(x.values), len(y.values)) for x, y in short)
            unpaired.append((f"{name} of {len(short)} cell(s)",
                             f"a {name} needs {tail_compare.least_values(q)} values on each "
                             f"side; the most any of them has is {most} (fix: --repeat, or "
                             "more values per run)"))
    resamples = tail_compare.RESAMPLES
    if correction == "holm":  # as the permutations: alpha / judgements must be reachable
        resamples = max(resamples, math.ceil(4 * max(len(pairs) + len(found), 1) / alpha))
    return [(x, y, name, tail_compare.compare_tail(x, y, tail_compare.GATES[name], resamples))
            for x, y, name in found]


def mark_host_noise(comparison: Comparison) -> None:
    """Each side's host noise; where one host was noisier enough to explain a verdict, the
    verdicts it explains (worse on the noisy side; memory is not the CPUs') say so."""
    noise = (host_noise.of(comparison.a.campaign.host_checks, comparison.a.results),
             host_noise.of(comparison.b.campaign.host_checks, comparison.b.results))
    comparison.noise = noise
    comparison.explanation = explanation = host_noise.explain(*noise)
    if explanation is None:
        return
    for cell in comparison.cells:
        if cell.verdict != SAME and (cell.a_cell is None or not is_memory(cell.a_cell)) \
                and host_noise.explains(explanation, cell.verdict == SLOWER):
            cell.host_explained = explanation.reason


def host_classes(a: Side, b: Side) -> tuple[host.HostClass, host.HostClass]:
    """The classes of the hosts A and B ran on, from their campaigns' facts."""
    return (host.host_class(a.campaign.host_facts or {}),
            host.host_class(b.campaign.host_facts or {}))


def hosts_apart(a: Side, b: Side) -> str:
    """What sets A's host and B's apart as classes (another CPU or kernel, host.py), with
    every other fact of the class that differs: "CPU AMD EPYC vs Intel(R) Xeon(R)
    Processor; kernel 6.18.44 vs 6.18.50"; "" where they are of one class, or where what
    would tell is unknown on a side (a store older than the fact)."""
    return _apart(*host_classes(a, b))


def _apart(class_a: host.HostClass, class_b: host.HostClass) -> str:
    return "; ".join(class_a.differences(class_b)) if class_a.apart_from(class_b) else ""


def hosts_warning(apart: str, below: bool = True) -> str:
    """What compare and ab say before any verdict when the hosts are apart (below: before
    the tables; else on its own, beside a JSON document)."""
    return (f"A and B ran on different hosts: {apart}: a difference "
            f"{'below' if below else 'in the verdicts'} may be the host's, not the change's")


def across_hosts_refusal(command: str, apart: str) -> str:
    """Why --fail-on-regression refuses to judge A and B of different host classes."""
    return (f"{command}: A and B ran on different hosts ({apart}), and --fail-on-regression "
            "would count the hosts' difference as the change's (fix: compare campaigns of "
            "one host class, or add --across-hosts to gate across them)")


def unjudged(comparison: Comparison) -> str:
    """What --gate asked for that no cell could give (a p99 where no pair has 100 values a
    side), or "": a gate on a percentile that judged nothing must not pass as if it had."""
    missing = [name for name in comparison.gate
               if not comparison.judged(name) and name != "p50"]
    if not missing or not comparison.paired:
        return ""
    needs = ", ".join(f"{name} {tail_compare.least_values(tail_compare.GATES[name])}"
                      for name in missing)
    return (f"--gate {','.join(missing)} judged no cell: each needs that many values on both "
            f"sides ({needs}) and no pair had them (fix: --repeat in the plan or on the "
            f"command line, or leave {','.join(missing)} out of --gate)")


def ab_option_keys(a: Side, b: Side) -> tuple[str, ...]:
    """The spec keys in which an ab campaign's NAME.a and NAME.b differ: its options, which
    are the point of the comparison, not a drift."""
    keys = []
    for name, spec in a.specs.items():
        if name in b.specs:
            keys += _differences(spec, b.specs[name], ("name",))
    return tuple(dict.fromkeys(keys))


def failed_gate(comparison: Comparison, allow_missing: bool = False,
                forgive_host_noise: bool = False) -> str:
    """Why a gate (--fail-on-regression) fails on this comparison, or "" if it passes: cells
    slower in B (those the hosts' noise explains too, unless forgive_host_noise: a change
    that loads the host itself must not pass), and workloads ok in A that B broke (unless
    allow_missing)."""
    said = []
    counted = [cell for cell in comparison.regressions
               if not (forgive_host_noise and cell.host_explained)]
    if counted:
        said.append(f"{len(counted)} cell(s) slower in B")
    if comparison.broken and not allow_missing:
        said.append(f"{len(comparison.broken)} workload(s) ok in A and "
                    + ", ".join(sorted({broken.outcome for broken in comparison.broken}))
                    + " in B")
    return "; ".join(said)


def broken_cells(a: Side, b: Side, ignore_spec: tuple[str, ...] = (),
                 max_failure_rate: float = MAX_FAILURE_RATE) -> list[Broken]:
    """Every workload and environment with ok runs in A and none in B, or fewer (flaky),
    and why; an environment whose spec, or a workload whose parameters, differ between
    the sides (beyond ignore_spec) is not the same one: broken too, as DRIFT, once."""
    broken = []
    labels_b = {label for label, _m, _u in b.results.rows}
    for label in dict.fromkeys(label for label, _m, _u in a.results.rows):
        differing = _differences(a.params.get(label, {}), b.params.get(label, {}), ignore_spec)
        if label in labels_b and differing:
            broken.append(Broken(ANY, label, DRIFT, _drift("parameters", differing)))
    drifted = {item.label for item in broken}
    for env in a.results.environments:
        ok_in_env = [cell for row in a.results.cells.values() if env in row for cell in [row[env]]
                     if cell.values and cell.is_performance]
        differing = _differences(a.specs[env], b.specs[env], ("name", *ignore_spec)) \
            if env in b.specs else []
        if differing:
            if ok_in_env:
                broken.append(Broken(env, ANY, DRIFT, _drift("spec", differing)))
            continue
        for label in dict.fromkeys(label for label, _m, _u in a.results.rows):
            ok_in_a = [cell for (lab, _metric), row in a.results.cells.items()
                       if lab == label and env in row for cell in [row[env]]
                       if cell.values and cell.is_performance]
            if not ok_in_a or label in drifted:
                continue
            if env not in b.specs:
                broken.append(Broken(env, label, "missing", "the environment is not in B"))
            elif env in b.unavailable:
                broken.append(Broken(env, label, "unavailable", b.unavailable[env]))
            elif label not in labels_b:
                broken.append(Broken(env, label, "missing", "the workload is not in B"))
            else:
                cells_b = [row[env] for (lab, _metric), row in b.results.cells.items()
                           if lab == label and env in row]
                if any(cell.values for cell in cells_b):
                    flaky = flaky_cell(ok_in_a[0], cells_b[0], max_failure_rate) \
                        or lower_success(a, b, env, label, max_failure_rate)
                    if flaky is not None:
                        broken.append(flaky)
                    continue
                problems = [problem for cell in cells_b for problem in cell.problems]
                status, reason = problems[0] if problems else ("missing", "no run in B")
                broken.append(Broken(env, label, status, reason))
    return broken


def _drift(what: str, keys: list[str]) -> str:
    """Why a spec or parameters that differ are a regression, and the flag that pairs them."""
    flags = " ".join(f"--ignore-spec {key}" for key in keys)
    return (f"{what} differs in {', '.join(keys)}: not the same environment or workload, and "
            f"not judged (fix: {flags} if that difference is the point)")


def flaky_cell(a: Cell, b: Cell, max_failure_rate: float = MAX_FAILURE_RATE) -> Broken | None:
    """B's cell as flaky where a larger share of its runs was not ok than of A's, by more
    than max_failure_rate: its survivors' figures alone would say `same` of a workload
    that failed. (With 10 runs a side, 3 lost against none is Fisher's exact p = 0.11:
    no test of proportions tells so few runs apart, so any loss counts unless the user
    allows a rate; the p-value is told.)"""
    lost_a, lost_b = len(a.problems), len(b.problems)
    if not a.runs or not b.runs:
        return None
    rate_a, rate_b = lost_a / a.runs, lost_b / b.runs
    if rate_b <= rate_a or rate_b - rate_a <= max_failure_rate:
        return None
    from scipy.stats import fisher_exact  # only here: scipy.stats is slow to import
    statuses = ", ".join(f"{count} {status}" for status, count in
                         Counter(status for status, _reason in b.problems).most_common())
    pvalue = fisher_exact([[lost_b, b.runs - lost_b], [lost_a, a.runs - lost_a]],
                          alternative="greater").pvalue
    reason = (f"{lost_b} of {b.runs} runs not ok in B ({statuses}), {lost_a} of {a.runs} in A; "
              f"success {100 * (1 - rate_b):.0f}% against {100 * (1 - rate_a):.0f}% "
              f"(Fisher's exact p = {pvalue:.2g}); first: {b.problems[0][1]}")
    return Broken(b.environment, b.label, "flaky", reason[:400])


def lower_success(a: Side, b: Side, env: str, label: str,
                  max_failure_rate: float = MAX_FAILURE_RATE) -> Broken | None:
    """B's cell as flaky where a smaller share of its tries succeeded than of A's, by more
    than max_failure_rate (a burst whose instances became ready 47 of 50 times against 50
    of 50): the runs themselves all ended ok, and their times alone said `same`."""
    for metric, tries_key in SUCCESS_RATES.items():
        x = a.results.cells.get((label, metric), {}).get(env)
        y = b.results.cells.get((label, metric), {}).get(env)
        tries_a = a.params.get(label, {}).get(tries_key)
        tries_b = b.params.get(label, {}).get(tries_key)
        if not (x and y and x.values and y.values and isinstance(tries_a, int)
                and isinstance(tries_b, int) and tries_a > 0 and tries_b > 0):
            continue
        ok_a = sum(round(value * tries_a / 100) for value in x.values)
        ok_b = sum(round(value * tries_b / 100) for value in y.values)
        all_a, all_b = tries_a * len(x.values), tries_b * len(y.values)
        rate_a, rate_b = ok_a / all_a, ok_b / all_b
        if rate_b >= rate_a or rate_a - rate_b <= max_failure_rate:
            continue
        from scipy.stats import fisher_exact  # only here: scipy.stats is slow to import
        pvalue = fisher_exact([[all_b - ok_b, ok_b], [all_a - ok_a, ok_a]],
                              alternative="greater").pvalue
        return Broken(env, label, "flaky",
                      f"{ok_b} of {all_b} {tries_key} succeeded in B ({metric}), {ok_a} of "
                      f"{all_a} in A; success {100 * rate_b:.0f}% against {100 * rate_a:.0f}% "
                      f"(Fisher's exact p = {pvalue:.2g})")
    return None


def run_units(cell: Cell) -> list[float]:
    """One number per run, what the permutation test exchanges: values of one run are not
    independent of each other, and exchanging them one by one would count each run several
    times. A run's number is the geometric mean of its values (the test works on logs), or
    their mean where some value is not positive."""
    if not cell.sizes or max(cell.sizes) == 1:
        return cell.values
    runs = cell.run_values()
    if all(value > 0 for value in cell.values):
        return [math.exp(sum(math.log(value) for value in values) / len(values)) for values in runs]
    return [sum(values) / len(values) for values in runs]


def holm(pvalues: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment: the k-th smallest of m p-values times (m - k + 1), kept
    non-decreasing, at most 1. Cells without a p-value keep None and do not count."""
    present = sorted((p, index) for index, p in enumerate(pvalues) if p is not None)
    adjusted: list[float | None] = list(pvalues)
    running = 0.0
    for rank, (pvalue, index) in enumerate(present):
        running = max(running, min(1.0, pvalue * (len(present) - rank)))
        adjusted[index] = running
    return adjusted


def judge(ratio: Interval, pvalue: float | None, unit: str, threshold: float,
          alpha: float, declared_higher: bool | None = None) -> str:
    """faster/slower needs both: significance (p < alpha) and a change beyond the threshold.

    "Beyond" means the ratio's whole interval, not only its point estimate: a
    +6.6% change whose interval reaches back to +2.3% is not shown to exceed a
    5% noise threshold. (An A/A check here, the same plan run twice, gave
    exactly that for one cell with a point-estimate rule.) A direction the metric
    declared (exec's `better`) decides which way is slower; else its unit does.
    """
    if pvalue is None or pvalue >= alpha:
        return SAME
    return beyond_threshold(ratio, unit, threshold, declared_higher)


def judge_memory(ratio: Interval, pvalue: float | None, a_median: float, threshold_mib: float,
                 alpha: float) -> str:
    """slower (more memory in B) or faster when the change is significant and its interval,
    in MiB (A's median times the ratio's interval, less one), lies wholly beyond
    threshold_mib; else same. More memory is worse."""
    if pvalue is None or pvalue >= alpha or math.isnan(ratio.value):
        return SAME
    low = a_median * ((ratio.low if ratio.low is not None else ratio.value) - 1)
    high = a_median * ((ratio.high if ratio.high is not None else ratio.value) - 1)
    if low > threshold_mib:
        return SLOWER
    if high < -threshold_mib:
        return FASTER
    return SAME


def _memory_note(ratio: Interval, a_median: float, b_median: float,
                 threshold_mib: float) -> list[str]:
    if math.isnan(ratio.value):
        return []
    return [f"B holds {b_median - a_median:+.2f} MiB (judged against {threshold_mib:g} MiB)"]


def beyond_threshold(ratio: Interval, unit: str, threshold: float,
                     declared_higher: bool | None = None) -> str:
    """slower or faster when the ratio's whole interval is beyond the threshold, else same."""
    if math.isnan(ratio.value):
        return SAME
    low = ratio.low if ratio.low is not None else ratio.value
    high = ratio.high if ratio.high is not None else ratio.value
    if low > 1 + threshold:
        larger = True
    elif high < 1 - threshold:
        larger = False
    else:
        return SAME
    return SLOWER if larger != higher_is_better(unit, declared_higher) else FASTER


def _threshold_note(ratio: Interval, pvalue: float | None, verdict: str, threshold: float,
                    alpha: float) -> list[str]:
    """Say so when a significant change's interval reaches inside the noise threshold."""
    if verdict != SAME or pvalue is None or pvalue >= alpha or math.isnan(ratio.value) \
            or abs(ratio.value - 1) <= threshold or ratio.low is None:
        return []
    return [f"a change of {(ratio.value - 1) * 100:+.1f}% (p = {pvalue:.2g}), but its interval "
            f"{ratio.low:.3f}-{ratio.high:.3f} reaches inside the {threshold:.0%} threshold"]


def _notes(x: Cell, y: Cell, sa: CellStats, sb: CellStats, alpha: float,
           permutation: bool = True) -> list[str]:
    notes = []
    if permutation and stats.smallest_pvalue(x.n_runs, y.n_runs) >= alpha:
        notes.append(f"too few runs to show a change ({x.n_runs} and {y.n_runs}; at least 5 "
                     f"each are needed for p < {alpha:g})")
    for name, described, cell in (("A", sa, x), ("B", sb, y)):
        flags = list(dict.fromkeys([*cell.flags, *described.flags]))
        if flags:
            notes.append(f"{name}: {', '.join(flags)}")
    for name, cell in (("A", x), ("B", y)):
        if cell.problems:
            notes.append(f"{name}: {len(cell.problems)} run(s) not ok")
    return notes


def pair_cells(a: Side, b: Side, ignore_spec: tuple[str, ...] = ()
               ) -> tuple[list[tuple[Cell, Cell]], list[tuple[str, str]]]:
    """The (A cell, B cell) pairs to compare, and every cell or group that could not be paired."""
    unpaired: list[tuple[str, str]] = []
    environments = _without_results(a, b, _paired_environments(a, b, ignore_spec, unpaired),
                                    unpaired)
    labels = _paired_labels(a, b, unpaired, ignore_spec)
    pairs = []
    without: dict[tuple[str, str, str], list[str]] = {}  # (env, label, sides) -> metrics
    for label in labels:
        metrics_a = {metric: unit for lab, metric, unit in a.results.rows if lab == label and metric}
        metrics_b = {metric: unit for lab, metric, unit in b.results.rows if lab == label and metric}
        for metric in metrics_a.keys() - metrics_b.keys():
            unpaired.append((f"{label} {metric}", "measured only in A"))
        for metric in metrics_b.keys() - metrics_a.keys():
            unpaired.append((f"{label} {metric}", "measured only in B"))
        for metric, unit in metrics_a.items():
            if metric not in metrics_b:
                continue
            if metrics_b[metric] != unit:
                unpaired.append((f"{label} {metric}", f"unit {unit} in A, {metrics_b[metric]} in B"))
                continue
            for env in environments:
                x, y = a.results.cells[(label, metric)][env], b.results.cells[(label, metric)][env]
                if not x.is_performance and not is_memory(x):
                    break  # context and verdicts describe a run; nothing to judge
                missing = [name for name, cell in (("A", x), ("B", y)) if not cell.values]
                if missing:
                    without.setdefault((env, label, " and ".join(missing)), []).append(metric)
                else:
                    pairs.append((x, y))
    for (env, label, sides), metrics in without.items():  # one line per workload and reason
        what = f"{env} {label} {metrics[0]}" if len(metrics) == 1 else \
            f"{env} {label} ({len(metrics)} metrics)"
        unpaired.append((what, f"no successful run in {sides}"))
    return pairs, unpaired


def _without_results(a: Side, b: Side, environments: list[str],
                     unpaired: list[tuple[str, str]]) -> list[str]:
    """The environments with a successful run on both sides; one line for each of the
    others (an environment unavailable here has dozens of cells, all for one reason)."""
    kept = []
    for env in environments:
        missing = [name for name, side in (("A", a), ("B", b))
                   if not any(row[env].values for row in side.results.cells.values()
                              if env in row)]
        if missing:
            unpaired.append((f"environment {env}",
                             f"no successful run in {' and '.join(missing)}"))
        else:
            kept.append(env)
    return kept


def _paired_environments(a: Side, b: Side, ignore: tuple[str, ...],
                         unpaired: list[tuple[str, str]]) -> list[str]:
    paired = []
    for name in a.results.environments:
        if name not in b.specs:
            unpaired.append((f"environment {name}", "only in A"))
            continue
        differing = _differences(a.specs[name], b.specs[name], ("name", *ignore))
        if differing:
            unpaired.append((f"environment {name}", "spec differs in " + ", ".join(differing)
                             + " (fix: --ignore-spec KEY if that difference is the point)"))
        else:
            paired.append(name)
    unpaired += [(f"environment {name}", "only in B") for name in b.results.environments
                 if name not in a.specs]
    return paired


def _paired_labels(a: Side, b: Side, unpaired: list[tuple[str, str]],
                   ignore: tuple[str, ...] = ()) -> list[str]:
    labels_a = list(dict.fromkeys(label for label, _m, _u in a.results.rows))
    labels_b = set(label for label, _m, _u in b.results.rows)
    paired = []
    for label in labels_a:
        if label not in labels_b:
            unpaired.append((f"workload {label}", "only in A"))
            continue
        differing = _differences(a.params.get(label, {}), b.params.get(label, {}), ignore)
        if differing:
            unpaired.append((f"workload {label}", "parameters differ in " + ", ".join(differing)))
        else:
            paired.append(label)
    unpaired += [(f"workload {label}", "only in B") for label in
                 dict.fromkeys(label for label, _m, _u in b.results.rows) if label not in labels_a]
    return paired


def _differences(x: dict[str, Any], y: dict[str, Any], ignore: tuple[str, ...]) -> list[str]:
    keys = sorted((x.keys() | y.keys()) - set(ignore))
    return [key for key in keys if json.dumps(x.get(key), sort_keys=True, default=str)
            != json.dumps(y.get(key), sort_keys=True, default=str)]
