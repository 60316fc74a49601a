"""Quantities and durations as a spec and a teams file write them, read and written back.

Memory in bytes with Kubernetes' units (``16Gi``, ``2G``), CPU in cores or millicores
(``500m``), a job's longest run time (``90m``, ``1d12h``, or ISO 8601 as a stored spec writes
it); and the same quantities written the way the Kubernetes API writes them. Pure, for the
spec's models, the teams file and the backends alike; :func:`parse_api_quantity` reads what the
API itself writes (any of its suffixes), through the Kubernetes client.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from trainhub.jobs import limits

QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|K|M|G|T)?$")
MAX_MEMORY = 2**50  # 1Pi per worker
_QUANTITY_UNITS = {
    None: 1,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def parse_quantity(value: str | int | float) -> int:
    """'16Gi' -> bytes; plain numbers are bytes."""
    if isinstance(value, int | float):
        number = float(value) if isinstance(value, float) else value
    else:
        m = QUANTITY.match(value.strip())
        if not m:
            raise ValueError(f"{value!r} is not a quantity such as 512Mi, 16Gi or 2G")
        number = float(m.group(1)) * _QUANTITY_UNITS[m.group(2)]
    if isinstance(number, float) and not math.isfinite(number):  # digits past a float's range
        raise ValueError(f"{str(value)[:40]!r} is not a quantity a machine could have")
    return int(number)


_CPU = re.compile(r"^(\d+(?:\.\d+)?)(m?)$")


def parse_cpu(value: str | int | float) -> float:
    """Kubernetes' CPU quantities in cores: '500m' -> 0.5, '0.5' -> 0.5, '2' -> 2.0."""
    m = _CPU.match(str(value).strip())
    if not m:
        raise ValueError(f"{value!r} is not a CPU quantity such as 500m, 0.5 or 8")
    cores = float(m.group(1)) / (1000 if m.group(2) else 1)
    if not math.isfinite(cores):
        raise ValueError(f"{str(value)[:40]!r} is not a CPU quantity a machine could have")
    return cores


def parse_api_quantity(value: Any) -> Decimal:
    """A quantity as the Kubernetes API writes it ('500m', '16318480Ki', '1e3', '2') as an exact
    number: the Kubernetes client's reading, refused in a sentence that names it. (What a spec
    or a teams file may say is :func:`parse_quantity`'s narrower grammar.)"""
    from kubernetes.utils.quantity import parse_quantity as kubernetes_quantity

    try:
        number = kubernetes_quantity(str(value).strip())
    except ValueError:
        number = None
    if number is None or not number.is_finite():  # Decimal reads 'NaN' and 'Infinity' too
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    return number


BINARY_UNITS = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_bytes(n: int) -> str:
    """Bytes as the API writes them, in the largest unit that divides them: 16Gi."""
    for unit, size in BINARY_UNITS:
        if n and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def binary_unit(n: float, smallest: str = "Ki") -> tuple[float, str]:
    """``n`` bytes in the largest binary unit they reach, down to ``smallest``: (1.5, 'Gi');
    (n, '') below it. Each reader's sentence picks its own precision."""
    for unit, size in BINARY_UNITS[: [u for u, _ in BINARY_UNITS].index(smallest) + 1]:
        if n >= size:
            return n / size, unit
    return n, ""


def format_size(n: float) -> str:
    """Bytes as about 4 significant digits of the largest binary unit: 17179869184 -> 16Gi."""
    number, unit = binary_unit(n)
    return f"{number:.4g}{unit}"


def format_cpu(cores: float) -> str:
    """Cores as the API writes them: 2, or 500m."""
    return str(int(cores)) if cores == int(cores) else f"{round(cores * 1000)}m"


_DURATION = re.compile(r"^\s*(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*$")
# How a stored spec writes a timedelta (ISO 8601, "PT1H30M"): a spec read back must parse.
_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(\.\d+)?S)?)?$")


def parse_duration(value: Any) -> timedelta | None:
    if value is None or isinstance(value, timedelta):
        return value
    if isinstance(value, bool):  # JSON's true is not a number of seconds
        raise ValueError(f"{value!r} is not a duration such as 90m, 2h or 1d12h")
    if isinstance(value, int | float):
        seconds = float(min(value, 10**18))  # an int past a float's range is still too long
    else:
        text = str(value).strip()
        if text.replace(".", "", 1).isdigit():
            seconds = float(text)
        else:
            m = _DURATION.match(text) or _ISO_DURATION.match(text)
            if not text or not m or not any(m.groups()):
                raise ValueError(f"{str(value)[:40]!r} is not a duration such as 90m, 2h or 1d12h")
            # More digits than any runtime has are too long, however many there are.
            whole, fraction = m.groups()[:4], "".join(g or "" for g in m.groups()[4:])  # "35.6S"
            d, h, mi, s = (int(g[:18]) if g else 0 for g in whole)
            seconds = d * 86400 + h * 3600 + mi * 60 + s + float("0" + fraction[:10])
            if any(g and len(g) > 18 for g in whole):
                seconds = math.inf
    if math.isnan(seconds):
        raise ValueError(f"{value!r} is not a duration such as 90m, 2h or 1d12h")
    if seconds <= 0:
        raise ValueError("must be longer than zero")
    longest = limits.current().max_runtime_days
    if seconds > longest * 86400:
        raise ValueError(f"must be at most {longest} days")
    # Whole seconds, rounded up: a limit finer than that means nothing, and an ISO 8601
    # duration with a fraction (PT1.5S) is not one RFC 3339's grammar admits.
    return timedelta(seconds=math.ceil(seconds))


# What parse_duration takes, for the API's documents (the default longest runtime).
MAX_RUNTIME_SCHEMA = {
    "anyOf": [
        {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": limits.Limits().max_runtime_days * 86400,
        },
        {
            "type": "string",
            "pattern": r"^\s*(\d+(\.\d+)?|(\d+d)?\s*(\d+h)?\s*(\d+m)?\s*(\d+s)?)\s*$",
        },
        {"type": "null"},
    ],
    "description": "Seconds, or a duration such as 90m, 2h or 1d12h",
}

# A spec's ``max_runtime`` field: read by parse_duration, documented by MAX_RUNTIME_SCHEMA.
MaxRuntime = Annotated[
    timedelta | None,
    BeforeValidator(parse_duration),
    WithJsonSchema(MAX_RUNTIME_SCHEMA, mode="validation"),
]
