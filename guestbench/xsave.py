"""The host's XSAVE area as its kernel's ptrace hands it out: the size a program that sets a
traced process's FPU registers (User-Mode Linux does, at each switch of its processes) must
pass, to the byte.

The kernel takes PTRACE_SETREGSET of NT_X86_XSTATE only with exactly this size (EFAULT
otherwise), and it differs by CPU: 2696 bytes with AVX-512 and protection keys (UML's fixed
size before Linux 6.13), 11008 with AMX, 832 with AVX alone. It is asked of the kernel
itself: a forked child stops under ptrace, and PTRACE_GETREGSET with a large buffer says how
much of it the kernel filled.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import signal

PTRACE_TRACEME = 0
PTRACE_GETREGSET = 0x4204
NT_X86_XSTATE = 0x202
ASK_BYTES = 1 << 16  # far above any XSAVE area so far (AMX: 11008)
# Taken as the host's size where set: to try on one host what another host class refuses
# (GUESTBENCH_XSAVE_BYTES=11008 makes Debian's UML kernel unavailable, as on an AMX host)
OVERRIDE = "GUESTBENCH_XSAVE_BYTES"


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


@functools.cache
def host_xsave_bytes() -> int | None:
    """The size, or None where it cannot be known (not x86-64, ptrace refused, no XSAVE)."""
    given = os.environ.get(OVERRIDE, "")
    if given.isdigit():
        return int(given)
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    pid = os.fork()
    if pid == 0:  # the child: stop for the parent to read, never return into its code
        try:
            libc.ptrace(PTRACE_TRACEME, 0, None, None)
            os.kill(os.getpid(), signal.SIGSTOP)
        finally:
            os._exit(0)
    try:
        _, status = os.waitpid(pid, 0)
        if not os.WIFSTOPPED(status):
            return None
        buffer = ctypes.create_string_buffer(ASK_BYTES)
        iov = _Iovec(ctypes.cast(buffer, ctypes.c_void_p), ASK_BYTES)
        if libc.ptrace(PTRACE_GETREGSET, pid, ctypes.c_void_p(NT_X86_XSTATE),
                       ctypes.byref(iov)) != 0:
            return None
        return int(iov.len)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
