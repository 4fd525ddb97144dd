"""Cold-cache runs: the host kernel's caches dropped before a run that asks for it."""

from __future__ import annotations

import os


def drop_host_caches() -> str:
    """sync, then drop the host kernel's page cache, dentries and inodes (cold-cache runs).

    Returns "" when done, else why not (the run is then unsupported): it needs root.
    """
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as file:
            file.write("3\n")
    except OSError as error:
        return (f"a cold-cache run drops the host's page cache, which needs root "
                f"(/proc/sys/vm/drop_caches: {error.strerror}); run guestbench as root or "
                "measure with a warm cache only")
    return ""
