"""The names of the files in a bundle directory.

A bundle is a directory::

    manifest.json       BundleManifest: what was compiled, content hash, warnings
    cells.json          notebook jobs: the cells to run, in order (magics kept)
    notebook.ipynb      notebook jobs: the submitted notebook (nbformat 4), which the executed
                        notebook is made of: every cell, the runs' outputs in the code cells
    requirements.json   pip installs taken out of the cells, run once before them
    requirements/       copies of the requirement files those installs name (-r/-c)
    workspace/          the files next to the entry, at their paths relative to the workspace root
"""

MANIFEST = "manifest.json"
CELLS = "cells.json"
NOTEBOOK = "notebook.ipynb"
REQUIREMENTS = "requirements.json"
REQUIREMENT_FILES = "requirements"
WORKSPACE = "workspace"
