"""The store's one error, importable without loading the store's engine (SQLAlchemy)."""

from guestbench.errors import InputError


class StoreError(InputError):
    """The store cannot be opened or does not hold what was asked for."""
