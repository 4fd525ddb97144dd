"""The wheel carries guestbench's own programs: building it (pip wheel ., python -m build)
compiles the static agent and its gate from agent/ (make, a C compiler and a static libc)
into the package's _bin/, where guestbench/programs.py finds them, and tags the wheel for
the platform they were built for; the example plans go into the package's examples/. The
project's metadata is in pyproject.toml."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = ("gbagent", "gbgate")
NEEDS = ("a C compiler (gcc), make and a static C library; on Debian or Ubuntu: "
         "apt-get install gcc make libc6-dev; on Fedora: dnf install gcc make glibc-static")


def build_programs(into: Path, sources: Path = HERE / "agent") -> None:
    """make in a copy of agent/ (the source tree stays as it was), the programs into into;
    SystemExit with what is missing or what the compiler said."""
    compiler = os.environ.get("CC", "gcc")
    missing = [tool for tool in (compiler, "make") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"guestbench: building its agent needs {NEEDS}; not found: "
                 f"{', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="guestbench-agent-") as scratch:
        copy = Path(scratch) / "agent"
        shutil.copytree(sources, copy, ignore=shutil.ignore_patterns("*.o", *PROGRAMS))
        built = subprocess.run(["make", "-C", str(copy), f"CC={compiler}", *PROGRAMS],
                               capture_output=True, text=True)
        if built.returncode != 0:
            said = (built.stderr or built.stdout).strip().splitlines()[-12:]
            sys.exit(f"guestbench: its agent did not build (it needs {NEEDS}):\n  "
                     + "\n  ".join(said))
        into.mkdir(parents=True, exist_ok=True)
        for name in PROGRAMS:
            shutil.copy2(copy / name, into / name)


if __name__ == "__main__":  # as a build runs it; a test imports build_programs alone
    from setuptools import setup
    from setuptools.command.bdist_wheel import bdist_wheel
    from setuptools.command.build_py import build_py

    class BuildWithPrograms(build_py):
        def run(self) -> None:
            super().run()
            if not self.editable_mode:  # an editable install is a checkout: it has both
                package = Path(self.build_lib) / "guestbench"
                build_programs(package / "_bin")
                shutil.copytree(HERE / "examples", package / "examples", dirs_exist_ok=True)

    class PlatformWheel(bdist_wheel):
        """Any Python 3, no ABI of Python's, this platform: the programs are its machine code."""

        def finalize_options(self) -> None:
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self) -> tuple[str, str, str]:
            _, _, platform = super().get_tag()
            return "py3", "none", platform

    setup(cmdclass={"build_py": BuildWithPrograms, "bdist_wheel": PlatformWheel})
