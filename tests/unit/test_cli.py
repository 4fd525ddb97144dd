"""The command line end to end on bad input: exit code 2, a message naming file and field,
nothing written. And one happy path on the fake environment."""

from __future__ import annotations

import json

import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench import store as gb_store
from guestbench.cli import EXIT_BAD_INPUT, main
from tests.support.cli import GOOD_FAKE_PLAN, campaigns_in, invoke

BAD_PLANS = [
    pytest.param('[campaign]\nrepeat = 0\n[[environment]]\npreset = "native"\n'
                 '[[workload]]\nname = "getpid"\n', "campaign.repeat", id="repeat-zero"),
    pytest.param('[[environment]]\nname = "c"\nkind = "oci"\nruntime = "runc"\nruntim = "runc"\n'
                 '[[workload]]\nname = "getpid"\n', "environment[0].runtim", id="unknown-env-key"),
    pytest.param('[[environment]]\npreset = "native"\n[[workload]]\nname = "nope"\n',
                 "workload[0].name", id="unknown-workload"),
    pytest.param('[[environment]]\nname = "my env"\nkind = "native"\n'
                 '[[workload]]\nname = "getpid"\n', "environment[0].name", id="bad-name"),
    pytest.param("[campaign\n", "TOML syntax error", id="toml-syntax"),
]


@pytest.mark.parametrize("text, field", BAD_PLANS)
def test_bad_plan_exits_2_names_file_and_field_writes_nothing(tmp_path, fake_agent, text, field):
    plan_file = tmp_path / "bad.toml"
    plan_file.write_text(text)
    db_file = tmp_path / "x.sqlite"
    result = invoke(["run", str(plan_file), "--db", f"sqlite:///{db_file}", "--quiet"], fake_agent)
    assert result.exit_code == EXIT_BAD_INPUT == 2, result.output
    assert f"{plan_file}: {field}" in result.stderr
    assert "fix:" in result.stderr
    assert "Traceback" not in result.output
    assert not db_file.exists()
    assert not (tmp_path / "guestbench-logs").exists()


def test_bad_plan_leaves_an_existing_store_without_new_campaigns(tmp_path, fake_agent):
    db_file = tmp_path / "x.sqlite"
    gb_store.open(f"sqlite:///{db_file}").engine.dispose()
    plan_file = tmp_path / "bad.toml"
    plan_file.write_text(BAD_PLANS[0].values[0])
    result = invoke(["run", str(plan_file), "--db", f"sqlite:///{db_file}"], fake_agent)
    assert result.exit_code == 2
    assert campaigns_in(db_file) == []


def test_plan_is_validated_before_the_agent_is_looked_for(tmp_path):
    plan_file = tmp_path / "bad.toml"
    plan_file.write_text(BAD_PLANS[0].values[0])
    db_file = tmp_path / "x.sqlite"
    result = invoke(["run", str(plan_file), "--db", f"sqlite:///{db_file}"],
                    tmp_path / "no-such-agent")
    assert result.exit_code == 2
    assert "campaign.repeat" in result.stderr
    assert "agent binary is missing" not in result.output
    assert not db_file.exists()


def test_missing_agent_with_a_good_plan_exits_2_and_writes_nothing(tmp_path):
    plan_file = tmp_path / "good.toml"
    plan_file.write_text(GOOD_FAKE_PLAN)
    db_file = tmp_path / "x.sqlite"
    result = invoke(["run", str(plan_file), "--db", f"sqlite:///{db_file}"],
                    tmp_path / "no-such-agent")
    assert result.exit_code == 2
    assert "agent binary is missing" in result.stderr
    assert "GUESTBENCH_AGENT" in result.stderr
    assert not db_file.exists()


def test_missing_plan_file_exits_2(tmp_path, fake_agent):
    db_file = tmp_path / "x.sqlite"
    result = invoke(["run", str(tmp_path / "absent.toml"), "--db", f"sqlite:///{db_file}"],
                    fake_agent)
    assert result.exit_code == 2
    assert "absent.toml: no such plan file" in result.stderr
    assert not db_file.exists()


