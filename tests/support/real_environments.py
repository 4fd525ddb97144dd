"""This machine's environments: the presets by sort, each probed and prepared or the test skipped."""

from __future__ import annotations

import functools

import pytest

from guestbench import environments, images
from guestbench.images import vmlinux


# Process-level presets; full-system guests (each kind says whether it is one) have
# tests/integration/test_full_system.py.
PRESETS = [name for name, spec in environments.PRESETS.items()
           if not environments.KINDS[spec["kind"]].full_system]
FULL_SYSTEM_PRESETS = [name for name, spec in environments.PRESETS.items()
                       if environments.KINDS[spec["kind"]].full_system]


def prepared(host_facts, environment):
    """The environment probed and prepared (its image built); skips with the reason if either
    says it cannot run here."""
    answer = environment.probe(host_facts)
    if answer.available:
        answer = environment.prepare(host_facts)
    if not answer.available:
        pytest.skip(f"{environment.spec.name} unavailable here: {answer.reason}")
    return environment


def environment(host_facts, preset: str, **options):
    """The preset with options changed, probed; skips with the probe's reason if unavailable."""
    base = dict(environments.PRESETS[preset])
    spec = environments.spec_model(base["kind"])(name=preset, **{**base, **options})
    return prepared(host_facts, environments.create(spec))


@functools.cache
def tcg_kernel() -> str:
    """The default guest kernel for a TCG guest whose test is not about that kernel: its
    uncompressed vmlinux (extracted once, cached beside the images), which QEMU boots
    through PVH without the bzImage's decompression, 3-4 s of each boot under TCG here.
    The bzImage itself where it cannot be extracted; skips where there is no kernel. The
    default kernel's own boot keeps its tests (test_images.py, test_agent_runs_in_the_guest,
    the stdio console, the boot timeout)."""
    try:
        kernel = images.default_kernel()
    except images.ImageError as error:
        pytest.skip(str(error))
    try:
        return str(vmlinux.extract(kernel))
    except (images.ImageError, OSError):
        return str(kernel)


def preset_table(preset: str) -> str:
    """A plan's [[environment]] table for the preset, named after it; a qemu-tcg guest boots
    tcg_kernel() (a TCG boot of 7.2 s from the bzImage, 2.4 s from its vmlinux, on an Intel
    Xeon VM on 2026-11-30)."""
    kernel = f'kernel = "{tcg_kernel()}"\n' if preset == "qemu-tcg" else ""
    return f'[[environment]]\npreset = "{preset}"\n{kernel}'


def uml_kernel() -> str:
    """The UML kernel the uml kind would run (linux.uml on PATH), or skips with the reason
    its probe gives: not installed, or unable to set this host's FPU registers (Debian's
    kernel on a host whose XSAVE area is larger than 2696 bytes, e.g. with AMX)."""
    from guestbench.environments.kinds.uml import Uml, UmlSpec

    answer = Uml(UmlSpec(name="uml")).vmm_probe()
    if not answer.available:
        pytest.skip(f"uml unavailable here: {answer.reason}")
    return answer.reason.split(";")[0]
