"""Short column headers for environments whose names a sweep made long.

A plan that sweeps `machine`, `vcpus` and `placement` names its environments
`tcg-machinemicrovm-vcpus1-placementdisjoint`: fourteen such columns made lines of 500
characters. Each name longer than MAX_HEADER becomes its base name and the swept values
in words ("tcg microvm 1 vCPU disjoint"), shortened further when needed ("(d)" for
disjoint, as seed 002 heads its columns); a legend table gives every short header's
environment and spec. Applied to finished tables in one pass (shorten), so that no table
builder needs to know.
"""

from __future__ import annotations

import re
from typing import Any

from guestbench.analysis.results import CampaignResults
from guestbench.plan.labels import plain_value
from guestbench.report import functional, titles
from guestbench.report.model import Table

MAX_HEADER = 24
PLACEMENT_MARKS = {"same": "(s)", "disjoint": "(d)", "free": "(f)"}


def short_names(environments: list[dict[str, Any]]) -> dict[str, str]:
    """{environment name: its column header}; names of at most MAX_HEADER characters stay."""
    names = [env.name for env in environments]
    if all(len(name) <= MAX_HEADER for name in names):
        return {name: name for name in names}
    varying = _varying_keys([env.spec or {} for env in environments])
    parts = {env.name: _parts(env.name, env.spec or {}, varying)
             for env in environments}
    # every name a sweep made, long or not, at one level of shortening: headers read alike
    swept = [env.name for env in environments
             if parts[env.name][1] or len(env.name) > MAX_HEADER]
    level = max(_level_needed(*parts[name]) for name in swept)
    out = {env.name: env.name for env in environments}
    for name in swept:
        out[name] = _at_level(name, *parts[name], level)
    taken: dict[str, int] = {}
    for name, header in out.items():  # two that came out alike: numbered
        taken[header] = taken.get(header, 0) + 1
    seen: dict[str, int] = {}
    for name, header in list(out.items()):
        if taken[header] > 1:
            seen[header] = seen.get(header, 0) + 1
            suffix = f" #{seen[header]}"
            out[name] = header[:MAX_HEADER - len(suffix)] + suffix
    return out


def _varying_keys(specs: list[dict[str, Any]]) -> list[str]:
    keys = dict.fromkeys(key for spec in specs for key in spec if key != "name")
    return [key for key in keys if len({repr(spec.get(key)) for spec in specs}) > 1]


def _parts(name: str, spec: dict[str, Any], varying: list[str]
           ) -> tuple[str, list[str], list[str]]:
    """(the name without its swept pieces, the swept values in words, as marks)."""
    base, words, marks = name, [], []
    for key in varying:
        if key not in spec:
            continue
        piece = f"-{key}{plain_value(spec[key])}"
        if piece not in base:
            continue
        base = base.replace(piece, "", 1)
        word, mark = _word(key, spec[key])
        words.append(word)
        marks.append(mark)
    return base, words, marks


def _candidate(base: str, words: list[str], marks: list[str], level: int) -> str:
    """The values in words, the last `level` of them as marks."""
    kept = max(len(words) - level, 0)
    return " ".join([base, *words[:kept], *marks[kept:]])


def _level_needed(base: str, words: list[str], marks: list[str]) -> int:
    for level in range(len(words) + 1):
        if len(_candidate(base, words, marks, level)) <= MAX_HEADER:
            return level
    return len(words)


def _at_level(name: str, base: str, words: list[str], marks: list[str], level: int) -> str:
    candidate = _candidate(base, words, marks, level)
    if len(candidate) <= MAX_HEADER:
        return candidate
    tail = " ".join(marks)
    room = MAX_HEADER - len(tail) - 2
    return f"{base[:max(room, 1)]}… {tail}"[:MAX_HEADER] if tail else name[:MAX_HEADER - 1] + "…"


