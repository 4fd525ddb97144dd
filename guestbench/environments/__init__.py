"""The registry of environment kinds and the built-in presets."""

from __future__ import annotations

from typing import Any

from guestbench.environments.base import Environment, EnvironmentSpec
from guestbench.environments.command import Command
from guestbench.environments.fake import Fake
from guestbench.environments.namespace import Namespace
from guestbench.environments.native import Native
from guestbench.environments.oci import Oci
from guestbench.environments.qemu import Qemu
from guestbench.environments.qemu_user import QemuUser
from guestbench.environments.uml import Uml

KINDS: dict[str, type[Environment]] = {
    cls.kind: cls for cls in (Native, Namespace, Oci, QemuUser, Qemu, Uml, Command, Fake)
}

# Kinds a plan can name. `fake` invents its numbers: only the test suite enables it.
PUBLIC_KINDS = tuple(kind for kind in KINDS if kind != "fake")
_plan_kinds = list(PUBLIC_KINDS)


def enable_fake_for_tests() -> None:
    if "fake" not in _plan_kinds:
        _plan_kinds.append("fake")


def plan_kinds() -> tuple[str, ...]:
    return tuple(_plan_kinds)

PRESETS: dict[str, dict[str, Any]] = {
    "native": {"kind": "native"},
    "namespace": {"kind": "namespace"},
    "runc": {"kind": "oci", "runtime": "runc"},
    "crun": {"kind": "oci", "runtime": "crun"},
    "runsc": {"kind": "oci", "runtime": "runsc", "platform": "ptrace"},
    "qemu-user": {"kind": "qemu-user"},
    "qemu-tcg": {"kind": "qemu", "accel": "tcg"},
    "qemu-kvm": {"kind": "qemu", "accel": "kvm"},
    "uml": {"kind": "uml"},
}


# Left out of a bare `guestbench run`: every run boots a guest under emulation
# (~5 s each here), which would take the quick campaign past a few minutes.
NOT_IN_DEFAULT_CAMPAIGN = {"qemu-tcg": "each run boots a guest under emulation (~5 s)"}
DEFAULT_CAMPAIGN = tuple(name for name in PRESETS if name not in NOT_IN_DEFAULT_CAMPAIGN)


def spec_model(kind: str) -> type[EnvironmentSpec]:
    return KINDS[kind].spec_model


def create(spec: EnvironmentSpec) -> Environment:
    """An environment object for a validated spec."""
    return KINDS[spec.kind](spec)


def preset_spec(name: str) -> EnvironmentSpec:
    options = PRESETS[name]
    return spec_model(options["kind"])(name=name, **options)
