"""A campaign shaped like the default one, written straight into a store: the 8 presets
(crun and qemu-kvm unavailable), the 8 micro workloads and STREAM, with medians taken from a
real default campaign on a 2-core host and a fixed spread, so tables of it are deterministic."""

from __future__ import annotations

import datetime as dt

from guestbench.store.records import RunRecord

FACTS = {"hostname": "h", "cpu_model": "AMD EPYC", "logical_cpus": 2,
         "kernel": "6.18.44-test", "llc_bytes": 32 * 2**20}
STARTED = dt.datetime(2026, 11, 25, 20, 18, tzinfo=dt.timezone.utc)
ENVIRONMENTS = ("native", "namespace", "runc", "crun", "runsc", "qemu-user", "qemu-kvm", "uml")
UNAVAILABLE = {
    "crun": "crun cannot run a container here: cgroups in hybrid mode not supported, drop all "
            "controllers from cgroupv2",
    "qemu-kvm": "/dev/kvm exists but a test guest did not boot under KVM within 8 s (nested "
                "or paravirtual host?)",
}
UML_STREAM = ("the workload touches 384 MiB and this host's vm.max_map_count lets a UML guest "
              "map only ~255 MiB (fix: sysctl -w vm.max_map_count=262144, or a smaller "
              "array_mib)")
# workload -> environment -> median (ns for micro workloads, MB/s for STREAM's triad)
MEDIANS = {
    "getpid": {"native": 182.9, "namespace": 191.0, "runc": 187.5, "runsc": 34130.0,
               "qemu-user": 447.5, "uml": 48140.0},
    "getppid": {"native": 179.0, "namespace": 221.8, "runc": 201.8, "runsc": 33200.0,
                "qemu-user": 345.3, "uml": 32900.0},
    "sched_yield": {"native": 594.2, "namespace": 592.7, "runc": 526.3, "runsc": 41540.0,
                    "qemu-user": 845.6, "uml": 39710.0},
    "clock_gettime": {"native": 24.72, "namespace": 24.98, "runc": 22.99, "runsc": 50540.0,
                      "qemu-user": 244.0, "uml": 31750.0},
    "malloc_1mib": {"native": 462000.0, "namespace": 509900.0, "runc": 400700.0,
                    "runsc": 1232000.0, "qemu-user": 505000.0, "uml": 26520000.0},
    "first_write": {"native": 2144.0, "namespace": 2121.0, "runc": 1871.0, "runsc": 3825.0,
                    "qemu-user": 2187.0, "uml": 118200.0},
    "pipe_switch": {"native": 3128.0, "namespace": 3025.0, "runc": 2682.0, "runsc": 81100.0,
                    "qemu-user": 3610.0, "uml": 74330.0},
    "fork_exit": {"native": 132200.0, "namespace": 139300.0, "runc": 116000.0,
                  "runsc": 1950000.0, "qemu-user": 1969000.0, "uml": 1903000.0},
    "stream": {"native": 18020.0, "namespace": 22020.0, "runc": 24920.0, "runsc": 23870.0,
               "qemu-user": 2079.0},
}
# each cell's runs: the median times these (a spread of about 4%); runsc's getpid varies
# far more, qemu-user's STREAM forms two clusters
SPREAD = (0.96, 0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.05)
WIDE = (0.6, 0.8, 0.9, 1.0, 1.0, 1.2, 1.5, 1.9)
TWO_CLUSTERS = (0.70, 0.71, 0.72, 0.70, 0.71, 1.30, 1.31, 1.32, 1.30, 1.31)


def write(store, plan: dict | None = None) -> int:
    """The campaign, finished; returns its id. plan: what its stored plan holds besides its
    source (a plan's [[table]] entries: {"tables": [...]})."""
    campaign = store.create_campaign("quick", {"source": "test", **(plan or {})}, FACTS, "fp",
                                     "native", "/logs", "0.1.0")
    env_ids = {name: store.add_environment(
        campaign, name, "fake", {"name": name, "kind": "fake"}, name not in UNAVAILABLE,
        UNAVAILABLE.get(name, "ok"), position) for position, name in enumerate(ENVIRONMENTS)}
    repetition = 0
    for workload, medians in MEDIANS.items():
        for env in ENVIRONMENTS:
            factors = (WIDE if (workload, env) == ("getpid", "runsc") else TWO_CLUSTERS
                       if (workload, env) == ("stream", "qemu-user") else SPREAD)
            for factor in factors:
                repetition += 1
                status, reason, samples = "ok", "", ()
                if env in UNAVAILABLE:
                    status, reason = "unavailable", UNAVAILABLE[env]
                elif env not in medians:
                    status, reason = "unsupported", UML_STREAM
                elif workload == "stream":
                    samples = (("triad_bandwidth", "MB/s", medians[env] * factor),)
                else:
                    samples = (("time_per_op", "ns", medians[env] * factor),
                               ("tsc_per_op", "cycles", medians[env] * factor * 2.6))
                flags = ("console-latency",) if env == "uml" and status == "ok" else ()
                store.add_run(campaign, RunRecord(
                    env_ids[env], workload, workload, {}, repetition, status, reason, STARTED,
                    0.5, None if status != "ok" else f"/logs/{env}/{workload}/rep{repetition}",
                    samples, flags))
                if status != "ok":
                    break  # one run says it: cells that cannot run stop after one
    store.finish_campaign(campaign, "finished")
    return campaign
