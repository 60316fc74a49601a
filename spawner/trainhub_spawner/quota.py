"""Will this session fit the team's ResourceQuota? A friendly early answer, before the pod.

The namespace's ResourceQuota is what enforces the limit (the API server refuses a pod
past it, even when two spawns race this check); this module only turns the quota's
``status`` into a sentence a researcher understands on the spawn page.
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from typing import Any

from trainhub.backends.kubernetes.names import GPU
from trainhub.jobs.quantities import binary_unit
from trainhub.jobs.quantities import parse_api_quantity as parse_quantity


class OverQuota(RuntimeError):
    """The session does not fit what is left of the team's quota; ``str()`` is the sentence."""


def _number(d: Decimal) -> str:
    return str(int(d)) if d == d.to_integral_value() else f"{float(d):g}"


def _bytes(d: Decimal) -> str:
    number, unit = binary_unit(float(d), smallest="Mi")
    return f"{number:g}{unit}" if unit else f"{int(number)} bytes"


_WHAT = {
    f"requests.{GPU}": ("GPUs", _number),
    "requests.cpu": ("CPUs", _number),
    "cpu": ("CPUs", _number),
    "requests.memory": ("of memory", _bytes),
    "memory": ("of memory", _bytes),
}


def _what(resource: str) -> tuple[str, Any]:
    if resource not in _WHAT and resource.startswith("requests.nvidia.com/"):  # a share
        return f"shares of a GPU ({resource.removeprefix('requests.')})", _number
    return _WHAT.get(resource, (resource, _number))


def shortfall(team: str, quotas: list[dict[str, Any]], needs: dict[str, str]) -> str | None:
    """The first resource of ``needs`` that would pass a quota's hard limit, as a sentence.

    ``quotas`` are ResourceQuota objects as the API returns them (``status.hard``/``used``);
    ``needs`` maps quota resource names (``requests.nvidia.com/gpu``) to quantities.
    None when everything fits."""
    for quota in quotas:
        status = quota.get("status") or {}
        hard = status.get("hard") or (quota.get("spec") or {}).get("hard") or {}
        used = status.get("used") or {}
        for resource, quantity in needs.items():
            if resource not in hard:
                continue
            need = parse_quantity(quantity)
            if need == 0:
                continue
            limit, in_use = parse_quantity(hard[resource]), parse_quantity(used.get(resource, "0"))
            if in_use + need > limit:
                what, fmt = _what(resource)
                return (
                    f"team {team} uses {fmt(in_use)} of {fmt(limit)} {what}; "
                    f"this profile needs {fmt(need)}"
                )
    return None


async def read_quotas(core_api: Any, namespace: str, timeout: float) -> list[dict[str, Any]]:
    """The namespace's ResourceQuotas through a kubernetes_asyncio CoreV1Api, as plain dicts."""
    result = await asyncio.wait_for(
        core_api.list_namespaced_resource_quota(namespace, _preload_content=False), timeout
    )
    body = json.loads(await result.read())
    return list(body.get("items", []))
