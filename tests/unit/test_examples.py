"""Every example plan in examples/ is a valid plan: a newcomer copies them first."""

from pathlib import Path

import pytest

from guestbench.plan import load

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_the_example_plan_loads(path, host):
    plan = load(path, host)
    assert plan.environments and plan.workloads
