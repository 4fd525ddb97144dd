"""Whether KVM can run a guest here: /dev/kvm usable, and a test guest that really boots.

A test boot's answer is kept until the host reboots (kvm-boot.json beside the image
cache): where guests hang under KVM it costs KVM_PROBE_S at every campaign's start, and
within one boot of the host, with the same VMM binary, image and /dev/kvm, the answer
does not change. A kept answer says when it was found and how to test again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

from guestbench.process import proc
from guestbench.environments.base import Availability
from guestbench.images import cache

# A KVM guest of guestbench's image reaches its agent in well under a second where KVM
# works; where /dev/kvm exists but guests hang (nested PVM hosts), we give up here.
KVM_PROBE_S = 8.0


def device() -> Availability:
    """Whether /dev/kvm is there and usable by this user (a file check; no guest)."""
    if not os.path.exists("/dev/kvm"):
        return Availability.no("no /dev/kvm (not a KVM host, or the kvm module is not loaded)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return Availability.no("/dev/kvm is not readable and writable (fix: join group kvm)")
    return Availability.yes("/dev/kvm")


def boots(argv: list[str]) -> Availability:
    """Whether argv (a VMM booting the image with gb.args=--version) reaches the agent."""
    try:
        result = proc.run(argv, timeout_s=KVM_PROBE_S)
    except proc.DeadlineExceeded:
        return Availability.no(f"/dev/kvm exists but a test guest did not boot under KVM within "
                               f"{KVM_PROBE_S:g} s (nested or paravirtual host?)")
    except proc.ProcessError as error:
        return Availability.no(str(error))
    if "agent exited with status 0" in result.stdout:
        return Availability.yes(f"KVM test guest booted in {result.seconds:.2f} s")
    said = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["no output"]
    return Availability.no(f"a test guest failed under KVM: {said[0][:200]}")


def remembered_file() -> Path:
    return cache.cache_root().parent / "kvm-boot.json"


def remembered(key: list[str]) -> Availability | None:
    """The answer of a test boot of this key (VMM binary, image, machine) found earlier in
    this boot of the host, with the same binary and /dev/kvm; None if there is none."""
    answer = _kept_answers().get(json.dumps(_identity(key)))
    return _told(answer) if isinstance(answer, dict) else None


def remembered_for_vmm(binary: str, machine: str) -> Availability | None:
    """The latest answer of a test boot of this VMM binary and machine in this boot of the
    host, with the same binary and /dev/kvm, whatever image it booted (`envs` builds no
    image, so it knows none); None if there is none."""
    marks = _identity([binary])[1:]
    found = []
    for key, answer in _kept_answers().items():
        try:
            kept_binary, _image, kept_machine, *kept_marks = json.loads(key)
        except (ValueError, TypeError):
            continue
        if (kept_binary, kept_machine, kept_marks) == (binary, machine, marks) \
                and isinstance(answer, dict):
            found.append(answer)
    return _told(max(found, key=lambda answer: str(answer.get("at", "")))) if found else None


def _kept_answers() -> dict[str, object]:
    """The kept answers of this boot of the host, by key (json of _identity); {} if none."""
    if _boot() is None:
        return {}
    try:
        kept = json.loads(remembered_file().read_text())
        answers = kept["answers"] if kept["boot"] == _boot() else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return answers if isinstance(answers, dict) else {}


def _told(answer: dict) -> Availability:
    return Availability(bool(answer.get("available")),
                        f"{answer.get('reason', '')} (a test boot at {answer.get('at', '?')}, "
                        f"in this boot of the host; to test again: rm {remembered_file()})")


def remember(key: list[str], answer: Availability) -> None:
    """Keeps a test boot's answer for this boot of the host (best effort: a cache; nothing
    is kept where the host's boot cannot be told apart from the next)."""
    if _boot() is None:
        return
    path = remembered_file()
    try:
        kept = json.loads(path.read_text())
        if kept.get("boot") != _boot() or not isinstance(kept.get("answers"), dict):
            raise ValueError("another boot's answers")
    except (OSError, ValueError, AttributeError):
        kept = {"boot": _boot(), "answers": {}}
    kept["answers"][json.dumps(_identity(key))] = {
        "available": answer.available, "reason": answer.reason,
        "at": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(kept, indent=1))
        temporary.replace(path)
    except OSError:
        pass  # no cache: the next campaign boots its test guest again


def _boot() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _identity(key: list[str]) -> list[str]:
    """The key, with what would make an earlier answer stale: the VMM binary's size and
    time of change (an upgrade), /dev/kvm's time of change (the module loaded again)."""
    marks = []
    for path in (shutil.which(key[0]) or key[0], "/dev/kvm"):
        try:
            found = os.stat(path)
            marks.append(f"{found.st_size}:{found.st_ctime_ns}")
        except OSError:
            marks.append("-")
    return [*key, *marks]
