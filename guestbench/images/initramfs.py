"""Writing an image's initramfs: a staged tree packed by GNU cpio in the kernel's newc format."""

from __future__ import annotations

import gzip
import lzma
import os
import shutil
from pathlib import Path

from guestbench.process import proc

from .contents import MODULE_LIST, Contents, GuestFile
from .errors import ImageError

# Uncompressed: under TCG the guest kernel's own decompression costs more boot time
# than it saves in loading (docs/images.md has the measurement).
INITRAMFS_FILE = "initramfs.cpio"
EMPTY_DIRS = ("proc", "sys", "dev", "tmp")
# Every entry's mtime, and every folder's mode: the same inputs give the same bytes, whenever
# and under whatever umask they are built (cpio --reproducible fixes inode and device numbers
# only). The guest sees 1970 dates on the image's files, which nothing here compares.
FIXED_MTIME = 0
DIR_MODE = 0o755
CPIO_TIMEOUT_S = 120


def write(contents: Contents, folder: Path) -> Path:
    """Stage the image's tree in folder/root, pack it into folder/initramfs.cpio, drop the tree."""
    tree = folder / "root"
    _stage(contents, tree)
    archive = folder / INITRAMFS_FILE
    _pack(tree, archive)
    shutil.rmtree(tree)
    return archive


def _stage(contents: Contents, tree: Path) -> None:
    for name in EMPTY_DIRS:
        (tree / name).mkdir(parents=True, exist_ok=True)
    init = tree / "init"
    init.write_text(contents.init)
    init.chmod(0o755)
    for file in contents.files:
        _copy(file, tree)
    for module in contents.module_files:
        _copy_module(module, tree)
    module_list = _at(tree, MODULE_LIST)
    module_list.write_text("".join(f"{m.guest_path}\n" for m in contents.module_files))
    module_list.chmod(0o644)


def _copy(file: GuestFile, tree: Path) -> None:
    target = _at(tree, file.guest_path)
    shutil.copyfile(file.source, target)  # follows links: the guest gets the real bytes
    target.chmod(file.source.stat().st_mode & 0o777)


def _copy_module(module: GuestFile, tree: Path) -> None:
    """busybox insmod reads plain .ko files only, so compressed modules are unpacked here."""
    target = _at(tree, module.guest_path)
    name = module.source.name
    if name.endswith(".ko.xz"):
        target.write_bytes(lzma.decompress(module.source.read_bytes()))
    elif name.endswith(".ko.gz"):
        target.write_bytes(gzip.decompress(module.source.read_bytes()))
    elif name.endswith(".ko.zst"):
        _run(["zstd", "-q", "-d", "-f", "-o", str(target), str(module.source)],
             "unpack the module (is zstd installed? 'apt-get install zstd')")
    else:
        shutil.copyfile(module.source, target)
    target.chmod(0o644)


def _at(tree: Path, guest_path: str) -> Path:
    target = tree / guest_path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _pack(tree: Path, archive: Path) -> None:
    # Parents must come before their entries: the kernel creates each as it reads it.
    paths = sorted(_walk(tree))
    _normalise(paths)
    entries = [str(path.relative_to(tree)) for path in paths]
    _run(["cpio", "--quiet", "-o", "-H", "newc", "--owner", "0:0", "--reproducible",
          "--force-local", "-F", str(archive.absolute())],
         "pack the initramfs", cwd=tree, stdin_data="".join(f"{e}\n" for e in entries))


def _normalise(paths: list[Path]) -> None:
    """Fixed folder modes, then fixed mtimes (children first: nothing is created after)."""
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            path.chmod(DIR_MODE)
    for path in reversed(paths):
        os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)


def _walk(tree: Path) -> list[Path]:
    paths = []
    for directory, subdirs, files in os.walk(tree):
        base = Path(directory)
        paths += [base / name for name in subdirs + files]
    return paths


def _run(argv: list[str], purpose: str, cwd: Path | None = None,
         stdin_data: str | None = None) -> None:
    try:
        completed = proc.run(argv, CPIO_TIMEOUT_S, cwd=cwd, stdin_data=stdin_data)
    except (proc.ProcessError, proc.DeadlineExceeded) as error:
        raise ImageError(f"cannot {purpose}: {error}") from None
    if completed.returncode != 0:
        raise ImageError(f"cannot {purpose}: {argv[0]} exited with status "
                         f"{completed.returncode}: {completed.stderr.strip()}")
