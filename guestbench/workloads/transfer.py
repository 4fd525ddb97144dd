"""Host-to-guest transfer: the upload workload (libguestfs's UML-vs-KVM upload comparison).

The host sends size_mib MiB into the guest through a channel, and the agent writes it to
a file on the guest's ext4 scratch disk with an fsync at the end (mode write), or reads
and discards it (no_write: the channel alone), or writes as much generated in the guest
without any upload (no_upload: the disk alone). The environment sets the channel up
(guestbench/environments/fullsystem/channels.py): a second serial port, a virtio-serial port or a
9p share under QEMU; a serial line or a hostfs mount under UML.

The bytes are the upload pattern (below), made once per campaign and size in the
campaign's inputs folder; the agent checks them as they arrive (agent/upload.c), so a
short, shifted or corrupted transfer fails instead of giving a figure.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Literal, get_args

from pydantic import Field

from guestbench.environments.base import Capability, JobNeeds, Upload
from guestbench.workloads.base import InputError, Params, Workload

Channel = Literal["serial", "virtio-serial", "9p", "hostfs"]
Mode = Literal["write", "no_write", "no_upload"]
CHANNELS: tuple[str, ...] = get_args(Channel)
MODES: tuple[str, ...] = get_args(Mode)

MIB = 2**20
BLOCK = 4096
# Block b of the pattern starts with the little-endian word b ^ MAGIC ("gbupload" for block
# 0); byte j of the block, past that word, is (b + j) & 0xff. The same in agent/upload.c.
MAGIC = 0x64616F6C70756267
SOURCE_NAME = "upload.bin"
# Room on the scratch filesystem beyond the file itself (ext4's journal and metadata).
SCRATCH_SLACK_MIB = 64


class UploadParams(Params):
    channel: Channel = Field("virtio-serial", description=(
        "how the bytes travel: serial (a second serial port / UML serial line), "
        "virtio-serial (a virtserialport, QEMU), 9p (a virtio-9p share, QEMU), "
        "hostfs (UML's host filesystem)"))
    mode: Mode = Field("write", description=(
        "write: upload and write to a file on the guest's ext4 disk, fsync at the end; "
        "no_write: upload and discard; no_upload: write as much generated in the guest"))
    size_mib: int = Field(256, ge=1, le=1 << 16, description="MiB moved")


def to_agent_args(params: UploadParams) -> list[str]:
    """The agent's options; the environment adds --source and --dest (it knows the paths)."""
    return ["--mode", params.mode, "--size-mib", str(params.size_mib)]


def pattern_mib(index: int, template: bytes | None = None) -> bytes:
    """MiB number `index` of the upload pattern."""
    buffer = bytearray(template if template is not None else _template())
    first = index * (MIB // BLOCK)
    for block in range(MIB // BLOCK):
        struct.pack_into("<Q", buffer, block * BLOCK, (first + block) ^ MAGIC)
    return bytes(buffer)


def _template() -> bytes:
    """One MiB of the pattern but for the blocks' first words (every MiB is the same there)."""
    ramp = bytes(range(256)) * (BLOCK // 256 + 1)
    return b"".join(ramp[block % 256:block % 256 + BLOCK] for block in range(MIB // BLOCK))


def source_file(size_mib: int, inputs: Path) -> Path:
    """The host file of size_mib MiB of the pattern, alone in its folder (9p and hostfs share
    the folder): made once per campaign and size, reused when it is already there."""
    folder = inputs / f"upload-{size_mib}m"
    target = folder / SOURCE_NAME
    if target.is_file() and target.stat().st_size == size_mib * MIB:
        return target
    partial = folder.parent / f".{folder.name}-{os.getpid()}.part"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        template = _template()
        with open(partial, "wb") as file:
            for index in range(size_mib):
                file.write(pattern_mib(index, template))
        partial.rename(target)
    except OSError as error:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass
        raise InputError(f"cannot write {target}: {error.strerror}") from None
    return target


def job_needs(params: UploadParams, inputs: Path) -> JobNeeds:
    return JobNeeds(scratch=True, scratch_mib=params.size_mib + SCRATCH_SLACK_MIB,
                    upload=Upload(params.channel, source_file(params.size_mib, inputs)))


WORKLOADS = [
    Workload("upload", "transfer", "N MiB from the host into the guest through a channel "
             "(serial, virtio-serial, 9p, hostfs), written to the guest's disk, discarded, "
             "or generated in the guest", UploadParams, to_agent_args,
             frozenset({Capability.BLOCK_DEVICE, Capability.UPLOAD}), quick=False,
             primary_metric="bandwidth", title="upload",
             job_needs=job_needs),
]
