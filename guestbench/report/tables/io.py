"""The published tables of disk, transfer and build comparisons.

- disk: fio, metadata and dbench figures per environment, each with its % of the baseline
  (performance: for MB/s, IOPS and files/s the environment's over the baseline's; for
  latencies the baseline's over the environment's), like the bonnie++/dbench tables of
  KVM-against-Xen comparisons;
- dbench: throughput per client count;
- upload: seconds per test (upload, upload-no-write, write-no-upload) with the environments
  as columns, as in libguestfs's UML against KVM comparison; upload-rates: the same runs in
  MB/s, a row per environment and channel;
- build: kernbench's columns (elapsed, user, sys, CPU%, context switches, sleeps);
- durability: whether the guest's fsync is honoured, and verdicts of any other workload
  (metrics of kind verdict: yes / no per environment).
"""

from __future__ import annotations

from typing import Any

from guestbench.analysis.cells import CONTEXT, VERDICT, Cell
from guestbench.analysis.results import CampaignResults
from guestbench.workloads.disk import WORKLOADS as DISK
from guestbench.report.model import (STYLE, Footnotes, Table, best_of_note, central, decorate,
                                     empty_text, CLOCK, format_percent, format_share, format_value,
                                     own_divisor,
                                     own_unit_text, problem_text, spread_text, too_fast_text,
                                     unit_label, verdict_text)

UPLOAD_MODES = ("write", "no_write", "no_upload")
BUILD_WORKLOADS = {"build", "kernel_build"}
BUILD_COLUMNS = (("elapsed", "elapsed (s)"), ("user", "user (s)"), ("sys", "sys (s)"),
                 ("cpu_percent", "CPU %"), ("context_switches", "context switches"),
                 ("sleeps", "sleeps"))
# the disk table's rows: each workload's primary metric and the ones published beside it
DISK_METRICS = ("bandwidth", "iops", "lat_p99", "fsync_p50", "fsync_p99", "create", "stat",
                "delete", "throughput")


def _runs_by_label(report: CampaignResults, workloads: set[str]) -> dict[str, dict[str, Any]]:
    """label -> params of its runs, for labels of the given workloads, in plan order."""
    found: dict[str, dict[str, Any]] = {}
    for run in report.runs:
        if run.workload in workloads and run.label not in found:
            found[run.label] = {"workload": run.workload, **(run.params or {})}
    return found


def label_cell(report: CampaignResults, label: str, metric: str, env: str) -> Cell | None:
    """The cell of `metric`, or where the label's runs gave none of it (every run failed or
    the environment was unavailable) another of the label's cells: they share its runs'
    problems. None where the environment never ran the label."""
    cells = report.results.cells
    cell = cells.get((label, metric), {}).get(env)
    if cell is not None:
        return cell
    return next((row[env] for (row_label, _), row in cells.items()
                 if row_label == label and env in row), None)


def value_text(cell: Cell | None, footnotes: Footnotes) -> str:
    """Median with its interval (± half width) or min-max, or why there is none."""
    if cell is None:
        return "not run"
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    if cell.too_fast:
        return decorate(too_fast_text(cell), cell, footnotes)
    if STYLE.get().plain:
        return decorate(own_unit_text(cell, central(cell)) + spread_text(cell, own_divisor(cell)),
                        cell, footnotes)
    text = own_unit_text(cell, cell.median)
    if cell.kind == CONTEXT and cell.minimum == cell.maximum:
        return decorate(text, cell, footnotes)  # a count that never changed: no spread
    half_width = cell.stats.half_width if cell.stats else None
    if half_width is not None:
        text += f" ±{format_percent(half_width)}"
    elif cell.n > 1:
        text += f" ({own_unit_text(cell, cell.minimum)}-{own_unit_text(cell, cell.maximum)})"
    return decorate(text, cell, footnotes)


def _any_run(cells) -> bool:
    """Whether any of these cells was run at all (a workload's environments leave some out)."""
    return any(cell is not None and cell.runs > 0 for cell in cells)


def _share(cell: Cell | None, base: Cell | None) -> str:
    if cell is None or base is None or not cell.values or not base.values:
        return ""
    if not cell.median or not base.median or not cell.is_performance or cell.too_fast \
            or base.too_fast:
        return ""
    shown, reference = _shown(cell), _shown(base)
    if not shown or not reference:
        return ""
    share = shown / reference if cell.higher_is_better else reference / shown
    return f" ({format_share(share * 100)}%)"


def _shown(cell: Cell) -> float:
    """The figure value_text shows of the cell, so that a % beside it is of that figure: the
    style's statistic in a plain table (a best_of cell's best run), else the median."""
    return central(cell) if STYLE.get().plain else cell.median


