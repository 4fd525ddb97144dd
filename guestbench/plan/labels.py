"""How a swept value becomes part of an environment's name (tcg-vcpus2-placementsame)."""

from __future__ import annotations

import re
from typing import Any


def plain_value(value: Any) -> str:
    """A swept value as part of a name; a path by its file name (a kernel, a VMM binary)."""
    if isinstance(value, str) and "/" in value.rstrip("/"):
        value = value.rstrip("/").rsplit("/", 1)[1]
    text = "_".join(map(str, value)) if isinstance(value, list) else str(value)
    return re.sub(r"[^A-Za-z0-9_.]", "_", text)
