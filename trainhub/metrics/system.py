"""CPU and memory of each rank's process tree, and of the host, through psutil.

A rank's figures include its children (data loader workers, compilers), found again every
``refresh_children_s`` seconds: scanning every process of a busy host each second would cost
more than the whole rest of the sampler.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from typing import Any

import psutil

_GONE = (psutil.NoSuchProcess, psutil.AccessDenied)


class _Tree:
    """One rank's process and its descendants, with psutil objects kept between samples."""

    def __init__(self, root: psutil.Process) -> None:
        self.root = root
        self.members: dict[int, psutil.Process] = {root.pid: root}
        self.primed: set[int] = set()  # processes whose cpu_percent has a baseline
        self.refreshed_at = float("-inf")

    def refresh(self, now: float) -> None:
        try:
            children = self.root.children(recursive=True)
        except _GONE:
            return
        found = {self.root.pid: self.root}
        for child in children:
            known = self.members.get(child.pid)
            # Same pid and start time: keep the object that holds the cpu_percent baseline.
            found[child.pid] = known if known is not None and known == child else child
        self.primed &= {pid for pid, proc in found.items() if self.members.get(pid) is proc}
        self.members = found
        self.refreshed_at = now

    def sample(self) -> tuple[float | None, int] | None:
        """Summed CPU % (None until a baseline exists) and RSS bytes; None once the root is gone."""
        cpu, rss, measured = 0.0, 0, False
        for pid, proc in list(self.members.items()):
            try:
                with proc.oneshot():
                    # Ended but not yet waited for: its memory reads 0, it is gone.
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        raise psutil.ZombieProcess(pid)
                    percent = proc.cpu_percent(None)
                    resident = proc.memory_info().rss
                    if resident == 0:  # exiting: its memory released before it is a zombie
                        raise psutil.ZombieProcess(pid)
                    rss += resident
            except _GONE:
                if pid == self.root.pid:
                    return None
                del self.members[pid]
                continue
            if pid in self.primed:
                cpu += percent
                measured = True
            else:
                self.primed.add(pid)  # psutil's first reading has no interval to measure over
        return (round(cpu, 1) if measured else None), rss


class ProcessSampler:
    """``{rank, pid, cpu_percent, rss_bytes}`` for each rank, children included.

    ``cpu_percent`` is a percentage of one core (a tree busy on four cores reads 400) and is
    None on a rank's first sample, when there is no interval to measure over yet.
    """

    def __init__(self, refresh_children_s: float = 5.0) -> None:
        self.refresh_children_s = refresh_children_s
        self._trees: dict[int, _Tree] = {}

    def sample(self, rank_pids: Mapping[int, int]) -> list[dict[str, Any]]:
        now = time.monotonic()
        records = []
        for rank, pid in sorted(rank_pids.items()):
            tree = self._tree(rank, pid)
            if tree is None:
                continue
            if now - tree.refreshed_at >= self.refresh_children_s:
                tree.refresh(now)
            reading = tree.sample()
            if reading is None:
                del self._trees[rank]
                continue
            cpu_percent, rss_bytes = reading
            records.append(
                {"rank": rank, "pid": pid, "cpu_percent": cpu_percent, "rss_bytes": rss_bytes}
            )
        for rank in self._trees.keys() - rank_pids.keys():
            del self._trees[rank]
        return records

    def _tree(self, rank: int, pid: int) -> _Tree | None:
        tree = self._trees.get(rank)
        if tree is not None and tree.root.pid == pid:
            return tree
        try:
            tree = _Tree(psutil.Process(pid))
        except _GONE:
            self._trees.pop(rank, None)
            return None
        self._trees[rank] = tree
        return tree


class HostSampler:
    """``{rank: None, host, cpu_percent, memory_used, memory_total}`` for the whole machine.

    ``cpu_percent`` is of all cores together (0-100). It is measured from this sampler's own
    baseline rather than ``psutil.cpu_percent``, whose module-wide baseline any other caller
    in the process would move.
    """

    def __init__(self) -> None:
        self.host = socket.gethostname()
        self._last = _busy_and_total(psutil.cpu_times())

    def sample(self) -> dict[str, Any]:
        busy, total = _busy_and_total(psutil.cpu_times())
        last_busy, last_total = self._last
        self._last = busy, total
        elapsed = total - last_total
        memory = psutil.virtual_memory()
        return {
            "rank": None,
            "host": self.host,
            "cpu_percent": round(100 * (busy - last_busy) / elapsed, 1) if elapsed > 0 else 0.0,
            "memory_used": memory.total - memory.available,
            "memory_total": memory.total,
        }


def _busy_and_total(times: Any) -> tuple[float, float]:
    # As psutil counts it: guest time is already inside user time, and iowait is idle.
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    idle = times.idle + getattr(times, "iowait", 0.0)
    return total - idle, total
