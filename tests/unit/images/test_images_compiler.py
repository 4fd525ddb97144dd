"""Guest images with a C compiler: the closure gcc needs (images/compiler.py) and make's /bin/sh.

The parsers are checked on canned output; the rest asks the host's gcc and builds real
images into a temporary cache. The last test proves the closure is enough without booting
anything: it runs make and gcc chrooted into the unpacked initramfs (root only).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from guestbench import images
from guestbench.process import proc
from guestbench.images import compiler, contents, kernel
from guestbench.workloads.build import source_tree as buildtree

HAVE_KERNEL = bool(list(kernel.BOOT_DIR.glob("vmlinuz-*")))
HAVE_GCC = bool(shutil.which("gcc") and shutil.which("make"))

needs_gcc = pytest.mark.skipif(not HAVE_GCC, reason="gcc or make missing (install build-essential)")
needs_kernel = pytest.mark.skipif(not HAVE_KERNEL, reason="no /boot/vmlinuz-* on this machine")


def gcc_says(*args: str) -> str:
    completed = proc.run(["gcc", *args], timeout_s=30)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip()


def archive_names(archive: Path) -> set[str]:
    listing = proc.run(["cpio", "--quiet", "-t", "-F", str(archive)], timeout_s=60)
    assert listing.returncode == 0, listing.stderr
    return set(listing.stdout.split())


# ---- reading the probe's output ----

VERBOSE = """\
Using built-in specs.
COLLECT_GCC=gcc
COLLECT_LTO_WRAPPER=/usr/lib/gcc/x86_64-linux-gnu/12/lto-wrapper
 /usr/lib/gcc/x86_64-linux-gnu/12/cc1 -quiet -v probe.c -o /tmp/ccA.s
#include <...> search starts here:
 /usr/lib/gcc/x86_64-linux-gnu/12/include
 /usr/include
End of search list.
 as -v --64 -o /tmp/ccB.o /tmp/ccA.s
 /usr/lib/gcc/x86_64-linux-gnu/12/collect2 -plugin /usr/lib/gcc/x86_64-linux-gnu/12/liblto_plugin.so \
