"""Did you mean: the known names nearest to a misspelt environment or workload."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# difflib's own default: 'nativ' finds 'native', 'getpdi' finds 'getpid', 'docker' nothing
CLOSENESS = 0.6


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """"; did you mean 'native'?" (the nearest known name), or "" when none is near."""
    near = difflib.get_close_matches(name, list(dict.fromkeys(known)), n=1, cutoff=CLOSENESS)
    return f"; did you mean {near[0]!r}?" if near else ""
