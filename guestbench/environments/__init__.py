"""The registry of environment kinds (a loader function and a line each; the kind's module
under kinds/) and the built-in presets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from guestbench.environments.base import Environment, EnvironmentSpec

# Each kind's class, imported when a plan or a preset first names the kind (the functions
# below): importing every kind up front takes 0.09 s more, which `envs` (0.5 s in all)
# would spend before its first probe starts; this way the container probes run while the
# full-system kinds' machinery (images, consoles, disks) loads, and `command`'s never does.


def _native() -> type[Environment]:
    from guestbench.environments.kinds.native import Native  # deferred (above): 1 ms
    return Native


def _namespace() -> type[Environment]:
    from guestbench.environments.kinds.namespace import Namespace  # deferred (above): 2 ms
    return Namespace


def _oci() -> type[Environment]:
    from guestbench.environments.kinds.oci import Oci  # deferred (above): 5 ms
    return Oci


def _qemu_user() -> type[Environment]:
    from guestbench.environments.kinds.qemu_user import QemuUser  # deferred (above): 2 ms
    return QemuUser


def _qemu() -> type[Environment]:
    from guestbench.environments.kinds.qemu import Qemu  # deferred (above): 19 ms
    return Qemu


def _uml() -> type[Environment]:
    from guestbench.environments.kinds.uml import Uml  # deferred (above): 16 ms
    return Uml


def _xen() -> type[Environment]:
    from guestbench.environments.kinds.xen import Xen  # deferred (above): 19 ms, as qemu's
    return Xen


def _xen_pv() -> type[Environment]:
    from guestbench.environments.kinds.xen_pv import XenPv  # deferred (above), as xen's
    return XenPv


def _firecracker() -> type[Environment]:
    from guestbench.environments.kinds.firecracker import Firecracker  # deferred (above)
    return Firecracker


def _cloud_hypervisor() -> type[Environment]:
    from guestbench.environments.kinds.cloud_hypervisor import CloudHypervisor  # deferred
    return CloudHypervisor


def _command() -> type[Environment]:
    from guestbench.environments.kinds.command import Command  # deferred (above): 20 ms
    return Command


def _fake() -> type[Environment]:
    from guestbench.environments.kinds.fake import Fake  # deferred (above): 2 ms
    return Fake


_KIND_CLASSES: dict[str, Callable[[], type[Environment]]] = {
    "native": _native,
    "namespace": _namespace,
    "oci": _oci,
    "qemu-user": _qemu_user,
    "qemu": _qemu,
    "uml": _uml,
    "xen": _xen,
    "xen-pv": _xen_pv,
    "firecracker": _firecracker,
    "cloud-hypervisor": _cloud_hypervisor,
    "command": _command,
    "fake": _fake,
}

# Kinds a plan can name. `fake` invents its numbers: only the test suite enables it.
PUBLIC_KINDS = tuple(kind for kind in _KIND_CLASSES if kind != "fake")
_plan_kinds = list(PUBLIC_KINDS)


def kind_class(kind: str) -> type[Environment]:
    """The class of a registered kind (KeyError for an unknown one), its module imported
    on first use."""
    return _KIND_CLASSES[kind]()


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
    # the host's CPU as KVM users run it (QEMU's default model hides AVX from the guest, and
    # its TSC's rate: a nested guest calibrated it against the PIT, 5 s of a 16 s boot here)
    "qemu-kvm": {"kind": "qemu", "accel": "kvm", "cpu": "host"},
    # real KVM, one level down: qemu -accel kvm inside an L1 guest under TCG emulating SVM
    # (its kernel uncompressed: a bzImage's decompression runs at TCG's speed there too)
    "qemu-kvm-nested": {"kind": "qemu", "accel": "kvm", "cpu": "host", "inside": "tcg",
                        "kernel_format": "vmlinux"},
    "uml": {"kind": "uml"},
    # Xen 4.17 under QEMU's TCG, the agent in its PV dom0
    "xen-tcg": {"kind": "xen", "kernel_format": "vmlinux"},
    # a PV domU that xl starts in that dom0 (with Xen's toolstack from the host's packages)
    "xen-pv-tcg": {"kind": "xen-pv"},
    # the two VMMs built from their sources (docs/environments.md), on the host's KVM and
    # on the KVM of an L1 guest under TCG
    "firecracker": {"kind": "firecracker"},
    "firecracker-nested": {"kind": "firecracker", "inside": "tcg"},
    "cloud-hypervisor": {"kind": "cloud-hypervisor"},
    "cloud-hypervisor-nested": {"kind": "cloud-hypervisor", "inside": "tcg"},
}


# Left out of a bare `guestbench run`: every run boots a guest under emulation
# (~5 s each here), which would take the quick campaign past a few minutes.
NOT_IN_DEFAULT_CAMPAIGN = {
    "qemu-tcg": "each run boots a guest under emulation (~5 s)",
    "qemu-kvm-nested": "KVM nested in an emulated L1 guest: functional figures, ~5 s a boot",
    "xen-tcg": "Xen under emulation: functional figures, ~6 s a boot",
    "xen-pv-tcg": "a Xen PV domU under emulation: functional figures, ~20 s a boot",
    "firecracker": "needs Firecracker built from its source, and a host whose KVM runs guests",
    "firecracker-nested": "Firecracker on KVM nested in an emulated L1 guest: functional "
                          "figures, seconds a boot",
    "cloud-hypervisor": "needs Cloud Hypervisor built from its source, and a host whose KVM "
                        "runs guests",
    "cloud-hypervisor-nested": "Cloud Hypervisor on KVM nested in an emulated L1 guest: "
                               "functional figures, seconds a boot",
}
DEFAULT_CAMPAIGN = tuple(name for name in PRESETS if name not in NOT_IN_DEFAULT_CAMPAIGN)


def spec_model(kind: str) -> type[EnvironmentSpec]:
    return kind_class(kind).spec_model


def create(spec: EnvironmentSpec) -> Environment:
    """An environment object for a validated spec."""
    return kind_class(spec.kind)(spec)


def preset_spec(name: str) -> EnvironmentSpec:
    options = PRESETS[name]
    return spec_model(options["kind"])(name=name, **options)
