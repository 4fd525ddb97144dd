"""A QEMU guest saved and restored through QMP (docs/workloads-startup.md).

QEMU 7.2 has no migration to a file (that came in 8.2), so the state goes through a file
descriptor: the save stops the guest, hands QEMU the image's file over the QMP socket
(getfd), migrates into it with no bandwidth limit (QEMU's default caps it at 128 MiB/s)
and waits for the migration's completed event. A restore starts QEMU again with the very
same command line plus `-incoming defer`, hands it the file the same way, loads it
(migrate-incoming) and resumes the guest (cont): a guest saved while stopped stays stopped
after the load. The guest's console is QEMU's stdio, which the new process opens again.

Inside an L1 machine (nested.py) no descriptor crosses into it: the inner QEMU's QMP is a
TCP port that the L1 machine's user network forwards from the host's loopback, the state
goes through `exec:cat` into a folder the L1 machine shares with the host (its size is read
there), and the console's input is the L1 run's FIFO."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import time
from pathlib import Path

from guestbench.environments import scratch
from guestbench.environments.base import Guest, GuestStartError, Job, SnapshotUnavailable
from guestbench.environments.fullsystem import nested
from guestbench.environments.fullsystem.qmp import QMP_CONNECT_S, REFUSED_RETRY_S, connected
from guestbench.environments.snapshots import InMachine, Restored, Saved, image_bytes
from guestbench.process import proc

STATE_FILE = "state"  # the migration stream, in the image folder
FD_NAME = "gbsnap"
MIGRATION_S = 300.0  # a save or a load that has not completed by then has failed
# inside an L1 machine under TCG an inner QEMU takes seconds to start (5.5 s seen) before
# its QMP port listens
INSIDE_START_S = 60.0
WRITTEN_S = 30.0  # inside: from QEMU's completed event to cat's state file, whole


class QemuSnapshots(InMachine):
    def __init__(self, qemu, job: Job) -> None:
        if qemu.spec.placement != "none":
            raise SnapshotUnavailable(f"placement {qemu.spec.placement} with snapshots: a "
                                      "restored QEMU is not pinned yet (fix: placement = "
                                      "\"none\")")
        if qemu.console_kind() != "stdio":
            raise SnapshotUnavailable("a snapshot needs the guest's console on QEMU's stdio")
        self.qemu, self.job = qemu, job
        self.argv: list[str] | None = None
        self.socket: Path | None = None

    @property
    def machine(self):
        """The L1 machine the guest runs in, or None (a new one, if the last one died)."""
        return self.qemu.machine

    def start(self, logdir: Path, deadline_ns: int) -> Guest:
        vmm_args = ("-qmp", nested.INNER_QMP) if self.machine else ()
        guest = self.qemu.start_guest(self.job, logdir, deadline_ns, vmm_args, stdin=True)
        self.argv, self.socket = list(guest.argv), guest.qmp_socket
        return guest

    def save(self, guest: Guest, image: Path) -> Saved:
        if self.machine is None:
            phases = _run(_save(guest.qmp_socket, _handed(image / STATE_FILE)), "save")
            return Saved(image_bytes(image), phases, note="QEMU's migration stream, uncompressed")
        state = self.inside_folder(self.machine) / STATE_FILE
        part = state.with_name(STATE_FILE + ".part")
        # QEMU may say "completed" before cat has written its last bytes, and the guest's
        # stop that follows kills cat with it: the file is whole once cat's rename is done
        command = f"cat > {shlex.quote(str(part))} && mv {shlex.quote(str(part))} " \
                  f"{shlex.quote(str(state))}"
        phases = _run(_save(self.machine.qmp_address, f"exec:{command}"), "save")
        began_ns = proc.now_ns()
        while not state.exists():
            if proc.now_ns() - began_ns > WRITTEN_S * 1e9:
                raise GuestStartError(f"QEMU's migration completed, but cat in the L1 machine "
                                      f"had not written the state within {WRITTEN_S:g} s")
            time.sleep(0.005)
        phases["written"] = (proc.now_ns() - began_ns) / 1e6
        return Saved(image_bytes(self.inside_image), phases,
                     note="QEMU's migration stream, uncompressed, through cat in the L1 machine")

    def restore(self, image: Path, logdir: Path, deadline_ns: int, first_seq: int) -> Restored:
        machine = self.machine
        workdir = (machine.workdir() if machine else scratch.socket_folder("guestbench-qemu-"))
        socket = None if machine else workdir / "qmp.sock"
        argv = (self.argv if machine else
                [word.replace(str(self.socket), str(socket)) for word in self.argv])
        began_ns = proc.now_ns()
        try:
            guest = self.qemu.guest_class(
                [*argv, "-incoming", "defer"], logdir, deadline_ns, scratch=[workdir],
                stdin=True, first_seq=first_seq, resumed=True, qmp_socket=socket,
                placement="none", boot_timeout_s=self.qemu.spec.boot_timeout_s,
                **({"launcher": machine.launcher(workdir)} if machine else {}))
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        if machine:
            state = shlex.quote(str(self.inside_image / STATE_FILE))
            loading = _restore(machine.qmp_address, f"exec:cat {state}", began_ns,
                               INSIDE_START_S)
        else:
            loading = _restore(socket, _handed(image / STATE_FILE, os.O_RDONLY), began_ns)
        try:
            phases = _run(loading, "restore")
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


async def _connected(address, patience_s: float = QMP_CONNECT_S + REFUSED_RETRY_S):
    # the restoring QEMU's socket appears as it starts: as long as a guest's QMP may take
    return await connected(address, "guestbench-snapshot", patience_s)


class _handed:
    """A file QEMU gets over its QMP socket (SCM_RIGHTS, then getfd), as fd:FD_NAME."""

    def __init__(self, path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_EXCL) -> None:
        self.path, self.flags = path, flags

    async def uri(self, client) -> str:
        fd = os.open(self.path, self.flags, 0o600)
        try:
            client.send_fd_scm(fd)
            await client.execute("getfd", {"fdname": FD_NAME})
        finally:
            os.close(fd)
        return f"fd:{FD_NAME}"


async def _uri(client, target: "_handed | str") -> str:
    """The migration's URI: a file handed over now, or a URI as it is (exec:...)."""
    return target if isinstance(target, str) else await target.uri(client)


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


