"""What is wrong with a plan, said as FILE: field.path: what (fix: how), and the nearest
known name for a misspelt one."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterable
from typing import TYPE_CHECKING

from guestbench.errors import InputError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError


class PlanError(InputError):
    """An invalid plan: the message names the file, the field path and the fix."""


_FIXES = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    "string_pattern_mismatch": "use a plain identifier: a letter, then letters, digits, _ . -",
    "greater_than": "use a larger value",
    "greater_than_equal": "use a larger value",
    "less_than": "use a smaller value",
    "less_than_equal": "use a smaller value",
    "repeat_value": 'give a whole number of runs such as 5, or "auto" to repeat until the '
                    "median is known well enough",
    "model_type": "give a table: a [section] with its keys",
    "max_below_min": "make max_runs at least min_runs",
    "too_short": "give at least one",
    "int_from_float": "give a whole number",
    "finite_number": "give a finite number",
    "int_type": "give a whole number",
    "float_type": "give a number",
    "string_type": "give a quoted string",
    "bool_type": "give true or false",
    "list_type": 'give a list, e.g. ["a", "b"] (a list of tables: one [[name]] header each)',
    "dict_type": "give a table: { key = \"value\" }",
    "enum": "use one of the values listed",
    "literal_error": "use one of the values listed",
}


def explain(source: str, error: ValidationError, prefix: str = "", flag: bool = False,
             model: type[BaseModel] | None = None) -> str:
    """Pydantic's first error as 'FILE: field.path: what (fix: how)'.

    An unknown key comes first: it is usually a misspelling that also causes
    the 'field required' error of the key that was meant.
    """
    from guestbench.environments.base import IDENTIFIER  # deferred: see _allowed_keys
    errors = sorted(error.errors(), key=lambda item: item["type"] != "extra_forbidden")
    first = errors[0]
    # a validator's own error (a metric's regex) may carry its fix in its context
    context = first.get("ctx") or {}
    fix = context.get("fix") or _FIXES.get(first["type"], "see docs/plan-format.md for this field")
    if first["type"] == "string_pattern_mismatch" and context.get("pattern") != IDENTIFIER:
        fix = f"write it in the form {context.get('pattern')} (docs/plan-format.md)"
    if first["type"] == "extra_forbidden" and first["loc"][-1:] == ("inside",):
        fix = ("remove it: inside is an option of the full-system kinds (qemu, uml, command); "
               "this kind runs on the host's kernel, with no VMM to start inside a VM")
    elif first["type"] == "extra_forbidden" and model is not None:
        allowed = _allowed_keys(model, first["loc"])
        fix = f"{fix}; allowed here: {allowed}" if allowed else fix
    if flag:
        return f"{source}: {first['msg']} (fix: {fix})"
    parts = [prefix] if prefix else []
    for item in first["loc"]:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
        else:
            parts.append(str(item))
    path = ".".join(parts) or "(top level)"
    extra = f" ({len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{source}: {path}: {first['msg']}{extra} (fix: {fix})"


def _allowed_keys(model: type[BaseModel], loc: tuple) -> str:
    """The keys of the (nested) model that holds the unknown key at loc."""
    # as IDENTIFIER's above: report and compare use did_you_mean without a plan, and
    # pydantic with every kind's options takes 0.2 s to load
    from pydantic import BaseModel  # deferred: 0.2 s, reason above
    for item in loc[:-1]:
        field = model.model_fields.get(item) if isinstance(item, str) else None
        annotation = field.annotation if field else None
        if typing.get_origin(annotation) in (tuple, list):  # a list of tables (exec's metrics)
            annotation = typing.get_args(annotation)[0]
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
    return ", ".join(model.model_fields)


# difflib's own default: 'nativ' finds 'native', 'getpdi' finds 'getpid', 'docker' nothing
CLOSENESS = 0.6


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """"; did you mean 'native'?" (the nearest known name), or "" when none is near."""
    near = difflib.get_close_matches(name, list(dict.fromkeys(known)), n=1, cutoff=CLOSENESS)
    return f"; did you mean {near[0]!r}?" if near else ""
