"""Job metrics: GPU (NVML), process and host (psutil), and training scalars.

Names load lazily: ``trainhub.log`` inside a training rank should not import pydantic,
psutil or NVML bindings it does not need.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_LAZY = {
    "GpuInfo": "trainhub.metrics.nvml",
    "GpuInventory": "trainhub.metrics.nvml",
    "GpuSampler": "trainhub.metrics.nvml",
    "gpu_inventory": "trainhub.metrics.nvml",
    "HostSampler": "trainhub.metrics.system",
    "ProcessSampler": "trainhub.metrics.system",
    "MetricsSampler": "trainhub.metrics.sampler",
    "log": "trainhub.metrics.scalars",
    "read_metrics": "trainhub.metrics.scalars",
}

__all__ = [
    "GpuInfo",
    "GpuInventory",
    "GpuSampler",
    "HostSampler",
    "MetricsSampler",
    "ProcessSampler",
    "gpu_inventory",
    "log",
    "read_metrics",
]

if TYPE_CHECKING:  # pragma: no cover
    from trainhub.metrics.nvml import GpuInfo, GpuInventory, GpuSampler, gpu_inventory
    from trainhub.metrics.sampler import MetricsSampler
    from trainhub.metrics.scalars import log, read_metrics
    from trainhub.metrics.system import HostSampler, ProcessSampler


def __getattr__(name: str) -> Any:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'trainhub.metrics' has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