async def _save(address, target: "_handed | str") -> dict[str, float]:
    client = await _connected(address)
    try:
        await client.execute("migrate-set-capabilities", {"capabilities": [
            {"capability": "events", "state": True}]})
        await client.execute("migrate-set-parameters", {"max-bandwidth": 0})
        began_ns = proc.now_ns()
        await client.execute("stop")  # a stopped guest dirties no page twice
        stopped_ns = proc.now_ns()
        uri = await _uri(client, target)
        await _migrated(client, lambda: client.execute("migrate", {"uri": uri}))
        done_ns = proc.now_ns()
    finally:
        await client.disconnect()
    return {"stop": (stopped_ns - began_ns) / 1e6, "migrate": (done_ns - stopped_ns) / 1e6}


async def _restore(address, target: "_handed | str", began_ns: int,
                   patience_s: float = QMP_CONNECT_S + REFUSED_RETRY_S) -> dict[str, float]:
    client = await _connected(address, patience_s)
    try:
        spawned_ns = proc.now_ns()
        await client.execute("migrate-set-capabilities", {"capabilities": [
            {"capability": "events", "state": True}]})
        uri = await _uri(client, target)
        await _migrated(client, lambda: client.execute("migrate-incoming", {"uri": uri}))
        loaded_ns = proc.now_ns()
        await client.execute("cont")
        resumed_ns = proc.now_ns()
    finally:
        await client.disconnect()
    return {"spawn": (spawned_ns - began_ns) / 1e6, "load": (loaded_ns - spawned_ns) / 1e6,
            "resume": (resumed_ns - loaded_ns) / 1e6}
