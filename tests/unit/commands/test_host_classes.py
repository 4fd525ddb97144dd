"""compare, ab and history across host classes: another CPU model or kernel is said before
any verdict, and --fail-on-regression refuses to judge it unless --across-hosts (campaigns
written straight into a store with the facts of each host; real CLI)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from guestbench import store as gb_store
from guestbench.store.records import RunRecord
from tests.support.cli import invoke
from tests.support.facts import AMD_EPYC, INTEL_XEON, STARTED

SPREAD = (0.96, 0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.05)
# what a store written before guestbench recorded the CPU's vendor and XSAVE size holds
OLDER_EPYC = {key: value for key, value in AMD_EPYC.items()
              if key not in ("cpu_vendor", "xsave_bytes")}


def write(url: str, facts: dict, scale: float = 1.0, started: dt.datetime = STARTED) -> int:
    """A finished campaign of getpid in one environment, its runs around 100 ns x scale."""
    opened = gb_store.open(url)
    try:
        campaign = opened.create_campaign("nightly", {"source": "test"}, facts, "fp", None,
                                          "/logs", "0.1.0")
        env = opened.add_environment(campaign, "vm", "fake", {"name": "vm", "kind": "fake"},
                                     True, "ok", 0)
        for repetition, factor in enumerate(SPREAD):
            opened.add_run(campaign, RunRecord(
                env, "getpid", "getpid", {}, repetition, "ok", "", started, 0.5, None,
                (("time_per_op", "ns", 100 * scale * factor),)))
        opened.finish_campaign(campaign, "finished")
        return campaign
    finally:
        opened.engine.dispose()


def compare(url: str, fake_agent, *args: str):
    return invoke(["compare", "1", "2", "--db", url, *args], fake_agent)


WARNING = ("A and B ran on different hosts: CPU AMD EPYC (AuthenticAMD) vs Intel(R) Xeon(R) "
           "Processor (GenuineIntel); XSAVE 2440 B vs 11008 B; LLC 32 MiB vs 480 MiB; kernel "
           "6.18.44 vs 6.18.50: a difference below may be the host's, not the change's")


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_another_cpu_is_said_before_the_verdicts(sqlite_url, fake_agent) -> None:
    write(sqlite_url, AMD_EPYC), write(sqlite_url, INTEL_XEON, scale=1.2)
    shown = compare(sqlite_url, fake_agent)
    assert shown.exit_code == 0, shown.output
    text = one_line(shown.stdout)
    assert text.startswith(WARNING), text[:400]
    assert text.index(WARNING) < text.index("Compare: A = campaign 1") < text.index("SLOWER")
    assert "Host classes" in text and "Intel(R) Xeon(R) Processor (GenuineIntel)" in text
    markdown = compare(sqlite_url, fake_agent, "--format", "markdown")
    assert one_line(markdown.stdout).startswith(WARNING), markdown.stdout[:400]


def test_the_gate_refuses_hosts_of_another_class_unless_across_hosts(sqlite_url,
                                                                      fake_agent) -> None:
    write(sqlite_url, AMD_EPYC), write(sqlite_url, INTEL_XEON, scale=1.2)
    refused = compare(sqlite_url, fake_agent, "--fail-on-regression")
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "A and B ran on different hosts (CPU AMD EPYC" in refused.output
    assert "kernel 6.18.44 vs 6.18.50" in refused.output and "--across-hosts" in refused.output
    assert "SLOWER" not in refused.output  # nothing judged
    gated = compare(sqlite_url, fake_agent, "--fail-on-regression", "--across-hosts")
    assert gated.exit_code == 1, gated.output  # B is 20% slower: the verdict's own exit
    assert one_line(gated.stdout).startswith(WARNING)
    assert "1 cell(s) slower in B (--fail-on-regression)" in gated.stderr


def test_across_hosts_passes_the_gate_where_b_is_the_same(sqlite_url, fake_agent) -> None:
    write(sqlite_url, AMD_EPYC), write(sqlite_url, INTEL_XEON)
    gated = compare(sqlite_url, fake_agent, "--fail-on-regression", "--across-hosts")
    assert gated.exit_code == 0, gated.output
    assert one_line(gated.stdout).startswith(WARNING)


def test_one_cpu_and_kernel_on_two_machines_is_one_class(sqlite_url, fake_agent) -> None:
    write(sqlite_url, AMD_EPYC)
    write(sqlite_url, {**AMD_EPYC, "hostname": "other", "cgroup_mode": "v2"}, scale=1.2)
    shown = compare(sqlite_url, fake_agent, "--fail-on-regression")
    assert shown.exit_code == 1, shown.output  # judged: B is slower
    assert "different hosts" not in shown.output
    text = one_line(shown.stdout)
    assert "The hosts differ in hostname (epyc / other), class (listed below)" in text
    assert "| cgroup | hybrid | v2 |" in text
    assert "The hosts differ (cgroup hybrid vs v2) but share their CPU and kernel" in text


def test_a_store_older_than_the_new_facts_gives_no_false_warning(sqlite_url,
                                                                 fake_agent) -> None:
    write(sqlite_url, OLDER_EPYC), write(sqlite_url, AMD_EPYC)
    shown = compare(sqlite_url, fake_agent, "--fail-on-regression", "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert shown.stderr == ""
    classes = json.loads(shown.stdout)["host_classes"]
    assert classes["apart"] is None and classes["differences"] == []
    assert classes["a"]["xsave_bytes"] is None and classes["b"]["xsave_bytes"] == 2440


def test_the_json_document_has_both_classes_and_the_warning_goes_to_stderr(sqlite_url,
                                                                          fake_agent) -> None:
    write(sqlite_url, AMD_EPYC), write(sqlite_url, INTEL_XEON, scale=1.2)
    shown = compare(sqlite_url, fake_agent, "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert one_line(shown.stderr) == "guestbench: " + WARNING.replace(
        "a difference below", "a difference in the verdicts")
    classes = json.loads(shown.stdout)["host_classes"]
    assert classes["a"]["cpu_vendor"] == "AuthenticAMD"
    assert classes["b"]["text"] == ("Intel(R) Xeon(R) Processor (GenuineIntel), XSAVE 11008 B, "
                                    "LLC 480 MiB, cgroup hybrid, kernel 6.18.50, VM")
    assert classes["apart"].startswith("CPU AMD EPYC (AuthenticAMD) vs Intel")


AB_PLAN = """\
[campaign]
name = "ab"
repeat = 5

