"""Damage that SQLite's quick_check passes: a value of a type guestbench never writes, a
JSON document or a timestamp that does not parse, a run that names an environment that
does not exist. On 2026-11-27 `run` stored a new campaign into each of these stores
(after the first, it even said the store was damaged, having written), while `report
--format json` called them damaged. Now run checks every row as the readers check the
rows they read, and refuses them all with the readers' message, leaving the file's bytes
as they were."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from guestbench import environments

from tests.support.cli import GOOD_FAKE_PLAN, invoke

EDITS = ["UPDATE campaign SET status = X'ff' WHERE id = 1",
         "UPDATE environment SET spec = '{'",
         "UPDATE run SET repetition = 3.5",
         "UPDATE run SET params = X'00ff'",
         "UPDATE campaign SET plan = '{not json'",
         "UPDATE run SET environment_id = 99",
         "UPDATE run SET started_at = 'yesterday'",
         "UPDATE cell_stop SET environment_id = (SELECT max(id) FROM environment)",
         # found by the fault run of 2026-11-27: text that is not UTF-8 reached the JSON
         # check as an error of its own, and a packed block's column of the wrong type
         "UPDATE campaign SET plan = CAST(X'7bff22' AS TEXT) WHERE id = 1",
         "UPDATE sample_block SET kind = 'xxxx'"]


@pytest.fixture(scope="module")
def sound(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sound")
    agent = folder / "fake-gbagent"
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    plan = folder / "plan.toml"
    plan.write_text(GOOD_FAKE_PLAN)
    path = folder / "sound.sqlite"
    with pytest.MonkeyPatch.context() as patch:  # kind = "fake", as fake_kind_in_plans allows
        patch.setattr(environments, "_plan_kinds", [*environments.PUBLIC_KINDS, "fake"])
        for _ in range(2):  # the second campaign's environments are not the first's
            ran = invoke(["run", str(plan), "--db", f"sqlite:///{path}", "--quiet",
                          "--logs", str(folder / "logs")], agent)
            assert ran.exit_code == 0, ran.output
    return path


@pytest.mark.parametrize("edit", EDITS)
def test_run_refuses_what_a_reader_calls_damaged_and_writes_nothing(sound, edit, tmp_path,
                                                                    fake_agent) -> None:
    path = tmp_path / "store.sqlite"
    path.write_bytes(sound.read_bytes())
    with sqlite3.connect(path) as connection:
        assert connection.execute(edit).rowcount >= 1
    url = f"sqlite:///{path}"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    plan = tmp_path / "plan.toml"
    plan.write_text(GOOD_FAKE_PLAN)
    ran = invoke(["run", str(plan), "--db", url, "--quiet", "--logs", str(tmp_path / "l")],
                 fake_agent)
    assert ran.exit_code == 2, ran.output
    assert f"the store {path} is damaged (row" in ran.output and "fix:" in ran.output
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    read = [invoke(["report", campaign, "--format", "json", "--db", url], fake_agent)
            for campaign in ("1", "2")]
    assert 2 in [one.exit_code for one in read]  # a reader of the damaged rows says so too
    assert all("Traceback" not in one.output for one in read)
