"""The example summary of README.md and docs/reading-results.md has the shape of what
`guestbench run` prints today.

The example comes from a real run (benchmarks/readme_example.py writes it). Its numbers cannot
be checked here, its shape can: the test runs the page's own command on fake environments of
the same names, and a second, different campaign, and takes as the format whatever the two
outputs share (title words, column headers, rows that are not workloads, caption phrases). The
page's block must have all of it, so a change of the summary's format fails here until the
example is made again; the expected shape is never written down in this file.
"""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench import host as gb_host
from guestbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs/reading-results.md"]
BEGIN, END = "<!-- example:begin -->", "<!-- example:end -->"
MAX_LINE_BYTES = 120  # the limit for a terminal line, as `awk '{print length}'` counts
RULE = re.compile(r"^[^\w]{10,}$")  # a table's rule: no letter or digit, e.g. +-----+----+
BORDERS = "|│┃"
PHRASE_TOKENS = 3  # the shortest run of words that counts as a fixed phrase of the caption


@dataclass
class Summary:
    """What a summary is made of, found in its text by the environments' names."""
    title: list[str]          # the words before the first table
    header_labels: list[str]  # header cells that are not environments (workload, metric ...)
    environments: list[str]   # the environments the header names, over every table
    row_labels: list[list[str]]  # each row's cells without digits, first cell first
    caption: list[str]        # the words after the last table


@dataclass
class Example:
    """A page's block: its command, the day it names, and what the command printed."""
    envs: list[str]
    workloads: list[str]
    day: str
    lines: list[str]


def example_of(page_text: str) -> Example:
    assert page_text.count(BEGIN) == 1 and page_text.count(END) == 1, \
        f"the page needs one {BEGIN} and one {END} around its example"
    block = page_text.split(BEGIN)[1].split(END)[0]
    day = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", block.split("```")[0])
    assert day, "the example says on which day it was run, before its output"
    fenced = block.split("```")[1].strip("\n").splitlines()
    command = shlex.split(fenced[0].removeprefix("$ "))
    assert fenced[0].startswith("$ ") and command[:2] == [".venv/bin/guestbench", "run"], \
        "the example's first line is the command, as a newcomer types it"
    envs = command[command.index("--env") + 1].split(",")
    workloads = command[command.index("--workload") + 1].split(",")
    return Example(envs, workloads, day.group(1), fenced[1:])


def cells(line: str) -> list[str]:
    """A table line's cells, empty ones included: between border characters, else between
    runs of 2+ spaces."""
    if any(border in line for border in BORDERS):
        parts = [part.strip() for part in re.split(f"[{BORDERS}]", line.strip())]
        return parts[1:-1] if len(parts) > 2 and not parts[0] and not parts[-1] else parts
    return [part.strip() for part in re.split(r"\s{2,}", line.strip())]


def environment_named(cell: str, envs: list[str]) -> str | None:
    """The environment a header cell names; a header may add words, as "runsc (ptrace)"."""
    named = [env for env in envs if cell == env or cell.startswith(env + " ")]
    return max(named, key=len) if named else None


def names_environment(cell: str, envs: list[str]) -> bool:
    return environment_named(cell, envs) is not None


def words(lines: list[str]) -> list[str]:
    """The words of some lines, numbers made alike (dates, counts and figures vary)."""
    return re.sub(r"\d+", "9", " ".join(lines)).split()


def summary_of(lines: list[str], envs: list[str]) -> Summary:
    headers = [i for i, line in enumerate(lines)
               if not RULE.match(line) and any(names_environment(c, envs) for c in cells(line))]
    assert headers, f"no table header naming {envs} in:\n" + "\n".join(lines)
    environments: list[str] = []
    row_labels: list[list[str]] = []
    end = 0
    for header in headers:
        header_cells = cells(lines[header])
        labels = [c for c in header_cells if not names_environment(c, envs)]
        environments += [environment_named(c, envs) for c in header_cells
                         if names_environment(c, envs)]
        end = header + 1
        while end < len(lines) and lines[end].strip() and (
                RULE.match(lines[end]) or len(cells(lines[end])) == len(header_cells)):
            if not RULE.match(lines[end]):
                row_labels.append([c for c in cells(lines[end]) if c and not re.search(r"\d", c)])
            end += 1
    first_table = headers[0]
    while first_table > 0 and RULE.match(lines[first_table - 1]):
        first_table -= 1
    return Summary(words(lines[:first_table]), labels, environments, row_labels,
                   words(lines[end:]))


def fixed_runs(one: list[str], other: list[str], least: int) -> list[list[str]]:
    """Runs of at least `least` words that two texts share, in order."""
    matcher = difflib.SequenceMatcher(a=one, b=other, autojunk=False)
    return [one[m.a:m.a + m.size] for m in matcher.get_matching_blocks() if m.size >= least]


def sentences(run: list[str]) -> list[list[str]]:
    """A run of words cut after each word that ends a clause (. : ;)."""
    pieces: list[list[str]] = [[]]
    for word in run:
        pieces[-1].append(word)
        if word[-1] in ".:;":
            pieces.append([])
    return [piece for piece in pieces if piece]


