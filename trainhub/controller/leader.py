"""Leader election on a ``coordination.k8s.io`` Lease, as client-go's leaderelection does it:
the leader renews the Lease every ``retry`` seconds; a standby takes it over only once it has
seen the same holder and renew time for ``lease`` seconds of its own clock (no clock is
compared across machines); every change is a replace at the resourceVersion read, so of two
candidates one wins and the other gets a 409.

Fencing: the leader stops acting as soon as ``renew`` seconds (< ``lease``) pass without a
successful renewal, so a leader cut off from the API server stops before any standby can
start. The kubernetes client's own leaderelection module locks a ConfigMap only.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timing:
    lease: float = 15.0  # seconds a standby waits on a holder that stopped renewing
    renew: float = 10.0  # seconds the leader keeps acting without a successful renewal
    retry: float = 2.0  # seconds between tries (renewals, or a standby's looks)

    def __post_init__(self) -> None:
        if not 0 < self.retry < self.renew < self.lease:
            raise ValueError("leader election needs 0 < retry < renew < lease seconds")


def _micro_time(now: float) -> str:
    stamp = datetime.datetime.fromtimestamp(now, datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseElector:
    def __init__(
        self,
        api_client: Any,
        namespace: str,
        name: str,
        identity: str,
        timing: Timing = Timing(),
        clock: Callable[[], float] = time.monotonic,
    ):
        from kubernetes import client

        self.leases = client.CoordinationV1Api(api_client)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.timing, self.clock = timing, clock
        self._renewed: float | None = None  # when this candidate last held the Lease for sure
        self._observed: tuple[Any, ...] | None = None  # the holder record last seen
        self._observed_at = 0.0

    def leading(self) -> bool:
        """True while this candidate may act: it renewed within ``renew`` seconds."""
        renewed = self._renewed
        return renewed is not None and self.clock() - renewed < self.timing.renew

    def run(self, stop: threading.Event, on_change: Callable[[bool], None]) -> None:
        """Acquire and renew until ``stop``; ``on_change(leading)`` on every change of role.
        On stop a leader releases the Lease, so that a standby takes over at once."""
        was = False
        while not stop.is_set():
            started = self.clock()
            try:
                self._try()
            except Exception as error:  # the API server away: keep the last known role
                log.info("leader election: %s", error)
            now = self.leading()
            if now != was:
                log.info("%s %s leadership", self.identity, "acquired" if now else "lost")
                on_change(now)
                was = now
            stop.wait(max(0.0, self.timing.retry - (self.clock() - started)))
        if was:
            self.release()
            on_change(False)

    def release(self) -> None:
        from kubernetes.client import ApiException

        self._renewed = None
        try:
            lease = self._read()
            if lease is None or lease["spec"].get("holderIdentity") != self.identity:
                return
            lease["spec"].update(holderIdentity=None, leaseDurationSeconds=1)
            self.leases.replace_namespaced_lease(self.name, self.namespace, lease)
        except (ApiException, OSError) as error:
            log.info("leader election: the lease was not released: %s", error)

    # --- one try -----------------------------------------------------------------------------
    def _read(self) -> dict[str, Any] | None:
        from kubernetes.client import ApiException

        try:
            return self.leases.api_client.sanitize_for_serialization(
                self.leases.read_namespaced_lease(self.name, self.namespace)
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def _try(self) -> None:
        from kubernetes.client import ApiException

        tried_at, wall = self.clock(), time.time()
        lease = self._read()
        mine = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.timing.lease),
            "renewTime": _micro_time(wall),
        }
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": mine | {"acquireTime": _micro_time(wall), "leaseTransitions": 0},
            }
            try:
                self.leases.create_namespaced_lease(self.namespace, body)
            except ApiException as e:
                if e.status != 409:
                    raise
                return  # another candidate created it first
            self._renewed = tried_at
            return
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        if holder != self.identity:
            record = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
            if record != self._observed:
                self._observed, self._observed_at = record, tried_at
            duration = float(spec.get("leaseDurationSeconds") or self.timing.lease)
            if holder and tried_at - self._observed_at < duration:
                self._renewed = None
                return  # held, and renewed within its duration as far as we have seen
            mine |= {
                "acquireTime": _micro_time(wall),
                "leaseTransitions": int(spec.get("leaseTransitions") or 0) + 1,
            }
        lease["spec"] = spec | mine
        try:  # at the resourceVersion read: a concurrent change makes this a 409
            self.leases.replace_namespaced_lease(self.name, self.namespace, lease)
        except ApiException as e:
            if e.status != 409:
                raise
            return
        self._renewed = tried_at
