"""A plan's [[table]] entries: checked against the catalogue and the plan, stored with the
campaign, read back from any stored plan without raising; bad ones exit 2 naming the field."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench.cli import main
from guestbench.plan.build import load, stored
from guestbench.plan.errors import PlanError
from guestbench.plan.schema import Overrides
from guestbench.plan.tables import TableSpec, matches, ordered, table_specs, unreadable
from guestbench.plan.catalogue import NAMES

PLAN = """
[[environment]]
preset = "native"

[[environment]]
name = "qemu"
kind = "qemu"
vcpus = [1, 2]

[[environment]]
preset = "uml"

[[workload]]
name = "getpid"

[[workload]]
name = "upload"
mode = ["write", "no_write"]
environments = ["uml", "qemu-*"]
"""


def with_table(body: str) -> str:
    return f"{PLAN}\n[[table]]\n{body}\n"


# (the [[table]] entry, the field path the message names, a part of the message)
BAD_TABLES = [
    pytest.param('table = "boots"', "table[0].table",
                 "unknown table 'boots'; did you mean 'boot'? (fix: use one of measured, ratios",
                 id="unknown-table"),
    pytest.param('title = "x"', "table[0].table", "Field required (fix: add it)",
                 id="no-table"),
    pytest.param('table = "basic"\nenvironments = ["kvm"]', "table[0].environments",
                 "'kvm' matches no environment (fix: use one of native, qemu-vcpus1, "
                 "qemu-vcpus2, uml", id="unknown-environment"),
    pytest.param('table = "basic"\nenvironments = ["qemu"]', "table[0].environments",
                 "'qemu' matches no environment", id="swept-base-name"),
    pytest.param('table = "basic"\nenvironments = []', "table[0].environments",
                 "at least 1 item", id="no-environments"),
    pytest.param('table = "basic"\nlabels = { qemu-vcpu1 = "QEMU" }', "table[0].labels",
                 "'qemu-vcpu1' is not an environment of this plan; did you mean 'qemu-vcpus1'?",
                 id="unknown-labels-key"),
    pytest.param('table = "basic"\nlabels = { native = "host", uml = "host" }',
                 "table[0].labels", "'host' names two environments", id="one-label-twice"),
    pytest.param('table = "basic"\nlabels = { native = 1 }', "table[0].labels.native",
                 "valid string", id="label-not-a-string"),
    pytest.param('table = "basic"\nworkloads = ["getppid"]', "table[0].workloads",
                 "'getppid' matches no workload; did you mean 'getpid'? (fix: use one of "
                 "getpid, upload[mode=write], upload[mode=no_write], upload, or a pattern",
                 id="unknown-workload"),
    pytest.param('table = "basic"\nstatistic = "average"', "table[0].statistic",
                 "'median', 'mean' or 'best' (fix: use one of the values listed)",
                 id="bad-statistic"),
    pytest.param('table = "basic"\ndecimals = 10', "table[0].decimals",
                 "less than or equal to 9", id="decimals-too-many"),
    pytest.param('table = "basic"\ndecimals = -1', "table[0].decimals",
                 "greater than or equal to 0", id="decimals-negative"),
    pytest.param('table = "basic"\ndecimals = "2"', "table[0].decimals",
                 "(fix: give a whole number)", id="decimals-string"),
    pytest.param('table = "basic"\nplain = "yes"', "table[0].plain",
                 "(fix: give true or false)", id="plain-string"),
    pytest.param('table = "basic"\nenvironment = ["native"]', "table[0].environment",
                 "unknown key; did you mean 'environments'? (fix: remove it or check its "
                 "spelling; "
                 "allowed here: table, title, environments, labels", id="unknown-key"),
]


@pytest.mark.parametrize("entry, field, message", BAD_TABLES)
def test_a_bad_entry_is_refused_naming_its_field(write_plan, host, entry, field, message):
    path = write_plan(with_table(entry))
    with pytest.raises(PlanError) as refused:
        load(path, host)
    assert str(refused.value).startswith(f"{path}: {field}: ")
    assert message in str(refused.value)


@pytest.mark.parametrize("entry, field, message", BAD_TABLES)
def test_run_exits_2_with_one_line_and_writes_nothing(tmp_path, entry, field, message):
    plan_file = tmp_path / "bad.toml"
    plan_file.write_text(with_table(entry))
    db_file = tmp_path / "x.sqlite"
    # the plan is checked before the agent is looked for: none is needed
    result = CliRunner().invoke(main, ["run", str(plan_file), "--db", f"sqlite:///{db_file}",
                                       "--quiet"])
    assert result.exit_code == 2, result.output
    assert f"{plan_file}: {field}: " in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert not db_file.exists()


def test_the_second_entry_is_named_by_its_index(write_plan, host) -> None:
    path = write_plan(with_table('table = "basic"') + '\n[[table]]\ntable = "boots"\n')
    with pytest.raises(PlanError, match=r"table\[1\]\.table: unknown table 'boots'"):
        load(path, host)


def test_a_table_without_a_list_of_entries_says_how_to_write_one(write_plan, host) -> None:
    with pytest.raises(PlanError, match=r"plan.toml: table: Input should be a valid list "
                                        r"\(fix: .*one \[\[name\]\] header each\)"):
        load(write_plan(PLAN + '\n[table]\ntable = "basic"\n'), host)


SHAPED = with_table("""table = "basic"
environments = ["native", "qemu-*", "uml"]
labels = { qemu-vcpus1 = "QEMU 1 vCPU" }
workloads = ["getpid", "upload[mode=write]"]
statistic = "mean"
decimals = 0""") + """
[[table]]
table = "boot"
title = "Boot, powered off"
"""


def test_the_entries_are_kept_in_order_with_their_settings(write_plan, host) -> None:
    plan = load(write_plan(SHAPED), host)
    basic, boot = plan.tables
    assert (basic.table, boot.table) == ("basic", "boot")
    assert basic.labels == {"qemu-vcpus1": "QEMU 1 vCPU"}
    assert (basic.statistic, basic.decimals, basic.plain, basic.links) == ("mean", 0, True, False)
    assert (boot.title, boot.environments, boot.statistic, boot.spread) == (
        "Boot, powered off", None, None, None)


def test_they_are_stored_and_read_back(write_plan, host) -> None:
    plan = load(write_plan(SHAPED), host)
    document = json.loads(json.dumps(plan.as_dict()))  # as the store keeps it
    assert document["tables"][1] == {"table": "boot", "title": "Boot, powered off",
                                     "labels": {}, "plain": True, "links": False,
                                     "headers": {}, "row_decimals": {}}
    assert table_specs(document) == list(plan.tables)
    assert stored(document, "campaign 1").tables == plan.tables


def test_a_plan_without_entries_stores_none(write_plan, host) -> None:
    plan = load(write_plan(PLAN), host)
    assert plan.tables == ()
    assert "tables" not in plan.as_dict()
    assert table_specs(plan.as_dict()) == []
    assert stored(plan.as_dict(), "campaign 1").tables == ()


def test_a_stored_entry_no_longer_valid_is_left_out_and_said(write_plan, host) -> None:
    """A later guestbench may rename a table: the campaign's other entries still count."""
    document = load(write_plan(SHAPED), host).as_dict()
    document["tables"].insert(0, {"table": "renamed-since"})
    document["tables"].append({"table": "boot", "colour": "red"})
    assert [spec.table for spec in table_specs(document)] == ["basic", "boot"]
    left_out = unreadable(document)
    assert left_out[0].startswith("table[0].table: unknown table 'renamed-since'")
    assert left_out[1].startswith("table[3].colour: Extra inputs")
    assert table_specs({"tables": "basic"}) == [] and unreadable({"tables": "basic"})
    assert table_specs({"tables": ["basic"]}) == []