def contains_run(haystack: list[str], run: list[str]) -> bool:
    return any(haystack[i:i + len(run)] == run for i in range(len(haystack) - len(run) + 1))


def in_order(haystack: list[str], needles: list[str]) -> bool:
    remaining = iter(haystack)
    return all(any(word == needle for word in remaining) for needle in needles)


def fake_campaign(tmp_path: Path, name: str, envs: list[str], workloads: list[str],
                  scales: list[float]) -> list[str]:
    """What `guestbench run` prints on standard output for fake environments of these names."""
    plan = [f'[campaign]\nname = "{name}"\nbaseline = "{envs[0]}"\nrepeat = 5\ntimeout_s = 5\n']
    plan += [f'[[environment]]\nname = "{env}"\nkind = "fake"\nscale = {scale}\n'
             for env, scale in zip(envs, scales)]
    plan += [f'[[workload]]\nname = "{workload}"\n' for workload in workloads]
    folder = tmp_path / name
    folder.mkdir()
    (folder / "plan.toml").write_text("\n".join(plan))
    agent = folder / "gbagent"  # the fake environment never runs it; the CLI checks it exists
    agent.write_text("#!/bin/sh\n")
    agent.chmod(0o755)
    result = CliRunner().invoke(
        main, ["run", str(folder / "plan.toml"), "--db", f"sqlite:///{folder / 'store.sqlite'}"],
        env={"GUESTBENCH_AGENT": str(agent)})
    assert result.exit_code == 0, result.output
    return [line.rstrip() for line in result.stdout.strip("\n").splitlines()]


def host_words() -> set[str]:
    """Words the title takes from this host (CPU, kernel, name): the example's host differs."""
    facts = gb_host.collect().facts
    return set(words([str(value) for value in facts.values()]))


def shape_problems(example: Example, program: Summary, other: Summary) -> list[str]:
    """Where the example's block differs from the shape the program prints now."""
    shown = summary_of(example.lines, example.envs)
    problems = [f"line of {len(line.encode())} bytes (at most {MAX_LINE_BYTES}): {line!r}"
                for line in example.lines if len(line.encode()) > MAX_LINE_BYTES]
    title = [word for run in fixed_runs(program.title, other.title, 1) for word in run
             if word not in host_words()]
    if not in_order(shown.title, title):
        problems.append(f"title: the program's title has the words {title}, in this order; "
                        f"the example's has {shown.title}")
    if shown.header_labels != program.header_labels:
        problems.append(f"header: the program heads its label columns {program.header_labels}, "
                        f"the example {shown.header_labels}")
    if sorted(shown.environments) != sorted(program.environments):
        problems.append(f"header: the program's columns are {program.environments}, "
                        f"the example's {shown.environments}")
    program_rows = [row for row in program.row_labels if row]
    shown_rows = [row for row in shown.row_labels if row]
    # rows both fake campaigns have (a geometric mean ...), though their workloads differ
    fixed_rows = [row for row in program_rows if row in other.row_labels]
    for row in fixed_rows:
        if row not in shown_rows:
            problems.append(f"row: the program prints a row {row}, the example does not")
    # a workload by its name, without the unit it is shown in: a fake environment's units
    # are not a real one's ("fork + exit (us)" against the fake's "(ns)")
    program_firsts = [row[0].split(" (")[0] for row in program_rows if row not in fixed_rows]
    shown_firsts = [row[0].split(" (")[0] for row in shown_rows if row not in fixed_rows]
    if program_firsts != shown_firsts[:len(program_firsts)] and \
            sorted(set(program_firsts)) != sorted(set(shown_firsts)):
        problems.append(f"rows: the program names the workloads {program_firsts}, "
                        f"the example {shown_firsts}")
    # a real run adds footnotes between the caption's sentences: each sentence is checked
    for phrase in fixed_runs(program.caption, other.caption, PHRASE_TOKENS):
        for sentence in sentences(phrase):
            if not contains_run(shown.caption, sentence):
                problems.append(f"caption: the program prints {' '.join(sentence)!r} under the "
                                "table, the example does not")
    return problems


@pytest.fixture(scope="module")
def example() -> Example:
    return example_of(PAGES[0].read_text())


def program_shapes_for(example: Example, folder: Path) -> tuple[Summary, Summary]:
    """The summary of the example's command on fake environments, and of a campaign that
    differs in every name, workload and figure (what the two share is the format)."""
    from guestbench import environments  # fake environments only in the unit suite
    saved = environments._plan_kinds
    environments._plan_kinds = [*environments.PUBLIC_KINDS, "fake"]
    try:
        program = fake_campaign(folder, "shape-readme", example.envs, example.workloads,
                                [1.0 + 2 * i for i in range(len(example.envs))])
        other_envs = [example.envs[0], "otherenv", "thirdenv"]
        other = fake_campaign(folder, "shape-other", other_envs, ["sched_yield", "getppid"],
                              [7.0, 3.5, 0.25])
    finally:
        environments._plan_kinds = saved
    return summary_of(program, example.envs), summary_of(other, other_envs)


