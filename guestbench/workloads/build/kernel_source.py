"""The kernel_build workload's tree: a Linux source, unpacked and configured once on the host.

The source is a tarball (Debian's `linux-source` package puts one at
/usr/src/linux-source-X.Y.tar.xz) or an unpacked tree. It is unpacked into the campaign's
inputs folder, configured there with `make <config>` (tinyconfig, defconfig) and made
ready with `make prepare`: Kconfig's and Kbuild's host programs and the generated headers,
the state kernbench's `make clean` leaves between its runs. Every environment builds the
same prepared tree, none needs flex or bison, and the timed build compiles and links the
kernel. Each run copies the tree into its scratch folder (an ext4 scratch disk in
full-system guests) and builds it there.

A prepared tree is written aside and renamed into place with its mark last, so a killed
campaign leaves nothing a later one would take for whole.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from guestbench.process import proc
from guestbench.workloads.base import InputError, InputMissing

SOURCE_GLOB = "linux-source-*.tar.*"
SOURCE_FOLDER = Path("/usr/src")
CONFIGS = ("tinyconfig", "defconfig")
TREE_MARK = ".guestbench-kernel"
PREPARE_VERSION = "2"  # 2: make prepare  # part of the prepared folder's name: bump when preparing changes
UNPACK_TIMEOUT_S = 900.0
CONFIGURE_TIMEOUT_S = 600.0
# What preparing runs on the host, and the package that has it.
HOST_TOOLS = {"tar": "tar", "make": "make", "gcc": "gcc", "flex": "flex", "bison": "bison"}
DECOMPRESSORS = {".xz": ("xz", "xz-utils"), ".bz2": ("bzip2", "bzip2"), ".gz": ("gzip", "gzip"),
                 ".zst": ("zstd", "zstd")}


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.name))


def default_source(folder: Path = SOURCE_FOLDER) -> str:
    """The newest linux-source tarball under /usr/src, or "" when there is none."""
    found = sorted(folder.glob(SOURCE_GLOB), key=_version_key)
    return str(found[-1]) if found else ""


def missing_source_text() -> str:
    return ("no Linux source: 'apt-get install linux-source' puts one at "
            f"{SOURCE_FOLDER}/linux-source-X.Y.tar.xz, or set the workload's source = "
            "\"/path/to/linux-X.Y.tar.xz\" (or an unpacked tree)")


def host_tools_missing(source: Path) -> list[str]:
    """Packages to install before a tree can be prepared from source."""
    needed = dict(HOST_TOOLS)
    for suffix, (program, package) in DECOMPRESSORS.items():
        if source.name.endswith(suffix):
            needed[program] = package
    return sorted({package for program, package in needed.items() if shutil.which(program) is None})


def prepared(source_text: str, config: str, inputs: Path) -> Path:
    """The configured tree for this source and config under inputs, made once per campaign.

    InputMissing when the source or a host tool is not there (the run is unsupported, with
    the fix), InputError when unpacking or configuring failed.
    """
    if not source_text:
        raise InputMissing(missing_source_text())
    source = Path(source_text)
    if not source.exists():
        raise InputMissing(f"the kernel source {source} does not exist; {missing_source_text()}")
    missing = host_tools_missing(source)
    if missing:
        raise InputMissing(f"preparing the kernel tree needs {', '.join(missing)} on this host "
                           f"(apt-get install {' '.join(missing)})")
    stat = source.stat()
    key = hashlib.sha256(f"{source.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{config}\0"
                         f"{PREPARE_VERSION}".encode()).hexdigest()[:12]
    folder = inputs / f"linux-{config}-{key}"
    if (folder / TREE_MARK).is_file():
        return folder
    staging = inputs / f".linux-{key}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _unpack(source, staging)
        _configure(staging, config)
        (staging / TREE_MARK).write_text(f"{source}\n{config}\n")
        shutil.rmtree(folder, ignore_errors=True)  # a damaged one, without its mark
        staging.rename(folder)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(f"cannot prepare the kernel tree under {inputs}: "
                         f"{error.strerror or error}") from None
    except InputError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder


def _unpack(source: Path, staging: Path) -> None:
    if source.is_dir():
        if not (source / "Makefile").is_file() or not (source / "Kconfig").is_file():
            raise InputError(f"{source} is not a Linux source tree (no Makefile and Kconfig)")
        shutil.copytree(source, staging, symlinks=True)
        return
    staging.mkdir(parents=True)
    # Tarballs hold one top folder (linux-source-6.1/, linux-6.12/): strip it.
    _run(["tar", "-xf", str(source), "-C", str(staging), "--strip-components=1"],
         UNPACK_TIMEOUT_S, None, f"unpacking {source}")
    if not (staging / "Makefile").is_file():
        raise InputError(f"{source} did not unpack to a Linux source tree (no Makefile at its "
                         "top folder)")


def _configure(tree: Path, config: str) -> None:
    _run(["make", "-s", config], CONFIGURE_TIMEOUT_S, tree, f"make {config}")
    if not (tree / ".config").is_file():
        raise InputError(f"make {config} wrote no .config")
    _run(["make", "-s", f"-j{os.cpu_count() or 1}", "prepare"], CONFIGURE_TIMEOUT_S, tree,
         "make prepare")


def _run(argv: list[str], timeout_s: float, cwd: Path | None, what: str) -> None:
    env = {key: value for key, value in os.environ.items()
           if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "ARCH", "CROSS_COMPILE")}
    try:
        completed = proc.run(argv, timeout_s, cwd=cwd, env=env)
    except proc.DeadlineExceeded:
        raise InputError(f"{what} took longer than {timeout_s:.0f} s") from None
    except proc.ProcessError as error:
        raise InputError(f"{what} could not start: {error}") from None
    if completed.returncode != 0:
        tail = " | ".join((completed.stderr or completed.stdout).strip().splitlines()[-3:])
        raise InputError(f"{what} failed (status {completed.returncode}): {tail[-300:]}")