def test_unknown_env_flag_exits_2(tmp_path, fake_agent):
    db_file = tmp_path / "x.sqlite"
    result = invoke(["run", "--env", "native,docker", "--db", f"sqlite:///{db_file}"], fake_agent)
    assert result.exit_code == 2
    assert "--env: unknown environment 'docker'" in result.stderr
    assert not db_file.exists()


def test_store_folder_missing_exits_2(tmp_path, fake_agent):
    plan_file = tmp_path / "good.toml"
    plan_file.write_text(GOOD_FAKE_PLAN)
    result = invoke(["run", str(plan_file), "--db", f"sqlite:///{tmp_path}/nope/x.sqlite"],
                    fake_agent)
    assert result.exit_code == 2
    assert "does not exist" in result.stderr
    assert not (tmp_path / "nope").exists()


def test_run_then_report_on_the_fake_environment(tmp_path, fake_agent):
    plan_file = tmp_path / "good.toml"
    plan_file.write_text(GOOD_FAKE_PLAN)
    db_file = tmp_path / "x.sqlite"
    url = f"sqlite:///{db_file}"
    result = invoke(["run", str(plan_file), "--db", url, "--quiet"], fake_agent)
    assert result.exit_code == 0, result.output
    assert "campaign 1 stored" in result.stderr
    (row,) = campaigns_in(db_file)
    assert (row.name, row.status) == ("cli-fake", "finished")
    campaign_logs = Path(row.log_dir)
    assert campaign_logs.parent == tmp_path / "guestbench-logs" and campaign_logs.is_dir()

    report = invoke(["report", "--db", url, "--format", "markdown"], fake_agent)
    assert report.exit_code == 0, report.output
    assert "| workload | metric |" in report.stdout
    assert "Relative to" not in report.stdout  # the plan has no baseline (no native)

    ratio = invoke(["report", "1", "--db", url, "--format", "markdown", "--baseline", "base"],
                   fake_agent)
    assert ratio.exit_code == 0, ratio.output
    assert "Relative to base" in ratio.stdout
    assert "2.00x" in ratio.stdout

    wrong = invoke(["report", "--db", url, "--baseline", "nope"], fake_agent)
    assert wrong.exit_code == 2
    assert "--baseline: 'nope'" in wrong.stderr

    listing = invoke(["report", "--db", url, "--list"], fake_agent)
    assert listing.exit_code == 0
    assert "cli-fake" in listing.stdout and "finished" in listing.stdout
    as_json = invoke(["report", "--db", url, "--list", "--format", "json"], fake_agent)
    assert as_json.exit_code == 0, as_json.output
    [listed] = json.loads(as_json.stdout)
    assert (listed["id"], listed["name"], listed["status"]) == (1, "cli-fake", "finished")
    assert listed["created_at"].endswith("+00:00")
    as_csv = invoke(["report", "--db", url, "--list", "--format", "csv"], fake_agent)
    assert as_csv.exit_code == 2 and "--list: the campaigns are listed as lines or as JSON" \
        in as_csv.stderr


def test_report_of_a_missing_campaign_exits_2(tmp_path, fake_agent):
    url = f"sqlite:///{tmp_path / 'x.sqlite'}"
    gb_store.open(url).engine.dispose()  # an empty store
    result = invoke(["report", "42", "--db", url], fake_agent)
    assert result.exit_code == 2
    assert "no campaign '42'" in result.stderr


def test_report_never_creates_a_store(tmp_path, fake_agent):
    db_file = tmp_path / "typo.sqlite"
    result = invoke(["report", "--db", f"sqlite:///{db_file}"], fake_agent)
    assert result.exit_code == 2
    assert "no store at" in result.stderr and "fix:" in result.stderr
    assert not db_file.exists()


