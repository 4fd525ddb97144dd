"""QEMU's machine protocol (QMP): one command per session, bounded in time."""

from __future__ import annotations

from pathlib import Path

from guestbench.environments.base import GuestStartError

QMP_CONNECT_S = 5.0
QMP_QUIT_S = 2.0
# QEMU makes its socket's file (bind) a moment before it listens: a connection refused in
# that moment is tried again, every 10 ms, this long
REFUSED_RETRY_S = 1.0


def qmp_execute(socket_path: Path, command: str, timeout_s: float = QMP_CONNECT_S):
    """One QMP command in its own session (qemu.qmp's QMPClient), bounded as a whole.

    GuestStartError for any failure: QEMU gone, refusing, or not answering in time.
    """
    import asyncio  # deferred, with qemu.qmp: 45 ms that only a QEMU guest's boot needs

    from qemu.qmp import ConnectError, QMPClient, QMPError  # deferred: with asyncio, above

    async def connected() -> QMPClient:
        until = asyncio.get_running_loop().time() + REFUSED_RETRY_S
        while True:
            client = QMPClient("guestbench")
            try:
                await client.connect(str(socket_path))
                return client
            except ConnectError as error:
                if not isinstance(error.exc, ConnectionRefusedError) \
                        or asyncio.get_running_loop().time() > until:
                    raise
            await asyncio.sleep(0.01)

    async def session():
        client = await connected()
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
