"""guestbench history: series over campaigns and Apache Otava's change points (fake
environment whose values are scaled per campaign; real CLI; SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from guestbench.analysis import history
from guestbench.analysis.history import Point, Series
from tests.support.cli import invoke
from tests.support.history import history_json, noisy
from tests.unit.conftest import HISTORY_PLAN


def test_a_slowdown_from_the_sixth_campaign_is_found_there(campaigns, store_url):
    campaigns(store_url, noisy(10, seed=3, slower_from=6))
    document = history_json(campaigns, store_url)
    [series] = [s for s in document["series"] if s["metric"] == "time_per_op"]
    assert len(series["points"]) == 10
    [change] = series["change_points"]
    sixth = series["points"][5]["campaign"]
    assert change["index"] == 5 and change["campaign"] == sixth
    assert change["worse"] and 0.07 < change["change"] < 0.13 and change["pvalue"] < 0.001
    assert document["method"]["name"].startswith("Apache Otava")


def test_ten_a_a_campaigns_have_no_change_point(campaigns, sqlite_url):
    campaigns(sqlite_url, noisy(10, seed=4))
    document = history_json(campaigns, sqlite_url)
    assert document["series"] and all(not s["change_points"] for s in document["series"])
    table = invoke(["history", "--db", sqlite_url], campaigns.agent)
    assert table.exit_code == 0 and "none" in table.output and "10" in table.output


def test_the_table_and_the_page_name_the_campaign_of_the_change(campaigns, sqlite_url,
                                                                tmp_path):
    campaigns(sqlite_url, noisy(8, seed=5, slower_from=5, by=1.3))
    table = invoke(["history", "--db", sqlite_url, "--detail"], campaigns.agent)
    assert table.exit_code == 0, table.output
    assert "+30" in table.output or "+29" in table.output or "+31" in table.output
    assert "campaign 5: +" in table.output and "% worse, p=" in table.output
    assert max(len(line) for line in table.output.splitlines()) <= 120
    page = tmp_path / "history.html"
    result = invoke(["history", "--db", sqlite_url, "--format", "html", "-o", str(page)],
                    campaigns.agent)
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.count("<svg") == 1 and 'class="change"' in text  # the primary metric
    assert "Apache Otava" in text


def test_filters_and_what_is_left_out(campaigns, sqlite_url):
    campaigns(sqlite_url, noisy(4, seed=6))
    campaigns(sqlite_url, [1.0], name="other")
    document = history_json(campaigns, sqlite_url, "--name", "nightly", "--workload", "getpid",
                            "--env", "vm")
    assert len(document["campaigns"]) == 4
    for args, words in ((["--env", "nope"], "no cell of those campaigns matches (--env nope)"),
                        (["--host", "elsewhere"], "no finished campaign matches (--host "),
                        (["--group", "7"], "no such campaign group"),
                        (["--output", "x.txt"], "--format json or html")):
        result = invoke(["history", "--db", sqlite_url, *args], campaigns.agent)
        assert result.exit_code == 2 and words in result.output, result.output


def test_no_store_is_a_clear_error(tmp_path, fake_agent):
    result = invoke(["history", "--db", f"sqlite:///{tmp_path}/none.sqlite"], fake_agent)
    assert result.exit_code == 2 and "Traceback" not in result.output


def _series(medians: list[float], versions: list[dict[str, str]]) -> Series:
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    return Series("h", "qemu", "boot", "boot_userspace", "ms", False, [
        Point(i + 1, "n", start + dt.timedelta(days=i), m, m * 0.99, m * 1.01, 5, v)
        for i, (m, v) in enumerate(zip(medians, versions))])


def test_a_change_point_names_the_versions_that_changed_there():
    old, new = {"vmm_version": "QEMU 7.2.0"}, {"vmm_version": "QEMU 8.0.0"}
    medians = [100, 101, 99, 100.5, 100, 90, 91, 89.5, 90.5, 90]
    one = _series(medians, [old] * 5 + [new] * 5)
    [change] = history.find_changes(one)
    assert change.index == 5 and change.campaign == 6
    assert change.versions_changed == {"vmm_version": ("QEMU 7.2.0", "QEMU 8.0.0")}
    assert not one.worse(change) and change.change == pytest.approx(-0.1, abs=0.01)


def test_too_few_or_flat_series_have_no_change_point():
    assert history.find_changes(_series([1, 2, 3], [{}] * 3)) == []
    assert history.find_changes(_series([5.0] * 8, [{}] * 8)) == []


def test_version_order_is_natural():
    points = _series([1, 2, 3], [{"guest_kernel": "6.1.10"}, {"guest_kernel": "6.1.9"},
                                 {"guest_kernel": "5.10.2"}]).points
    ordered = sorted(points, key=history.version_key)
    assert [p.versions["guest_kernel"] for p in ordered] == ["5.10.2", "6.1.9", "6.1.10"]


def test_memory_an_instance_holds_has_its_series(tmp_path, fake_agent) -> None:
    """history skipped MiB figures (2026-11-27): a footprint's PSS is now a series, in its
    own unit, beside the times."""
    import datetime as dt
    import json as json_module
    from guestbench import store as gb_store
    from guestbench.store.records import RunRecord
    from tests.support.cli import invoke
    url = f"sqlite:///{tmp_path / 'm.sqlite'}"
    opened = gb_store.open(url)
    for number, pss in enumerate((300.0, 300.2, 305.0, 305.1)):
        campaign = opened.create_campaign("mem", {"campaign": {"repeat": 3}}, {"cpu": "t"},
                                          "fp", None, "logs", "test")
        env = opened.add_environment(campaign, "vm", "qemu", {"kind": "qemu"}, True, "yes", 0)
        for repetition in range(3):
            opened.add_run(campaign, RunRecord(
                env, "footprint", "footprint", {}, repetition, "ok", "",
                dt.datetime(2026, 11, 20 + number, tzinfo=dt.timezone.utc), 1.0, None,
                (("footprint_pss", "MiB", pss + repetition / 100),
                 ("footprint_rss", "MiB", 2 * pss))))
        opened.finish_campaign(campaign, "finished")
    opened.engine.dispose()
    told = invoke(["history", "--db", url, "--format", "json"], fake_agent)
    assert told.exit_code == 0, told.output
    series = json_module.loads(told.output)["series"]
    assert [(one["workload"], one["metric"], one["unit"]) for one in series] == [
        ("footprint", "footprint_pss", "MiB")]
    assert len(series[0]["points"]) == 4 and series[0]["higher_is_better"] is False


def test_a_change_where_the_host_got_loaded_is_marked_and_each_campaign_has_its_noise(
        campaigns, sqlite_url, monkeypatch):
    """history showed a change point and nothing of the hosts' load (2026-11-27): here the
    campaigns from the fifth on are slower and their host was loaded."""
    from guestbench import host
    load = {"now": 0.3}
    monkeypatch.setattr(host, "load_now", lambda: load["now"])
    for number, scale in enumerate(noisy(8, seed=5, slower_from=5, by=1.3), start=1):
        load["now"] = 0.3 if number < 5 else 4.0
        campaigns(sqlite_url, [scale])
    document = history_json(campaigns, sqlite_url)
    assert [c["host_noise"]["load_avg_1min"] for c in document["campaigns"]] == [0.3] * 4 + [4.0] * 4
    [series] = [s for s in document["series"] if s["metric"] == "time_per_op"]
    [change] = series["change_points"]
    assert change["campaign"] == 5 and change["worse"]
    assert change["host_explained"].startswith("campaign 5's host was loaded (load 4.00 against 0.30")
    table = invoke(["history", "--db", sqlite_url, "--detail"], campaigns.agent)
    assert "(host) [1]" in table.output and "Host noise of each campaign" in table.output
    assert "4.00 while it ran" in table.output


@pytest.mark.parametrize("step_mib, kept", [(2.0, True), (0.3, False)])
def test_a_memory_series_changes_only_beyond_the_threshold_in_mib(step_mib, kept):
    """history judged memory by Otava's relative change alone (2026-11-27): 0.3 MiB more on
    a 5 MiB overhead was a change point, where compare calls it the same."""
    import dataclasses
    medians = [5.0, 5.01, 4.99, 5.0, 5.01, *(5.0 + step_mib + d for d in (0, 0.01, -0.01, 0, 0.01))]
    one = dataclasses.replace(_series(medians, [{}] * 10), label="footprint",
                              metric="footprint_overhead", unit="MiB")
    found = history.find_changes(one)
    assert len(found) == 1  # Otava finds both steps
    assert bool(history.beyond_memory_threshold(one, found, 1.0)) == kept
    timed = dataclasses.replace(one, metric="boot_userspace", unit="ms")
    assert history.beyond_memory_threshold(timed, found, 1.0) == found  # not memory


def test_an_environment_of_functional_figures_is_marked_with_its_legend(tmp_path, fake_agent):
    """As report does: the summary's row and each series' title name it with §, and the
    legend says why once; the JSON says it in a field."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    plan = tmp_path / "functional.toml"
    for scale in noisy(5, seed=8):
        plan.write_text(HISTORY_PLAN.format(name="nightly", scale=f"{scale:.6f}")
                        + '\n[[environment]]\nname = "dom0"\nkind = "fake"\n'
                          'functional = "Xen under emulation here"\n')
        assert invoke(["run", str(plan), "--db", url, "--quiet"], fake_agent).exit_code == 0
    table = invoke(["history", "--db", url, "--detail"], fake_agent)
    assert table.exit_code == 0, table.output
    rows = [line for line in table.output.splitlines() if line.startswith("| dom0")]
    assert rows and all(line.startswith("| dom0 § ") for line in rows), rows
    assert not [line for line in table.output.splitlines() if line.startswith("| vm §")]
    assert "dom0 § / getpid /" in table.output
    flat = " ".join(table.output.split())
    assert flat.count("§ functional figures only, kept out of geometric means (dom0: Fake "
                      "1.0): Xen under emulation here.") == 1
    document = json.loads(invoke(["history", "--db", url, "--format", "json"],
                                 fake_agent).output)
    assert document["functional"] == {"dom0": "Xen under emulation here"}
