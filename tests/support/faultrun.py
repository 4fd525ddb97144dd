"""A randomized fault run: campaigns over the kinds installed here, each hit by one fault at
a random moment (SIGKILL, SIGTERM or SIGINT to guestbench, its PostgreSQL store's server
stopped, its disk filled), then resumed; and stores damaged at random offsets and sizes,
then read by every command. It counts what a user would lose or have to clean up:
campaigns not completed after resume, runs lost, runs stored twice, processes and folders
left behind, tracebacks, exit codes other than 0, 2, 130 and 143.

benchmarks/fault_run.py runs it at full size and prints the table; tests/faults/
test_fault_run.py runs a short one. Every guestbench here is a separate process, as a user
starts it; guestbench is never killed by name, only by the pid this module started.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from tests.support import postgres
from tests.support.leaks import guest_folders, guest_processes, left_since
from tests.support.real_environments import preset_table

ROOT = Path(__file__).resolve().parent.parent.parent
GUESTBENCH = [sys.executable, "-m", "guestbench"]
KINDS = ("native", "namespace", "runc", "runsc", "qemu-user", "qemu-tcg", "uml")
FAULTS = ("SIGKILL", "SIGTERM", "SIGINT", "server", "disk")
# The fault comes at a uniform moment within this share of the kind's campaign, timed
# once without a fault (calibrate): a few land before the first run, most during the runs
FAULT_WINDOW = (0.1, 0.95)
WORKLOADS = ("getpid", "sched_yield")
REPEAT = 3
PLAN = """[campaign]
name = "faults"
repeat = {repeat}
timeout_s = 60

{environment}
[[workload]]
name = "getpid"
min_time_s = 0.05
values = 3

[[workload]]
name = "sched_yield"
min_time_s = 0.05
values = 3
"""
GOOD_EXITS = (0, 2, 130, 143)
# every command that reads a store, as a user types them (campaigns 1 and 2 exist)
READERS = (("report", "--list"), ("report",), ("report", "1"), ("report", "2", "--format", "csv"),
           ("report", "2", "--format", "json"), ("report", "1", "--format", "json"),
           ("report", "1", "--format", "markdown"),
           ("report", "2", "--format", "html", "--output", "out.html"), ("history",),
           ("compare", "1", "2"))
RUN = ("run", "--env", "native", "--workload", "getpid", "--repeat", "1", "--quiet")


@dataclass
class Tally:
    """The counts the fault run reports; problems holds one line per thing counted."""

    campaigns: int = 0
    faults: Counter = field(default_factory=Counter)
    before_fault: int = 0  # campaigns that finished before their fault came
    before_start: int = 0  # faults that came before the store held the campaign
    completed: int = 0  # finished, by themselves or after resume
    lost: int = 0
    twice: int = 0
    left_behind: int = 0
    tracebacks: int = 0
    bad_exits: int = 0
    stores: int = 0
    damage_told: int = 0  # commands that exited 2 naming the damage
    wrote_into_damaged: int = 0
    commands: int = 0
    problems: list[str] = field(default_factory=list)

    def row(self) -> dict[str, int]:
        return {"campaigns": self.campaigns, "ended before their campaign was stored":
                self.before_start, "completed after resume": self.completed,
                "runs lost": self.lost, "runs stored twice": self.twice,
                "left behind": self.left_behind, "damaged stores": self.stores,
                "commands run": self.commands, "damage told (exit 2)": self.damage_told,
                "written into a damaged store": self.wrote_into_damaged,
                "tracebacks": self.tracebacks, "other exit codes": self.bad_exits}


def _check_output(tally: Tally, what: str, done: subprocess.CompletedProcess | tuple,
                  allowed: tuple[int, ...] = GOOD_EXITS) -> None:
    code, out, err = (done.returncode, done.stdout, done.stderr) \
        if isinstance(done, subprocess.CompletedProcess) else done
    tally.commands += 1
    if "Traceback" in out or "Traceback" in err:
        tally.tracebacks += 1
        tally.problems.append(f"{what}: traceback: {err[-600:]!r}")
    if code not in allowed:
        tally.bad_exits += 1
        tally.problems.append(f"{what}: exit {code}: {err[-400:]!r}")


def guestbench(args, cwd: Path, timeout_s: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*GUESTBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s)


# -- campaigns hit by a fault ------------------------------------------------------------

class Disk:
    """A small tmpfs for the store and the logs, that a filler file fills at once."""

    def __init__(self, folder: Path, mib: int = 64) -> None:
        self.mount = folder / "disk"
        self.mount.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", str(self.mount)],
                       check=True, capture_output=True)
        self.filler = self.mount / "filler"

    def fill(self) -> None:
        """Fill the disk, or find it full already: a CI run once met ENOSPC on the filler's
        open or close, not on a write, and ended the fault run there."""
        try:
            with open(self.filler, "wb", buffering=0) as file:  # nothing left to flush at close
                while True:
                    file.write(b"\0" * (1 << 20))
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def remove(self) -> None:
        subprocess.run(["umount", "-l", str(self.mount)], check=False, capture_output=True)


def _expected_runs(kind: str) -> set[tuple[str, str, int]]:
    return {(kind, label, repetition) for label in WORKLOADS for repetition in range(REPEAT)}


def _stored(url: str) -> tuple[str | None, Counter]:
    """The campaign's status and how many times each (environment, label, repetition) is
    stored (runs cut off by the fault, status 'interrupted', are what resume replaces)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            status = connection.execute(sa.text("select status from campaign")).scalar()
            rows = connection.execute(sa.text(
                "select e.name, r.label, r.repetition from run r join environment e on "
                "e.id = r.environment_id where r.status != 'interrupted'")).all()
    except sa.exc.DBAPIError:
        return None, Counter()
    finally:
        engine.dispose()
    return status, Counter(tuple(row) for row in rows)


