"""The executed notebook of a job as one HTML page (nbconvert), for a download or the CLI.

The outputs are what the job's code displayed, so the HTML in them is sanitized (nbconvert's
``sanitize_html``: scripts and event handlers removed; figures and tables kept). The page is
only ever sent as an attachment, never rendered in the server's origin.

The page is script-free: nbconvert's template loads require.js and MathJax from a CDN, which
a file opened from disk would fetch (telling a third party, running its code). Math then shows
as its TeX source. A Content-Security-Policy in the head forbids any script that remained.
"""

from __future__ import annotations

import re
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
    return script_free(body)


_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script\s*>", re.IGNORECASE | re.DOTALL)
_NO_SCRIPTS = '<meta http-equiv="Content-Security-Policy" content="script-src \'none\'">'


def script_free(page: str) -> str:
    """``page`` without its script elements, and with a policy that runs none."""
    page = _SCRIPT.sub("", page)
    head = re.search(r"<head[^>]*>", page, re.IGNORECASE)
    if head is None:
        return _NO_SCRIPTS + page
    return page[: head.end()] + _NO_SCRIPTS + page[head.end() :]
