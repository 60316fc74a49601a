"""What one worker's pod waits for, in trainhub's words and Kubernetes': the one shape in which
the scheduler's side (:mod:`~trainhub.backends.kubernetes.unschedulable`) and the kubelet's
(:mod:`~trainhub.backends.kubernetes.waits`) say it."""

from __future__ import annotations

from dataclasses import dataclass

from trainhub.jobs.states import FailureClass


@dataclass(frozen=True)
class Wait:
    """What one worker's pod waits for."""

    worker: int | None
    cause: str  # a short tag: taint, selector, insufficient, no-nodes, claim, image, ...
    sentence: str  # trainhub's words, naming the worker
    message: str  # Kubernetes' own
    heals: bool  # waiting may end it
    certain: bool = False  # it cannot heal, and no grace could change that
    failure_class: FailureClass = FailureClass.INFRASTRUCTURE
    since: float | None = None  # when the cause was first reported (epoch seconds)
    routine: bool = False  # nothing holds it up: the pod is on its way (said last)

    def text(self) -> str:
        """The one line a researcher reads: the sentence, then Kubernetes' message."""
        return f"{self.sentence} (Kubernetes: {self.message})" if self.message else self.sentence


def subject(worker: int | None) -> str:
    """Whom a sentence is about: "worker 2" (its pod, where the index is not known)."""
    return "its pod" if worker is None else f"worker {worker}"