# -- disk: fio, metadata, dbench with % of the baseline ----------------------------------

def disk_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:

    labels = _runs_by_label(report, {w.name for w in DISK})
    rows = [(label, metric, unit) for label, metric, unit in report.results.rows
            if label in labels and metric in DISK_METRICS]
    if not rows:
        return None
    envs = report.results.environments
    baseline = report.baseline
    shows = STYLE.get().statistic if STYLE.get().plain and not STYLE.get().spread \
        else "median [±95% CI]"  # a plain table shows no interval: its title says none
    table = Table(f"Disk and filesystem: {shows}"
                  + (f" (% of {baseline}, higher is better)" if baseline else ""),
                  ["workload", "metric", *envs], [], name="disk",
                  note="fio (psync, one job), fio's filecreate/filestat/filedelete engines, "
                       "dbench; each on a fresh scratch folder or disk per run. The % is "
                       "performance against " + (baseline or "the baseline")
                       + ": for MB/s, IOPS and files/s the environment's over the baseline's, "
                       "for latencies the baseline's over the environment's; each of the figure "
                       "beside it." + (f" {best_of_note(report)}" if STYLE.get().plain
                                       and best_of_note(report) else ""))
    for label, metric, unit in rows:
        cells = report.results.cells[(label, metric)]
        base = cells.get(baseline) if baseline else None
        table.add([label, f"{metric} ({unit})", *(
            value_text(cells.get(env), footnotes) + _share(cells.get(env), base)
            for env in envs)], [(env, label) for env in envs])
    return table


# -- dbench: throughput per client count ------------------------------------------------

def dbench_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """Per client count: the median ± its interval, and the best run with its % of the
    baseline's best (the wiki's "best of 2 runs for dbench 10 ... % of native")."""
    labels = _runs_by_label(report, {"dbench"})
    if not labels:
        return None
    by_clients = {}
    for label, params in labels.items():
        by_clients.setdefault(int(params.get("clients", 0)), label)
    envs = report.results.environments
    if STYLE.get().plain:
        return _dbench_plain(report, by_clients, footnotes)
    header = ["environment"]
    for clients in sorted(by_clients):
        named = f"{clients} client{'s' if clients != 1 else ''}"
        header += [f"{named}: median", "best", f"% of {report.baseline}" if report.baseline
                   else "%"]
    table = Table("dbench: throughput (MB/s) by clients, median and best of the runs", header,
                  [], label_columns=1, name="dbench",
                  note="dbench 4.0, Debian's NetBench load file (client.txt), on the "
                       "environment's scratch filesystem; the figure is dbench's own "
                       "'Throughput' line. best: the highest run (n: how many), as the "
                       "KVM-against-Xen page gives the best of 2 runs; %: that best over "
                       "the baseline's best.")
    for env in envs:
        row, sources = [env], []
        for clients in sorted(by_clients):
            label = by_clients[clients]
            cells = report.results.cells.get((label, "throughput"), {})
            cell, base = cells.get(env), cells.get(report.baseline or "")
            row += [value_text(cell, footnotes), _best_text(cell), _best_share(cell, base)]
            sources += [(env, label)] * 3
        table.add(row, sources)
    return table


def _dbench_plain(report: CampaignResults, by_clients: dict[int, str],
                  footnotes: Footnotes) -> Table:
    """As the KVM-against-Xen page publishes dbench: per client count the throughput (the
    best run by default) and its % of the baseline's."""
    statistic, baseline = STYLE.get().statistic, report.baseline
    header = ["environment"]
    for clients in sorted(by_clients):
        named = f"dbench {clients}: " if len(by_clients) > 1 else ""
        header += [f"{named}throughput MB/s", f"% of {baseline}" if baseline else "%"]
    runs = {cell.n_runs for label in by_clients.values() for cell in
            report.results.cells.get((label, "throughput"), {}).values() if cell.values}
    of_runs = f" of {runs.pop()} runs" if len(runs) == 1 else ""
    if best_of_note(report):
        statistic = "best"  # the plan's best_of: every figure is its cell's best run
    table = Table(f"dbench: throughput, the {statistic}{of_runs}", header, [], label_columns=1,
                  name="dbench", note="dbench 4.0, Debian's NetBench load file, on the "
                                      "environment's scratch filesystem; % of "
                                      f"{baseline}: the figure over {baseline}'s."
                                      + (f" {best_of_note(report)}" if best_of_note(report)
                                         else ""))
    for env in report.results.environments:
        row, sources = [env], []
        for clients in sorted(by_clients):
            label = by_clients[clients]
            cells = report.results.cells.get((label, "throughput"), {})
            cell, base = cells.get(env), cells.get(baseline or "")
            row.append(value_text(cell, footnotes))
            shown = central(cell) if cell is not None and cell.values else None
            reference = central(base) if base is not None and base.values else None
            row.append(format_share(shown / reference * 100) if shown and reference else "-")
            sources += [(env, label)] * 2
        table.add(row, sources)
    return table


