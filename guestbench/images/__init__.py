"""Guest images for full-system environments: kernel + initramfs, content-addressed and cached.

An image is the kernel file (used where it is, never copied) and an initramfs of
busybox, gbagent, the /init of init_script.py, the requested kernel modules and
tools. Its id is a hash over every input, so a changed agent, kernel, module or
/init gives a new image and an unchanged one is reused. docs/images.md has the
layout, the /init contract and the measurements behind the choices.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import cache, contents, initramfs
from .cache import cache_root, cached
from .errors import ImageError
from .init_script import INIT_SCRIPT
from .kernel import check_readable, default_kernel, kernel_version

__all__ = ["INIT_SCRIPT", "Image", "ImageError", "build", "cache_root", "cached",
           "default_kernel"]


@dataclass(frozen=True)
class Image:
    id: str                   # content address: 16 hex digits of sha256 over every input
    kernel: Path              # the kernel file used (not copied)
    kernel_version: str       # "6.1.0-56-amd64", or "uml" for a user-mode Linux binary
    initramfs: Path           # the cached initramfs
    modules: tuple[str, ...]  # modules loaded at boot, in load order (dependencies first)
    tools: tuple[str, ...]    # extra programs included
    built_s: float | None     # seconds the build took; None when it came from the cache


def build(kernel: Path | None = None, modules: Sequence[str] = (), tools: Sequence[str] = (),
          cache_dir: Path | None = None, modules_dir: Path | None = None,
          init: str | None = None) -> Image:
    """The image for these inputs: from the cache, or built into it.

    modules are names as modprobe knows them (dependencies are added); modules_dir is
    the kernel's module tree (default /lib/modules/VERSION); tools are programs found
    on PATH, included with their shared libraries at their host paths. A GCC driver
    (gcc, cc, gcc-12) also brings what it runs and reads to build C programs (cc1, as,
    ld, start files, libgcc, libc's linker script, the system headers: compiler.py),
    and make brings /bin/sh for its recipes: tools=("make", "gcc") builds C in the guest.
    init is the image's /init: guestbench's (init_script.py) unless a machine of another
    role needs its own (the L1 machine of a nested environment).
    """
    kernel = Path(kernel) if kernel is not None else default_kernel()
    check_readable(kernel)
    inputs = contents.resolve(kernel, kernel_version(kernel), modules, tools, modules_dir, init)
    image_id = inputs.content_id()
    cache_dir = Path(cache_dir) if cache_dir is not None else cache_root()

    found = cache.lookup(cache_dir, image_id)
    if found is None:
        with cache.locked(cache_dir):
            # Another process may have built it while this one waited for the lock.
            found = cache.lookup(cache_dir, image_id)
            if found is None:
                return _build(inputs, image_id, cache_dir)
    return _image(inputs, image_id, Path(found["initramfs"]), built_s=None)


def _build(inputs: contents.Contents, image_id: str, cache_dir: Path) -> Image:
    started = time.monotonic()
    with cache.staging(cache_dir, image_id) as folder:
        archive = initramfs.write(inputs, folder)
        built_s = time.monotonic() - started
        cache.write_manifest(folder, _manifest(inputs, image_id, archive, built_s))
    return _image(inputs, image_id, cache_dir / image_id / archive.name, built_s)


def _image(inputs: contents.Contents, image_id: str, archive: Path,
           built_s: float | None) -> Image:
    return Image(id=image_id, kernel=inputs.kernel, kernel_version=inputs.kernel_version,
                 initramfs=archive, modules=inputs.modules, tools=inputs.tools, built_s=built_s)


def _manifest(inputs: contents.Contents, image_id: str, archive: Path,
              built_s: float) -> dict[str, Any]:
    return {
        "id": image_id,
        "builder_version": contents.BUILDER_VERSION,
        "kernel": str(inputs.kernel),
        "kernel_version": inputs.kernel_version,
        "kernel_sha256": inputs.kernel_sha256,
        "modules": list(inputs.modules),
        "tools": list(inputs.tools),
        "files": [{"guest_path": f.guest_path, "source": str(f.source), "sha256": f.sha256}
                  for f in (*inputs.files, *inputs.module_files)],
        "initramfs_file": archive.name,
        "size_bytes": archive.stat().st_size,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "built_s": round(built_s, 3),
    }