@pytest.fixture(scope="module")
def program_shapes(example: Example, tmp_path_factory) -> tuple[Summary, Summary]:
    return program_shapes_for(example, tmp_path_factory.mktemp("readme"))


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_example_has_the_shape_the_program_prints(page, example, program_shapes,
                                                       tmp_path):
    shown = example_of(page.read_text())
    shapes = program_shapes if (shown.envs, shown.workloads) == (example.envs,
                                                                  example.workloads) \
        else program_shapes_for(shown, tmp_path)
    problems = shape_problems(shown, *shapes)
    assert not problems, (f"{page.relative_to(ROOT)}'s example no longer matches the "
                          "summary's format; run '.venv/bin/python "
                          "benchmarks/readme_example.py' to make it again:\n"
                          + "\n".join(problems))


# The checks above must be able to fail: an example in another shape is told apart.

OLD_FORMAT = """\
Printed by a real run on 2026-11-23:

```
$ .venv/bin/guestbench run --env native,runsc --workload getpid,fork_exit
Summary: median ±95% CI, x native - run 1 (finished), 2026-11-23 21:08 UTC
+----------------+------------------+-------------+--------------------------------+
| workload       | metric           |      native |                          runsc |
+----------------+------------------+-------------+--------------------------------+
| getpid         | time_per_op (ns) | 105.4 ±1.9% | 45.66k ±22% !unstable [1] 433x |
| fork_exit      | time_per_op (us) | 98.33 ±5.5% |                 1323 ±8% 13.5x |
+----------------+------------------+-------------+--------------------------------+
[1] runsc: unstable: look at the spread before trusting the median
```
"""


def test_an_example_in_another_format_is_told_apart(program_shapes):
    older = example_of(f"{BEGIN}\n{OLD_FORMAT}{END}\n")
    program, other = program_shapes
    problems = shape_problems(older, program, other)
    # the test campaign's own shape is what the README's command prints; this example has
    # other environments and lacks the geometric mean row and the caption
    assert any(problem.startswith("row:") for problem in problems), problems
    assert any(problem.startswith("caption:") for problem in problems), problems


def test_a_line_over_120_bytes_is_a_problem(example, program_shapes):
    wide = Example(example.envs, example.workloads, example.day,
                   [*example.lines, "x" * (MAX_LINE_BYTES + 1)])
    problems = shape_problems(wide, *program_shapes)
    assert any(problem.startswith("line of 121 bytes") for problem in problems), problems


def test_the_title_and_header_of_the_program_are_required(example, program_shapes):
    program, other = program_shapes
    lines = [line.replace("workload", "task") for line in example.lines]
    table = next(i for i, line in enumerate(lines) if line.startswith("+-"))
    # every line above the table (the title, and any line said before it) loses its first word
    lines = [re.sub(r"^\S+", "Overview", line, count=1) if i < table else line
             for i, line in enumerate(lines)]
    problems = shape_problems(Example(example.envs, example.workloads, example.day, lines),
                              program, other)
    assert any(problem.startswith("header:") for problem in problems), problems
    assert any(problem.startswith("title:") for problem in problems), problems


# Nothing above knows today's format: a summary drawn another way is read the same way.

OTHER_FORMAT = """\
{host}: every cell's runs vary by 10-17%
workload                  {base:>10}  {env1:>14}  {env2:>8}
==========================================================
{w1:<24}     101 ±2%          3.00x~     5.00x
{w2:<24}     102 ±2%           3.00x     5.00x
geometric mean                     -           3.00x     5.00x
x {base}, above 1 is worse; rates inverted.
~ wide spread
not run: lost (the probe said no)
"""


def other_format(host: str, envs: list[str], workloads: list[str], decorate: str = "") -> list[str]:
    return OTHER_FORMAT.format(host=host, base=envs[0], env1=envs[1] + decorate, env2=envs[2],
                               w1=workloads[0], w2=workloads[1]).splitlines()


def test_a_summary_drawn_otherwise_is_read_the_same_way():
    envs, workloads = ["native", "runsc", "qemu-user"], ["getpid", "fork + exit"]
    program = summary_of(other_format("host A", envs, workloads), envs)
    other_envs = ["native", "otherenv", "thirdenv"]
    other = summary_of(other_format("host B", other_envs, ["sched_yield", "getppid"]),
                       other_envs)
    assert program.header_labels == ["workload"]
    assert program.environments == envs
    shown = Example(envs, ["getpid", "fork_exit"], "2026-11-25",
                    other_format("host C", envs, workloads, decorate=" (ptrace)"))
    assert shape_problems(shown, program, other) == []
    without_caption = Example(shown.envs, shown.workloads, shown.day, shown.lines[:-3])
    assert any(p.startswith("caption:") for p in shape_problems(without_caption, program, other))
