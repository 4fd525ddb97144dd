#!/usr/bin/env python3
"""How long `guestbench report` and `guestbench compare` take over stores of 1,000,000 samples.

Two stores, made by tests/support/bigstore.py in FOLDER (reused when they
already hold the requested count of samples, rebuilt otherwise):

  accumulated   many nightly campaigns of ~26k samples (10 environments x 25
                workloads x 20 repetitions) adding up to --samples; the
                latest campaign is reported, the last two are compared
  two-huge      two campaigns of --samples/2 each; the second is reported,
                the two are compared

Each command runs in a fresh process (`.venv/bin/guestbench ...`, stdout to a
file), --repeat times; the table shows the median wall-clock time. A format or
command that does not exist yet shows as "not available (exit 2: ...)": rerun
the script once it does. Rows "store.runs()+samples()" and "reading.load()" time,
in this process, the plain read of one campaign through the store API and the
report's load step (read + summarise), to tell store time from analysis time.

    .venv/bin/python benchmarks/report_speed.py FOLDER [--samples N] [--repeat 3]
        [--shapes accumulated,two-huge] [--slow-factor 1.3] [--postgresql]

--postgresql also builds each shape in a private PostgreSQL server started for the
run (tests/support/postgres.py, a throw-away cluster under FOLDER, removed at the
end) and measures the same commands there, for the two stores side by side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import bigstore  # noqa: E402
from guestbench.commands import reading

GUESTBENCH = str(ROOT / ".venv/bin/guestbench")
FORMATS = ("table", "markdown", "json", "csv", "html")
SHAPES = ("accumulated", "two-huge")
# what click says when a command, an option or a choice does not exist (yet), and what a
# half-built one says (a renderer the CLI names but that is not there yet)
NOT_THERE = ("No such command", "No such option", "Invalid value for '--format'",
             "is not one of", "ImportError", "ModuleNotFoundError")


@dataclass
class Row:
    shape: str
    command: str
    seconds: float | None
    exit_code: int | None
    note: str = ""


def store_for(folder: Path, shape: str, samples: int, slow_factor: float) -> tuple[str, list[int]]:
    """The store of one shape, built unless it already holds `samples` samples."""
    path = folder / f"{shape}-{samples}.sqlite"
    url = f"sqlite:///{path}"
    if path.exists():
        try:
            if bigstore.count_samples(url) == samples:
                ids = campaign_ids(url)
                print(f"{shape}: reusing {path} ({len(ids)} campaigns, {samples} samples, "
                      f"{path.stat().st_size / 2**20:.1f} MiB)")
                return url, ids
        except Exception as error:  # noqa: BLE001 - any unreadable store is rebuilt
            print(f"{shape}: {path} is not usable ({error}); rebuilding")
        path.unlink()
    began = time.perf_counter()
    ids = bigstore.generate(url, samples, campaigns=2 if shape == "two-huge" else None,
                            slow_factor=slow_factor)
    seconds = time.perf_counter() - began
    print(f"{shape}: generated {path}: {len(ids)} campaigns, {samples} samples in {seconds:.1f} s, "
          f"{path.stat().st_size / 2**20:.1f} MiB")
    return url, ids


def campaign_ids(url: str) -> list[int]:
    from guestbench import store as gb_store
    opened = gb_store.open(url, create=False)
    try:
        return [campaign.id for campaign in opened.campaigns()]
    finally:
        opened.engine.dispose()


def run_command(shape: str, name: str, argv: list[str], repeat: int) -> Row:
    """Median wall-clock seconds of `argv` in fresh processes, stdout to a scratch file."""
    times, code, note = [], None, ""
    for _ in range(repeat):
        with tempfile.TemporaryFile() as out:
            began = time.perf_counter()
            done = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, text=True)
            times.append(time.perf_counter() - began)
            size = out.tell()
        code = done.returncode
        if code != 0:
            lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
            message = lines[-1][:160] if lines else "no message"  # click's Error: / the exception
            if code in (1, 2) and any(marker in done.stderr for marker in NOT_THERE):
                return Row(shape, name, None, code, f"not available (exit {code}: {message})")
            return Row(shape, name, statistics.median(times), code,
                       f"error (exit {code}: {message})")
        note = f"output {size / 2**20:.1f} MiB" if size >= 2**20 else f"output {size} B"
    return Row(shape, name, statistics.median(times), code, note)


def run_in_process(shape: str, name: str, work: Callable[[], str], repeat: int) -> Row:
    times, note = [], ""
    for _ in range(repeat):
        began = time.perf_counter()
        note = work()
        times.append(time.perf_counter() - began)
    return Row(shape, name, statistics.median(times), 0, note)


def store_read(url: str, campaign: int) -> str:
    from guestbench import store as gb_store
    opened = gb_store.open(url, create=False)
    try:
        runs, samples = opened.runs(campaign), opened.samples(campaign)
    finally:
        opened.engine.dispose()
    return f"{len(runs)} runs, {len(samples)} samples (in process)"


def model_load(url: str, campaign: int) -> str:
    from guestbench import store as gb_store
    opened = gb_store.open(url, create=False)
    try:
        loaded = reading.load(opened, str(campaign))
    finally:
        opened.engine.dispose()
    return f"{len(loaded.results.cells)} rows x {len(loaded.results.environments)} columns (in process)"


def measure(shape: str, url: str, ids: list[int], repeat: int) -> list[Row]:
    older, latest = ids[-2], ids[-1]
    rows = [run_command(shape, "report --list (start-up + open)",
                        [GUESTBENCH, "report", "--list", "--db", url], repeat),
            run_in_process(shape, f"store.runs()+samples() of {latest}",
                           lambda: store_read(url, latest), repeat),
            run_in_process(shape, f"reading.load() of {latest}",
                           lambda: model_load(url, latest), repeat)]
    for output_format in FORMATS:
        rows.append(run_command(shape, f"report {latest} --format {output_format}",
                                [GUESTBENCH, "report", str(latest), "--db", url,
                                 "--format", output_format], repeat))
    rows.append(run_command(shape, f"compare {older} {latest}",
                            [GUESTBENCH, "compare", str(older), str(latest), "--db", url], repeat))
    return rows


def on_postgresql(folder: Path, shapes: list[str], samples: int, slow_factor: float,
                  repeat: int) -> list[Row]:
    """Every shape built in a private PostgreSQL server and measured there."""
    from tests.support import postgres
    server = postgres.start(str(folder))
    try:
        rows = []
        for shape in shapes:
            url = server.create_database(shape.replace("-", "_"))
            began = time.perf_counter()
            ids = bigstore.generate(url, samples, campaigns=2 if shape == "two-huge" else None,
                                    slow_factor=slow_factor)
            print(f"{shape} on PostgreSQL: generated {len(ids)} campaigns, {samples} samples in "
                  f"{time.perf_counter() - began:.1f} s")
            rows += measure(f"{shape} (postgresql)", url, ids, repeat)
        return rows
    finally:
        server.remove()


def print_table(rows: list[Row], repeat: int) -> None:
    header = ("shape", "command", f"seconds (median of {repeat})", "exit", "note")
    cells = [(row.shape, row.command, "-" if row.seconds is None else f"{row.seconds:.2f}",
              "-" if row.exit_code is None else str(row.exit_code), row.note) for row in rows]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(4)]
    for line in [header, *cells]:
        print("  ".join(text.ljust(width) for text, width in zip(line[:4], widths)) + "  " + line[4])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="where the stores are kept (created if missing)")
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help=f"comma-separated, of {', '.join(SHAPES)}")
    parser.add_argument("--slow-factor", type=float, default=1.3,
                        help="the latest campaign is this much slower on a few cells")
    parser.add_argument("--postgresql", action="store_true",
                        help="also measure on a private PostgreSQL server (built each run)")
    args = parser.parse_args()
    shapes = [shape.strip() for shape in args.shapes.split(",") if shape.strip()]
    unknown = set(shapes) - set(SHAPES)
    if unknown:
        parser.error(f"--shapes: unknown {', '.join(sorted(unknown))} (use {', '.join(SHAPES)})")
    args.folder.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    for shape in shapes:
        url, ids = store_for(args.folder, shape, args.samples, args.slow_factor)
        rows += measure(shape, url, ids, args.repeat)
    if args.postgresql:
        rows += on_postgresql(args.folder, shapes, args.samples, args.slow_factor, args.repeat)
    print(f"\nhost: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"stdout of each command goes to a scratch file")
    print_table(rows, args.repeat)


if __name__ == "__main__":
    main()
