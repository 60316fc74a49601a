"""trainhub's CLI run as a user runs it: a child ``python -m trainhub.cli``, its output captured.

The local tests' harness and the benchmarks that drive the CLI (gpu_check, elastic) share it;
those benchmarks run on bare machines, so this module needs nothing beyond the standard library.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def run_cli(
    *args: str, cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``trainhub *args`` in ``cwd`` with exactly ``env``; checking its exit is the caller's."""
    return subprocess.run(
        [sys.executable, "-m", "trainhub.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
