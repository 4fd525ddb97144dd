"""Names, order, units and decimals at report time: a stored campaign whose plan has no
[[table]] entries is relabelled, re-united and re-ordered by `report --label` and `--style`
alone, without running it again. The only way before (2026-11-27) was [[table]] labels in
the plan and the whole campaign run again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench.cli import main
from tests.support.default_campaign import unpacked

STYLE = """\
[report]
labels = { runsc = "gVisor (ptrace)" }
order = ["uml", "runsc", "native"]
units = { "*" = "us" }
decimals = 1
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    return unpacked(tmp_path_factory.mktemp("restyle"))


def report(stored: Path, *args: str):
    return CliRunner().invoke(main, ["report", "2", "--db", f"sqlite:///{stored}", *args],
                              env={"COLUMNS": "200"})


def test_a_stored_campaign_is_relabelled_reordered_and_reunited(stored, tmp_path) -> None:
    style = tmp_path / "style.toml"
    style.write_text(STYLE)
    shown = report(stored, "--style", str(style), "--label", "uml=UML 6.1", "--plain",
                   "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    measured = shown.stdout.split("### Measured")[1].split("\n\n")[1]
    header = measured.splitlines()[0]
    assert header.startswith("| workload | metric | UML 6.1 | gVisor (ptrace) | native |")
    assert "runsc" not in header and "| uml |" not in header
    getpid = next(line for line in measured.splitlines()
                  if line.startswith("| getpid | time per op"))
    assert "(us)" in getpid  # every time row in us, as the style says
    values = getpid.split("|")[3:-1]
    # one decimal, or more where one would leave fewer than two significant digits
    assert all(re.fullmatch(r" \d+\.\d ", value) or re.fullmatch(r" 0\.\d\d ", value)
               or "[" in value for value in values), getpid
    native_us = values[2].split()[0]
    assert re.fullmatch(r"0\.1\d", native_us), native_us  # 179 ns as 0.18 us, not 0.2
    # the terminal's summary takes the labels and the order
    summary = report(stored, "--style", str(style))
    assert summary.exit_code == 0, summary.output
    head = next(line for line in summary.stdout.splitlines() if line.startswith("| workload"))
    assert re.search(r"\|\s+uml\s+\|\s+gVisor \(ptrace\)\s+\|\s+native\s+\|", head), head


@pytest.mark.parametrize("content, args, said", [
    ("[report]\nlabels = { runsx = 'x' }\n", (), "'runsx' is not an environment of this "
                                                 "campaign; did you mean 'runsc'?"),
    ("[report]\nunits = { '*' = 'minutes' }\n", (), "--style"),
    ("[reprot]\n", (), "unknown table 'reprot'"),
    ("[report\n", (), "not TOML"),
    (None, ("--label", "native"), "not ENV=NAME"),
    ("[report]\norder = ['kvm-*']\n", (), "'kvm-*' matches no environment"),
    ("[[table]]\ntable = 'basci'\n", (), "table[0].table: unknown table 'basci'; did you "
                                          "mean 'basic'?"),
    ("[[table]]\ntable = 'basic'\ntitel = 'x'\n", (), "table[0].titel: unknown key"),
    ("[[table]]\ntable = 'basic'\nenvironments = ['kvm']\n", (),
     "table[0].environments: 'kvm' matches no environment"),
    ("[[table]]\ntable = 'basic'\nworkloads = ['getpdi']\n", (),
     "table[0].workloads: 'getpdi' matches no workload; did you mean 'getpid'?"),
    ("[[table]]\ntable = 'basic'\nrow_decimals = { getpdi = 1 }\n", (),
     "table[0].row_decimals: 'getpdi' names no row of the basic table (its rows: getpid,"),
    ("[[table]]\ntable = 'basic'\nrow_decimals = { getpid = 10 }\n", (),
     "table[0].row_decimals.getpid: Input should be less than or equal to 9"),
    ("[[table]]\ntable = 'basic'\nheaders = { nativ = 'host' }\n", (),
     "table[0].headers: 'nativ' names no column of the basic table (its headers: "),
])
def test_bad_style_is_exit_2_naming_what(stored, tmp_path, content, args, said) -> None:
    style = tmp_path / "bad.toml"
    if content is not None:
        style.write_text(content)
        args = ("--style", str(style), *args)
    result = report(stored, *args)
    assert result.exit_code == 2, result.output
    assert said in result.output and "fix:" in result.output
    assert "Traceback" not in result.output


def test_minutes_and_seconds_as_time_prints_a_build(store) -> None:
    """units = {TABLE = "m:ss"}: a build's seconds as "1m53" (the KVM/Xen write-up's "real"
    column), its header and standard deviation too; CPU % and counts are left as they are."""
    from guestbench.report import restyle
    from guestbench.report.model import Style, format_clock, styled
    from tests.support.campaigns import Campaign
    campaign = Campaign(store, {"native": {}, "tcg": {"kind": "qemu"}})
    for env, seconds in (("native", (113.0, 112.6, 113.4)), ("tcg", (63.2, 56.0))):
        for value in seconds:
            campaign.run(env, "build", [("elapsed", "s", value), ("user", "s", 66.0),
                                        ("sys", "s", 43.0), ("cpu_percent", "%", 95.0)],
                         label="build", params={"cache": "warm", "units": 48, "jobs": 2})
    style = restyle.ReportStyle(units={"build-runs": "m:ss", "kernbench": "m:ss",
                                       "build": "m:ss"})
    with restyle.active(style):
        tables = campaign.tables()
    runs = tables["build-runs"]
    elapsed = next(r for r in runs.rows if r[:3] == ["native", "build", "elapsed (m:ss)"])
    assert elapsed[3:] == ["1m53", "1m53", "1m53", "1m53 (0.4 s)"]  # under 1 s: in s
    tcg = next(r for r in runs.rows if r[:3] == ["tcg", "build", "elapsed (m:ss)"])
    assert tcg[3:6] == ["1m03", "0m56", "-"]
    assert runs.note.startswith("Minutes and seconds per run")
    kernbench = tables["kernbench"]
    assert kernbench.header[1:4] == ["Elapsed Time (m:ss)", "System Time (m:ss)",
                                     "User Time (m:ss)"]
    assert kernbench.rows[0][1:5] == ["1m53 (0.4 s)", "0m43 (0 s)", "1m06 (0 s)", "95 (0)"]
    build = tables["build"]
    assert build.header[2] == "elapsed (m:ss)" and build.header[5] == "CPU %"
    # without the style: seconds, as before
    assert next(r for r in campaign.tables()["build-runs"].rows
                if r[0] == "native")[2:4] == ["elapsed (s)", "113"]
    assert [format_clock(value) for value in (0.4, 59.6, 3599.5, 725.0)] == [
        "0.4 s", "1m00", "60m00", "12m05"]  # under a second: in s
    with styled(Style(plain=True, decimals=1)):
        assert format_clock(113.26) == "1m53.3"


def _booted(store):
    from tests.support.campaigns import Campaign
    campaign = Campaign(store, {"uml": {"kind": "uml"}, "uml-virt": {"kind": "uml",
                                                                    "inside": "tcg"}})
    for env, total in (("uml", 870.0), ("uml-virt", 6730.0)):
        for jitter in (0.99, 1.0, 1.01):
            campaign.run(env, "boot", [("boot_powered_off", "ms", total * jitter)])
    return campaign


def test_boot_tables_take_the_unit_a_style_gives(store) -> None:
    """units = {boot-totals = "s"}: "start-up (baremetal) — UML: 3.9" as the libguestfs
    write-up gives it, in seconds (boot tables were whole ms whatever the style said)."""
    from guestbench.commands import reading
    from guestbench.report import restyle, select
    campaign = _booted(store)
    report = reading.load(store, str(campaign.id))
    with restyle.active(restyle.ReportStyle(units={"boot-totals": "s"})):
        table = next(table for table in select.with_data(report, ("boot-totals",)))
    assert table.header == ["environment", "boot (s)", "n"]
    assert [(row[0], row[1].split(" ±")[0]) for row in table.rows] == [
        ("uml", "0.87"), ("uml-virt", "6.73")]
    shown = select.tables(report, "published", choices=[
        select.Choice("boot-totals", unit="s", decimals=1, title="start-up")])
    assert [row[1] for row in shown[0].rows] == ["0.9", "6.7"]


def test_a_setup_table_given_a_title_keeps_the_host(store) -> None:
    from guestbench.commands import reading
    from guestbench.report import select
    campaign = _booted(store)
    report = reading.load(store, str(campaign.id))
    table = select.tables(report, "published", choices=[
        select.Choice("platform", title="platforms and their versions")])[0]
    assert table.title.startswith("platforms and their versions: host Test CPU"), table.title


def test_the_setup_names_each_environment_once(store) -> None:
    """Two [[table]] entries that both call their environment "UML" (bare metal, and inside
    a VM: libguestfs's write-up) gave the setup block two rows named "UML" (and a nested
    one's § mark on both): the second is named with its environment now."""
    from guestbench.commands import reading
    from guestbench.report.formats import markdown
    from tests.support.campaigns import Campaign
    plan = {"tables": [{"table": "boot-totals", "title": "start-up (bare metal)",
                        "environments": ["uml"], "labels": {"uml": "UML"}},
                       {"table": "boot-totals", "title": "start-up (virtualized)",
                        "environments": ["uml-virt"], "labels": {"uml-virt": "UML"}}]}
    campaign = Campaign(store, {"uml": {"kind": "uml"},
                                "uml-virt": {"kind": "uml", "inside": "tcg"}}, plan=plan)
    for env in ("uml", "uml-virt"):
        campaign.run(env, "boot", [("boot_powered_off", "ms", 900.0)])
    text = markdown.render(reading.load(store, str(campaign.id)))
    setup = text.split("### Setup")[1].split("\n\n")[1].splitlines()
    assert setup[2].startswith("| UML | ") and setup[3].startswith("| UML (uml-virt)"), setup
    assert "in an L1 guest under TCG" in setup[3] and "L1" not in setup[2]


SHAPED = """\
[[table]]
table = "basic"
title = "Cycles per operation"
environments = ["native", "runc", "uml"]
labels = { uml = "UML", runc = "runc 1.1" }
workloads = ["getpid", "sched_yield"]
decimals = 0

[[table]]
table = "stream"
environments = ["native", "uml"]
"""


def test_a_style_file_s_tables_reshape_a_stored_campaign_without_a_rerun(stored, tmp_path):
    """A plan without [[table]] entries, shaped at report time: which tables, their
    environments in order, workloads, title, labels and decimals; the style's tables replace
    the plan's (this one has none), as `--table plan` gives them too."""
    style = tmp_path / "shaped.toml"
    style.write_text(SHAPED)
    shown = report(stored, "--style", str(style), "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert "### Cycles per operation" in text
    header = next(line for line in text.splitlines() if line.startswith("| activity"))
    assert re.fullmatch(r"\| activity \| native \| runc 1\.1 \| UML \|", header), header
    rows = [line for line in text.split("### Cycles per operation")[1].split("###")[0]
            .splitlines() if line.startswith("| ") and not line.startswith("| activity")]
    assert [row.split("|")[1].strip() for row in rows] == ["getpid", "sched_yield"], rows
    assert all(re.fullmatch(r"\d+( \[\d\])?", cell.strip())
               for row in rows for cell in row.split("|")[2:-1]), rows  # decimals = 0
    assert "STREAM" in text and "crun" not in text.split("### Cycles")[1]
    again = report(stored, "--style", str(style), "--table", "plan")
    assert again.exit_code == 0 and "Cycles per operation" in again.stdout


def test_the_command_line_s_label_beats_the_style_s_and_the_entry_s(stored, tmp_path):
    """A [[table]] entry's labels once beat --label: the latest word is the user's."""
    style = tmp_path / "labels.toml"
    style.write_text(SHAPED + '\n[report]\nlabels = { native = "host" }\n')
    shown = report(stored, "--style", str(style), "--label", "uml=User-Mode Linux",
                   "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    header = next(line for line in shown.stdout.splitlines() if line.startswith("| activity"))
    assert header == "| activity | host | runc 1.1 | User-Mode Linux |", header


def test_an_empty_named_table_says_which_workload_fills_it(stored):
    shown = report(stored, "--table", "bonnie", "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    assert ("nothing to show: this campaign has no figures of bonnie, which the bonnie table "
            "shows (fix: run bonnie: a [[workload]] of the plan)") in shown.stdout


ROWED = """\
[[table]]
table = "basic"
environments = ["native", "runc", "uml"]
workloads = ["getpid", "sched_yield", "malloc_1mib"]
decimals = 0
row_decimals = { getpid = 2, "malloc*" = 1 }
headers = { native = "host", uml = "User-Mode Linux" }
"""


def test_decimals_per_row_and_headers_in_the_reader_s_words(stored, tmp_path):
    """A table's decimals, a row's own where the entry names it (by the name the table
    shows, or a pattern), and headers renamed; the rows not named keep the table's."""
    style = tmp_path / "rowed.toml"
    style.write_text(ROWED)
    shown = report(stored, "--style", str(style), "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.split("### ")[-1].splitlines()
    header = next(line for line in lines if line.startswith("| activity"))
    assert header == "| activity | host | runc | User-Mode Linux |", header

    def cells(name):
        row = next(line for line in lines if line.startswith(f"| {name} "))
        return [re.sub(r" \[\d\]$", "", cell.strip()) for cell in row.split("|")[2:-1]]

    assert all(re.fullmatch(r"\d+\.\d\d", cell) for cell in cells("getpid")), cells("getpid")
    assert all(re.fullmatch(r"\d+", cell) for cell in cells("sched_yield"))
    assert all(re.fullmatch(r"\d+\.\d", cell) for cell in cells("malloc 1 MiB"))


def test_a_stored_plan_s_entry_naming_no_row_is_a_note_not_an_error(store) -> None:
    """A stored plan cannot be corrected, so its entry's unknown row or header is said
    under the table, and the report goes on (exit 0 from the command)."""
    from guestbench.commands import reading
    from guestbench.report.formats import markdown
    from tests.support import default_like
    default_like.write(store, plan={"tables": [
        {"table": "basic", "row_decimals": {"getpdi": 1}, "headers": {"nativ": "host"}}]})
    text = " ".join(markdown.render(reading.load(store)).split())  # lines joined
    assert "row_decimals: 'getpdi' names no row of the basic table (its rows: getpid," in text
    assert "headers: 'nativ' names no column of the basic table" in text
