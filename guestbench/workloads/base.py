"""What a workload is: a name, typed parameters, needed capabilities, the agent arguments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from guestbench.environments.base import Capability
from guestbench.host import Host


class Params(BaseModel):
    """Base of every workload's parameter model: unknown keys are errors."""

    # strict: `true` or "3" where a number belongs is an error, not a 1 or a 3
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


@dataclass(frozen=True)
class Workload:
    name: str
    family: str
    summary: str
    params_model: type[Params]
    to_agent_args: Callable[[Params], list[str]]
    capabilities: frozenset[Capability] = frozenset()
    quick: bool = True  # part of the default quick suite
    produces_samples: bool = True  # a run without samples is a failed run
    boot_phases: bool = False  # the guest's boot phases (host clock) become samples
    # fills parameters whose default depends on the host, so every environment gets the same
    host_defaults: Callable[[Host], dict[str, Any]] = field(default=lambda host: {})
    # the one metric that adaptive repetitions and summaries judge; None: nothing to judge
    primary_metric: str | None = field(kw_only=True)

    def resolve(self, given: dict[str, Any], host: Host) -> Params:
        """Validated parameters with every default filled in."""
        return self.params_model(**{**self.host_defaults(host), **given})

    def agent_args(self, params: Params) -> list[str]:
        return [*self.to_agent_args(params), self.name]
