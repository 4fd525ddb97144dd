"""A container saved and restored by its OCI runtime (docs/workloads-startup.md): runsc
checkpoints its sandbox itself; runc and crun hand the container to CRIU.

`RUNTIME checkpoint --image-path IMAGE ID` saves the running container and ends it (without
--leave-running: that one restores at once, under the checkpoint command, so it cannot be
timed apart); `RUNTIME delete --force ID` forgets it; `RUNTIME restore --bundle B
--image-path IMAGE ID` makes it again from the image, with the same ID and bundle, and runs
it in the foreground as `run` does: its stdio are the restore command's. runsc's restore
makes the container itself (never `create` it first: this runsc refuses an ID that
exists)."""

from __future__ import annotations

import shutil
from pathlib import Path

from guestbench.environments import oci_leftovers
from guestbench.environments.base import (Guest, GuestStartError, Job, ProcessGuest,
                                          SnapshotUnavailable)
from guestbench.environments.snapshots import Restored, Saved, Snapshots, image_bytes
from guestbench.host import which
from guestbench.process import proc, reaper

SAVE_TIMEOUT_S = 300.0
CRIU_CHECK_S = 30.0
_criu_answers: dict[str, str] = {}  # criu's path -> why it cannot checkpoint here ("" if it can)


def criu_refusal() -> str:
    """Why CRIU cannot checkpoint here, from `criu check` (once per process); "" if it can."""
    criu = which("criu")
    if criu is None:
        return "runc and crun checkpoint with CRIU, which is not installed (apt-get install criu)"
    if str(criu) not in _criu_answers:
        try:
            result = proc.run([str(criu), "check"], timeout_s=CRIU_CHECK_S)
            _criu_answers[str(criu)] = "" if result.returncode == 0 else (
                f"runc and crun checkpoint with CRIU, and `criu check` fails here: "
                f"{_criu_said(result.stderr or result.stdout)} (CRIU {_criu_version()}; "
                "kernels from 6.13 on need CRIU 4.1 or newer)")
        except (proc.ProcessError, proc.DeadlineExceeded) as error:
            _criu_answers[str(criu)] = f"`criu check` did not answer: {error}"
    return _criu_answers[str(criu)]


def _criu_said(text: str) -> str:
    """CRIU's own words of why: its last errors, without the source positions and the
    helpers' bare exit statuses that come before them."""
    lines = [line.split("): ", 1)[-1] for line in text.strip().splitlines()
             if "exited, status=" not in line]
    return "; ".join(lines[-4:])[:300] or "no message"


def _criu_version() -> str:
    try:
        result = proc.run(["criu", "--version"], timeout_s=CRIU_CHECK_S)
    except (proc.ProcessError, proc.DeadlineExceeded):
        return "its version unknown"
    words = result.stdout.split()  # "Version: 3.17.1"
    return words[1] if len(words) > 1 else "of unknown version"


class OciSnapshots(Snapshots):
    """One container of the job: its bundle lives until close(), across its restores."""

    def __init__(self, oci, job: Job, bundle) -> None:
        if oci.spec.runtime != "runsc":
            refused = criu_refusal()
            if refused:
                raise SnapshotUnavailable(refused)
        self.oci, self.bundle = oci, bundle
        bundle.network = oci._network(job)
        reaper.KEEPER.folder(str(bundle.directory))
        self.runtime = [oci.program, *oci._global_args(bundle)]
        # CRIU's logs and working mounts (its cgroup yard) beside the bundle, so that the
        # image folder holds the image alone, and a restore cut short leaves its mounts
        # where oci_leftovers looks
        self.criu = [] if oci.spec.runtime == "runsc" else [
            "--work-path", str(bundle.directory / "criu-work")]
        if self.criu:
            (bundle.directory / "criu-work").mkdir()

    def _guest(self, argv: list[str], logdir: Path, deadline_ns: int,
               first_seq: int | None = None) -> ProcessGuest:
        """The runtime's foreground process; a restore's (first_seq given) goes on there."""
        cleanup = self.oci._cleanup_argv(self.bundle)
        if self.oci.spec.runtime != "runsc" and first_seq is not None:
            # a restore cut short leaves CRIU's processes where `delete` cannot see them
            cleanup.append(oci_leftovers.command(self.bundle.container_id,
                                                 self.bundle.directory))
        return ProcessGuest(argv, logdir, deadline_ns, stdin=True, first_seq=first_seq or 0,
                            cleanup=cleanup, cleanup_phase="delete")

    def start(self, logdir: Path, deadline_ns: int) -> Guest:
        return self._guest(self.oci._run_argv(self.bundle), logdir, deadline_ns)

    def save(self, guest: Guest, image: Path) -> Saved:
        # a process of guestbench's own (its group ends with guestbench): a checkpoint cut
        # short must not go on alone and write its image after the run's folder is gone
        logdir = Path(getattr(guest, "logdir", image.parent))
        began_ns = proc.now_ns()
        try:
            checkpoint = proc.Process(
                [*self.runtime, "checkpoint", "--image-path", str(image), *self.criu,
                 self.bundle.container_id], logdir / "checkpoint.log",
                logdir / "checkpoint-stderr.log", stdout_to_log=True)
        except proc.ProcessError as error:
            raise GuestStartError(f"{self.oci.spec.runtime} checkpoint: {error}") from None
        try:
            code = checkpoint.wait(SAVE_TIMEOUT_S)
            took_ms = (proc.now_ns() - began_ns) / 1e6
        finally:
            checkpoint.kill()
            self._keep_criu_log("dump.log", logdir)
        if code is None:
            raise GuestStartError(f"{self.oci.spec.runtime} checkpoint did not end within "
                                  f"{SAVE_TIMEOUT_S:g} s")
        if code != 0:
            lines = (logdir / "checkpoint-stderr.log").read_text(errors="replace").splitlines()
            said = (lines or ["no message"])[-1][:240]
            raise GuestStartError(f"{self.oci.spec.runtime} checkpoint exited with status "
                                  f"{code}: {said}")
        note = ("runsc's image, compressed by runsc (flate)" if self.oci.spec.runtime == "runsc"
                else "CRIU's image files")
        return Saved(image_bytes(image), {"checkpoint": took_ms}, note)

    def restore(self, image: Path, logdir: Path, deadline_ns: int, first_seq: int) -> Restored:
        argv = [*self.runtime, "restore", "--bundle", str(self.bundle.directory),
                "--image-path", str(image), *self.criu, self.bundle.container_id]
        self.restored_logdir = logdir
        return Restored(self._guest(argv, logdir, deadline_ns, first_seq))

    def _keep_criu_log(self, name: str, logdir: Path) -> None:
        """CRIU's own log of a dump or a restore, kept with the run's logs."""
        log = self.bundle.directory / "criu-work" / name
        if self.criu and log.exists() and logdir.exists():
            shutil.copy(log, logdir / f"criu-{name}")

    def close(self) -> None:
        if getattr(self, "restored_logdir", None) is not None:
            self._keep_criu_log("restore.log", self.restored_logdir)
        shutil.rmtree(self.bundle.directory, ignore_errors=True)
        reaper.KEEPER.folder_gone(str(self.bundle.directory))