def _best_text(cell: Cell | None) -> str:
    if cell is None or not cell.values:
        return "-"
    return f"{format_value(max(cell.values))} (n={cell.n_runs})"


def _best_share(cell: Cell | None, base: Cell | None) -> str:
    if cell is None or base is None or not cell.values or not base.values or not max(base.values):
        return "-"
    return format_share(max(cell.values) / max(base.values) * 100)


# -- upload: channel x (write, no_write, no_upload) -------------------------------------

def upload_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    labels = _runs_by_label(report, {"upload"})
    if not labels:
        return None
    # by each environment's own runs: a label's channel may belong to the environment
    grid: dict[str, dict[tuple[str, int], dict[str, str]]] = {}
    for run in report.runs:
        if run.workload != "upload":
            continue
        params = run.params or {}
        key = (str(params.get("channel", "?")), int(params.get("size_mib", 0)))
        grid.setdefault(run.environment, {}).setdefault(key, {}).setdefault(
            str(params.get("mode", "?")), run.label)
    sizes = {size for by_key in grid.values() for _, size in by_key}
    one_size = len(sizes) == 1
    table = Table("Upload into the guest: MB/s" + (f" ({next(iter(sizes))} MiB)" if one_size else ""),
                  ["environment", "channel", "upload + write", "upload, no write",
                   "write, no upload"], [], name="upload-rates",
                  note="upload + write: the host sends the data through the channel and the "
                       "guest writes it to a file on its ext4 scratch disk (fsync at the end); "
                       "upload, no write: the guest reads it and discards it; write, no upload: "
                       "the guest writes the same amount it generated itself. MB/s = 1e6 bytes "
                       "per second of the guest's clock: the size over the time the seconds "
                       "table gives (" + ", ".join(f"{size} MiB = {size * MIB / 1e6:.4g} MB"
                                                   for size in sorted(sizes))
                       + "), so that the two tables agree; ± is the time's.")
    for env in report.results.environments:
        for (channel, size), modes in grid.get(env, {}).items():
            cells = [report.results.cells.get((modes[mode], "elapsed"), {}).get(env)
                     if mode in modes else None for mode in UPLOAD_MODES]
            if not _any_run(cells):
                continue
            named = channel if one_size else f"{channel} ({size} MiB)"
            table.add([env, named, *(_rate_text(cell, size, footnotes) for cell in cells)],
                      [(env, modes[mode]) if mode in modes else None for mode in UPLOAD_MODES])
    return table if table.rows else None


MIB = 1 << 20


def _rate_text(elapsed: Cell | None, size_mib: int, footnotes: Footnotes) -> str:
    """MB/s as the size over the time the seconds table shows (its statistic): a median of
    each run's rate would disagree with it (two runs: 526 MB/s against 33.55 MB over
    0.06889 s, 487 MB/s); the time's ± is the rate's."""
    if elapsed is None:
        return "not run"
    if not elapsed.values:
        return problem_text(elapsed, footnotes) if elapsed.problems else empty_text(elapsed)
    seconds = central(elapsed)
    if not seconds or not size_mib:
        return "-"
    text = format_value(size_mib * MIB / 1e6 / seconds)
    half_width = elapsed.stats.half_width if elapsed.stats else None
    if not STYLE.get().plain and half_width is not None:
        text += f" ±{format_percent(half_width)}"
    return decorate(text, elapsed, footnotes)


# -- upload: seconds per test, environments as columns ----------------------------------

# each mode under the name of libguestfs's test
UPLOAD_TESTS = {"write": "upload", "no_write": "upload-no-write", "no_upload": "write-no-upload"}
UPLOAD_TESTS_NOTE = ("upload: the host sends the data through the channel and the guest writes "
                     "it to a file on its ext4 scratch disk, fsync at the end; upload-no-write: "
                     "the guest reads it and discards it; write-no-upload: the guest writes as "
                     "much it generated itself.")


