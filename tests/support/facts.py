"""Host facts and a start time for campaigns written straight into a store."""

from __future__ import annotations

import datetime as dt


FACTS = {"hostname": "h", "cpu_model": "Test CPU", "logical_cpus": 4, "kernel": "6.1.0-test",
         "llc_bytes": 32 * 2**20}
STARTED = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)
