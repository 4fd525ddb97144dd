"""bonnie++: its command line, its CSV line parsed into figures, +++++ turned into too-fast
flags, and the seed's tables (sequential output/input, seeks, create, % of native)."""

from __future__ import annotations

from pathlib import Path

import pytest

from guestbench.plan.build import load
from guestbench.plan.errors import PlanError
from guestbench.workloads import CATALOGUE
from guestbench.workloads.base import OutputError, RunOutput
from guestbench.workloads.bonnie import BonnieParams, bonnie_command, derive
from tests.support.campaigns import Campaign, row
from tests.support.samples import THREE

DATA = Path(__file__).parents[1] / "data" / "tools"


def parsed(name: str, **given):
    params = CATALOGUE["bonnie"].resolve(given, None)
    made = derive(params, RunOutput([], (DATA / name).read_text(), "", [], {}))
    return {metric: (unit, value) for metric, unit, value in made.samples}, made.flags


def test_the_command_is_quiet_one_pass_in_the_scratch_folder() -> None:
    command = bonnie_command(BonnieParams(size_mib=256, ram_mib=128, files=4))
    assert command[:3] == ["bonnie++", "-d", "."]
    assert command[command.index("-s") + 1] == "256" and command[command.index("-n") + 1] == "4"
    assert "-q" in command and command[command.index("-u") + 1] == "0:0"


def test_a_file_under_twice_the_ram_is_refused_before_running(write_plan, host) -> None:
    path = write_plan('[[environment]]\nname = "native"\nkind = "native"\n\n'
                      '[[workload]]\nname = "bonnie"\nsize_mib = 100\nram_mib = 64\n')
    with pytest.raises(PlanError, match=r"size_mib 100 is under twice ram_mib 64.*size_mib >= 128"):
        load(path, host)


def test_figures_cpu_and_latency_of_a_2_gib_run_recorded_here() -> None:
    samples, flags = parsed("bonnie-2g.native.txt")
    assert samples["out_char"] == ("KiB/s", 1303.0) and samples["out_char_cpu"] == ("%", 97.0)
    assert samples["out_block"] == ("KiB/s", 818486.0)
    assert samples["rewrite"] == ("KiB/s", 1530145.0)
    assert samples["in_char"] == ("KiB/s", 2146.0)
    assert samples["seeks"] == ("seeks/s", 12829.0) and samples["seeks_cpu"] == ("%", 68.0)
    assert samples["seq_create"] == ("files/s", 7227.0)
    assert samples["rand_create"] == ("files/s", 27766.0)
    assert samples["out_char_latency"] == ("us", 27833.0)
    assert samples["rand_create_latency"] == ("us", 12146.0)
    # +++++: input per block came from the page cache too fast; files read and deleted too
    assert flags == ["too-fast:in_block", "too-fast:seq_read", "too-fast:seq_delete",
                     "too-fast:rand_read", "too-fast:rand_delete"]
    assert "in_block" not in samples and "in_block_cpu" not in samples


def test_a_small_run_is_mostly_too_fast() -> None:
    samples, flags = parsed("bonnie-256m.native.txt")
    assert set(samples) == {"out_char", "out_char_cpu", "out_char_latency", "in_char",
                            "in_char_cpu", "in_char_latency", "rand_create", "rand_create_cpu",
                            "rand_create_latency"}
    assert "too-fast:out_block" in flags and "too-fast:seq_create" in flags


def test_output_without_the_csv_line_fails_with_what_was_printed() -> None:
    params = CATALOGUE["bonnie"].resolve({}, None)
    with pytest.raises(OutputError, match="no bonnie\\+\\+ CSV line.*Can't open file"):
        derive(params, RunOutput([], "Can't open file ./Bonnie.123", "", [], {}))


def test_every_figure_too_fast_is_a_result_of_flags_alone() -> None:
    line = "1.98,2.00a,g,1,1,8M,,8192,5" + ",+++++,+++" * 6 + ",1" + ",,,," + ",+++++,+++" * 6
    params = CATALOGUE["bonnie"].resolve({}, None)
    made = derive(params, RunOutput([], line, "", [], {}))
    assert made.samples == [] and len(made.flags) == 12


def test_a_line_without_any_figure_fails() -> None:
    line = "1.98,2.00a,g,1,1,8M,,8192,5" + ",," * 6 + ",0" + ",,,," + ",," * 6
    params = CATALOGUE["bonnie"].resolve({"files": 0}, None)
    with pytest.raises(OutputError, match="holds no figure"):
        derive(params, RunOutput([], line, "", [], {}))


@pytest.fixture
def bonnie(store) -> Campaign:
    campaign = Campaign(store, {"native": {}, "tcg": {"kind": "qemu"}}, baseline="native")
    for env, factor in (("native", 1.0), ("tcg", 4.0)):
        for jitter in THREE:
            samples = [("out_char", "KiB/s", 1300 / factor * jitter), ("out_char_cpu", "%", 97.0),
                       ("out_block", "KiB/s", 800e3 / factor * jitter),
                       ("out_block_cpu", "%", 75.0), ("seeks", "seeks/s", 12e3 / factor * jitter),
                       ("seeks_cpu", "%", 68.0)]
            flags = ("too-fast:seq_create", "too-fast:in_block") if env == "native" else ()
            if env == "tcg":
                samples += [("seq_create", "files/s", 900 * jitter), ("in_block", "KiB/s", 9e4)]
            campaign.run(env, "bonnie", samples, params={"size_mib": 1024, "files": 4},
                         flags=flags)
    return campaign


def test_tables_have_the_seeds_rows_with_plus_signs(bonnie: Campaign) -> None:
    tables = bonnie.tables()
    output = tables["bonnie-output"]
    assert output.header == ["environment", "per chr KB/s", "%CPU", "block KB/s", "%CPU",
                             "rewrite KB/s", "%CPU"]
    assert "file 1024 MiB, 4k small files" in output.title
    native = row(output, "native")
    assert native[1].startswith("1300 ±") and native[2] == "97"
    assert native[5] == "-"  # rewrite: no figure and no flag
    create = tables["bonnie-seq-create"]
    assert row(create, "native")[1:3] == ["+++++", "+++"]
    assert row(create, "tcg")[1].startswith("900 ±")
    assert row(tables["bonnie-input"], "native")[3:5] == ["+++++", "+++"]
    assert tables["bonnie-seeks"].header == ["environment", "seeks /s", "%CPU"]
    assert "bonnie-rand-create" not in tables  # no run gave or flagged a random create
    percent = tables["bonnie-percent"]
    assert percent.header == ["environment", "out per chr", "out block", "rewrite",
                              "in per chr", "in block", "seeks"]
    # the baseline is 100 of itself even where bonnie++ could not time it; a share of
    # +++++ is no number: n/a (the note says why)
    assert row(percent, "native")[1:] == ["100", "100", "-", "-", "100", "100"]
    assert row(percent, "tcg")[1:3] == ["25", "25"] and row(percent, "tcg")[5] == "n/a"
