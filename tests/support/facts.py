"""Host facts and a start time for campaigns written straight into a store."""

from __future__ import annotations

import datetime as dt


FACTS = {"hostname": "h", "cpu_model": "Test CPU", "logical_cpus": 4, "kernel": "6.1.0-test",
         "llc_bytes": 32 * 2**20}
STARTED = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)

# Hosts of two classes as host.collect records them (an AMD EPYC VM, an Intel Xeon VM with
# AVX-512 and AMX): campaigns of one against the other compare across hosts
AMD_EPYC = {**FACTS, "hostname": "epyc", "cpu_vendor": "AuthenticAMD", "cpu_model": "AMD EPYC",
            "xsave_bytes": 2440, "llc_bytes": 32 * 2**20, "cgroup_mode": "hybrid",
            "kernel": "6.18.44", "virtualised": True}
INTEL_XEON = {**FACTS, "hostname": "xeon", "cpu_vendor": "GenuineIntel",
              "cpu_model": "Intel(R) Xeon(R) Processor", "xsave_bytes": 11008,
              "llc_bytes": 480 * 2**20, "cgroup_mode": "hybrid", "kernel": "6.18.50",
              "virtualised": True}