def calibrate(kind: str, folder: Path) -> float:
    """Seconds a campaign of PLAN takes under kind here, with no fault."""
    work = Path(tempfile.mkdtemp(prefix=f"calibrate-{kind}-", dir=folder))
    (work / "plan.toml").write_text(PLAN.format(environment=preset_table(kind), repeat=REPEAT))
    began = time.monotonic()
    done = guestbench(["run", "plan.toml", "--quiet", "--db", f"sqlite:///{work}/store.sqlite"],
                      work)
    if done.returncode != 0:
        raise RuntimeError(f"{kind}: a campaign without a fault failed: {done.stderr[-400:]}")
    return time.monotonic() - began


def one_campaign(tally: Tally, rng: random.Random, kind: str, fault: str, folder: Path,
                 server: postgres.Server | None, number: int, length_s: float) -> None:
    """One campaign of kind with its fault at a random moment, then resumed; counted."""
    tally.campaigns += 1
    tally.faults[fault] += 1
    work = folder / f"c{number}"
    work.mkdir()
    disk = Disk(work) if fault == "disk" else None
    where = disk.mount if disk else work
    if fault == "server":
        schema = f"faults_{number}"
        server.execute(f'CREATE SCHEMA "{schema}"', database="guestbench_tests")
        url = server.url("guestbench_tests", search_path=schema)
    else:
        url = f"sqlite:///{where}/store.sqlite"
    (work / "plan.toml").write_text(PLAN.format(environment=preset_table(kind), repeat=REPEAT))
    processes, folders = guest_processes(), guest_folders()
    command = [*GUESTBENCH, "run", "plan.toml", "--quiet", "--db", url, "--logs",
               str(where / "logs")]
    child = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    at = rng.uniform(*FAULT_WINDOW) * length_s
    what = f"campaign {number} ({kind}, {fault} at {at:.1f} s)"
    try:
        try:
            out, err = child.communicate(timeout=at)
            tally.before_fault += 1
        except subprocess.TimeoutExpired:
            try:
                out, err = _hit(child, fault, disk, server, rng)
            except subprocess.TimeoutExpired:
                tally.problems.append(f"{what}: guestbench did not end after the fault")
                tally.bad_exits += 1
                return
        allowed = GOOD_EXITS + ((-signal.SIGKILL,) if fault == "SIGKILL" else ())
        _check_output(tally, what, (child.returncode, out, err), allowed)
        left = left_since(processes, folders)
        if left:
            tally.left_behind += 1
            tally.problems.append(f"{what}: left behind: {left}")
        status, _ = _stored(url)
        if status is not None and status != "finished":
            resumed = guestbench(["run", "--resume", "1", "--quiet", "--db", url, "--logs",
                                  str(where / "logs")], work)
            _check_output(tally, f"{what}, resumed", resumed, (0,))
            left = left_since(processes, folders)
            if left:
                tally.left_behind += 1
                tally.problems.append(f"{what}, resumed: left behind: {left}")
        status, counts = _stored(url)
        if status is None and not counts:
            tally.before_start += 1  # nothing stored, nothing to resume: run it again
        elif status == "finished":
            tally.completed += 1
        else:
            tally.problems.append(f"{what}: the campaign is {status!r} after resume")
        if status is not None:
            expected = _expected_runs(kind)
            lost = expected - set(counts)
            twice = [key for key, count in counts.items() if count > 1]
            tally.lost += len(lost)
            tally.twice += len(twice)
            if lost or twice:
                tally.problems.append(f"{what}: lost {sorted(lost)}, twice {sorted(twice)}")
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        if server is not None and server.process is None:
            server.start()
        if disk is not None:
            disk.remove()


