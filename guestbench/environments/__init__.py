"""The registry of environment kinds and the built-in presets."""

from __future__ import annotations

from typing import Any

from guestbench.environments.base import Environment, EnvironmentSpec
from guestbench.environments.fake import Fake
from guestbench.environments.namespace import Namespace
from guestbench.environments.native import Native
from guestbench.environments.oci import Oci
from guestbench.environments.qemu_user import QemuUser

KINDS: dict[str, type[Environment]] = {
    cls.kind: cls for cls in (Native, Namespace, Oci, QemuUser, Fake)
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
}


def spec_model(kind: str) -> type[EnvironmentSpec]:
    return KINDS[kind].spec_model


def create(spec: EnvironmentSpec) -> Environment:
    """An environment object for a validated spec."""
    return KINDS[spec.kind](spec)


def preset_spec(name: str) -> EnvironmentSpec:
    options = PRESETS[name]
    return spec_model(options["kind"])(name=name, **options)
