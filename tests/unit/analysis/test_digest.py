"""A campaign's digest: report and history drawn from it say exactly what the derivation
from samples says; a digest of other runs, a damaged store or another database is never read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from guestbench.store import digest_reader
from guestbench import store as gb_store
from guestbench.analysis import digest, results as analysed
from guestbench.report import select
from guestbench.store.records import RunRecord
from tests.support import default_like
from tests.support.cli import invoke
from tests.support.history import history_json, noisy
from guestbench.commands import reading


def written(tmp_path: Path) -> tuple[str, gb_store.Store, int]:
    url = f"sqlite:///{tmp_path / 'd.sqlite'}"
    opened = gb_store.open(url)
    return url, opened, default_like.write(opened)


def summary_rows(results: analysed.CampaignResults) -> list:
    (table,) = select.tables(results, "summary", width=120)
    return [table.title, table.header, table.rows, table.note, table.footnotes, table.tones]


def test_the_digest_gives_the_summary_the_derivation_gives(tmp_path: Path) -> None:
    url, opened, campaign = written(tmp_path)
    derived = reading.load(opened, context_samples=False, primary_only=True)
    assert reading.read_digest(url, None) is None  # none kept yet
    reading.keep_digest(opened, derived)
    for selector in (None, str(campaign), "quick"):
        read = reading.read_digest(url, selector)
        assert read is not None and read.samples is None
        assert summary_rows(read) == summary_rows(derived)
    assert reading.read_digest(url, "no such campaign") is None


def test_a_digest_of_other_runs_is_not_read(tmp_path: Path) -> None:
    url, opened, campaign = written(tmp_path)
    reading.keep_digest(opened, reading.load(opened, context_samples=False, primary_only=True))
    env = opened.environments(campaign)[0].id
    opened.add_run(campaign, RunRecord(env, "getpid", "getpid", {}, 999, "ok", "",
                                       default_like.STARTED, 0.5, None,
                                       (("time_per_op", "ns", 1.0),), ()))
    assert reading.read_digest(url, None) is None  # the campaign has a run the digest has not seen


def test_a_damaged_or_foreign_store_is_left_to_the_ordinary_path(tmp_path: Path) -> None:
    url, opened, _campaign = written(tmp_path)
    reading.keep_digest(opened, reading.load(opened, context_samples=False, primary_only=True))
    opened.engine.dispose()
    path = tmp_path / "d.sqlite"
    data = bytearray(path.read_bytes())
    data[len(data) // 2:len(data) // 2 + 4096] = bytes(range(256)) * 16
    path.write_bytes(bytes(data))
    assert digest_reader.digest_text(url, None, digest.FORMAT) is None or \
        digest.decode(digest_reader.digest_text(url, None, digest.FORMAT)) is not None
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    for other in (f"sqlite:///{empty}", f"sqlite:///{tmp_path / 'missing.sqlite'}",
                  "postgresql://nobody@localhost/none", f"sqlite:///{tmp_path}"):
        assert digest_reader.digest_text(other, None, digest.FORMAT) is None
        assert digest_reader.every_digest(other, digest.FORMAT) is None


def test_report_answers_from_the_digest_without_the_stores_engine(tmp_path: Path,
                                                                   fake_agent) -> None:
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    ran = invoke(["run", "--env", "native,namespace", "--workload", "getpid", "--repeat", "3",
                  "--db", url, "--quiet"], fake_agent)
    assert ran.exit_code == 1, ran.output  # the fake agent prints no record: no run is ok
    first = invoke(["report", "--db", url], fake_agent)  # derives, and keeps the digest
    assert first.exit_code == 0, first.output
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\nfrom guestbench.cli import main\n"
        "try:\n    main(['report', '--db', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', 'sqlalchemy' in sys.modules, 'numpy' in sys.modules)\n")
    import subprocess
    shown = subprocess.run([sys.executable, str(probe), url], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60, check=True).stdout
    assert shown.endswith("LOADED False False\n"), shown
    assert shown[:-len("LOADED False False\n")] == first.output


def test_history_from_digests_is_the_history_from_the_store(tmp_path: Path,
                                                            campaigns) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    campaigns(url, noisy(6, seed=3, slower_from=4, by=1.5))
    from_store = history_json(campaigns, url)  # each campaign's digest kept on the way
    every = reading.read_every_digest(url)
    assert every is not None and all(results is not None for _id, _status, results in every)
    from_digests = history_json(campaigns, url)
    assert json.dumps(from_digests, sort_keys=True) == json.dumps(from_store, sort_keys=True)
    assert any(series["change_points"] for series in from_digests["series"])


def test_compare_from_digests_is_the_compare_from_the_store(tmp_path: Path,
                                                            fake_agent) -> None:
    url, opened, _first = written(tmp_path)
    default_like.write(opened)  # a second campaign of the same plan
    from_store = invoke(["compare", "1", "2", "--db", url, "--format", "json"], fake_agent)
    assert from_store.exit_code == 0, from_store.output
    for campaign in ("1", "2"):  # each campaign's summary keeps its digest
        assert invoke(["report", campaign, "--db", url], fake_agent).exit_code == 0
    assert all(reading.read_digest(url, campaign).every_cell for campaign in ("1", "2"))
    from_digests = invoke(["compare", "1", "2", "--db", url, "--format", "json"], fake_agent)
    assert from_digests.exit_code == 0, from_digests.output
    assert json.loads(from_digests.output) == json.loads(from_store.output)
    stream = [cell for cell in json.loads(from_digests.output)["cells"]
              if cell["unit"] == "MB/s"]
    assert stream and all("above 1 is worse" in cell["ratio_rule"] for cell in stream)


def _damage_digest(url: str, how) -> None:
    import sqlite3
    with sqlite3.connect(url[len("sqlite:///"):]) as connection:
        (body,) = connection.execute("SELECT body FROM campaign_digest").fetchone()
        connection.execute("UPDATE campaign_digest SET body = ?", (how(body),))


def _flip(body: str) -> str:
    """One bit of one digit flipped: the JSON still parses, and says another number."""
    at = next(i for i in range(len(body) // 2, len(body)) if body[i] in "1234567")
    return body[:at] + chr(ord(body[at]) ^ 1) + body[at + 1:]


def test_a_damaged_digest_is_no_digest_and_is_made_again(tmp_path: Path, fake_agent) -> None:
    """A digest cut short (the report, compare and history of 2026-11-27 ended in a
    JSONDecodeError traceback), one flipped bit, or a checksum of other JSON: each command
    answers as from the runs, exit 0, and the next report finds the digest made again."""
    url, opened, _campaign = written(tmp_path)
    default_like.write(opened)
    opened.engine.dispose()
    commands = (["report", "1"], ["report", "1", "--format", "json"], ["compare", "1", "2"],
                ["history"])
    expected = {}
    for args in commands:
        told = invoke([*args, "--db", url], fake_agent)
        assert told.exit_code == 0, told.output
        expected[tuple(args)] = told.output
    assert reading.read_digest(url, "1") is not None
    for how, asked in ((lambda body: body[:1000], commands), (_flip, commands[:1]),
                       (lambda body: body.split(" ", 1)[0] + ' {"format": 3}', commands[:1]),
                       (lambda body: body.encode(), commands)):  # a blob in a text column
        _damage_digest(url, how)
        assert reading.read_digest(url, "1") is None
        for args in asked:
            told = invoke([*args, "--db", url], fake_agent)
            assert told.exit_code == 0 and "Traceback" not in told.output, told.output
            assert told.output == expected[tuple(args)], args
        assert reading.read_digest(url, "1") is not None  # made again from the runs