def _hit(child: subprocess.Popen, fault: str, disk: Disk | None,
         server: postgres.Server | None, rng: random.Random) -> tuple[str, str]:
    """Deliver the fault; the output of guestbench once it has ended."""
    if fault in ("SIGKILL", "SIGTERM", "SIGINT"):
        os.kill(child.pid, getattr(signal, fault))
        return child.communicate(timeout=120)
    if fault == "disk":
        disk.fill()
        try:
            return child.communicate(timeout=120)
        finally:
            disk.free()
    # the store's server stops; either it comes back (the campaign waits for it and goes
    # on) or guestbench gets SIGTERM while it waits
    server.stop()
    try:
        time.sleep(rng.uniform(1.0, 4.0))
        if rng.random() < 0.5:
            os.kill(child.pid, signal.SIGTERM)
            return child.communicate(timeout=60)
    finally:
        server.start()
    return child.communicate(timeout=300)


def available_kinds() -> list[str]:
    """The presets of KINDS that answer their probe here."""
    from guestbench import environments, host
    facts = host.collect()
    found = []
    for name in KINDS:
        environment = environments.create(environments.preset_spec(name))
        if environment.probe(facts).available:
            found.append(name)
    return found


def campaigns(tally: Tally, count: int, seed: int, folder: Path,
              kinds: list[str] | None = None, say=print) -> None:
    """count campaigns, each of a random installed kind and a random fault."""
    rng = random.Random(seed)
    kinds = kinds or available_kinds()
    lengths = {kind: calibrate(kind, folder) for kind in kinds} if count else {}
    if lengths:
        say("a campaign without a fault: " + ", ".join(f"{kind} {seconds:.1f} s"
                                                      for kind, seconds in lengths.items()))
    server = None
    try:
        for number in range(count):
            kind = kinds[number % len(kinds)] if number < len(kinds) else rng.choice(kinds)
            fault = FAULTS[number % len(FAULTS)] if number < len(FAULTS) else rng.choice(FAULTS)
            if fault == "server" and server is None:
                try:
                    server = postgres.start()
                    server.create_database("guestbench_tests")
                except postgres.Unavailable as error:
                    say(f"no PostgreSQL here ({error}): a disk fault instead")
                    fault = "disk"
            one_campaign(tally, rng, kind, fault, folder, server, number, lengths[kind])
            say(f"campaign {number + 1}/{count}: {kind}, {fault}; problems so far: "
                f"{len(tally.problems)}")
    finally:
        if server is not None:
            server.remove()


