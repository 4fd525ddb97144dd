"""One module per environment kind, each a subclass of environments/base.py's Environment,
registered by one line in environments/__init__.py."""
