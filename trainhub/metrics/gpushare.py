"""Which share of a GPU this session holds, and the GPU memory others use on that GPU.

A time-sliced replica sees the whole GPU, other pods' processes and memory included: the
session learns its share from its pod (``TRAINHUB_GPU_SHARE``/``TRAINHUB_GPU_SHARING``, set
by the spawner) and the memory from NVML: the GPU's used memory less that of this session's
own processes. NVML names processes by the node's process ids; those this session cannot see
in its own ``/proc`` count as others' (a pod has a process namespace of its own).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from trainhub.jobs.quantities import binary_unit
from trainhub.jobs.shares import parse_share, share_text, share_words

SHARE_ENV = "TRAINHUB_GPU_SHARE"
SHARING_ENV = "TRAINHUB_GPU_SHARING"


class SessionGpu(BaseModel):
    share: str = Field(description='The share of one GPU the session holds, "1/4"')
    strategy: str = Field(description="time-slicing or mig")
    words: str = Field(description='"¼ of a GPU (time-sliced with 3 others)"')
    gpu_name: str | None = None
    memory_total_bytes: int | None = None
    others_bytes: int | None = Field(
        None, description="GPU memory in use by other processes on this GPU; None: unknown"
    )
    line: str = Field(description="What the session shows: the share, and the others' memory")
    reason: str | None = Field(None, description="Why the memory is not known")


def others_bytes(used: int, processes: Iterable[tuple[int, int | None]], own: set[int]) -> int:
    """The GPU's used memory less what this session's own processes hold (pure)."""
    mine = sum(memory or 0 for pid, memory in processes if pid in own)
    return max(0, used - mine)


def gib(n: int) -> str:
    number, unit = binary_unit(float(n), smallest="Mi")
    return f"{number:.1f} {unit}B" if unit else f"{n} bytes"


def line(words: str, others: int | None) -> str:
    if others is None:
        return words
    return f"{words} · {gib(others) if others else 'no memory'} in use by others"


def visible_pids(proc: Path = Path("/proc")) -> set[int]:
    return {int(p.name) for p in proc.iterdir() if p.name.isdigit()}


def session_gpu(
    environ: Mapping[str, str] = os.environ, own_pids: Callable[[], set[int]] = visible_pids
) -> SessionGpu | None:
    """The session's share of a GPU, or None when it holds none (whole GPUs, or no GPU)."""
    raw = environ.get(SHARE_ENV, "").strip()
    if not raw:
        return None
    try:
        share = parse_share(raw)
    except ValueError as e:
        return _known(raw, environ, reason=f"{SHARE_ENV}: {e}")
    strategy = environ.get(SHARING_ENV, "time-slicing")
    words = share_words(share, strategy)
    base = {"share": share_text(share), "strategy": strategy, "words": words}
    from trainhub.metrics import nvml  # NVML only where a session holds a share

    try:
        if nvml.gpu_limit(environ) == 0:
            raise nvml.NvmlUnavailable(nvml._hidden_reason())
        nvml._start_nvml()
    except nvml.NvmlUnavailable as unavailable:
        return SessionGpu(**base, line=words, reason=str(unavailable))
    try:
        # A shared session sees one GPU: the one its replica is on.
        handle = nvml.pynvml.nvmlDeviceGetHandleByIndex(0)
        memory = nvml.pynvml.nvmlDeviceGetMemoryInfo(handle)
        processes = [
            (p.pid, p.usedGpuMemory)
            for p in nvml.pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
        ]
        others = others_bytes(memory.used, processes, own_pids())
        return SessionGpu(
            **base,
            gpu_name=nvml.pynvml.nvmlDeviceGetName(handle),
            memory_total_bytes=memory.total,
            others_bytes=others,
            line=line(words, others),
        )
    except nvml.pynvml.NVMLError as error:
        return SessionGpu(**base, line=words, reason=f"NVML could not read the GPU: {error}.")
    finally:
        nvml._stop_nvml()


def _known(raw: str, environ: Mapping[str, str], reason: str) -> SessionGpu:
    words = f"a share of a GPU ({raw})"
    strategy = environ.get(SHARING_ENV, "time-slicing")
    return SessionGpu(share=raw, strategy=strategy, words=words, line=words, reason=reason)