def test_two_stores_never_share_a_log_folder(tmp_path, fake_agent):
    plan_file = tmp_path / "good.toml"
    plan_file.write_text(GOOD_FAKE_PLAN)
    folders = []
    for db_name in ("one.sqlite", "two.sqlite"):  # both stores number their campaign 1
        db_file = tmp_path / db_name
        result = invoke(["run", str(plan_file), "--db", f"sqlite:///{db_file}", "--quiet"],
                        fake_agent)
        assert result.exit_code == 0, result.output
        folders.append(campaigns_in(db_file)[0].log_dir)
    assert folders[0] != folders[1]


# -- Ctrl-C and SIGTERM through the command line -------------------------------------

def invoke_expecting_stop(args: list[str], agent: Path):
    try:
        return invoke(args, agent)
    except KeyboardInterrupt:  # must never escape the command
        pytest.fail("KeyboardInterrupt escaped 'guestbench run'")


def test_ctrl_c_during_a_run_keeps_finished_runs(tmp_path, fake_agent, monkeypatch):
    from guestbench.environments.kinds.fake import Fake

    starts = {"n": 0}
    original = Fake.start

    def start(self, job, logdir, deadline_ns):
        starts["n"] += 1
        if starts["n"] == 3:
            raise KeyboardInterrupt
        return original(self, job, logdir, deadline_ns)

    monkeypatch.setattr(Fake, "start", start)
    plan_file = tmp_path / "good.toml"
    plan_file.write_text(GOOD_FAKE_PLAN)
    db_file = tmp_path / "x.sqlite"
    result = invoke_expecting_stop(["run", str(plan_file), "--db", f"sqlite:///{db_file}",
                                    "--quiet"], fake_agent)
    assert result.exit_code == 130
    assert "interrupted by SIGINT" in result.stderr
    assert "guestbench report 1" in result.stderr
    opened = gb_store.open(f"sqlite:///{db_file}")
    try:
        assert opened.campaign().status == "interrupted"
        assert [r.status for r in opened.runs(1)] == ["ok", "ok", "interrupted"]
    finally:
        opened.engine.dispose()


def test_sigterm_before_any_run(tmp_path, fake_agent, monkeypatch):
    signal_text, code = "SIGTERM", 143
    from guestbench.environments.kinds.fake import Fake

    def probe(self, host):
        raise KeyboardInterrupt(signal_text)

    monkeypatch.setattr(Fake, "probe", probe)
    plan_file = tmp_path / "good.toml"
    plan_file.write_text(GOOD_FAKE_PLAN)
    db_file = tmp_path / "x.sqlite"
    result = invoke_expecting_stop(["run", str(plan_file), "--db", f"sqlite:///{db_file}",
                                    "--quiet"], fake_agent)
    assert result.exit_code == code
    assert f"stopped by {signal_text} before any run" in result.stderr
    assert campaigns_in(db_file) == []


def test_ctrl_c_before_any_run_names_sigint(tmp_path, fake_agent, monkeypatch):
    from guestbench.environments.kinds.fake import Fake

    def probe(self, host):
        raise KeyboardInterrupt

    monkeypatch.setattr(Fake, "probe", probe)
    plan_file = tmp_path / "good.toml"
    plan_file.write_text(GOOD_FAKE_PLAN)
    result = invoke_expecting_stop(["run", str(plan_file), "--db",
                                    f"sqlite:///{tmp_path / 'x.sqlite'}", "--quiet"], fake_agent)
    assert result.exit_code == 130
    assert "stopped by SIGINT before any run" in result.stderr


