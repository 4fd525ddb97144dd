"""What a C compiler needs in an image besides its own binary: found by asking it.

`ldd gcc` names the driver's libraries only. The driver runs cc1, as and collect2,
collect2 runs ld, ld loads the LTO plugin and reads crt*.o, libgcc, libc.so (a linker
script naming libc.so.6, libc_nonshared.a and the loader), and cc1 reads the system
headers. Rather than a hand-kept list (which goes stale with each GCC or glibc) or a
package closure (which drags in lto1, the sanitizers and all of /usr/include: hundreds
of MB), the host's compiler builds a fixed probe program, and what it reports is the
closure:

* `-v`: every command the driver runs (cc1, as, collect2), with the files it names
  (plugin, lto-wrapper, start files);
* `-Wl,-t`: every file the linker opened (start files, libgcc, libc.so and what it
  names, libm, libpthread);
* `-MD`: every header the probe included (the C17 standard headers and the common
  POSIX ones, each under __has_include).

Programs among them (cc1, as, ld, collect2, lto-wrapper, the plugin) come with their
`ldd` closure (contents.py does that). The files are at the paths the compiler named
them by, normalised (`/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/crt1.o`
is `/usr/lib/x86_64-linux-gnu/crt1.o`), so a guest whose folders are all real finds
each where the host did. A program of the workload that includes a header the probe
does not, or links a library other than libc, libm and libpthread, is not covered;
-flto (lto1, 32 MB) is not either.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from guestbench.process import proc

from .errors import ImageError

PROBE_TIMEOUT_S = 60
# Names treated as a GCC driver: gcc, cc, gcc-12, x86_64-linux-gnu-gcc-12, ...
COMPILER_NAME = re.compile(r"^(?:[\w.-]+-)?(?:gcc|cc)(?:-[0-9.]+)?$")
# The driver's environment variables that change where it looks; the guest has none.
DRIVER_VARIABLES = ("GCC_EXEC_PREFIX", "COMPILER_PATH", "LIBRARY_PATH", "CPATH",
                    "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH",
                    "DEPENDENCIES_OUTPUT", "SUNPRO_DEPENDENCIES", "GCC_COMPARE_DEBUG",
                    "LD_LIBRARY_PATH", "LD_RUN_PATH", "MAKEFLAGS")

PROBE_HEADERS = (
    # C17 (freestanding and hosted)
    "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h",
    "iso646.h", "limits.h", "locale.h", "math.h", "setjmp.h", "signal.h", "stdalign.h",
    "stdarg.h", "stdatomic.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h",
    "stdnoreturn.h", "string.h", "tgmath.h", "threads.h", "time.h", "uchar.h", "wchar.h",
    "wctype.h",
    # POSIX and Linux, the common part: files, processes, sockets, terminals
    "arpa/inet.h", "dirent.h", "dlfcn.h", "err.h", "fcntl.h", "fnmatch.h", "getopt.h",
    "glob.h", "grp.h", "libgen.h", "netdb.h", "netinet/in.h", "netinet/tcp.h", "poll.h",
    "pthread.h", "pwd.h", "regex.h", "sched.h", "semaphore.h", "strings.h", "syslog.h",
    "sys/epoll.h", "sys/file.h", "sys/ioctl.h", "sys/mman.h", "sys/prctl.h", "sys/random.h",
    "sys/resource.h", "sys/select.h", "sys/socket.h", "sys/stat.h", "sys/statvfs.h",
    "sys/syscall.h", "sys/sysinfo.h", "sys/time.h", "sys/types.h", "sys/uio.h", "sys/un.h",
    "sys/utsname.h", "sys/wait.h", "termios.h", "unistd.h",
    # what the Linux kernel's host programs include besides (fixdep, sorttable, relocs)
    "byteswap.h", "elf.h", "endian.h",
)

PROBE_SOURCE = "".join(f"#if __has_include(<{h}>)\n#include <{h}>\n#endif\n"
                       for h in PROBE_HEADERS) + """
#include <math.h>
#include <pthread.h>
#include <stdio.h>

static void *run(void *arg) { return arg; }

int main(int argc, char **argv)
{
    pthread_t thread;
    (void)argv;
    if (pthread_create(&thread, NULL, run, NULL) == 0)
        pthread_join(thread, NULL);
    printf("%f\\n", sqrt((double)argc));
    return 0;
}
"""
# -pthread and -lm: the libraries a C program most often links besides libc.
PROBE_COMPILE = ("-O2", "-pthread", "-MD")
PROBE_LINK = ("-lm", "-Wl,-t")
# The headers once more with _GNU_SOURCE, which programs such as the kernel's host tools
# define: glibc's headers then include other parts (stdio.h's cookie I/O types; limits.h a
# different PTHREAD_STACK_MIN header), so neither mode's list covers the other.
PROBE_GNU_HEADERS = ("-D_GNU_SOURCE", "-pthread", "-M", "-MF", "probe-gnu.d", "probe.c")


def is_compiler(tool: str, binary: Path) -> bool:
    """Whether a tool is a GCC driver whose closure goes beyond its ldd libraries."""
    return bool(COMPILER_NAME.match(Path(tool).name) or COMPILER_NAME.match(binary.name))


def closure(binary: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(programs, files) the compiler at binary needs, as absolute host paths, sorted.

    programs are executables and shared objects (their libraries are still to add);
    files are everything else it reads. Both exclude binary itself.
    """
    stat = binary.stat()
    return _closure(str(binary), stat.st_ino, stat.st_size, stat.st_mtime_ns,
                    os.environ.get("PATH", ""))


