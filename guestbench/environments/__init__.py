"""The registry of environment kinds and the built-in presets."""

from __future__ import annotations

import importlib
from typing import Any

from guestbench.environments.base import Environment, EnvironmentSpec

# Each kind's module and class. A kind's module is imported when a plan or a preset first
# names the kind, so that `envs` starts the container probes before the full-system
# kinds' machinery (images, consoles, disks) has loaded, and never loads `command`'s.
_KIND_CLASSES: dict[str, tuple[str, str]] = {
    "native": ("native", "Native"),
    "namespace": ("namespace", "Namespace"),
    "oci": ("oci", "Oci"),
    "qemu-user": ("qemu_user", "QemuUser"),
    "qemu": ("qemu", "Qemu"),
    "uml": ("uml", "Uml"),
    "command": ("command", "Command"),
    "fake": ("fake", "Fake"),
}

# Kinds a plan can name. `fake` invents its numbers: only the test suite enables it.
PUBLIC_KINDS = tuple(kind for kind in _KIND_CLASSES if kind != "fake")
_plan_kinds = list(PUBLIC_KINDS)


def kind_class(kind: str) -> type[Environment]:
    """The class of a registered kind (KeyError for an unknown one), its module imported
    on first use."""
    module, name = _KIND_CLASSES[kind]
    return getattr(importlib.import_module(f"{__name__}.kinds.{module}"), name)


def __getattr__(name: str) -> Any:
    """KINDS: every registered kind's class by its name (which imports every kind)."""
    if name == "KINDS":
        return {kind: kind_class(kind) for kind in _KIND_CLASSES}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    return kind_class(kind).spec_model


def create(spec: EnvironmentSpec) -> Environment:
    """An environment object for a validated spec."""
    return kind_class(spec.kind)(spec)


def preset_spec(name: str) -> EnvironmentSpec:
    options = PRESETS[name]
    return spec_model(options["kind"])(name=name, **options)
