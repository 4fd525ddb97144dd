"""`report A B`: two campaigns of one plan, run with two versions of a VMM, shown as one, as
the Seoul write-up's "nova (19.02)" and "nova" rows: one row per campaign in the scaling
table, a column per campaign in the versions table."""

from __future__ import annotations

from click.testing import CliRunner

from guestbench.cli import main
from tests.support.campaigns import Campaign

SPECS = {f"tcg-vcpus{vcpus}-placement{placement}": {"kind": "qemu", "vcpus": vcpus,
                                                    "placement": placement}
         for vcpus in (1, 2) for placement in ("same", "disjoint")}
# build seconds per (vCPUs, placement): the older VMM a little slower at 1 (d)
SECONDS = {"old": {(1, "same"): None, (1, "disjoint"): 717.0, (2, "same"): None,
                   (2, "disjoint"): 396.0},
           "new": {(1, "same"): 754.0, (1, "disjoint"): 719.0, (2, "same"): 399.0,
                   (2, "disjoint"): 390.0}}


def _campaign(store, which: str) -> int:
    campaign = Campaign(store, SPECS)
    for name, spec in SPECS.items():
        seconds = SECONDS[which][(spec["vcpus"], spec["placement"])]
        for jitter in (0.999, 1.0, 1.001):
            if seconds is None:
                campaign.run(name, "build", [], label="build", status="unsupported",
                             reason="not measured in 19.02")
                continue
            campaign.run(name, "build", [("elapsed", "s", seconds * jitter)], label="build",
                         params={"cache": "warm", "units": 48, "jobs": 2})
    return campaign.id


def report(store_url: str, *args: str):
    return CliRunner().invoke(main, ["report", *args, "--db", store_url],
                              env={"COLUMNS": "200"})


def test_two_versions_are_rows_of_one_scaling_table(store, store_url) -> None:
    old, new = _campaign(store, "old"), _campaign(store, "new")
    shown = report(store_url, f"{old}=19.02", f"{new}=", "--table", "scaling", "--plain",
                   "--format", "markdown", "--baseline", "tcg-vcpus1-placementdisjoint")
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.stdout.splitlines() if line.startswith("| tcg")]
    # the seed: "nova (19.02) | - | 717s (+0%) | - | 396s (-45%)", "nova | 754s (+5%) | ..."
    assert lines[0].startswith("| tcg (19.02) | n/a"), lines
    assert "| 717 (-0%) |" in lines[0] and "| 396 (-45%) |" in lines[0], lines
    assert lines[1].startswith("| tcg | 754 (+5%) | 719 (+0%) | 399 (-45%) | 390 (-46%)"), lines


def test_a_column_per_campaign_in_the_versions_table(store, store_url) -> None:
    old, new = _campaign(store, "old"), _campaign(store, "new")
    shown = report(store_url, f"{old}=19.02", f"{new}=current", "--table", "versions",
                   "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    assert "### Versions of tcg-vcpus1-placementdisjoint (campaigns)" in shown.stdout
    assert "| workload | metric | 19.02 | current |" in shown.stdout
    assert "| build | elapsed (s) | 717 | +0.28%" in shown.stdout


def test_bad_campaign_lists_are_exit_2_with_the_fix(store, store_url) -> None:
    old, new = _campaign(store, "old"), _campaign(store, "new")
    for args, said in (((f"{old}=a",), "a tag names a campaign's rows among several"),
                       ((f"{old}=a", f"{old}=b"), f"campaign {old} is named twice"),
                       ((f"{old}=x", f"{new}=x"), "would both read"),
                       ((f"{old}=a", f"{new}=b", "--baseline", "tcg"), "none of the joined"),
                       (("=a", f"{new}"), "no campaign before '='")):
        shown = report(store_url, *args)
        assert shown.exit_code == 2, (args, shown.output)
        assert said in shown.output and "fix:" in shown.output, (args, shown.output)
        assert "Traceback" not in shown.output