@functools.lru_cache(maxsize=16)
def _closure(binary: str, inode: int, size: int, mtime_ns: int,
             path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The probe, once per process for an unchanged compiler (a lookup costs ~0.3 s)."""
    env = {name: value for name, value in os.environ.items() if name not in DRIVER_VARIABLES}
    env["LC_ALL"] = "C"
    with tempfile.TemporaryDirectory(prefix="guestbench-ccprobe-") as scratch:
        folder = Path(scratch)
        env["TMPDIR"] = scratch  # the driver's temporary files: excluded below
        (folder / "probe.c").write_text(PROBE_SOURCE)
        argv = [binary, "-v", *PROBE_COMPILE, "-o", "probe", "probe.c", *PROBE_LINK]
        completed = _run(argv, folder, env)
        if completed.returncode != 0:
            raise ImageError(f"the compiler {binary} cannot build a probe program on this host "
                             f"(status {completed.returncode}: {_tail(completed.stderr)}); "
                             "install the C library's headers ('apt-get install libc6-dev' "
                             "or build-essential)")
        gnu = _run([binary, *PROBE_GNU_HEADERS], folder, env)
        if gnu.returncode != 0:
            raise ImageError(f"the compiler {binary} cannot preprocess the probe with "
                             f"_GNU_SOURCE (status {gnu.returncode}: {_tail(gnu.stderr)})")
        depfile = "".join((folder / name).read_text() for name in ("probe.d", "probe-gnu.d")
                          if (folder / name).is_file())
        ld_prog = _run([binary, "-print-prog-name=ld"], folder, env).stdout.strip()
        named = [*_commands(completed.stderr), *_linker_inputs(completed.stdout),
                 *_depfile_paths(depfile)]
        programs, files = set(), set()
        for command in _command_programs(completed.stderr, env) + [_program_path(ld_prog, env)]:
            if command:
                programs.add(command)
        for candidate in named:
            if not candidate.startswith("/") or _under(candidate, scratch):
                continue
            if os.path.isfile(candidate):
                (programs if _is_elf_object(candidate) else files).add(candidate)
    if not any(_name(p).startswith("cc1") for p in programs):
        raise ImageError(f"{binary} ran no cc1 for the probe: is it a GCC driver? (clang and "
                         "others are not supported as image tools yet)")
    programs.discard(binary)
    return tuple(sorted(programs)), tuple(sorted(files - programs))


def guest_path(host_path: str) -> str:
    """Where the guest has the file the compiler named: the path without ./ and ../ parts.

    The guest's folders are real folders, so it resolves `..` the way normpath does.
    """
    return os.path.normpath(host_path)


# ---- reading what the probe printed ----

def _command_lines(stderr: str) -> list[list[str]]:
    """The commands `-v` shows: lines of one leading space, then the program."""
    commands = []
    for line in stderr.splitlines():
        if line.startswith(" ") and not line.startswith("  ") and line.strip():
            try:
                commands.append(shlex.split(line))
            except ValueError:
                continue
    return commands


def _command_programs(stderr: str, env: dict[str, str]) -> list[str | None]:
    return [_program_path(words[0], env) for words in _command_lines(stderr)]


def _commands(stderr: str) -> list[str]:
    """Absolute paths among the commands' words, also after '=' (-plugin-opt=/path)."""
    paths = []
    for words in _command_lines(stderr):
        for word in words[1:]:
            value = word[word.index("=/") + 1:] if "=/" in word else word
            if value.startswith("/"):
                paths.append(value)
    for line in stderr.splitlines():  # COLLECT_LTO_WRAPPER=/usr/lib/gcc/.../lto-wrapper
        if line.startswith("COLLECT_LTO_WRAPPER="):
            paths.append(line.split("=", 1)[1].strip())
    return paths


def _linker_inputs(stdout: str) -> list[str]:
    """ld -t: one input per line, a path or `-lm (/path/libm.so)` or `archive(member)`."""
    paths = []
    for line in stdout.splitlines():
        paths += re.findall(r"(/[^\s()]+)", line)
    return paths


def _depfile_paths(text: str) -> list[str]:
    words = text.replace("\\\n", " ").split()
    return [word for word in words[1:] if word.startswith("/")]


def _program_path(name: str, env: dict[str, str]) -> str | None:
    if not name:
        return None
    if name.startswith("/"):  # also the include folders `-v` lists the same way: not files
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    found = shutil.which(name, path=env.get("PATH"))
    return os.path.abspath(found) if found else None


def _is_elf_object(path: str) -> bool:
    """An ELF executable or shared object (which has libraries), not a relocatable .o."""
    with open(path, "rb") as file:
        header = file.read(18)
    if len(header) < 18 or header[:4] != b"\x7fELF":
        return False
    byteorder = "little" if header[5] == 1 else "big"
    return int.from_bytes(header[16:18], byteorder) in (2, 3)  # ET_EXEC, ET_DYN


def _under(path: str, folder: str) -> bool:
    return os.path.normpath(path).startswith(os.path.normpath(folder) + os.sep)


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _tail(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-300:] or "no output"


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> proc.Completed:
    try:
        return proc.run(argv, PROBE_TIMEOUT_S, cwd=cwd, env=env)
    except proc.ProcessError as error:
        raise ImageError(f"cannot run the compiler for its closure: {error}") from None
    except proc.DeadlineExceeded as error:
        raise ImageError(f"{error} while probing the compiler's closure") from None
