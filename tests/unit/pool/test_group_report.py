"""report --group: one plan's campaigns on several pool hosts, side by side (fake
environment, both store backends)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from guestbench.cli import EXIT_BAD_INPUT, main
from guestbench.runner import Runner
from guestbench.store import pool as pool_rows

from tests.support.runner import QUIET_HOST


def test_a_group_shows_one_column_per_host_and_environment(build_plan, store, host,
                                                           tmp_path) -> None:
    plan = build_plan([{"name": "base", "kind": "fake"}, {"name": "vm", "kind": "fake",
                                                          "scale": 2.0}],
                      [{"name": "getpid"}], repeat=3)
    group = pool_rows.create_group(store.engine, "small", "(plan text)", "small.toml",
                                   ["alpha", "beta"])
    for name in ("alpha", "beta"):
        Runner(plan, store, host, tmp_path / "logs", Path("/bin/true"),
               snapshot_host=lambda host: QUIET_HOST,
               pool={"group_id": group, "pool_host": name}).run()
    url = store.engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["report", "--group", "small", "--db", url])
    assert result.exit_code == 0, result.output
    for column in ("alpha base", "alpha vm", "beta base", "beta vm"):
        assert column in result.output
    assert "Test CPU 3000" in result.output  # each host's facts
    assert max(len(line) for line in result.output.splitlines()) <= 120

    missing = CliRunner().invoke(main, ["report", "--group", "nope", "--db", url])
    assert missing.exit_code == EXIT_BAD_INPUT and "no campaign group 'nope'" in missing.output


def test_compare_of_two_hosts_of_a_group_says_the_hosts_differ(build_plan, store, host,
                                                               tmp_path) -> None:
    plan = build_plan([{"name": "base", "kind": "fake"}], [{"name": "getpid"}], repeat=5)
    group = pool_rows.create_group(store.engine, "g", "(plan)", "g.toml", ["alpha", "beta"])
    ids = [Runner(plan, store, host, tmp_path / "logs", Path("/bin/true"),
                  snapshot_host=lambda host: QUIET_HOST,
                  pool={"group_id": group, "pool_host": name}).run()
           for name in ("alpha", "beta")]
    url = store.engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["compare", *map(str, ids), "--db", url])
    assert result.exit_code == 0, result.output
    assert "The hosts differ in pool host (alpha / beta)" in " ".join(result.output.split())
    by_host = CliRunner().invoke(main, ["compare", "alpha", "beta", "--group", "g", "--db", url,
                                        "--format", "json"])
    assert by_host.exit_code == 0, by_host.output
    assert '"id": %d' % ids[0] in by_host.output and '"id": %d' % ids[1] in by_host.output
    unknown = CliRunner().invoke(main, ["compare", "alpha", "gamma", "--group", "g", "--db", url])
    assert unknown.exit_code == EXIT_BAD_INPUT, unknown.output
    assert "host 'gamma' has no campaign in group" in unknown.output
    assert "name one of alpha, beta" in unknown.output


def test_by_host_gives_each_host_its_own_tables(build_plan, store, host, tmp_path) -> None:
    """--by host: the "four machines" layout of the Seoul write-up, one table per machine
    under its name and facts, from one command over the pooled store."""
    plan = build_plan([{"name": "base", "kind": "fake"}, {"name": "vm", "kind": "fake",
                                                          "scale": 2.0}],
                      [{"name": "getpid"}], repeat=3)
    group = pool_rows.create_group(store.engine, "machines", "(plan)", "m.toml",
                                   ["alpha", "beta"])
    ids = {name: Runner(plan, store, host, tmp_path / "logs", Path("/bin/true"),
                        snapshot_host=lambda host: QUIET_HOST,
                        pool={"group_id": group, "pool_host": name}).run()
           for name in ("alpha", "beta")}
    url = store.engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["report", "--group", "machines", "--by", "host",
                                       "--format", "markdown", "--table", "measured",
                                       "--plain", "--label", "vm=VM", "--db", url])
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.startswith("# Group ") and "2 hosts, one report each" in text
    alpha, beta = text.index("## alpha: Test CPU 3000"), text.index("## beta: Test CPU 3000")
    assert alpha < beta and f"(campaign {ids['alpha']})" in text[alpha:beta]
    for part in (text[alpha:beta], text[beta:]):  # each host: its own measured table
        assert part.count("### Measured") == 1
        assert "| workload | metric | base | VM |" in part
    for args, said in ((["--by", "host"], "add --group G"),
                       (["--group", "machines", "--by", "host", "--format", "json"],
                        "table or Markdown")):
        refused = CliRunner().invoke(main, ["report", *args, "--db", url])
        assert refused.exit_code == EXIT_BAD_INPUT and said in refused.output, refused.output
