"""What goes into an image: files at their guest paths, module load order, content address."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from guestbench import agent
from guestbench.process import proc

from .errors import ImageError
from . import compiler, init_script
from .kernel import UML_VERSION

# Part of every content address: bump it when the layout or the build changes in a
# way the inputs do not show, so that old cached images are not reused.
BUILDER_VERSION = "2"  # 2: compilers bring their closure, make brings /bin/sh

BUSYBOX_CANDIDATES = (Path("/bin/busybox"), Path("/usr/bin/busybox"))
GUEST_BUSYBOX = "/bin/busybox"
GUEST_AGENT = "/bin/gbagent"
MODULE_LIST = "/guestbench/modules"
MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
RESOLVE_TIMEOUT_S = 30
# Where kmod looks under `modprobe -d ROOT`: lib/modules, or usr/lib/modules when built so.
MODPROBE_LAYOUTS = ("lib/modules", "usr/lib/modules")
# Programs a tool runs that ldd does not show: make runs recipes with /bin/sh (those with
# shell syntax; it runs the others itself). Compilers are compiler.py's matter.
COMPANIONS = {"make": ("/bin/sh",), "gmake": ("/bin/sh",)}


@dataclass(frozen=True)
class GuestFile:
    """One file of the image: its path in the guest and the host file it comes from."""

    guest_path: str
    source: Path
    sha256: str


@dataclass(frozen=True)
class Contents:
    """Every input of one image, resolved; content_id() is its cache key."""

    kernel: Path
    kernel_version: str
    kernel_sha256: str
    files: tuple[GuestFile, ...]           # busybox, agent, tools and their libraries
    module_files: tuple[GuestFile, ...]    # .ko files in load order (guest path ends in .ko)
    modules: tuple[str, ...]
    tools: tuple[str, ...]
    init: str                              # the image's /init (an L1 machine has its own)

    def content_id(self) -> str:
        digest = hashlib.sha256()
        for label, name, value in self._inputs():
            digest.update(f"{label}\0{name}\0{value}\n".encode())
        return digest.hexdigest()[:16]

    def _inputs(self) -> list[tuple[str, str, str]]:
        init_sha = hashlib.sha256(self.init.encode()).hexdigest()
        return [("builder", "", BUILDER_VERSION), ("init", "/init", init_sha),
                ("kernel", self.kernel_version, self.kernel_sha256),
                *(("file", f.guest_path, f.sha256) for f in self.files),
                *(("module", f.guest_path, f.sha256) for f in self.module_files),
                *(("tool", name, "") for name in self.tools)]


def resolve(kernel: Path, version: str, modules: Sequence[str], tools: Sequence[str],
            modules_dir: Path | None, init: str | None = None) -> Contents:
    """Find and hash every input; ImageError names the first one that is missing."""
    files = [*_program(GUEST_BUSYBOX, _busybox()), *_program(GUEST_AGENT, _agent())]
    for tool in tools:
        files += _tool(tool)
    module_files = _resolve_modules(modules, version, modules_dir) if modules else []
    return Contents(
        kernel=kernel, kernel_version=version, kernel_sha256=_sha256(kernel),
        files=tuple(_dedupe(files)), module_files=tuple(module_files),
        modules=tuple(_module_name(f.guest_path) for f in module_files),
        tools=tuple(tools), init=init_script.INIT_SCRIPT if init is None else init)


# ---- programs ----

def _busybox() -> Path:
    for candidate in BUSYBOX_CANDIDATES:
        if candidate.is_file():
            return candidate
    raise ImageError("busybox is missing (looked at "
                     f"{', '.join(map(str, BUSYBOX_CANDIDATES))}); the image's /init needs it: "
                     "'apt-get install busybox-static'")


def _agent() -> Path:
    try:
        return agent.path()
    except agent.AgentMissing as error:
        raise ImageError(str(error)) from None


def _which(tool: str) -> Path:
    found = shutil.which(tool)
    if not found:
        raise ImageError(f"tool '{tool}' for the image is not on this host's PATH; install it "
                         f"(e.g. 'apt-get install {tool}') or pass its absolute path")
    return Path(found).absolute()  # PATH may hold relative folders


def _tool(tool: str) -> list[GuestFile]:
    """A tool at its host path, its libraries, and what else it runs or reads."""
    binary = _which(tool)
    files = _program(str(binary), binary)
    for companion in COMPANIONS.get(Path(tool).name, ()):
        files += _program(companion, Path(companion))
    if compiler.is_compiler(tool, binary):
        programs, data = compiler.closure(binary)
        for program in programs:
            files += _program(compiler.guest_path(program), Path(program))
        files += [GuestFile(compiler.guest_path(path), Path(path), _sha256(Path(path)))
                  for path in data]
    return files


def _program(guest_path: str, binary: Path) -> list[GuestFile]:
    """The program at guest_path, and its shared libraries at the paths ldd names."""
    libraries = [GuestFile(str(lib), lib, _sha256(lib)) for lib in _library_closure(binary)]
    return [GuestFile(guest_path, binary, _sha256(binary)), *libraries]


def _library_closure(binary: Path) -> list[Path]:
    # ldd reports the whole closure, the dynamic loader included (the line without "=>").
    completed = _run(["ldd", str(binary)], "libc-bin")
    output = completed.stdout + completed.stderr
    if "not a dynamic executable" in output or "statically linked" in output:
        return []
    if completed.returncode != 0:
        raise ImageError(f"ldd {binary} failed: {output.strip()}; the image needs the "
                         "program's shared libraries (is it a program for this machine?)")
    libraries = []
    for line in completed.stdout.splitlines():
        name, arrow, rest = line.strip().partition("=>")
        if "not found" in rest:
            raise ImageError(f"{binary} needs {name.strip()}, which this host lacks: install "
                             "the library, or the tool cannot run in the guest either")
        path = (rest if arrow else name).strip().split(" (", 1)[0].strip()
        if path.startswith("/"):
            libraries.append(Path(path))
    return libraries


def _dedupe(files: list[GuestFile]) -> list[GuestFile]:
    seen: set[str] = set()
    unique = []
    for file in files:
        if file.guest_path not in seen:
            seen.add(file.guest_path)
            unique.append(file)
    return unique


# ---- kernel modules ----

def _resolve_modules(modules: Sequence[str], version: str,
                     modules_dir: Path | None) -> list[GuestFile]:
    if modules_dir is None and version == UML_VERSION:
        raise ImageError(f"modules {', '.join(modules)} requested for a user-mode Linux "
                         "kernel: pass modules_dir (e.g. /usr/lib/uml/modules/VERSION)")
    tree = Path(modules_dir) if modules_dir else Path("/lib/modules") / version
    if not (tree / "modules.dep").is_file():
        raise ImageError(f"no module tree for kernel {version} at {tree} (no modules.dep): "
                         f"install the kernel's modules package, or pass modules_dir")
    with tempfile.TemporaryDirectory(prefix="guestbench-modroot-") as scratch:
        root = _modprobe_root(tree, modules_dir, Path(scratch))
        ordered: dict[str, Path] = {}
        for module in modules:
            for ko in _show_depends(module, tree.name, root):
                source = _out_of_scratch(ko, root, tree) if root else ko
                ordered.setdefault(str(source), source)
    return [GuestFile(_guest_module_path(source, tree, version), source, _sha256(source))
            for source in ordered.values()]


def _modprobe_root(tree: Path, modules_dir: Path | None, scratch: Path) -> Path | None:
    """modprobe -d wants ROOT/lib/modules/VERSION; give it one that leads to tree."""
    if modules_dir is None:
        return None
    for layout in MODPROBE_LAYOUTS:
        (scratch / layout).mkdir(parents=True)
        (scratch / layout / tree.name).symlink_to(tree.resolve())
    return scratch


def _out_of_scratch(ko: Path, root: Path, tree: Path) -> Path:
    """The real path of a module that modprobe named through the scratch root's links."""
    for layout in MODPROBE_LAYOUTS:
        if ko.is_relative_to(root / layout / tree.name):
            return tree / ko.relative_to(root / layout / tree.name)
    return ko


