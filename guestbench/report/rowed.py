"""Decimals per row of a published table (a [[table]] entry's `row_decimals`): kernbench's
elapsed to one decimal and its CPU % to none, or one VMM's boot to two decimals where the
others need one. And headers in a seed's own words (`headers`: "Per Chr KB/sec").

Every builder formats its cells while a table's Style is active (model.STYLE), and knows
nothing of rows by the names a reader sees. So the table is made again with each row's
decimals as the table's, by the same builder and the same steps after it, and each named
row takes its cells from that making. A row is named as the table shows it: any of its
label cells (an environment's name or label, a workload, a metric's title), or a shell
pattern of one.
"""

from __future__ import annotations

from collections.abc import Callable

from guestbench.plan.errors import PlanError
from guestbench.plan.tables import matches
from guestbench.report.model import Table


def apply(made: list[Table], row_decimals: dict[str, int], origin: str,
          remake: Callable[[int], list[Table]]) -> None:
    """Each row that a key of row_decimals names gets its values as remake(decimals) writes
    them (the first key that names a row wins). A key that names no row is an error where
    the user can correct it (origin: "--style: table[2]"); under a stored plan's entry,
    which cannot be corrected, it is a note under the table."""
    unnamed = [key for key in row_decimals if not any(
        _names(key, table, row) for table in made for row in table.rows)]
    if unnamed:
        rows = list(dict.fromkeys(row[0] for table in made for row in table.rows if row))
        said = (f"row_decimals: {', '.join(map(repr, unnamed))} names no row of the "
                f"{made[0].name or 'table'} table (its rows: {', '.join(rows)})")
        if origin:
            raise PlanError(f"{origin}.{said} (fix: name a row as the table shows it, or a "
                            "pattern of one)")
        made[-1].note = f"{made[-1].note} {said}.".strip()
    for decimals in sorted(set(row_decimals.values())):
        keys = [key for key, wanted in row_decimals.items() if wanted == decimals]
        again = remake(decimals)
        for table, other in zip(made, again):
            for index, row in enumerate(table.rows):
                first = next((key for key in row_decimals if _names(key, table, row)), None)
                if first not in keys or index >= len(other.rows):
                    continue
                remade = other.rows[index]
                if remade[:table.label_columns] == row[:table.label_columns]:
                    table.rows[index] = remade


def _names(key: str, table: Table, row: list[str]) -> bool:
    return any(matches(key, cell) for cell in row[:table.label_columns] if cell)


def rename_headers(made: list[Table], headers: dict[str, str], origin: str) -> None:
    """Each header cell named by a key of headers (as the table shows it) reads its value;
    a key that names no header is an error where the user can correct it, else a note."""
    shown = list(dict.fromkeys(cell for table in made for cell in table.header))
    unnamed = [key for key in headers if key not in shown]
    if unnamed:
        said = (f"headers: {', '.join(map(repr, unnamed))} names no column of the "
                f"{made[0].name or 'table'} table (its headers: {', '.join(shown)})")
        if origin:
            raise PlanError(f"{origin}.{said} (fix: name a header as the table shows it)")
        made[-1].note = f"{made[-1].note} {said}.".strip()
    for table in made:
        table.header = [headers.get(cell, cell) for cell in table.header]