def upload_times_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """Seconds per test (upload, upload-no-write, write-no-upload) with the environments as
    columns, as libguestfs's UML-against-KVM post gives them: each run's elapsed time on the
    guest's clock. An environment's channel is its own: UML's serial line and QEMU's
    virtio-serial port share a row, and the note says which each used."""
    found = _upload_labels(report)
    if not found:
        return None
    envs = [env for env in report.results.environments if env in found]
    channels = {env: list(dict.fromkeys(channel for _, _, channel in found[env]))
                for env in envs}
    by_channel = any(len(used) > 1 for used in channels.values())  # a row per channel
    sizes = sorted({size for env in envs for _, size, _ in found[env]})
    rows = list(dict.fromkeys(
        (mode, size, channel if by_channel else "")
        for mode in UPLOAD_MODES for size in sizes for env in envs
        for channel in channels[env] if (mode, size, channel) in found[env]))
    title = "Upload into the guest: seconds per test" + (f" ({sizes[0]} MiB)"
                                                         if len(sizes) == 1 else "")
    statistic = STYLE.get().statistic
    table = Table(title, ["test", *envs], [], label_columns=1, name="upload",
                  note=f"Seconds on the guest's clock, the {statistic} of the runs. "
                       + UPLOAD_TESTS_NOTE + _channel_note(channels, by_channel))
    for mode, size, channel in rows:
        qualifiers = [channel] if channel else []
        qualifiers += [f"{size} MiB"] if len(sizes) > 1 else []
        named = UPLOAD_TESTS[mode] + (f" ({', '.join(qualifiers)})" if qualifiers else "")
        labels = [_upload_label(found[env], mode, size, channel, channels[env]) for env in envs]
        table.add([named, *(_seconds_text(report, label, env, footnotes)
                            for label, env in zip(labels, envs))],
                  [(env, label) if label else None for label, env in zip(labels, envs)])
    return table


def _upload_labels(report: CampaignResults) -> dict[str, dict[tuple[str, int, str], str]]:
    """environment -> (mode, MiB, channel) -> label, from each environment's own runs (a
    label's channel may belong to the environment)."""
    found: dict[str, dict[tuple[str, int, str], str]] = {}
    for run in report.runs:
        params = run.params or {}
        if run.workload != "upload" or params.get("mode", "write") not in UPLOAD_TESTS:
            continue
        key = (str(params.get("mode", "write")), int(params.get("size_mib", 0)),
               str(params.get("channel", "?")))
        found.setdefault(run.environment, {}).setdefault(key, run.label)
    return found


def _upload_label(labels: dict[tuple[str, int, str], str], mode: str, size: int, channel: str,
                  used: list[str]) -> str | None:
    """The environment's label for this row: of the row's channel, or of the environment's
    one channel when rows do not name channels."""
    return labels.get((mode, size, channel or used[0]))


def _seconds_text(report: CampaignResults, label: str | None, env: str,
                  footnotes: Footnotes) -> str:
    cell = label_cell(report, label, "elapsed", env) if label else None
    if cell is None:
        return "-"
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    return decorate(format_value(central(cell)), cell, footnotes)


def _channel_note(channels: dict[str, list[str]], by_channel: bool) -> str:
    """' Channel: serial in uml; virtio-serial in qemu.' ('' when the rows name channels)."""
    if by_channel:
        return ""
    groups: dict[str, list[str]] = {}
    for env, used in channels.items():
        groups.setdefault(used[0], []).append(env)
    if len(groups) == 1:
        return f" Channel: {next(iter(groups))}."
    return " Channel: " + "; ".join(f"{channel} in {', '.join(envs)}"
                                    for channel, envs in groups.items()) + "."


# -- build: kernbench's columns ---------------------------------------------------------

def build_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    labels = _runs_by_label(report, BUILD_WORKLOADS)
    if not labels:
        return None
    table = Table("Build (make -jN): medians, like kernbench",
                  ["environment", "build", *(_clock_title(title) for _, title in BUILD_COLUMNS)],
                  [],
                  name="build",
                  note="elapsed: wall time of make; user and sys: CPU time of make and every "
                       "compiler it ran (wait4); CPU % = (user + sys) / elapsed; context "
                       "switches: involuntary; sleeps: voluntary. Cold: the host's and the "
                       "guest's caches dropped first; warm: after one untimed build; copied "
                       "(a Linux tree): as just copied, without a warm-up build.")
    for env in report.results.environments:
        for label in labels:
            cells = [report.results.cells.get((label, metric), {}).get(env)
                     for metric, _ in BUILD_COLUMNS]
            if not _any_run(cells):
                continue
            table.add([env, label, *(value_text(cell, footnotes) for cell in cells)],
                      [(env, label)] * len(BUILD_COLUMNS))
    return table if table.rows else None


