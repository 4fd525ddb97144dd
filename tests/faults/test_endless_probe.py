"""A probe whose program prints without end: guestbench's memory stays bounded, the probe
ends at its timeout, and the environment is unavailable with the reason; no traceback.
Before the probe's output was capped, guestbench's RSS reached 951 MiB in the 5 s of a
qemu-user `--version` probe, and a 3 GB address-space limit ended it in a MemoryError."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

from guestbench.process import proc

ENDLESS_NO_NEWLINE = "#!/bin/sh\nexec tr -d '\\n' < /dev/zero | tr '\\0' x\n"
ENDLESS_LINES = "#!/bin/sh\nexec yes\n"


def _endless(tmp_path, body: str):
    program = tmp_path / "endless"
    program.write_text(body)
    program.chmod(0o755)
    return program


def test_a_short_command_that_prints_forever_keeps_its_cap_and_its_marker(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(proc, "LOG_CAP_BYTES", 1 << 20)
    program = _endless(tmp_path, ENDLESS_LINES)
    try:
        proc.run([str(program)], timeout_s=1.5)
    except proc.DeadlineExceeded as error:
        assert "did not finish within 1.5 s" in str(error)
    else:
        raise AssertionError("an endless program finished")
    done = proc.run(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' y; echo; echo end"],
                    timeout_s=30)
    assert done.returncode == 0
    assert done.stdout.startswith("y" * 1000) and done.stdout.endswith("end\n")
    assert "bytes dropped here" in done.stdout
    assert len(done.stdout) < (1 << 20) + 200


PROBE = textwrap.dedent("""
    import atexit, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    peak = sys.argv[3]
    atexit.register(lambda: open(peak, "w").write(
        str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)))
    from guestbench.cli import main
    sys.argv = ["guestbench", "run", sys.argv[1], "--quiet", "--db", sys.argv[2]]
    main()
""")


def test_a_qemu_user_binary_that_prints_forever_is_unavailable_within_bounded_memory(tmp_path):
    """The fault as found: a plan whose qemu-user `binary` prints without end, under a
    3 GB address-space limit; the probe's 5 s timeout ends it."""
    for body in (ENDLESS_NO_NEWLINE,):  # lines: the test above, in proc.run itself
        program = _endless(tmp_path, body)
        plan = tmp_path / "plan.toml"
        plan.write_text(f'[campaign]\nrepeat = 1\n\n[[environment]]\nname = "endless"\n'
                        f'kind = "qemu-user"\nbinary = "{program}"\n\n'
                        '[[workload]]\nname = "getpid"\n')
        store = tmp_path / "store.sqlite"
        store.unlink(missing_ok=True)
        peak = tmp_path / "peak"
        done = subprocess.run([sys.executable, "-c", PROBE, str(plan),
                               f"sqlite:///{store}", str(peak)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        peak_kib = int(peak.read_text())  # guestbench's own peak RSS (children apart)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode in (0, 2), (done.returncode, done.stderr)
        with sqlite3.connect(store) as connection:
            (available, probe), = connection.execute("select available, probe from environment")
        assert not available and "did not finish within 5 s" in probe, probe
        assert peak_kib < 400 << 10, f"guestbench's RSS peaked at {peak_kib >> 10} MiB"
