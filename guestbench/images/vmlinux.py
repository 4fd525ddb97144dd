"""An uncompressed ELF vmlinux from a bzImage, for VMMs that boot only that (Firecracker,
Cloud Hypervisor), cached beside the images.

As the kernel's own scripts/extract-vmlinux does: find a compressor's magic bytes in the
bzImage, decompress from there, and keep the first result that is an ELF file. gzip, xz,
lzma and bzip2 with Python's own modules; zstd (Ubuntu's and Arch's kernels) with the
zstandard package, and lz4 in the legacy format the kernel's build writes (`lz4 -l`:
blocks of at most 8 MiB, each after its compressed size) with the lz4 package's blocks.
"""

from __future__ import annotations

import bz2
import hashlib
import lzma
import os
import tempfile
import struct
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


def _zstd(data: bytes) -> bytes:
    import zstandard  # deferred: only a kernel compressed so needs it
    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except zstandard.ZstdError:
        return b""


LZ4_LEGACY_MAGIC = b"\x02\x21\x4c\x18"
LZ4_LEGACY_BLOCK = 8 << 20  # the legacy format's uncompressed block


def _lz4_legacy(data: bytes) -> bytes:
    """The blocks after the magic, until one is not a block (the size the kernel's build
    appends, or the end): the last, short block ends the stream."""
    import lz4.block  # deferred, as zstandard: only a kernel compressed so needs it
    out, at = [], len(LZ4_LEGACY_MAGIC)
    while at + 4 <= len(data):
        (size,) = struct.unpack_from("<I", data, at)
        if size == 0 or at + 4 + size > len(data):
            break
        try:
            block = lz4.block.decompress(data[at + 4:at + 4 + size],
                                         uncompressed_size=LZ4_LEGACY_BLOCK)
        except lz4.block.LZ4BlockError:
            break
        out.append(block)
        at += 4 + size
        if len(block) < LZ4_LEGACY_BLOCK:
            break
    return b"".join(out)


# magic bytes -> decompressor
DECOMPRESSORS = {
    b"\x1f\x8b\x08": _gzip,
    b"\xfd7zXZ\x00": _xz,
    b"BZh": _bzip2,
    b"\x5d\x00\x00\x00": _lzma,
    b"\x28\xb5\x2f\xfd": _zstd,
    LZ4_LEGACY_MAGIC: _lz4_legacy,
}


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
    raise ImageError(f"no compressed ELF kernel found in {bzimage} (fix: give a bzImage or "
                     "an uncompressed vmlinux as kernel)")
