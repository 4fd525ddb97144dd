"""The image cache: one folder per content address, built aside and renamed into place."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import ImageError

CACHE_ENV_VAR = "GUESTBENCH_CACHE"
MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
TEMP_MARK = ".tmp-"


def cache_root() -> Path:
    """$GUESTBENCH_CACHE, else $XDG_CACHE_HOME/guestbench, else ~/.cache/guestbench; + /images."""
    configured = os.environ.get(CACHE_ENV_VAR)
    if configured:
        return Path(configured) / "images"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "guestbench" / "images"


def lookup(cache_dir: Path, image_id: str) -> dict[str, Any] | None:
    """The manifest of a complete cached image, or None.

    A folder named by its id only exists once renamed into place, so it is complete.
    """
    try:
        manifest = _read_manifest(cache_dir / image_id)
    except (FileNotFoundError, ImageError, KeyError):
        return None  # absent or damaged: built (again) under the lock, which replaces it
    if not Path(manifest["initramfs"]).is_file():
        return None
    return manifest


@contextlib.contextmanager
def locked(cache_dir: Path) -> Iterator[None]:
    """Hold the cache's build lock: one build at a time, others wait for it.

    The lock file stays (deleting a flock'ed file races with the next locker); the
    lock itself ends with the file descriptor, also when the process dies.
    """
    _make_dir(cache_dir)
    with open(cache_dir / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def staging(cache_dir: Path, image_id: str) -> Iterator[Path]:
    """A temporary folder that becomes cache_dir/image_id if the block succeeds.

    Call with the lock held. Leftovers of builds that were killed are removed first.
    """
    _remove_leftovers(cache_dir)
    folder = Path(tempfile.mkdtemp(prefix=f"{image_id}{TEMP_MARK}", dir=cache_dir))
    try:
        yield folder
        os.chmod(folder, 0o755)  # mkdtemp makes it 0700
        # a folder already there is a damaged entry (lookup found no complete image)
        shutil.rmtree(cache_dir / image_id, ignore_errors=True)
        os.rename(folder, cache_dir / image_id)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def cached(cache_dir: Path | None = None) -> list[dict[str, Any]]:
    """Every complete image in the cache, oldest first, each its manifest plus its path."""
    cache_dir = Path(cache_dir) if cache_dir else cache_root()
    if not cache_dir.is_dir():
        return []
    images = []
    for folder in cache_dir.iterdir():
        if TEMP_MARK in folder.name or not folder.is_dir():
            continue
        try:
            images.append(_read_manifest(folder))
        except (FileNotFoundError, ImageError, KeyError):
            continue  # damaged: rebuilt the next time it is needed
    return sorted(images, key=lambda manifest: (manifest.get("created_at", ""), manifest["id"]))


def _read_manifest(folder: Path) -> dict[str, Any]:
    text = (folder / MANIFEST).read_text()
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as error:
        raise ImageError(f"the image manifest {folder / MANIFEST} is damaged ({error}); "
                         f"delete the folder {folder} and the image is rebuilt") from None
    # Paths are where the image is now, so a moved cache still lists correctly.
    manifest["path"] = str(folder)
    manifest["initramfs"] = str(folder / manifest["initramfs_file"])
    return manifest


def _remove_leftovers(cache_dir: Path) -> None:
    for folder in cache_dir.glob(f"*{TEMP_MARK}*"):
        shutil.rmtree(folder, ignore_errors=True)


def _make_dir(cache_dir: Path) -> None:
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ImageError(f"cannot create the image cache {cache_dir}: {error.strerror}; "
                         "set GUESTBENCH_CACHE to a writable folder") from None
