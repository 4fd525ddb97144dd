"""The store's schema version, readable without loading the store's engine (digest_reader.py)."""

SCHEMA_VERSION = 9
