"""Reports: the one table model (model.py), which tables a report shows (select.py), tables/
(one module per family of tables) and formats/ (the registry and one module per format,
rendering report, compare and history)."""
