"""A private PostgreSQL server for the tests and benchmarks: a throw-away cluster in a
temporary folder, listening only on a Unix socket inside that folder.

    server = postgres.start()          # initdb + postgres, as the `postgres` user when root
    url = server.create_database("t1") # postgresql+psycopg://... for guestbench's --db
    server.stop(); server.start()      # the same cluster again (a restart mid-campaign)
    server.remove()                    # stop, and delete the folder

PostgreSQL refuses to run as root, so under root the cluster belongs to the `postgres`
user that Debian's package creates. Durability settings are off (fsync,
synchronous_commit, full_page_writes): the data are thrown away, and a test that needs
a crash-safe server says so. The server is its own process group, ended by its id.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PORT = 5432  # only names the socket file: the folder is private, so it never collides


class Unavailable(Exception):
    """PostgreSQL's server programs are not installed, or the cluster could not start."""


def binaries() -> Path:
    """The folder of initdb and postgres: $GUESTBENCH_PG_BIN, Debian's newest
    /usr/lib/postgresql/N/bin, or the one on PATH."""
    chosen = os.environ.get("GUESTBENCH_PG_BIN")
    candidates = [chosen] if chosen else sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda path: int(path.split("/")[-2]),
        reverse=True)
    on_path = shutil.which("initdb")
    if not chosen and on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    for candidate in candidates:
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "postgres").is_file():
            return Path(candidate)
    raise Unavailable("PostgreSQL's server is not installed (fix: apt-get install postgresql, "
                      "which install.sh does, or set GUESTBENCH_PG_BIN to the folder of initdb)")


@dataclass
class Server:
    folder: Path
    bin: Path
    user: str | None  # the user the server runs as; None: this process's own
    process: subprocess.Popen | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.folder / "server.log"

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, database: str = "postgres", user: str = "postgres",
            search_path: str | None = None) -> str:
        """guestbench's --db for this server; search_path: the schema its tables go in."""
        url = f"postgresql+psycopg://{user}@/{database}?host={self.folder}&port={PORT}"
        return url + (f"&options=-csearch_path%3D{search_path}" if search_path else "")

    def start(self, timeout_s: float = 30) -> None:
        """Start (or start again) the server on its cluster; returns once it takes connections."""
        if self.process is not None and self.process.poll() is None:
            return
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(self.bin / "postgres"), "-D", str(self.data), "-k", str(self.folder),
                 "-p", str(PORT), "-c", "listen_addresses=", "-c", "fsync=off",
                 "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                 "-c", "max_connections=300", "-c", "timezone=UTC"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, user=self.user)
        deadline = time.monotonic() + timeout_s
        while not self._ready():
            if self.process.poll() is not None:
                raise Unavailable(f"postgres exited with {self.process.returncode}: "
                                  f"{self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise Unavailable(f"postgres did not take connections within {timeout_s:g} s: "
                                  f"{self._log_tail()}")
            time.sleep(0.05)

    def stop(self, timeout_s: float = 30) -> None:
        """Fast shutdown (SIGINT: open sessions are ended); SIGKILL to the group after timeout_s."""
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def execute(self, sql: str, database: str = "postgres") -> None:
        """One statement outside a transaction (CREATE DATABASE cannot run inside one)."""
        import psycopg
        with psycopg.connect(host=str(self.folder), port=PORT, user="postgres",
                             dbname=database, autocommit=True) as connection:
            connection.execute(sql)

    def create_database(self, name: str) -> str:
        self.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _ready(self) -> bool:
        import psycopg
        try:
            with psycopg.connect(host=str(self.folder), port=PORT, user="postgres",
                                 dbname="postgres", connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def _log_tail(self) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-3:])
        except OSError:
            return "(no log)"


def start(parent: str | None = None) -> Server:
    """A new cluster in a new folder under parent (default: the system's temporary folder)."""
    bin_folder = binaries()
    user = None
    folder = Path(tempfile.mkdtemp(prefix="guestbench-pg-", dir=parent))
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(folder, ignore_errors=True)
            raise Unavailable("running as root, and there is no 'postgres' user to run the "
                              "server as (fix: apt-get install postgresql creates it)") from None
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        user = "postgres"
    server = Server(folder, bin_folder, user)
    result = subprocess.run(
        [str(bin_folder / "initdb"), "-D", str(server.data), "-U", "postgres", "-A", "trust",
         "-E", "UTF8", "--locale=C", "--no-sync"],
        capture_output=True, text=True, user=user, cwd=folder)
    if result.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise Unavailable(f"initdb failed ({result.returncode}): {result.stderr.strip()[-300:]}")
    try:
        server.start()
    except Unavailable:
        server.remove()
        raise
    return server