[[environment]]
name = "f"
kind = "fake"

[[workload]]
name = "getpid"
"""


def test_ab_takes_across_hosts_as_compare_does(tmp_path, fake_agent) -> None:
    """Both sides of ab run on this host: never apart, and the flag is compare's."""
    plan = tmp_path / "ab.toml"
    plan.write_text(AB_PLAN)
    result = invoke(["ab", str(plan), "--b", "scale=1.0", "--db",
                     f"sqlite:///{tmp_path / 'ab.sqlite'}", "--fail-on-regression",
                     "--across-hosts"], fake_agent)
    assert result.exit_code == 0, result.output
    assert "different hosts" not in result.output


# -- history ------------------------------------------------------------------------------

def _series_over_a_kernel_update(url: str, older_first: bool = False) -> None:
    """Eight campaigns of one host: its kernel updated from the fifth on, which is slower."""
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    for number in range(8):
        facts = {**AMD_EPYC, "kernel": "6.18.44" if number < 4 else "6.18.50"}
        if older_first and number == 0:
            facts = {**OLDER_EPYC}
        write(url, facts, scale=(1.0 if number < 4 else 1.3) * (1 + 0.004 * (number % 3)),
              started=start + dt.timedelta(days=number))


def test_history_says_where_the_series_cross_host_classes(sqlite_url, fake_agent) -> None:
    _series_over_a_kernel_update(sqlite_url, older_first=True)
    table = invoke(["history", "--db", sqlite_url], fake_agent)
    assert table.exit_code == 0, table.output
    text = one_line(table.stdout)
    said = ("The series cross host classes (from campaign 5 (")
    assert text.startswith(said), text[:300]
    assert "on, after campaign 4: kernel 6.18.44 vs 6.18.50): a change point there may be the " \
        "host's" in text
    assert text.index(said) < text.index("History: 8 finished campaigns")
    assert "campaign 5: +" in text and "(host class) [1]" in text
    assert "[1] campaign 5 ran on another host class than the campaign before it (kernel " \
        "6.18.44 vs 6.18.50)" in text
    document = json.loads(invoke(["history", "--db", sqlite_url, "--format", "json"],
                                 fake_agent).stdout)
    assert [(one["campaign"], one["previous"], one["differences"])
            for one in document["host_crossings"]] == [(5, 4, "kernel 6.18.44 vs 6.18.50")]
    [change] = document["series"][0]["change_points"]
    assert change["campaign"] == 5 and change["host_class_changed"] == "kernel 6.18.44 vs 6.18.50"
    assert document["campaigns"][0]["host_class"]["cpu_vendor"] is None  # the older store's
    assert document["campaigns"][1]["host_class"]["cpu_vendor"] == "AuthenticAMD"


def test_history_of_one_class_says_nothing_of_hosts(sqlite_url, fake_agent) -> None:
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    for number in range(5):  # the first from a store older than the vendor and XSAVE facts
        write(sqlite_url, OLDER_EPYC if number == 0 else AMD_EPYC,
              started=start + dt.timedelta(days=number))
    table = invoke(["history", "--db", sqlite_url], fake_agent)
    assert table.exit_code == 0, table.output
    assert "host class" not in table.output
    document = json.loads(invoke(["history", "--db", sqlite_url, "--format", "json"],
                                 fake_agent).stdout)
    assert document["host_crossings"] == []


def test_the_history_page_says_where_the_series_cross(sqlite_url, fake_agent, tmp_path) -> None:
    _series_over_a_kernel_update(sqlite_url)
    page = tmp_path / "history.html"
    result = invoke(["history", "--db", sqlite_url, "--format", "html", "-o", str(page)],
                    fake_agent)
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert 'id="host-classes"' in text and "The series cross host classes" in text
    assert text.index("The series cross host classes") < text.index('id="summary"')


@pytest.mark.parametrize("facts, line", [
    (AMD_EPYC, "AMD EPYC (AuthenticAMD), XSAVE 2440 B, LLC 32 MiB, cgroup hybrid, "
               "kernel 6.18.44, VM"),
    (OLDER_EPYC, "AMD EPYC, XSAVE unknown, LLC 32 MiB, cgroup hybrid, kernel 6.18.44, VM"),
])
def test_the_class_in_one_line(facts, line) -> None:
    from guestbench.host import host_class
    assert host_class(facts).line() == line