def _clock_title(title: str) -> str:
    """"elapsed (s)" as "elapsed (m:ss)" where the table is in minutes and seconds."""
    return title.replace("(s)", f"({unit_label('s')})")


def build_runs_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """Each run as a column (the wiki's real / user / sys per run), then kernbench's
    mean (standard deviation)."""
    labels = _runs_by_label(report, BUILD_WORKLOADS)
    if not labels:
        return None
    most = 0
    rows = []
    for env in report.results.environments:
        for label in labels:
            for metric, title in BUILD_COLUMNS[:3]:
                cell = report.results.cells.get((label, metric), {}).get(env)
                if cell is None or not cell.values:
                    continue
                runs, mean, stdev = cell.run_means()
                most = max(most, len(runs))
                spread = f" ({own_unit_text(cell, stdev)})" if stdev is not None else ""
                runs = [own_unit_text(cell, value) for value in runs]
                rows.append(([env, label, _clock_title(title)], runs,
                              f"{own_unit_text(cell, mean)}{spread}", (env, label)))
    if not rows:
        return None
    table = Table("Build runs: each run, then mean (standard deviation), like kernbench",
                  ["environment", "build", "time", *(f"run {index + 1}" for index in range(most)),
                   "mean (stdev)"], [], label_columns=3, name="build-runs",
                  note=f"{'Minutes and seconds' if unit_label('s') == CLOCK else 'Seconds'} "
                       "per run, in the order the runs ran; kernbench prints the mean with the "
                       "standard deviation in brackets.")
    for names, runs, mean, source in rows:
        cells = runs + ["-"] * (most - len(runs))
        table.add([*names, *cells, mean], [source] * (most + 1))
    return table


# -- durability: fsync honoured per environment (cache mode) ------------------------------

def durability_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    labels = _runs_by_label(report, {"fsync_honoured"})
    if not labels:
        return None
    table = Table("Durability: is the guest's fsync honoured at the host's storage?",
                  ["environment", "check", "records acknowledged", "records durable",
                   "verdict"], [], name="durability",
                  note="A power cut modelled at the host: the guest's disk is a loop device "
                       "whose requests the host kernel traces (block_rq_issue/complete). A "
                       "record counts as durable only if a flush (or FUA write) covering it "
                       "completed there before its acknowledgement reached the host. The "
                       "verdict is per run: honoured only if every acknowledged record was "
                       "durable.")
    for env in report.results.environments:
        for label in labels:
            cells = {metric: report.results.cells.get((label, metric), {}).get(env)
                     for metric in ("records_acknowledged", "records_durable", "honoured")}
            if not _any_run(cells.values()):
                continue
            verdict = cells["honoured"]
            if verdict is None or not verdict.values:
                text = value_text(verdict, footnotes)
            else:
                yes = sum(1 for value in verdict.values if value >= 1)
                text = ("honoured" if yes == len(verdict.values) else "NOT honoured"
                        if yes == 0 else f"mixed: honoured in {yes} of {len(verdict.values)}")
                text = decorate(text + (f" ({len(verdict.values)} runs)"
                                        if len(verdict.values) > 1 else ""), verdict, footnotes)
            # the check by its title ("fsync honoured"): "check" is no label column to titles
            shown = report.label_titles.get(label, label)
            table.add([env, shown, value_text(cells["records_acknowledged"], footnotes),
                       value_text(cells["records_durable"], footnotes), text],
                      [(env, label)] * 3)
    return table if table.rows else None


# -- verdicts of other workloads (an exec metric of kind verdict) --------------------------

# workloads whose verdicts a table of their own shows, beside the figures behind them
OWN_VERDICT_TABLES = frozenset({"fsync_honoured"})


def verdict_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    workload_of = {run.label: run.workload for run in report.runs}
    results = report.results
    rows = [(label, metric) for label, metric, _unit in results.rows
            if metric and workload_of.get(label) not in OWN_VERDICT_TABLES
            and next(iter(results.cells[(label, metric)].values())).kind == VERDICT]
    if not rows:
        return None
    table = Table("Verdicts: yes or no per environment", ["workload", "verdict",
                  *results.environments], [], name="verdicts",
                  note="A verdict metric is 1 (yes) or 0 (no) per run; it enters no ratio, "
                       "% table or geometric mean. mixed: the runs disagreed.")
    for label, metric in rows:
        row = results.cells[(label, metric)]
        table.add([label, metric, *(verdict_text(row[env], footnotes)
                                    for env in results.environments)],
                  [(env, label) for env in results.environments])
    return table
