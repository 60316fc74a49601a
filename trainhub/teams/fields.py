"""What every part of the teams file shares: its base model (unknown fields refused, values
frozen, whitespace stripped), the DNS label rule of names, and the check of the Kubernetes
quantities it keeps as text.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from trainhub.jobs.quantities import parse_cpu, parse_quantity

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class FileModel(BaseModel):
    """A part of the teams file."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def quantity(value: str | int | float, parse: Any = parse_quantity) -> str:
    """Kubernetes quantities stay strings (as the API returns them); checked here once."""
    text = str(value)
    try:
        parse(text)
    except ValueError as e:
        raise ValueError(str(e)) from None
    return text


def resource_quantity(info: Any, value: Any) -> str:
    """A CPU field in cores or millicores (500m), a memory field in bytes with its unit."""
    return quantity(value, parse_cpu if info.field_name == "cpu" else parse_quantity)
