"""A QEMU guest saved and restored through QMP (docs/workloads-startup.md).

QEMU 7.2 has no migration to a file (that came in 8.2), so the state goes through a file
descriptor: the save stops the guest, hands QEMU the image's file over the QMP socket
(getfd), migrates into it with no bandwidth limit (QEMU's default caps it at 128 MiB/s)
and waits for the migration's completed event. A restore starts QEMU again with the very
same command line plus `-incoming defer`, hands it the file the same way, loads it
(migrate-incoming) and resumes the guest (cont): a guest saved while stopped stays stopped
after the load. The guest's console is QEMU's stdio, which the new process opens again."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from guestbench.environments import scratch
from guestbench.environments.base import Guest, GuestStartError, Job, SnapshotUnavailable
from guestbench.environments.fullsystem.qmp import QMP_CONNECT_S, REFUSED_RETRY_S, connected
from guestbench.environments.snapshots import Restored, Saved, Snapshots, image_bytes
from guestbench.process import proc

STATE_FILE = "state"  # the migration stream, in the image folder
FD_NAME = "gbsnap"
MIGRATION_S = 300.0  # a save or a load that has not completed by then has failed


class QemuSnapshots(Snapshots):
    def __init__(self, qemu, job: Job) -> None:
        if qemu.inside:
            raise SnapshotUnavailable("a guest inside the L1 machine is not saved and restored "
                                      "yet (its QMP socket is the L1 machine's)")
        if qemu.spec.placement != "none":
            raise SnapshotUnavailable(f"placement {qemu.spec.placement} with snapshots: a "
                                      "restored QEMU is not pinned yet (fix: placement = "
                                      "\"none\")")
        if qemu.console_kind() != "stdio":
            raise SnapshotUnavailable("a snapshot needs the guest's console on QEMU's stdio")
        self.qemu, self.job = qemu, job
        self.argv: list[str] | None = None
        self.socket: Path | None = None

    def start(self, logdir: Path, deadline_ns: int) -> Guest:
        guest = self.qemu.start_guest(self.job, logdir, deadline_ns, stdin=True)
        self.argv, self.socket = list(guest.argv), guest.qmp_socket
        return guest

    def save(self, guest: Guest, image: Path) -> Saved:
        state = image / STATE_FILE
        phases = _run(_save(guest.qmp_socket, state), "save")
        return Saved(image_bytes(image), phases, note="QEMU's migration stream, uncompressed")

    def restore(self, image: Path, logdir: Path, deadline_ns: int, first_seq: int) -> Restored:
        workdir = scratch.socket_folder("guestbench-qemu-")
        socket = workdir / "qmp.sock"
        argv = [word.replace(str(self.socket), str(socket)) for word in self.argv]
        began_ns = proc.now_ns()
        try:
            guest = self.qemu.guest_class(
                [*argv, "-incoming", "defer"], logdir, deadline_ns, scratch=[workdir],
                stdin=True, first_seq=first_seq, resumed=True, qmp_socket=socket,
                placement="none", boot_timeout_s=self.qemu.spec.boot_timeout_s)
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        try:
            phases = _run(_restore(socket, image / STATE_FILE, began_ns), "restore")
        except BaseException:
            guest.stop()
            raise
        return Restored(guest, phases)


def _run(coroutine, what: str) -> dict[str, float]:
    try:
        return asyncio.run(asyncio.wait_for(coroutine, MIGRATION_S))
    except asyncio.TimeoutError:
        raise GuestStartError(f"QEMU's {what} did not complete within {MIGRATION_S:g} s") from None
    except GuestStartError:
        raise
    except Exception as error:  # noqa: BLE001 - the QMP client's errors, QEMU gone: say which
        raise GuestStartError(f"QEMU's {what}: {type(error).__name__}: {error}") from None


async def _connected(socket: Path):
    # the restoring QEMU's socket appears as it starts: as long as a guest's QMP may take
    return await connected(socket, "guestbench-snapshot", QMP_CONNECT_S + REFUSED_RETRY_S)


async def _hand_file(client, path: Path, flags: int) -> None:
    """Gives QEMU an open file as FD_NAME (SCM_RIGHTS over the QMP socket, then getfd)."""
    fd = os.open(path, flags, 0o600)
    try:
        client.send_fd_scm(fd)
        await client.execute("getfd", {"fdname": FD_NAME})
    finally:
        os.close(fd)


async def _migrated(client, start) -> None:
    """Runs start() (a migrate or migrate-incoming) and waits for its completed event."""
    with client.listener(names=("MIGRATION",)) as listener:
        await start()
        async for event in listener:
            status = event["data"]["status"]
            if status == "completed":
                return
            if status in ("failed", "cancelled"):
                info = await client.execute("query-migrate")
                raise GuestStartError(f"QEMU's migration {status}: "
                                      f"{info.get('error-desc', 'no reason given')}")


async def _save(socket: Path, state: Path) -> dict[str, float]:
    client = await _connected(socket)
    try:
        await client.execute("migrate-set-capabilities", {"capabilities": [
            {"capability": "events", "state": True}]})
        await client.execute("migrate-set-parameters", {"max-bandwidth": 0})
        began_ns = proc.now_ns()
        await client.execute("stop")  # a stopped guest dirties no page twice
        stopped_ns = proc.now_ns()
        await _hand_file(client, state, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        await _migrated(client, lambda: client.execute("migrate", {"uri": f"fd:{FD_NAME}"}))
        done_ns = proc.now_ns()
    finally:
        await client.disconnect()
    return {"stop": (stopped_ns - began_ns) / 1e6, "migrate": (done_ns - stopped_ns) / 1e6}


async def _restore(socket: Path, state: Path, began_ns: int) -> dict[str, float]:
    client = await _connected(socket)
    try:
        spawned_ns = proc.now_ns()
        await client.execute("migrate-set-capabilities", {"capabilities": [
            {"capability": "events", "state": True}]})
        await _hand_file(client, state, os.O_RDONLY)
        await _migrated(client, lambda: client.execute("migrate-incoming",
                                                       {"uri": f"fd:{FD_NAME}"}))
        loaded_ns = proc.now_ns()
        await client.execute("cont")
        resumed_ns = proc.now_ns()
    finally:
        await client.disconnect()
    return {"spawn": (spawned_ns - began_ns) / 1e6, "load": (loaded_ns - spawned_ns) / 1e6,
            "resume": (resumed_ns - loaded_ns) / 1e6}
