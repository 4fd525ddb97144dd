"""The HTML format: one self-contained page (page.py) with its style and script (assets.py),
the overview heatmap and system card, SVG plots, and the history's page."""
