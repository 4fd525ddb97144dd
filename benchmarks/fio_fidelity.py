#!/usr/bin/env python3
"""Side by side, in one run: each fio job through guestbench (native) against the same fio
command run directly.

Both sides get the same preparation before every run, in the same order: `sync` and a
fixed pause, then (as each `guestbench run` does) a fresh inputs folder where the read
jobs' file is written and fsync'ed, a fresh folder under the scratch base (/var/tmp,
or $GUESTBENCH_SCRATCH) with a copy of it dropped from the page cache, then fio at once. Pairs
alternate which side goes first, so drift on the host hits both; the figure is the ratio
of the two medians, with its 95% interval (guestbench's own: each side's bootstrap
interval of the median, combined by MOVER) and a permutation test's p-value. The direct
side parses fio's JSON here, independently of guestbench's parser. Usage:

    .venv/bin/python benchmarks/fio_fidelity.py [PAIRS] [JOB,JOB...] [RAW.json]

RAW.json, when given, receives every value of both sides, in the order they ran.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from guestbench.analysis.stats import describe, permutation_pvalues, ratio_interval  # noqa: E402
from guestbench.environments import scratch  # noqa: E402
from guestbench.workloads import CATALOGUE  # noqa: E402
from guestbench.workloads.disk import fio_command  # noqa: E402

GUESTBENCH = str(ROOT / ".venv/bin/guestbench")
JOBS = ["fio_seq_write", "fio_rewrite", "fio_seq_read", "fio_rand_read", "fio_rand_write",
        "fio_fsync"]
PAUSE_S = 2.0


def direct_value(job: str, metric: str, inputs: Path) -> float:
    """fio run by hand in a fresh folder prepared as guestbench prepares its scratch folder."""
    workload = CATALOGUE[job]
    params = workload.resolve({}, None)
    settle()  # as before a guestbench run: settle, then prepare, then fio at once
    # a fresh inputs folder, as each `guestbench run` makes one (read jobs' files included)
    fresh = Path(tempfile.mkdtemp(prefix="inputs-", dir=inputs))
    try:
        folder = scratch.make(workload.job_needs(params, fresh))
        try:
            out = subprocess.run(fio_command(job, params), cwd=folder, capture_output=True,
                                 text=True, check=True).stdout
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    data = json.loads(out[out.index("{"):])["jobs"][0]
    part = data["write"] if data["write"]["io_bytes"] > 0 else data["read"]
    if metric == "bandwidth":
        return part["bw_bytes"] / 1e6
    if metric == "iops":
        return part["iops"]
    return data["sync"]["lat_ns"]["percentile"]["50.000000"] / 1e3  # fsync_p50, us


def guestbench_value(job: str, metric: str, db: str) -> float:
    settle()
    subprocess.run([GUESTBENCH, "run", "--env", "native", "--workload", job, "--repeat", "1",
                    "--quiet", "--db", db], check=True, capture_output=True)
    document = json.loads(subprocess.run([GUESTBENCH, "report", "--format", "json", "--db", db],
                                         check=True, capture_output=True, text=True).stdout)
    run = document["runs"][-1]
    if run["status"] != "ok":
        raise SystemExit(f"guestbench {job}: {run['status']}: {run['reason']}")
    return next(sample["value"] for sample in run["samples"] if sample["metric"] == metric)


def settle() -> None:
    os.sync()
    time.sleep(PAUSE_S)


def main() -> None:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    jobs = sys.argv[2].split(",") if len(sys.argv) > 2 else JOBS
    raw_path = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    raw: dict[str, dict[str, list[float]]] = {}
    print(f"{'job':15} {'metric':10} {'guestbench':>11} {'direct':>11} {'ratio':>7} "
          f"{'95% interval':>15} {'p':>6}  spread (min-max) guestbench | direct")
    with tempfile.TemporaryDirectory(prefix="fio-fidelity-") as work:
        inputs = Path(work) / "inputs"
        inputs.mkdir()
        for job in jobs:
            metric = CATALOGUE[job].primary_metric
            ours, theirs = [], []
            db = f"sqlite:///{work}/{job}.sqlite"
            for index in range(pairs):
                if index % 2 == 0:
                    ours.append(guestbench_value(job, metric, db))
                    theirs.append(direct_value(job, metric, inputs))
                else:
                    theirs.append(direct_value(job, metric, inputs))
                    ours.append(guestbench_value(job, metric, db))
            raw[job] = {"metric": metric, "guestbench": ours, "direct": theirs}
            print_row(job, metric, ours, theirs)
    if raw_path:
        raw_path.write_text(json.dumps(raw, indent=1))


def print_row(job: str, metric: str, ours: list[float], theirs: list[float]) -> None:
    direct, guestbench = describe([theirs, ours])
    ratio = ratio_interval(direct, guestbench)
    pvalue = permutation_pvalues([(theirs, ours)])[0]
    interval = (f"[{ratio.low:.3f}-{ratio.high:.3f}]" if ratio and ratio.low is not None
                else "[-]")
    print(f"{job:15} {metric:10} {guestbench.median:11.1f} {direct.median:11.1f} "
          f"{ratio.value if ratio else float('nan'):7.3f} {interval:>15} "
          f"{pvalue if pvalue is not None else float('nan'):6.3f}  "
          f"{min(ours):.0f}-{max(ours):.0f} | {min(theirs):.0f}-{max(theirs):.0f}", flush=True)


if __name__ == "__main__":
    main()
