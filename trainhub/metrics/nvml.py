"""GPU inventory and sampling through NVML (nvidia-ml-py).

Nothing here raises because a machine has no NVIDIA driver: the inventory carries an
``error`` sentence instead, and the sampler a ``reason``. ``TRAINHUB_GPUS=<n>`` caps how
many GPUs trainhub sees (``0`` hides them all), for admins and tests.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

try:
    import pynvml
except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency; be kind if it is absent
    pynvml = None

GPUS_ENV = "TRAINHUB_GPUS"


class GpuInfo(BaseModel):
    index: int
    uuid: str
    name: str
    memory_total_bytes: int


class GpuInventory(BaseModel):
    gpus: list[GpuInfo] = Field(default_factory=list)
    driver_version: str | None = None
    error: str | None = None
    """Why some or all GPUs are missing, as a sentence for people; None when all is well."""


class NvmlUnavailable(Exception):
    """NVML cannot be used in this process; ``str()`` is a sentence for people."""


def gpu_limit(environ: Mapping[str, str] = os.environ) -> int | None:
    """How many GPUs ``TRAINHUB_GPUS`` lets trainhub use; None when it is unset."""
    raw = environ.get(GPUS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise NvmlUnavailable(
            f"{GPUS_ENV}={raw!r} is not a number of GPUs; set it to 0 to hide the GPUs or unset it."
        )
    return int(raw)


def _hidden_reason() -> str:
    return f"GPUs are hidden by {GPUS_ENV}=0."


def _start_nvml() -> None:
    if pynvml is None:
        raise NvmlUnavailable("GPU metrics need nvidia-ml-py, which is not installed.")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        if error.value == pynvml.NVML_ERROR_LIBRARY_NOT_FOUND:
            raise NvmlUnavailable(
                "No NVIDIA driver found: the NVML library libnvidia-ml.so.1 could not be loaded."
            ) from None
        if error.value == pynvml.NVML_ERROR_DRIVER_NOT_LOADED:
            raise NvmlUnavailable(
                "The NVIDIA driver is not loaded, so NVML could not start."
            ) from None
        raise NvmlUnavailable(f"NVML could not start: {error}.") from None


def _stop_nvml() -> None:
    with contextlib.suppress(pynvml.NVMLError):  # already shut down: nothing left to release
        pynvml.nvmlShutdown()


def gpu_inventory() -> GpuInventory:
    """The GPUs NVML sees on this machine (physical indices, as NVML numbers them)."""
    try:
        limit = gpu_limit()
        if limit == 0:
            return GpuInventory(error=_hidden_reason())
        _start_nvml()
    except NvmlUnavailable as unavailable:
        return GpuInventory(error=str(unavailable))
    try:
        return _read_inventory(limit)
    finally:
        _stop_nvml()


def _read_inventory(limit: int | None) -> GpuInventory:
    try:
        driver_version = pynvml.nvmlSystemGetDriverVersion()
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as error:
        return GpuInventory(error=f"NVML could not count the GPUs: {error}.")
    if count == 0:
        return GpuInventory(
            driver_version=driver_version, error="NVML sees no GPUs on this machine."
        )
    gpus, problems = [], []
    for index in range(count if limit is None else min(count, limit)):
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            gpus.append(
                GpuInfo(
                    index=index,
                    uuid=pynvml.nvmlDeviceGetUUID(handle),
                    name=pynvml.nvmlDeviceGetName(handle),
                    memory_total_bytes=pynvml.nvmlDeviceGetMemoryInfo(handle).total,
                )
            )
        except pynvml.NVMLError as error:
            problems.append(f"GPU {index} could not be read: {error}.")
    return GpuInventory(gpus=gpus, driver_version=driver_version, error=" ".join(problems) or None)


# --- sampling -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Device:
    index: int
    uuid: str | None
    handle: Any


# Each reading: record field(s) it fills, and how to get them from a device handle.
def _utilization(handle: Any) -> tuple[int, int]:
    rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
    return rates.gpu, rates.memory


def _memory(handle: Any) -> tuple[int, int]:
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    return memory.used, memory.total


def _power(handle: Any) -> tuple[float]:
    return (pynvml.nvmlDeviceGetPowerUsage(handle) / 1000,)  # NVML reports milliwatts


def _temperature(handle: Any) -> tuple[int]:
    return (pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),)


_READINGS: tuple[tuple[str, tuple[str, ...], Callable[[Any], tuple[Any, ...]]], ...] = (
    ("utilization", ("utilization", "memory_utilization"), _utilization),
    ("memory", ("memory_used", "memory_total"), _memory),
    ("power", ("power_w",), _power),
    ("temperature", ("temperature_c",), _temperature),
)


class GpuSampler:
    """Reads utilization, memory, power and temperature of some GPUs, keeping NVML open.

    ``open()`` says whether any GPU can be sampled; when none can, ``reason`` says why.
    A reading that fails leaves its fields None, and its cause is queued once in
    ``take_problems()``. No NVML error escapes ``open``, ``sample`` or ``close``.
    """

    def __init__(self, indices: Sequence[int]) -> None:
        self.indices = list(indices)
        self.reason: str | None = None
        self._devices: list[_Device] = []
        self._started = False
        self._problems: list[str] = []
        self._reported: set[str] = set()

    def open(self) -> bool:
        try:
            self.reason = self._open()
        except Exception as error:  # never let a driver oddity stop the caller
            self.reason = f"GPU metrics failed to start: {error!r}."
        return self.reason is None

    def _open(self) -> str | None:
        if not self.indices:
            return "No GPUs are assigned to this job."
        try:
            limit = gpu_limit()
            if limit == 0:
                return _hidden_reason()
            _start_nvml()
        except NvmlUnavailable as unavailable:
            return str(unavailable)
        self._started = True
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as error:
            return f"NVML could not count the GPUs: {error}."
        visible = count if limit is None else min(count, limit)
        for index in self.indices:
            if not 0 <= index < count:
                self._note(f"GPU {index} is not on this machine (NVML sees {count}).")
                continue
            if index >= visible:
                self._note(f"GPU {index} is hidden by {GPUS_ENV}={limit}.")
                continue
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except pynvml.NVMLError as error:
                self._note(f"GPU {index} could not be opened: {error}.")
                continue
            try:
                uuid = pynvml.nvmlDeviceGetUUID(handle)
            except pynvml.NVMLError:
                uuid = None
            self._devices.append(_Device(index, uuid, handle))
        if not self._devices:
            return " ".join(self.take_problems())
        return None

    def sample(self) -> list[dict[str, Any]]:
        """One record per open GPU: the gpu.jsonl fields except ``time``."""
        return [self._sample_device(device) for device in self._devices]

    def _sample_device(self, device: _Device) -> dict[str, Any]:
        record: dict[str, Any] = {"gpu": device.index, "uuid": device.uuid}
        failures: dict[str, str] = {}
        for reading, fields, read in _READINGS:
            try:
                values = read(device.handle)
            except Exception as error:  # NVMLError mostly; anything else must not stop sampling
                failures[reading] = (
                    str(error) if isinstance(error, pynvml.NVMLError) else repr(error)
                )
                values = (None,) * len(fields)
            record.update(zip(fields, values, strict=True))
        if failures:
            self._note_failures(device.index, failures)
        return record

    def _note_failures(self, index: int, failures: dict[str, str]) -> None:
        causes = set(failures.values())
        if len(failures) == len(_READINGS) and len(causes) == 1:
            self._note(f"GPU {index} could not be read: {causes.pop()}.")
            return
        for reading, cause in failures.items():
            self._note(f"GPU {index} {reading} is unavailable: {cause}.")

    def _note(self, problem: str) -> None:
        if problem not in self._reported:
            self._reported.add(problem)
            self._problems.append(problem)

    def take_problems(self) -> list[str]:
        """Problems not taken before, each reported once for the life of the sampler."""
        problems, self._problems = self._problems, []
        return problems

    def close(self) -> None:
        self._devices = []
        if self._started:
            self._started = False
            _stop_nvml()
