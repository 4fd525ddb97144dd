"""A campaign written straight into the store, run by run, and its published tables."""

from __future__ import annotations

from guestbench.commands import reading
from guestbench.report import model, select
from guestbench.store.records import RunRecord
from tests.support.facts import FACTS, STARTED


class Campaign:
    """A campaign written straight into the store, run by run."""

    def __init__(self, store, environments: dict[str, dict], baseline: str | None = None,
                 plan: dict | None = None) -> None:
        self.store = store
        self.id = store.create_campaign("published", {"source": "test", **(plan or {})}, FACTS,
                                        "fp", baseline, "/logs", "0.1.0")
        self.env_ids = {name: store.add_environment(self.id, name, spec.get("kind", "fake"),
                                                    {"name": name, **spec}, True, "ok", position)
                        for position, (name, spec) in enumerate(environments.items())}
        self.repetition = 0

    def run(self, env: str, workload: str, samples, label: str | None = None,
            status: str = "ok", reason: str = "", params: dict | None = None,
            flags: tuple[str, ...] = ()) -> None:
        self.repetition += 1
        self.store.add_run(self.id, RunRecord(
            self.env_ids[env], workload, label or workload, params or {}, self.repetition,
            status, reason,
            STARTED, 0.5, f"/logs/{env}/{label or workload}/rep{self.repetition}",
            tuple(samples), flags))

    def tables(self, **load) -> dict[str, model.Table]:
        report = reading.load(self.store, str(self.id), **load)
        return {table.name: table for table in select.tables(report, "published")}


def row(table: model.Table, first: str) -> list[str]:
    return next(r for r in table.rows if r[0] == first)
