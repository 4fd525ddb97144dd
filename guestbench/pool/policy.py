"""What a pool worker lets a submitted plan run (`guestbench worker --allow`).

Access to the store is the right to queue a plan, and a plan runs programs on the hosts
it is queued for. By default a worker runs built-in environment kinds and workloads with
their default programs only. Three kinds of plan need its operator's leave:

- `command`: a `command` environment (any command line, run as the worker's user);
- `exec`: an `exec` workload (any program in the guest, natively that is the host);
- `binary`: a program or kernel path other than the kind's default (`binary`, `kernel`).
"""

from __future__ import annotations

from guestbench.plan.schema import Plan

PERMISSIONS = ("command", "exec", "binary")
PATH_FIELDS = ("binary", "kernel")  # fields that name a program or a kernel to run


def needs(the_plan: Plan) -> dict[str, list[str]]:
    """What the plan needs leave for: permission -> the places in the plan that need it."""
    found: dict[str, list[str]] = {}
    for spec in the_plan.environments:
        if spec.kind == "command":
            found.setdefault("command", []).append(f"environment {spec.name}")
        defaults = type(spec).model_fields
        for field in PATH_FIELDS:
            if field in defaults and _differs(spec, field):
                found.setdefault("binary", []).append(f"environment {spec.name}: {field} = "
                                                      f"{getattr(spec, field)!r}")
    for case in the_plan.workloads:
        if case.name == "exec":
            found.setdefault("exec", []).append(f"workload {case.label}")
    return found


def refusal(the_plan: Plan, allowed: list[str]) -> str | None:
    """Why this worker refuses the plan, or None when it may run it."""
    missing = {permission: places for permission, places in needs(the_plan).items()
               if permission not in allowed}
    if not missing:
        return None
    said = "; ".join(f"{permission} ({', '.join(places)})" for permission, places in missing.items())
    return (f"this worker is not allowed to run {said} (fix: its operator starts it with "
            f"--allow {','.join(missing)}, or submit a plan without them)")


def _differs(spec, field: str) -> bool:
    """Does the spec name another program or kernel than its kind's default?"""
    info = type(spec).model_fields[field]
    default = info.get_default(call_default_factory=True)
    return getattr(spec, field) != default
