"""A campaign's samples as columns (numpy arrays): what the report and compare group and
resample, without a Python object per sample."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from guestbench.store.records import StoredSample


@dataclass(frozen=True)
class Samples:
    """Samples in their stored order: run ids, values, and a code per sample into `kinds`,
    the distinct (metric, unit) pairs. Iterating gives one StoredSample per sample, for the
    renderers that list samples one by one (csv, json)."""

    run_id: np.ndarray  # int64
    kind: np.ndarray  # int32 index into kinds
    value: np.ndarray  # float64
    kinds: tuple[tuple[str, str], ...]  # (metric, unit)

    @classmethod
    def from_tuples(cls, rows: list[tuple[int, str, str, float]]) -> "Samples":
        """From (run_id, metric, unit, value) tuples, as a database cursor gives them."""
        pairs = list(zip(map(itemgetter(1), rows), map(itemgetter(2), rows)))
        codes = {pair: code for code, pair in enumerate(dict.fromkeys(pairs))}
        kind = np.fromiter(map(codes.__getitem__, pairs), dtype=np.int32, count=len(rows))
        run_id = np.fromiter(map(itemgetter(0), rows), dtype=np.int64, count=len(rows))
        value = np.fromiter(map(itemgetter(3), rows), dtype=np.float64, count=len(rows))
        return cls(run_id, kind, value, tuple(codes))

    @classmethod
    def coerce(cls, samples: "Samples | Iterable[StoredSample]") -> "Samples":
        """Samples as they are, or built from StoredSamples."""
        if isinstance(samples, Samples):
            return samples
        return cls.from_tuples([tuple(sample) for sample in samples])

    def __len__(self) -> int:
        return int(self.value.size)

    def __iter__(self) -> Iterator[StoredSample]:
        kinds = self.kinds
        for run_id, kind, value in zip(self.run_id.tolist(), self.kind.tolist(),
                                       self.value.tolist()):
            metric, unit = kinds[kind]
            yield StoredSample(run_id, metric, unit, value)

    def where(self, mask: np.ndarray) -> "Samples":
        return Samples(self.run_id[mask], self.kind[mask], self.value[mask], self.kinds)

    def of_runs(self, run_ids: Iterable[int]) -> "Samples":
        return self.where(np.isin(self.run_id, np.fromiter(run_ids, dtype=np.int64)))

    def of_metrics(self, *metrics: str) -> "Samples":
        wanted = [code for code, (metric, _unit) in enumerate(self.kinds) if metric in metrics]
        return self.where(np.isin(self.kind, wanted))

    def without_metrics(self, metrics: Iterable[str]) -> "Samples":
        """Without the samples of these metrics; kinds keeps only the pairs still present, in
        the same order (as from_tuples gives them for rows read without those metrics)."""
        gone = set(metrics)
        if not gone or not any(metric in gone for metric, _unit in self.kinds):
            return self
        kept = self.where(~np.isin(self.kind, [code for code, (metric, _unit)
                                               in enumerate(self.kinds) if metric in gone]))
        present = np.unique(kept.kind)  # codes follow first appearance, so sorted codes do too
        renumber = np.full(len(self.kinds), -1, dtype=np.int32)
        renumber[present] = np.arange(present.size, dtype=np.int32)
        return Samples(kept.run_id, renumber[kept.kind], kept.value,
                       tuple(self.kinds[code] for code in present.tolist()))

    def metric_codes(self) -> tuple[np.ndarray, list[str]]:
        """Each sample's metric as a code into the returned names (kinds differ in unit too)."""
        names = list(dict.fromkeys(metric for metric, _unit in self.kinds))
        of_kind = np.array([names.index(metric) for metric, _unit in self.kinds] or [0],
                           dtype=np.int32)
        return of_kind[self.kind], names
