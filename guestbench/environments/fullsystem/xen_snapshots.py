"""A Xen PV domU saved and restored with Xen's own toolstack (docs/workloads-startup.md).

The save is `xl save DOMAIN FIFO` in dom0, beside the run that started the domU (a side
command of the machine, nested.py): Xen suspends the domU, libxl writes its memory and
state, and destroys it, so its `xl create -c` ends. The stream goes through a FIFO to `cat`,
which writes it into a folder that dom0 shares with the host (which reads its size): libxc
writes the domU's pages from their mapping in dom0, which a 9p file cannot take (9p's
zero-copy path pins the writer's pages, and a foreign mapping has none to pin: "Failed to
write page data to stream (14 = Bad address)"); a pipe copies them. A restore is `xl restore FILE` (the
domain resumes where it was saved, under its saved name), then `xl console DOMAIN` as the
run, in a terminal that script(1) makes (xl's console client reads no input otherwise):
its output is the restored domU's console, its input the line that tells the restored agent
to go. xl's own steps are the restore's phases: `load` (xl restore, until the domain
runs again) and `attach` (from there to the console's start being asked)."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from guestbench.environments.base import Guest, GuestStartError, Job
from guestbench.environments.fullsystem import dom0, nested
from guestbench.environments.snapshots import InMachine, Restored, Saved
from guestbench.process import proc

STATE_FILE = "state"  # xl save's image, in a folder the machine shares with the host
SAVE_S = 300.0        # an xl save or restore that has not ended by then has failed
CONSOLE_SCRIPT = "console.sh"


class XenSnapshots(InMachine):
    def __init__(self, environment, job: Job) -> None:
        self.environment, self.job = environment, job
        self.domain: str | None = None
        self.xl = shlex.quote(str((dom0.tools_folder() or Path("/usr/sbin")) / "xl"))

    @property
    def machine(self):
        return self.environment.machine

    def start(self, logdir: Path, deadline_ns: int) -> Guest:
        guest = self.environment.start_guest(self.job, logdir, deadline_ns, stdin=True)
        self.domain = self.environment.domain_name(Path(guest.argv[1]).parent)
        return guest

    def save(self, guest: Guest, image: Path) -> Saved:
        state = self.inside_folder(self.machine) / STATE_FILE
        began_ns = proc.now_ns()
        fifo = f"{nested.L1_SHM}/gbsave-{self.domain}"
        self._run(f"rm -f {fifo} && mkfifo {fifo} || exit 1\n"
                  f"cat {fifo} > {shlex.quote(str(state))} &\n"
                  f"{self.xl} save {self.domain} {fifo}; saved=$?\n"
                  # a save that failed before it opened the FIFO leaves cat waiting there
                  "[ $saved -eq 0 ] || kill $! 2>/dev/null\n"
                  f"wait $!; rm -f {fifo}; exit $saved", "save")
        took_ms = (proc.now_ns() - began_ns) / 1e6
        return Saved(state.stat().st_size, {"xl_save": took_ms},
                     note="xl save's image, uncompressed, written by dom0 into a folder "
                          "shared with the host")

    def restore(self, image: Path, logdir: Path, deadline_ns: int, first_seq: int) -> Restored:
        machine = self.machine
        began_ns = proc.now_ns()
        self._run(f"{self.xl} restore {shlex.quote(str(self.inside_image / STATE_FILE))}",
                  "restore")
        loaded_ns = proc.now_ns()
        workdir = machine.workdir()
        script = workdir / CONSOLE_SCRIPT
        # xl's console reads its input only from a terminal: script(1) gives it one, and
        # copies the run's input (the line that tells the agent to go) into it
        console = shlex.quote(f"{self.xl} console {self.domain}")
        script.write_text(f"exec script -qfec {console} /dev/null\n")
        try:
            guest = self.environment.guest_class(
                ["/bin/sh", str(script)], logdir, deadline_ns, scratch=[workdir], stdin=True,
                first_seq=first_seq, resumed=True,
                boot_timeout_s=self.environment.spec.boot_timeout_s,
                launcher=machine.launcher(workdir))
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            self._destroy()
            raise
        return Restored(guest, {"load": (loaded_ns - began_ns) / 1e6,
                                "attach": (proc.now_ns() - loaded_ns) / 1e6})

    def _run(self, command: str, what: str) -> None:
        status, said = self.machine.side(command, SAVE_S)
        if status != 0:
            lines = [line.strip() for line in said.splitlines() if line.strip()]
            raise GuestStartError(f"xl {what} ended with {status}: "
                                  f"{' | '.join(lines[-3:]) or 'it said nothing'}")

    def _destroy(self) -> None:
        """The domain, if a restore left it running (a restored domU whose run ended powers
        off and is gone already)."""
        if self.domain and self.machine is not None and self.machine.alive:
            try:
                self.machine.side(f"{self.xl} destroy {self.domain} 2>/dev/null", 60.0)
            except GuestStartError:
                pass

    def close(self) -> None:
        self._destroy()
        super().close()