-plugin-opt=/usr/lib/gcc/x86_64-linux-gnu/12/lto-wrapper -plugin-opt=-fresolution=/tmp/ccC.res \
-L/usr/lib/x86_64-linux-gnu /usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/crti.o
"""


def test_the_commands_are_the_one_space_lines_and_their_paths_are_collected():
    lines = compiler._command_lines(VERBOSE)
    assert [words[0] for words in lines] == [
        "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "/usr/lib/gcc/x86_64-linux-gnu/12/include",
        "/usr/include", "as", "/usr/lib/gcc/x86_64-linux-gnu/12/collect2"]
    paths = compiler._commands(VERBOSE)
    assert "/usr/lib/gcc/x86_64-linux-gnu/12/liblto_plugin.so" in paths
    assert "/usr/lib/gcc/x86_64-linux-gnu/12/lto-wrapper" in paths  # after -plugin-opt=
    assert "/tmp/ccC.res" in paths  # dropped later: it is no file any more, and in TMPDIR
    assert not any(path.startswith("-L") for path in paths)
    assert "/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/crti.o" in paths


def test_include_folders_are_not_taken_for_programs(tmp_path):
    (tmp_path / "bin").mkdir()
    assert compiler._program_path(str(tmp_path / "bin"), {"PATH": ""}) is None
    assert compiler._program_path("", {"PATH": ""}) is None


def test_linker_trace_lines_give_their_paths():
    trace = ("/usr/lib/x86_64-linux-gnu/Scrt1.o\n"
             "-lm (/usr/lib/x86_64-linux-gnu/libm.so)\n"
             "/usr/lib/gcc/x86_64-linux-gnu/12/libgcc.a(_muldi3.o)\n")
    assert compiler._linker_inputs(trace) == [
        "/usr/lib/x86_64-linux-gnu/Scrt1.o", "/usr/lib/x86_64-linux-gnu/libm.so",
        "/usr/lib/gcc/x86_64-linux-gnu/12/libgcc.a"]


def test_the_depfile_gives_every_header_but_the_target_and_source():
    depfile = ("probe: probe.c /usr/include/stdc-predef.h /usr/include/stdio.h \\\n"
               " /usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h\n")
    assert compiler._depfile_paths(depfile) == [
        "/usr/include/stdc-predef.h", "/usr/include/stdio.h",
        "/usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h"]


def test_guest_paths_have_no_dot_dot():
    assert compiler.guest_path("/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/"
                               "crt1.o") == "/usr/lib/x86_64-linux-gnu/crt1.o"
    assert compiler.guest_path("/usr/./include//stdio.h") == "/usr/include/stdio.h"


@pytest.mark.parametrize("name, expected", [
    ("gcc", True), ("cc", True), ("gcc-12", True), ("x86_64-linux-gnu-gcc-12", True),
    ("/usr/bin/gcc", True), ("make", False), ("fio", False), ("gccgo", False), ("c++", False),
    ("true", False)])
def test_which_tools_are_compilers(name, expected):
    assert compiler.is_compiler(name, Path("/nowhere/program")) is expected


def test_elf_objects_are_told_from_other_files(tmp_path):
    libc = Path("/lib64/ld-linux-x86-64.so.2")
    text = tmp_path / "libc.so"
    text.write_text("/* GNU ld script */\nGROUP ( /lib/x86_64-linux-gnu/libc.so.6 )\n")
    assert not compiler._is_elf_object(str(text))
    if libc.is_file():
        assert compiler._is_elf_object(str(libc))


# ---- the host's gcc ----

@needs_gcc
def test_the_closure_holds_what_gcc_runs_and_reads():
    programs, files = compiler.closure(Path(shutil.which("gcc")))
    guest = {compiler.guest_path(path) for path in (*programs, *files)}
    names = {Path(path).name for path in guest}
    assert Path(gcc_says("-print-prog-name=cc1")).resolve().as_posix() in {
        str(Path(p).resolve()) for p in programs}
    assert {"cc1", "collect2", "as", "ld"} <= {Path(p).name for p in programs}
    for library in ("libc_nonshared.a", "libc.so", "crti.o", "crtn.o"):
        assert os.path.normpath(gcc_says(f"-print-file-name={library}")) in guest, library
    assert os.path.normpath(gcc_says("-print-libgcc-file-name")) in guest
    assert {"stdio.h", "stddef.h", "stdarg.h", "features.h", "pthread.h", "math.h"} <= names
    assert names & {"Scrt1.o", "crt1.o"}  # PIE or not, one start file
    assert all(path.startswith("/") and ".." not in Path(path).parts for path in guest)
    assert not [path for path in guest if "ccprobe" in path or Path(path).name.startswith("cc")
                and path.startswith("/tmp/")]
    assert all(Path(path).is_file() for path in (*programs, *files))
    assert not set(programs) & set(files)
    assert list(programs) == sorted(programs) and list(files) == sorted(files)


@needs_gcc
def test_the_closure_has_the_headers_of_programs_that_define_gnu_source():
    # glibc's headers include other parts under _GNU_SOURCE (the Linux kernel's host
    # programs define it): the closure must hold both modes' headers
    _, files = compiler.closure(Path(shutil.which("gcc")))
    names = {Path(path).name for path in files}
    assert {"elf.h", "byteswap.h", "endian.h"} <= names
    with_gnu = gnu_only_headers()
    assert with_gnu, "no header that only _GNU_SOURCE includes? the check would prove nothing"
    assert with_gnu <= names, with_gnu - names


def gnu_only_headers() -> set[str]:
    """Header names gcc includes for stdio.h and limits.h with _GNU_SOURCE and not without."""
    def included(*flags: str) -> set[str]:
        text = subprocess.run(["gcc", *flags, "-M", "-x", "c", "-"], capture_output=True,
                              text=True, check=True,
                              input="#include <stdio.h>\n#include <limits.h>\n").stdout
        return {Path(word).name for word in text.replace("\\\n", " ").split()[1:]}
    return included("-D_GNU_SOURCE") - included()


@needs_gcc
def test_the_closure_leaves_out_what_a_c_build_does_not_use():
    programs, files = compiler.closure(Path(shutil.which("gcc")))
    names = {Path(path).name for path in (*programs, *files)}
    # lto1 (-flto), cc1plus (C++) and the sanitizer runtimes are each megabytes
    assert not names & {"lto1", "cc1plus", "libasan.so.8", "libtsan.so.2", "libstdc++.so.6"}
    assert not [path for path in files if path.startswith("/usr/share/")]


def test_a_compiler_that_cannot_build_the_probe_is_an_error_naming_the_fix(tmp_path):
    fake = tmp_path / "gcc"
    fake.write_text("#!/bin/sh\necho 'fatal error: stdio.h: No such file or directory' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    with pytest.raises(images.ImageError, match="libc6-dev"):
        compiler.closure(fake)


# ---- images with make and gcc ----

@needs_gcc
@needs_kernel
def test_make_and_gcc_images_hold_the_compiler_closure(tmp_path):
    image = images.build(tools=("make", "gcc"), cache_dir=tmp_path / "cache")
    names = archive_names(image.initramfs)
    assert image.tools == ("make", "gcc")
    wanted = ["usr/bin/make", "usr/bin/gcc", "bin/sh", "usr/bin/as", "usr/bin/ld",
              gcc_says("-print-prog-name=cc1"), gcc_says("-print-prog-name=collect2"),
              os.path.normpath(gcc_says("-print-file-name=libc.so")),
              os.path.normpath(gcc_says("-print-file-name=libc_nonshared.a")),
              os.path.normpath(gcc_says("-print-libgcc-file-name")),
              "usr/include/stdio.h", "lib64/ld-linux-x86-64.so.2"]
    missing = [path for path in wanted if path.lstrip("/") not in names]
    assert not missing, f"not in the image: {missing}"
    assert not [name for name in names if name.startswith(("usr/share/", "tmp/"))]
    assert image.initramfs.stat().st_size < 120 * 2**20  # ~57 MB with gcc 12; cc1 is 33


@needs_gcc
@needs_kernel
def test_a_compiler_image_is_the_same_bytes_in_any_cache(tmp_path):
    first = images.build(tools=("gcc",), cache_dir=tmp_path / "a")
    second = images.build(tools=("gcc",), cache_dir=tmp_path / "b")
    assert first.id == second.id

    def digest(path: Path) -> str:
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()

    assert digest(first.initramfs) == digest(second.initramfs)
    assert images.build(tools=("gcc",), cache_dir=tmp_path / "a").built_s is None


@needs_kernel
def test_make_brings_a_shell_for_its_recipes(tmp_path):
    if not shutil.which("make"):
        pytest.skip("make missing")
    k = images.default_kernel()
    resolved = contents.resolve(k, kernel.kernel_version(k), [], ("make",), None)
    paths = [f.guest_path for f in resolved.files]
    assert "/bin/sh" in paths
    assert not [p for p in paths if p.endswith("/cc1")]  # make alone brings no compiler


@needs_gcc
@needs_kernel
@pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root")
def test_make_and_gcc_build_the_tree_chrooted_in_the_unpacked_image(tmp_path):
    """Only the image's files are there: a missing header, crt file or helper fails here."""
    image = images.build(tools=("make", "gcc"), cache_dir=tmp_path / "cache")
    root = tmp_path / "root"
    root.mkdir()
    unpacked = proc.run(["cpio", "--quiet", "-i", "-d", "-m", "-F", str(image.initramfs)],
                        timeout_s=120, cwd=root)
    assert unpacked.returncode == 0, unpacked.stderr
    buildtree.generate(root / "buildtree", 2)
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    built = proc.run([chroot, str(root), "/usr/bin/make", "-C", "/buildtree", "-B", "-j2",
                      "CC=gcc", "check"], timeout_s=300,
                     env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"})
    assert built.returncode == 0, built.stderr[-2000:]
    assert buildtree.expected_output(2) in built.stdout.split()