def _word(key: str, value: Any) -> tuple[str, str]:
    """(the value in words, a shorter mark) for one swept key."""
    if key == "vcpus":
        return f"{value} vCPU", f"{value}v"
    if key == "placement":
        return str(value), PLACEMENT_MARKS.get(str(value), str(value))
    if key == "memory_mib":
        return f"{value} MiB", f"{value}M"
    plain = plain_value(value)
    if key == "disk_cache":
        return f"cache={plain}", f"c={plain[:5]}"
    if key == "disk_bus":
        return plain.replace("_", "-"), plain.split("_")[0][:6]
    return (plain, plain[:8]) if key in ("machine", "kernel", "accel", "cache") else \
        (f"{key}={plain}", f"{key[:3]}={plain[:6]}")


def legend(report_environments: list[dict[str, Any]], headers: dict[str, str]) -> Table | None:
    """Which environment each shortened header stands for, with the spec's swept values."""
    renamed = [env for env in report_environments if headers[env.name] != env.name]
    if not renamed:
        return None
    varying = _varying_keys([env.spec or {} for env in report_environments])
    table = Table("Columns: short headers and the environments they stand for",
                  ["column", "environment", "kind", "swept values"], [], label_columns=1,
                  name="columns",
                  note="Environment names longer than 24 characters are shortened in "
                       "headers; (s): the VMM and the first vCPU share a host CPU, (d): each "
                       "on its own, (f): free.")
    for env in renamed:
        spec = env.spec or {}
        swept = ", ".join(f"{key}={plain_value(spec[key])}" for key in varying
                          if key in spec and f"-{key}{plain_value(spec[key])}" in env.name)
        table.add([headers[env.name], env.name, str(env.kind), swept or "-"])
    return table


def shorten(tables: list[Table], headers: dict[str, str]) -> None:
    """Every header and row name that is an environment's name (or starts with it, as in
    "name n=5") becomes its short header; sources keep the full names."""
    longest_first = sorted(((name, short) for name, short in headers.items() if name != short),
                           key=lambda item: -len(item[0]))
    if not longest_first:
        return
    for table in tables:
        if table.name == "columns":
            continue
        for name, short in longest_first:  # "... against tcg-vcpus1-placementdisjoint"
            named = _as_word(name)
            table.title = named.sub(short, table.title)
            table.footnotes = [named.sub(short, line) for line in table.footnotes]
        table.header = [_renamed(cell, longest_first) for cell in table.header]
        for row in table.rows:
            for index in range(min(table.label_columns, len(row))):
                row[index] = _renamed(row[index], longest_first)


def rename_notes(tables: list[Table], shown: dict[str, str]) -> None:
    """Environments named in the tables' notes as a plan's labels name them ("serial in
    UML"). Short headers leave notes alone: a note may be what explains them."""
    for name, label in sorted(shown.items(), key=lambda item: -len(item[0])):
        for table in tables:
            table.note = _as_word(name).sub(label, table.note)


def _as_word(name: str) -> re.Pattern:
    """A name as a word: not inside a path or another name (/dev/kvm stays)."""
    return re.compile(rf"(?<![\w/.-]){re.escape(name)}(?![\w/-])")


def _renamed(text: str, longest_first: list[tuple[str, str]]) -> str:
    for name, short in longest_first:
        if text == name:
            return short
        if text.startswith(name + " "):
            return short + text[len(name):]
    return text


def present(made: list[Table], report: CampaignResults, legend_each: bool = True
            ) -> list[Table]:
    """Tables as every view shows them: display titles, environment headers shortened where
    a sweep made them long, and the key to those headers after the first table; functional
    environments marked, with their legend under each table that names them (legend_each)
    or under the first."""
    titles.apply(made, report)
    from guestbench.report import restyle  # deferred: restyle loads the plan's models
    headers = {**short_names(report.environments), **restyle.labels()}
    shorten(made, headers)
    rename_notes(made, restyle.labels())
    functional.mark_tables(made, report, headers, legend_each)
    key = legend(report.environments, headers)
    if key is not None:  # after the first table, whose headers it explains
        made.insert(1, key)
    return made
