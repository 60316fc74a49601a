"""The executed notebook of a job as one HTML page (nbconvert), for a download or the CLI.

The outputs are what the job's code displayed, so the HTML in them is sanitized (nbconvert's
``sanitize_html``: scripts and event handlers removed; figures and tables kept). The page is
only ever sent as an attachment, never rendered in the server's origin.
"""

from __future__ import annotations

from typing import Any

from trainhub.errors import BackendUnavailable


def to_html(notebook: dict[str, Any]) -> str:
    try:
        import nbformat
        from nbconvert import HTMLExporter
    except ImportError:  # nbconvert comes with jupyter_server, not with trainhub's core
        raise BackendUnavailable(
            "The executed notebook as HTML needs nbconvert, which is not installed here; "
            "download the .ipynb instead (or pip install nbconvert)."
        ) from None
    node = nbformat.from_dict(notebook)
    exporter = HTMLExporter(sanitize_html=True)
    body, _ = exporter.from_notebook_node(node)
    return body