def _show_depends(module: str, version: str, root: Path | None) -> list[Path]:
    """The .ko files to insmod for module, dependencies first (builtin ones need none)."""
    argv = ["modprobe", "--show-depends", "--set-version", version]
    argv += ["-d", str(root)] if root else []
    completed = _run([*argv, module], "kmod")
    if completed.returncode != 0:
        raise ImageError(f"kernel module '{module}' not found for kernel {version} "
                         f"({completed.stderr.strip()}); check the name with "
                         f"'modinfo -k {version} {module}'")
    paths = []
    for line in completed.stdout.splitlines():
        words = line.split()
        if not words or words[0] == "builtin":
            continue
        if words[0] != "insmod" or len(words) < 2:
            raise ImageError(f"module '{module}': modprobe wants to run '{line.strip()}' (an "
                             "install rule in /etc/modprobe.d?), which an image cannot do; "
                             "remove the rule or do not request the module")
        paths.append(Path(words[1]))
    return paths


def _guest_module_path(source: Path, tree: Path, version: str) -> str:
    try:
        relative = source.relative_to(tree)
    except ValueError:
        relative = Path(source.name)
    return f"/lib/modules/{version}/{_strip_compression(str(relative))}"


def _strip_compression(name: str) -> str:
    for suffix in MODULE_SUFFIXES[1:]:
        if name.endswith(suffix):
            return name[:-len(suffix)] + ".ko"
    return name


def _module_name(guest_path: str) -> str:
    return Path(guest_path).name.removesuffix(".ko")


def _run(argv: list[str], package: str) -> proc.Completed:
    # LC_ALL=C: the messages parsed here must not be translated.
    try:
        return proc.run(argv, RESOLVE_TIMEOUT_S, env={**os.environ, "LC_ALL": "C"})
    except proc.ProcessError as error:
        raise ImageError(f"{error}; install it with 'apt-get install {package}'") from None
    except proc.DeadlineExceeded as error:
        raise ImageError(f"{error} while resolving the image's contents") from None


def _sha256(path: Path) -> str:
    try:
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError as error:
        raise ImageError(f"cannot read {path}, an input of the image: {error.strerror}") from None