# -- stores damaged at random ------------------------------------------------------------

def base_store(folder: Path) -> Path:
    """Two real campaigns (native and namespace, two workloads, three runs each)."""
    path = folder / "base.sqlite"
    for _ in range(2):
        made = guestbench(["run", "--env", "native,namespace", "--workload", "getpid,sched_yield",
                           "--repeat", "3", "--quiet", "--db", f"sqlite:///{path}"], folder)
        if made.returncode != 0:
            raise RuntimeError(f"the base store could not be made: {made.stderr[-400:]}")
    for campaign in ("1", "2"):  # each keeps its digest, as after a first report
        made = guestbench(["report", campaign, "--db", f"sqlite:///{path}"], folder)
        if made.returncode != 0:
            raise RuntimeError(f"the base store's report failed: {made.stderr[-400:]}")
    return path


def damage(path: Path, rng: random.Random) -> str:
    """One random damage of the file in place; what was done."""
    data = bytearray(path.read_bytes())
    how = rng.choice(("random", "random", "zeros", "flip", "truncate", "page"))
    offset = rng.randrange(len(data))
    if how == "truncate":
        path.write_bytes(bytes(data[:offset]))
        return f"truncated to {offset} bytes"
    if how == "flip":
        data[offset] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        return f"one bit flipped at {offset}"
    if how == "page":  # a whole page of 4 KiB (SQLite's default) of random bytes
        offset -= offset % 4096
        size = 4096
    else:
        size = int(2 ** rng.uniform(4, 14))  # 16 B to 16 KiB
    end = min(offset + size, len(data))
    data[offset:end] = rng.randbytes(end - offset) if how != "zeros" else bytes(end - offset)
    path.write_bytes(bytes(data))
    return f"{size} {'zero' if how == 'zeros' else 'random'} bytes at {offset}"


# The edits that SQLite's quick_check does not see and that `run` once wrote past
# (2026-11-27): a value of a type never written, JSON that does not parse, a timestamp
# that does not, a run naming an environment that does not exist, a digest cut short.
TARGETED = ("UPDATE campaign SET status = X'ff' WHERE id = 1",
            "UPDATE environment SET spec = '{' WHERE id = 1",
            "UPDATE run SET repetition = 3.5 WHERE id = 1",
            "UPDATE run SET params = X'00ff' WHERE id = 2",
            "UPDATE campaign SET plan = '{not json' WHERE id = 2",
            "UPDATE run SET environment_id = 99 WHERE id = 3",
            "UPDATE run SET started_at = 'yesterday' WHERE id = 4",
            "UPDATE campaign_digest SET body = substr(body, 1, 1000)")


def _values(rng: random.Random) -> list:
    """Values a damaged row may hold, one of each kind SQLite keeps."""
    return [None, 0, -1, rng.randrange(-2**63, 2**63), 3.5, rng.uniform(-1e12, 1e12), "",
            "{", "[]", "null", "yesterday", "2026-13-45 99:99:99", "x" * rng.randrange(1, 300),
            rng.randbytes(rng.randrange(1, 64)), "\u00e9t\u00e9", float("inf")]


def columns(path: Path) -> list[tuple[str, str]]:
    """Every (table, column) of the store's tables."""
    with sqlite3.connect(path) as connection:
        tables = [name for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        return [(table, row[1]) for table in tables
                for row in connection.execute(f"PRAGMA table_info({table})")]


def edit(path: Path, rng: random.Random, table: str, column: str) -> str | None:
    """One random value in the column of one random row of the table, written with SQL;
    what was done, or None where the table is empty or SQL refused every value tried."""
    with sqlite3.connect(path) as connection:
        rowids = [rowid for (rowid,) in connection.execute(f"SELECT rowid FROM {table}")]
        if not rowids:
            return None
        rowid = rng.choice(rowids)
        values = _values(rng)
        rng.shuffle(values)
        for value in values:
            try:
                connection.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?",
                                   (value, rowid))
                connection.commit()
            except sqlite3.Error:
                connection.rollback()
                continue
            return f"{table}.{column} of row {rowid} set to {value!r:.40}"
    return None


