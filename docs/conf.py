"""Sphinx configuration."""

project = "ninetoothed-ascend"
author = "ninetoothed-ascend developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "gpu"]  # raw outputs, linked from the pages
html_theme = "alabaster"
