"""Series of campaigns for analysis.history: their scales, and the history command's JSON."""

from __future__ import annotations

import json

import numpy as np

from tests.support.cli import invoke


def noisy(count: int, seed: int, slower_from: int | None = None, by: float = 1.10,
          noise: float = 0.01) -> list[float]:
    """Each campaign's scale: 1% noise between campaigns (as between real ones), and a
    step of `by` from campaign number `slower_from` (1-based) on."""
    rng = np.random.default_rng(seed)
    scales = 1 + noise * rng.standard_normal(count)
    if slower_from is not None:
        scales[slower_from - 1:] *= by
    return list(scales)


def history_json(campaigns, url: str, *args: str) -> dict:
    result = invoke(["history", "--db", url, "--format", "json", *args], campaigns.agent)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)
