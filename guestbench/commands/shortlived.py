"""A command that reads much and ends within seconds (report, compare, history) runs
without Python's cycle collector and with one OpenBLAS thread, until it ends."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable


def settle(on_close: Callable[[Callable[[], None]], None]) -> None:
    """report and compare build hundreds of thousands of rows and cells, none of them in a
    reference cycle, and end within seconds: Python's cycle collector, which would walk
    them again and again as they grow (a tenth of a 2 s report), stays off until the
    command ends (in a process that goes on, such as a test run, it is on again after).

    OpenBLAS gets one thread, unless the user chose otherwise, before numpy or scipy load
    it: their matrices here are small, and OpenBLAS's idle threads spin. With compare's
    two processes each running such threads on two CPUs, compare of a 4,000-sample
    campaign took 2.0 s instead of 1.0 s. (Called before the first import of numpy.)

    on_close(undo) is how the caller undoes each setting when the command ends."""
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        on_close(lambda: os.environ.pop("OPENBLAS_NUM_THREADS", None))
    if gc.isenabled():
        gc.disable()
        on_close(gc.enable)
