"""Environments whose figures are functional only, and the one rule every view follows for
them.

Some environments run the real code path under emulation: KVM nested in an L1 guest that
itself runs under TCG, Xen under TCG. Their runs show that the path works and where its time
goes (a VM-exit workload shows real exits), but their timings are not the speed of KVM or
Xen. Such an environment says so in its stored facts, under FUNCTIONAL, in a sentence. Every
view then
- marks each name of it (column header, row name) with MARK, and says the sentence once in a
  legend line (legend);
- marks its ratios to the baseline (ratio_mark), and takes no finding from it (judged): no
  geometric mean (LEFT_OUT in its place), no colour in the HTML heatmap or the terminal.
A functional baseline feeds every ratio, so then no environment's ratios are judged.
The machine formats carry the sentence as a field instead (formats/json.py, csv.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from guestbench.store.records import FUNCTIONAL

if TYPE_CHECKING:  # model.py imports this module: its Table is named, not imported
    from guestbench.analysis.results import CampaignResults

MARK = "§"  # one character, as the status marks (model.STATUS_MARKS) and flags (! ~ c)
LEFT_OUT = f"n/a {MARK}"  # in place of the geometric mean of such an environment


@dataclass(frozen=True)
class _Named:
    name: str
    facts: dict


@dataclass(frozen=True)
class Kept:
    """What compare and history keep of the functional environments of the campaigns they
    read (records.functional_facts), as a report's environments for this module's rules:
    their marks and legends (no baseline: neither takes ratios to one)."""

    environments: tuple[_Named, ...]
    baseline: None = None


def kept(facts: dict[str, dict[str, str]]) -> Kept:
    return Kept(tuple(_Named(name, dict(told)) for name, told in facts.items()))


def sentences(report: CampaignResults) -> dict[str, str]:
    """{environment: why its figures are functional only}, in the campaign's order."""
    return {env.name: str((env.facts or {})[FUNCTIONAL]) for env in report.environments
            if (env.facts or {}).get(FUNCTIONAL)}


def as_written(version: str) -> str:
    """A VMM's version as a write-up names it: "QEMU 7.2.22 (...)" for QEMU's own words
    "QEMU emulator version 7.2.22 (...)"; exports keep those."""
    return version.replace("QEMU emulator version ", "QEMU ")


def what_ran(report: CampaignResults, env: str) -> str:
    """The environment's VMM as it recorded it (its vmm_version fact: "Xen 4.17.7 (...)"),
    or ""."""
    for environment in report.environments:
        if environment.name == env:
            return str((environment.facts or {}).get("vmm_version") or "")
    return ""


def mark(report: CampaignResults, env: str) -> str:
    """" §" after the name of a functional environment; else ""."""
    return f" {MARK}" if env in sentences(report) else ""


def ratio_mark(report: CampaignResults, env: str) -> str:
    """" §" after a ratio that is no finding (judged): of a functional environment, or to a
    functional baseline; else ""."""
    return "" if judged(report, env) else f" {MARK}"


def named(report: CampaignResults, env: str, shown: str | None = None) -> str:
    """The environment's name (or the header shown for it) with its mark."""
    return (shown or env) + mark(report, env)


def judged(report: CampaignResults, env: str) -> bool:
    """Whether the environment's ratios may feed a finding (a geometric mean, a colour):
    neither it nor the baseline gives functional figures only."""
    found = sentences(report)
    return env not in found and report.baseline not in found


def judged_names(report: CampaignResults, names: list[str]) -> list[str]:
    """The names whose ratios may feed a finding, and the baseline (the means' reference)."""
    return [env for env in names if env == report.baseline or judged(report, env)]


def short_version(version: str) -> str:
    """A VMM's version without its build's words: "QEMU 7.2.22" of "QEMU emulator version
    7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)"."""
    return as_written(version).split(" (")[0].strip()


def short_legend(report: CampaignResults, names: list[str] | None = None,
                 headers: dict[str, str] | None = None) -> list[str]:
    """A published table's legend: one short line naming each functional environment among
    `names` with its VMM's short version (the sentences saying why are the setup's and the
    terminal's), and one for a functional baseline."""
    found = sentences(report)
    shown = []
    for env in found:
        if names is None or env in names:
            ran = short_version(what_ran(report, env))
            name = (headers or {}).get(env, env)
            shown.append(f"{name} ({ran})" if ran else name)
    lines = [f"{MARK} functional figures only: run under emulation, not a speed on hardware, "
             f"and kept out of geometric means: {', '.join(shown)}."] if shown else []
    if report.baseline in found and (names is None or report.baseline in names):
        lines.append(f"{MARK} the baseline {report.baseline} gives functional figures only: "
                     "no ratio here is a finding.")
    return lines


def legend(report: CampaignResults, names: list[str] | None = None,
           headers: dict[str, str] | None = None) -> list[str]:
    """The legend lines of the functional environments among `names` (default: all): one per
    distinct sentence, and one for a functional baseline; each named as the table shows it
    (headers: environment -> its header)."""
    found = sentences(report)
    by_sentence: dict[str, list[str]] = {}
    for env, sentence in found.items():
        if names is None or env in names:  # with what ran, where the summary says no more
            ran = as_written(what_ran(report, env))
            shown = (headers or {}).get(env, env)
            by_sentence.setdefault(sentence, []).append(f"{shown}: {ran}" if ran else shown)
    lines = [f"{MARK} functional figures only, kept out of geometric means "
             f"({', '.join(envs)}): {sentence.rstrip('.')}."
             for sentence, envs in by_sentence.items()]
    if report.baseline in found and (names is None or report.baseline in names):
        lines.append(f"{MARK} the baseline {report.baseline} gives functional figures only: "
                     "every ratio here is to figures that are not its speed, and no geometric "
                     "mean is taken.")
    return lines


def mark_tables(tables: list, report: CampaignResults, headers: dict[str, str],
                legend_each: bool = True, short: bool = False) -> None:
    """Marks every header and row name of a functional environment in tables (model.Table),
    as shown (headers maps each name to its shortened or relabelled header), and adds the
    legend lines under each table that names one (legend_each), else under the first; short:
    a published table's one short line (short_legend), but the setup keeps the sentences.
    Marked names stay marked."""
    found = sentences(report)
    if not found:
        return
    shown = {headers.get(env, env): env for env in found}
    said: list[str] = []
    for table in tables:
        marked = _mark_names(table, shown)
        if not marked or (said and not legend_each):
            continue
        told = short_legend if short and table.name != "platform" else legend
        lines = [line for line in told(report, marked, headers) if line not in table.footnotes]
        table.footnotes = lines + table.footnotes
        said += lines


def _mark_names(table, shown: dict[str, str]) -> list[str]:
    """Marks the table's header and label cells that name an environment of `shown`; gives
    the environments it names."""
    named_here: dict[str, None] = {}

    def marked(text: str) -> str:
        for header, env in shown.items():
            if text != header and not text.startswith(header + " "):
                continue
            named_here[env] = None
            rest = text[len(header):]
            return text if rest.startswith(f" {MARK}") else f"{header} {MARK}{rest}"
        return text

    table.header = [marked(text) for text in table.header]
    for row in table.rows:
        for index in range(min(table.label_columns, len(row))):
            row[index] = marked(row[index])
    return list(named_here)
