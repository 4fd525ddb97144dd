"""Reports: the one table model (model.py), what a view shows (views.py, chosen.py,
catalogue.py), tables/ (one module per family of tables) and formats/ (the registry and
one module per format, rendering report, compare and history)."""
