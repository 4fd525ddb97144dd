"""QEMU's machine protocol (QMP): one command per session, bounded in time."""

from __future__ import annotations

from pathlib import Path

from guestbench.environments.base import GuestStartError

QMP_CONNECT_S = 5.0
QMP_QUIT_S = 2.0
# QEMU makes its socket's file (bind) a moment before it listens: a connection refused in
# that moment is tried again, every 2 ms, this long
REFUSED_RETRY_S = 1.0


async def connected(address: Path | tuple[str, int], name: str = "guestbench",
                    patience_s: float = REFUSED_RETRY_S):
    """A QMPClient connected to QEMU's socket (a path, or a TCP host and port), tried again
    every 2 ms while it is refused or not there yet, for patience_s; qemu.qmp's errors
    after that. Through a user network's forwarded port, "not there yet" is a connection
    that the network accepts and then ends (nothing listens behind it yet)."""
    import asyncio  # deferred, with qemu.qmp: 45 ms that only a QEMU guest's boot needs

    from qemu.qmp import ConnectError, QMPClient  # deferred: with asyncio, above

    not_yet: tuple[type[BaseException], ...] = (ConnectionRefusedError, FileNotFoundError)
    if isinstance(address, tuple):
        not_yet += (EOFError, ConnectionResetError)
    loop = asyncio.get_running_loop()
    until = loop.time() + patience_s
    while True:
        client = QMPClient(name)
        try:
            await client.connect(address if isinstance(address, tuple) else str(address))
            return client
        except ConnectError as error:
            if not isinstance(error.exc, not_yet) or loop.time() > until:
                raise
        await asyncio.sleep(0.002)


def qmp_execute(socket_path: Path, command: str, timeout_s: float = QMP_CONNECT_S):
    """One QMP command in its own session (qemu.qmp's QMPClient), bounded as a whole.

    GuestStartError for any failure: QEMU gone, refusing, or not answering in time.
    """
    import asyncio  # deferred, with qemu.qmp: 45 ms that only a QEMU guest's boot needs

    from qemu.qmp import QMPError  # deferred: with asyncio, above

    async def session():
        client = await connected(socket_path)
        try:
            return await client.execute(command)
        finally:
            await client.disconnect()

    try:
        return asyncio.run(asyncio.wait_for(session(), timeout_s))
    except asyncio.TimeoutError:
        raise GuestStartError(f"QMP {command}: no answer within {timeout_s:g} s") from None
    except (QMPError, OSError, EOFError) as error:  # EOF: QEMU closed the socket (quit)
        raise GuestStartError(f"QMP {command}: {error or type(error).__name__}") from None
