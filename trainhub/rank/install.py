"""The bundle's ``%pip`` lines, installed once before any rank starts (locally, by the
supervisor) into the job's own layer, ``pip install --prefix <job>/env``, never into the
interpreter's environment that later jobs share. The ranks see the layer through
``PYTHONPATH`` and ``PATH`` (:func:`trainhub.jobs.environment.pip_layer`); a rank never imports
this module."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from trainhub.bundle.requirements import load_requirements
from trainhub.bundle.schema import Requirement, cell_label
from trainhub.jobs.environment import admin_allowed, inherited, pip_layer

PIP_TIMEOUT_S = 3600.0


def install_requirements(
    bundle_dir: Path,
    log_path: Path,
    *,
    prefix: Path | None = None,
    timeout_s: float = PIP_TIMEOUT_S,
) -> tuple[bool, str, Requirement | None]:
    """Run the bundle's ``pip install`` lines once, before any rank starts, into ``prefix``
    (the job's own layer, :attr:`JobDir.pip_prefix`; a line that names its own ``--target``
    or ``--prefix`` keeps it), never into the interpreter's environment or ``~/.local``,
    which later jobs share (the compiler left ``--user`` out; an older bundle's line with it
    fails, pip refusing ``--user`` with ``--prefix``).

    pip's output is appended to ``log_path``.

    Returns (ok, detail, the failed line); a failed install is an environment failure
    (``classify_exception(PIP_INSTALL_ERROR, detail, "")``).
    """
    bundle_dir = Path(bundle_dir)
    requirements = load_requirements(bundle_dir)
    if not requirements:
        return True, "no packages to install", None
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # pip runs build hooks of what it installs: they get what a rank gets, not the server's tokens.
    env = {
        **inherited(os.environ, admin_allowed()),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PIP_USER": "0",  # a pip.conf's `user = true` is no place for a job's packages either
    }
    if prefix is not None:  # a later line sees what an earlier one installed, as ranks will
        env.update(pip_layer(prefix, env))
    started = time.monotonic()
    for req in requirements:
        argv = [sys.executable, "-m", "pip", "install", *req.argv]
        if prefix is not None and not _names_its_place(req.argv):
            argv += ["--prefix", str(prefix)]
        where = f"{cell_label(req.cell_index)}, line {req.line}"
        with open(log_path, "ab", buffering=0) as log:
            log.write(f"[trainhub] {where}: {req.source}\n".encode())
            start = log.tell()
            try:
                proc = subprocess.run(
                    argv,
                    cwd=bundle_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    timeout=timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                stopped = f"`{req.source}` ({where}) ran over {timeout_s:.0f} s and was stopped"
                return False, stopped, req
        if proc.returncode != 0:
            tail = _last_lines(log_path, start)
            failed = f"`{req.source}` ({where}) exited with status {proc.returncode}: {tail}"
            return False, failed, req
    took = time.monotonic() - started
    return True, f"installed {len(requirements)} pip line(s) in {took:.1f} s", None


def _names_its_place(argv: list[str]) -> bool:
    """Whether a ``pip install`` line says itself where to install (``--user`` is no place a
    job's line may name: ``~/.local`` is every job's)."""
    places = ("--target", "-t", "--prefix", "--root")
    return any(
        arg in places or arg.startswith(("--target=", "--prefix=", "--root=")) for arg in argv
    )


def _last_lines(path: Path, start: int, count: int = 5) -> str:
    with open(path, "rb") as f:
        f.seek(start)
        text = f.read()[-8192:].decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-count:]) or "no output"
