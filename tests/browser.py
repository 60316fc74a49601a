"""Debian's Chromium through playwright, as the browser checks under tests/ drive it: the
Python side of tests/browser.cjs. A check's script (node, requiring browser.cjs) visits pages
and prints what it saw as one JSON line last; :func:`visit` runs it and reads that line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
# playwright from the UI tests' node_modules (scripts/setup-ui.sh), or the repository's own.
PLAYWRIGHT = next(
    (
        p
        for p in (
            ROOT / "node_modules" / "playwright",
            ROOT / "labextension" / "ui-tests" / "node_modules" / "playwright",
        )
        if (p / "package.json").exists()
    ),
    None,
)

needs_chromium = pytest.mark.skipif(
    PLAYWRIGHT is None or not shutil.which("chromium") or not shutil.which("node"),
    reason="playwright and Chromium come with scripts/setup-ui.sh",
)


def visit(
    script: Path, *args: Any, timeout: float, playwright: Path | None = None
) -> dict[str, Any]:
    """What ``script`` reported: run by node with playwright's folder (``playwright``, else
    :data:`PLAYWRIGHT`) and then ``args`` as its arguments, it must exit 0 within ``timeout``
    seconds; its last line of output is the JSON object read."""
    out = subprocess.run(
        ["node", str(script), str(playwright or PLAYWRIGHT), *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])