def _sql(path: Path, statement: str) -> str:
    with sqlite3.connect(path) as connection:
        connection.execute(statement)
    return statement


def _hash(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def one_store(tally: Tally, rng: random.Random, base: Path, folder: Path, number: int,
              how=None) -> None:
    """A copy of base damaged (how(path) -> what was done, None: nothing could be;
    default: random bytes), read by every command, then given to `run`. A reader that
    says the store is damaged writes nothing into it, and then `run` refuses it (exit 2)
    and writes nothing either; no command gives a traceback."""
    work = folder / f"s{number}"
    work.mkdir()
    path = work / "store.sqlite"
    shutil.copy(base, path)
    done_to = how(path) if how is not None else damage(path, rng)
    if done_to is None:
        shutil.rmtree(work, ignore_errors=True)
        return
    tally.stores += 1
    url = f"sqlite:///{path}"
    called_damaged = None
    for args in READERS:
        before = _hash(path)
        done = guestbench([*args, "--db", url], work, timeout_s=120)
        _check_output(tally, f"store {number} ({done_to}): {' '.join(args)}", done)
        told = done.returncode == 2 and "fix:" in done.stderr
        tally.damage_told += told
        if told and "damaged" in done.stderr:
            called_damaged = called_damaged or " ".join(args)
            if _hash(path) != before:
                tally.wrote_into_damaged += 1
                tally.problems.append(f"store {number} ({done_to}): {' '.join(args)} called "
                                      "the store damaged, and wrote into it")
    before = _hash(path)
    done = guestbench([*RUN, "--db", url], work, timeout_s=300)
    _check_output(tally, f"store {number} ({done_to}): run", done)
    tally.damage_told += done.returncode == 2 and "fix:" in done.stderr
    wrote = _hash(path) != before
    if wrote and (done.returncode == 2 or called_damaged):
        tally.wrote_into_damaged += 1
        tally.problems.append(f"store {number} ({done_to}): run wrote into a store that "
                              f"{'it' if done.returncode == 2 else called_damaged} called "
                              "damaged")
    elif called_damaged and done.returncode != 2:
        tally.problems.append(f"store {number} ({done_to}): '{called_damaged}' called the "
                              f"store damaged; run exited {done.returncode}")
    shutil.rmtree(work, ignore_errors=True)


def stores(tally: Tally, count: int, seed: int, folder: Path, say=print) -> None:
    """count damaged copies of a real store: the targeted edits, then one random edit of
    each column of each table that has rows, then random bytes, until count copies were
    damaged (edits first, as far as count goes)."""
    rng = random.Random(seed + 1)
    base = base_store(folder)
    with sqlite3.connect(base) as connection:  # the base itself is sound
        assert connection.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    plan = [lambda path, statement=statement: _sql(path, statement) for statement in TARGETED]
    plan += [lambda path, table=table, column=column: edit(path, rng, table, column)
             for table, column in columns(base)]
    number = 0
    while tally.stores < count:  # an edit of an empty table (the pool's) damages nothing
        one_store(tally, rng, base, folder, number, plan[number] if number < len(plan) else None)
        number += 1
        if number % 10 == 0 or tally.stores == count:
            say(f"store {tally.stores}/{count} ({number} tried); problems so far: "
                f"{len(tally.problems)}")


def run(campaign_count: int, store_count: int, seed: int, say=print,
        kinds: list[str] | None = None) -> Tally:
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="fault-run-") as folder:
        campaigns(tally, campaign_count, seed, Path(folder), kinds, say)
        stores(tally, store_count, seed, Path(folder), say)
    return tally
