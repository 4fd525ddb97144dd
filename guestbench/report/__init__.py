"""Renderers over one table model: terminal, markdown, csv, json."""

FORMATS = ("table", "markdown", "csv", "json")
