"""The store's one error, importable without loading the store's engine (SQLAlchemy)."""


class StoreError(Exception):
    """The store cannot be opened or does not hold what was asked for."""