@pytest.mark.parametrize("signal_text, code", [("SIGTERM", 143), ("", 130)])
def test_a_signal_while_a_command_prepares_is_one_line_and_the_shells_code(
        tmp_path, fake_agent, monkeypatch, signal_text, code):
    """Before the campaign's own handling (here: while the host's facts are read), a stop
    was click's 'Aborted!' with exit 1 (SIGINT), or a death by the signal (SIGTERM)."""
    from guestbench import host

    def collect():
        raise KeyboardInterrupt(signal_text)

    monkeypatch.setattr(host, "collect", collect)
    result = invoke_expecting_stop(["run", "--env", "native", "--db",
                                    f"sqlite:///{tmp_path / 'x.sqlite'}"], fake_agent)
    assert result.exit_code == code
    assert result.stderr.strip() == f"guestbench: stopped by {signal_text or 'SIGINT'}"


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_that_comes_out_as_another_error_is_still_the_stop(
        tmp_path, fake_agent, monkeypatch, signum, code):
    """An extension module that is loading turns the handler's exception into an ImportError
    (numpy does): once a signal came, that error is the stop, said in one line with what it
    came out as, not a traceback with exit 1."""
    from guestbench import host
    from guestbench.process import stopping

    def collect():
        try:
            raise stopping.of(signum)
        except KeyboardInterrupt:
            raise ImportError("numpy._core.multiarray failed to import") from None

    monkeypatch.setattr(host, "collect", collect)
    result = invoke_expecting_stop(["run", "--env", "native", "--db",
                                    f"sqlite:///{tmp_path / 'x.sqlite'}"], fake_agent)
    assert result.exit_code == code
    assert result.stderr.strip() == (
        f"guestbench: stopped by {signal.Signals(signum).name} (it came out as ImportError: "
        "numpy._core.multiarray failed to import)")


def test_an_error_with_no_signal_before_it_is_not_called_a_stop(tmp_path, fake_agent,
                                                                 monkeypatch):
    from guestbench import host

    def collect():
        raise ImportError("a real bug")

    monkeypatch.setattr(host, "collect", collect)
    with pytest.raises(ImportError, match="a real bug"):
        CliRunner().invoke(main, ["run", "--env", "native", "--db",
                                  f"sqlite:///{tmp_path / 'x.sqlite'}"],
                           catch_exceptions=False, env={"GUESTBENCH_AGENT": str(fake_agent)})


def test_a_signal_whose_exception_was_lost_stops_the_run_before_its_campaign(
        tmp_path, fake_agent, monkeypatch):
    """A handler that runs in a weakref callback (importlib's module locks) raises into code
    whose errors Python prints and drops: the run goes on, and stops where it checks."""
    from guestbench import host
    from guestbench.process import stopping
    real = host.collect

    def collect():
        try:
            raise stopping.of(signal.SIGTERM)
        except KeyboardInterrupt:
            pass  # as Python drops it
        return real()

    monkeypatch.setattr(host, "collect", collect)
    db_file = tmp_path / "x.sqlite"
    plan_file = tmp_path / "good.toml"
    plan_file.write_text(GOOD_FAKE_PLAN)
    result = invoke_expecting_stop(["run", str(plan_file), "--db", f"sqlite:///{db_file}",
                                    "--quiet"], fake_agent)
    assert result.exit_code == 143
    assert "stopped by SIGTERM before any run" in result.stderr
    assert campaigns_in(db_file) == []


def test_a_plan_error_after_a_signal_is_the_stop(tmp_path, fake_agent, monkeypatch):
    """A handler's exception dropped inside the plan's validation left a pattern
    '<unprintable str object>' and a plan error (exit 2): after a signal, the stop is
    what is said, with the error it came out as."""
    from guestbench.plan import build as plan_build
    from guestbench.process import stopping
    real = plan_build.load

    def load(*args, **kwargs):
        stopping.of(signal.SIGTERM)  # noted, its exception dropped
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_build, "load", load)
    plan_file = tmp_path / "bad.toml"
    plan_file.write_text('[[environment]]\nname = "no spaces allowed"\nkind = "fake"\n')
    result = invoke_expecting_stop(["run", str(plan_file), "--db",
                                    f"sqlite:///{tmp_path / 'x.sqlite'}"], fake_agent)
    assert result.exit_code == 143
    assert result.stderr.startswith("guestbench: stopped by SIGTERM (it came out as PlanError: ")
