"""Which guest kernel to boot and which version it is."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import ImageError

BOOT_DIR = Path("/boot")
UML_VERSION = "uml"

# x86 boot protocol (Documentation/arch/x86/boot.rst): "HdrS" at 0x202, and at 0x20E
# the offset (minus 0x200) of the NUL-terminated version string.
_SETUP_MAGIC_OFFSET = 0x202
_VERSION_POINTER_OFFSET = 0x20E
_ELF_MAGIC = b"\x7fELF"


def default_kernel() -> Path:
    """The newest /boot/vmlinuz-* (by version number, as `sort -V` orders them)."""
    kernels = sorted(BOOT_DIR.glob("vmlinuz-*"), key=lambda path: _version_key(path.name))
    if not kernels:
        raise ImageError(
            f"no guest kernel: {BOOT_DIR} has no vmlinuz-* file; install one with "
            "'apt-get install linux-image-amd64' or pass the kernel to build explicitly")
    return kernels[-1]


def check_readable(kernel: Path) -> None:
    if not kernel.is_file():
        raise ImageError(f"the guest kernel {kernel} does not exist; pass an existing kernel "
                         "file (default: the newest /boot/vmlinuz-*)")
    if not os.access(kernel, os.R_OK):
        # Ubuntu installs kernels mode 0600.
        raise ImageError(f"the guest kernel {kernel} is not readable by this user; make it "
                         f"readable ('sudo chmod 0644 {kernel}') or pass a copy you own")


def kernel_version(kernel: Path) -> str:
    """ "6.1.0-56-amd64" for a bzImage or vmlinux, "uml" for a user-mode Linux binary."""
    if kernel.name.startswith("vmlinuz-"):
        return kernel.name.removeprefix("vmlinuz-")
    with open(kernel, "rb") as file:
        header = file.read(0x1000)
    if header[_SETUP_MAGIC_OFFSET:_SETUP_MAGIC_OFFSET + 4] == b"HdrS":
        pointer = int.from_bytes(header[_VERSION_POINTER_OFFSET:_VERSION_POINTER_OFFSET + 2],
                                 "little") + 0x200
        with open(kernel, "rb") as file:
            file.seek(pointer)
            version = file.read(256).split(b"\0", 1)[0].split(b" ", 1)[0]
        if version:
            return version.decode("ascii", "replace")
    if header.startswith(_ELF_MAGIC):
        if "uml" in kernel.name or "uml" in kernel.resolve().name:
            return UML_VERSION
        match = re.search(rb"Linux version (\S+)", kernel.read_bytes())
        if match:
            return match.group(1).decode("ascii", "replace")
    raise ImageError(f"cannot tell which Linux version {kernel} is: it is neither named "
                     "vmlinuz-VERSION, nor a bzImage, nor an ELF vmlinux or linux.uml; pass "
                     "a kernel image such as /boot/vmlinuz-$(uname -r)")


def _version_key(name: str) -> list[tuple[int, int | str]]:
    # Numbers compare as numbers, so 6.10 sorts after 6.9.
    return [(0, int(part)) if part.isdigit() else (1, part)
            for part in re.split(r"(\d+)", name) if part]
