"""An uncompressed ELF vmlinux from a bzImage, for VMMs that boot only that (Firecracker,
Cloud Hypervisor), cached beside the images.

As the kernel's own scripts/extract-vmlinux does: find a compressor's magic bytes in the
bzImage, decompress from there, and keep the first result that is an ELF file.
"""

from __future__ import annotations

import bz2
import hashlib
import lzma
import os
import tempfile
import zlib
from pathlib import Path

from .cache import cache_root
from .errors import ImageError

ELF_MAGIC = b"\x7fELF"


def _gzip(data: bytes) -> bytes:
    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)


def _xz(data: bytes) -> bytes:
    return lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(data)


def _lzma(data: bytes) -> bytes:
    return lzma.LZMADecompressor(lzma.FORMAT_ALONE).decompress(data)


def _bzip2(data: bytes) -> bytes:
    return bz2.BZ2Decompressor().decompress(data)


# magic bytes -> decompressor; zstd and lz4 kernels need tools Python does not have
DECOMPRESSORS = {
    b"\x1f\x8b\x08": _gzip,
    b"\xfd7zXZ\x00": _xz,
    b"BZh": _bzip2,
    b"\x5d\x00\x00\x00": _lzma,
}
UNSUPPORTED = {b"\x28\xb5\x2f\xfd": "zstd", b"\x02\x21\x4c\x18": "lz4"}


def vmlinux_root() -> Path:
    return cache_root().parent / "vmlinux"


def extract(bzimage: Path) -> Path:
    """The vmlinux inside bzimage, from the cache or extracted into it (atomically)."""
    if bzimage.read_bytes()[:4] == ELF_MAGIC:
        return bzimage  # it is one already
    digest = hashlib.sha256(bzimage.read_bytes()).hexdigest()[:16]
    target = vmlinux_root() / digest / "vmlinux"
    if target.is_file():
        return target
    data = _decompress(bzimage)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    with os.fdopen(handle, "wb") as file:
        file.write(data)
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    return target


def _decompress(bzimage: Path) -> bytes:
    data = bzimage.read_bytes()
    for magic, decompress in DECOMPRESSORS.items():
        start = data.find(magic)
        while start != -1:
            try:
                result = decompress(data[start:])
            except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error):
                result = b""
            if result[:4] == ELF_MAGIC:
                return result
            start = data.find(magic, start + 1)
    for magic, name in UNSUPPORTED.items():
        if magic in data:
            raise ImageError(f"{bzimage} looks {name}-compressed: guestbench extracts gzip, xz, "
                             "bzip2 and lzma kernels (fix: kernel_format = \"bzImage\" with a "
                             "VMM that boots one, or give an uncompressed vmlinux as kernel)")
    raise ImageError(f"no compressed ELF kernel found in {bzimage} (fix: give a bzImage or "
                     "an uncompressed vmlinux as kernel)")
