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
             model: type[BaseModel] | None = None, also: tuple[str, ...] = ()) -> str:
    """Every error pydantic found, one line each: 'FILE: field.path: what (fix: how)'.

    Unknown keys come first: one is usually a misspelling that also causes the 'field
    required' error of the key that was meant. For an unknown key the fix lists every key
    allowed there (the model's, and `also`: keys the table takes besides the model's) and
    the nearest one.
    """
    errors = sorted(error.errors(), key=lambda item: item["type"] != "extra_forbidden")
    meant = {(*item["loc"][:-1], near) for item in errors if item["type"] == "extra_forbidden"
             and model is not None and (near := _nearest(item, model, also))}
    # a required key that a misspelt one was meant as is not told twice
    errors = [item for item in errors if item["type"] != "missing" or tuple(item["loc"]) not in meant]
    return "\n".join(_one(source, item, prefix, flag, model, also) for item in errors)


def _nearest(item: dict, model: type[BaseModel], also: tuple[str, ...]) -> str | None:
    allowed = _allowed_keys(model, item["loc"], also if len(item["loc"]) == 1 else ())
    near = difflib.get_close_matches(str(item["loc"][-1]), allowed, n=1, cutoff=CLOSENESS)
    return near[0] if near else None


def _one(source: str, item: dict, prefix: str, flag: bool, model: type[BaseModel] | None,
         also: tuple[str, ...]) -> str:
    from guestbench.environments.base import IDENTIFIER  # deferred: see _allowed_keys
    # a validator's own error (a metric's regex) may carry its fix in its context
    context = item.get("ctx") or {}
    fix = context.get("fix") or _FIXES.get(item["type"], "see docs/plan-format.md for this field")
    if item["type"] == "string_pattern_mismatch" and context.get("pattern") != IDENTIFIER:
        fix = f"write it in the form {context.get('pattern')} (docs/plan-format.md)"
    if item["type"] == "extra_forbidden" and item["loc"][-1:] == ("inside",):
        fix = ("remove it: inside is an option of the full-system kinds (qemu, uml, command); "
               "this kind runs on the host's kernel, with no VMM to start inside a VM")
    message = item["msg"]
    if item["type"] == "extra_forbidden" and model is not None:
        allowed = _allowed_keys(model, item["loc"], also if len(item["loc"]) == 1 else ())
        message = "unknown key"
        if item["loc"][-1:] != ("inside",):
            message += did_you_mean(str(item["loc"][-1]), allowed)
            fix = f"{fix}; allowed here: {', '.join(allowed)}" if allowed else fix
    if flag:
        return f"{source}: {message} (fix: {fix})"
    parts = [prefix] if prefix else []
    for step in item["loc"]:
        if isinstance(step, int):
            parts[-1:] = [f"{parts[-1]}[{step}]"] if parts else [f"[{step}]"]
        else:
            parts.append(str(step))
    path = ".".join(parts) or "(top level)"
    return f"{source}: {path}: {message} (fix: {fix})"


def numbered_lines(message: str) -> list[str]:
    """The problems of a message made by gathered(), one per entry (its numbers taken off)."""
    lines = message.splitlines()
    if len(lines) > 1 and lines[0].endswith(" problems in the plan:"):
        return [line.strip().split(". ", 1)[1] for line in lines[1:]]
    return lines


def gathered(problems: list[str]) -> PlanError:
    """One PlanError for every problem found in a plan (each a line or more), numbered when
    there are several, so that one run of guestbench shows them all."""
    lines = [line for problem in problems for line in problem.splitlines()]
    if len(lines) == 1:
        return PlanError(lines[0])
    return PlanError(f"{len(lines)} problems in the plan:\n"
                     + "\n".join(f"  {number}. {line}" for number, line in enumerate(lines, 1)))


def _allowed_keys(model: type[BaseModel], loc: tuple, also: tuple[str, ...] = ()) -> list[str]:
    """The keys of the (nested) model that holds the unknown key at loc, and also's."""
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
    return list(dict.fromkeys([*also, *model.model_fields]))


# difflib's own default: 'nativ' finds 'native', 'getpdi' finds 'getpid', 'docker' nothing
CLOSENESS = 0.6


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """"; did you mean 'native'?" (the nearest known name), or "" when none is near."""
    near = difflib.get_close_matches(name, list(dict.fromkeys(known)), n=1, cutoff=CLOSENESS)
    return f"; did you mean {near[0]!r}?" if near else ""
