"""Bounds on what a request may carry, so that one careless or hostile submit cannot fill the
store, slow every user's job list, or crash the server on input it cannot parse.

Each limit is a setting: ``TRAINHUB_LIMIT_<NAME>`` (for example
``TRAINHUB_LIMIT_PARAMETER_BYTES=1048576``) overrides the default below. The README lists them.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, fields
from typing import Any

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class Limits:
    request_bytes: int = (
        1 * MIB
    )  # one REST request body (a spec refers to files, never carries them)
    parameter_bytes: int = 64 * KIB  # one parameter value, as JSON
    parameters_bytes: int = 256 * KIB  # all parameters together, as JSON
    nesting_depth: int = 32  # lists and objects inside a parameter value or a request body
    reason_chars: int = 1000  # a cancel reason
    tags: int = 32  # tags per job
    env_vars: int = 256  # variables in the spec's env
    env_value_bytes: int = 32 * KIB  # one env value
    max_runtime_days: int = 366  # the longest max_runtime a job may ask for
    # What one rank may write to logs/rank-<r>.log, so a runaway print cannot fill the disk
    # that every job's directory shares; more is dropped after a marker line.
    log_line_bytes: int = 64 * KIB  # one line (up to a newline or carriage return)
    log_file_bytes: int = 512 * MIB  # one rank's log file, all attempts together
    # A progress bar ("\r" redraws) keeps one redraw per this many seconds, and its last state.
    log_redraw_seconds: int = 5
    # What a rank's executed notebook (notebook.ipynb) keeps: one output, and the whole file
    # (the cells' sources always; outputs past it are in the log only, after a marker).
    notebook_output_bytes: int = 2 * MIB
    notebook_bytes: int = 32 * MIB


def current(environ: dict[str, str] | None = None) -> Limits:
    """The limits in force: the defaults, overridden by ``TRAINHUB_LIMIT_<NAME>``."""
    env = os.environ if environ is None else environ
    values: dict[str, int] = {}
    for f in fields(Limits):
        raw = env.get(f"TRAINHUB_LIMIT_{f.name.upper()}")
        if raw:
            try:
                values[f.name] = max(1, int(raw))
            except ValueError:
                raise ValueError(
                    f"TRAINHUB_LIMIT_{f.name.upper()}={raw!r} is not a whole number"
                ) from None
    return Limits(**values)


# Read inside each rank (trainhub.rank.logcap), so they travel with the job's environment.
RANK_LIMITS = (
    "log_line_bytes",
    "log_file_bytes",
    "log_redraw_seconds",
    "notebook_output_bytes",
    "notebook_bytes",
)


def rank_settings(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The ``TRAINHUB_LIMIT_<NAME>`` settings of the rank-side limits that ``environ`` sets,
    checked, for a job's environment; unset ones take their defaults inside the rank."""
    env = os.environ if environ is None else environ
    bounds = current(env)
    names = (f"TRAINHUB_LIMIT_{name.upper()}" for name in RANK_LIMITS)
    return {
        name: str(getattr(bounds, name.removeprefix("TRAINHUB_LIMIT_").lower()))
        for name in names
        if env.get(name)
    }


def nesting_depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (0 for a scalar); iterative, so a
    pathologically deep value cannot exhaust the interpreter's stack."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def non_finite(value: Any) -> bool:
    """Whether a NaN or an infinity hides anywhere in ``value`` (JSON has neither)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def json_size(value: Any) -> int:
    return len(json.dumps(value, default=str).encode())


def size_text(n: int) -> str:
    if n >= MIB:
        return f"{n / MIB:g} MiB"
    if n >= KIB:
        return f"{n / KIB:g} KiB"
    return f"{n} bytes"