def test_the_env_flag_narrows_the_run_not_the_tables(write_plan, host) -> None:
    plan = load(write_plan(SHAPED), host, Overrides(environments=("native",)))
    assert [spec.name for spec in plan.environments] == ["native"]
    assert plan.tables[0].environments == ["native", "qemu-*", "uml"]


def test_every_catalogue_name_is_a_table() -> None:
    assert all(TableSpec(table=name).table == name for name in NAMES)


def test_a_label_matches_itself_despite_its_brackets() -> None:
    assert matches("upload[mode=write]", "upload[mode=write]")
    assert not matches("upload[mode=write]", "upload[mode=no_write]")
    assert matches("upload*", "upload[mode=no_write]")


def test_ordered_follows_the_patterns_and_gives_each_name_once() -> None:
    names = ["native", "qemu-vcpus1", "qemu-vcpus2", "uml"]
    assert ordered(["uml", "qemu-*", "qemu-vcpus1"], names) == ["uml", "qemu-vcpus1",
                                                                 "qemu-vcpus2"]
    assert ordered(None, names) == names


def test_the_results_page_lists_every_table() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "results.md").read_text()
    listed = page.split("**Each table has a stable name**")[1]
    assert all(f"| `{name}` |" in listed for name in NAMES)


def test_the_plan_format_pages_example_entries_load(write_plan, host) -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "plan-format.md").read_text()
    section = page.split("## Tables to publish: `[[table]]`")[1]
    # the indented block after the first paragraph, blank lines within it included
    block = section.split("\n\n", 2)[2].split("\n|")[0]
    example = "\n".join(line for line in block.splitlines() if line.startswith("    "))
    assert example.startswith("    [[table]]")
    environments = "".join(f'[[environment]]\npreset = "{name}"\n' for name in ("native", "uml"))
    text = environments + '[[environment]]\nname = "qemu"\nkind = "qemu"\n' \
        '[[workload]]\nname = "getpid"\n' + textwrap.dedent(example)
    plan = load(write_plan(text), host)
    assert [spec.table for spec in plan.tables] == ["basic", "boot-totals"]
    assert plan.tables[0].labels == {"qemu": "QEMU"}
