"""The store's schema version, readable without loading the store's engine (store/quick.py)."""

SCHEMA_VERSION = 8
