"""The idle-GPU policy, pure: a session's idle stretch folded from its utilization readings,
when to warn and when to stop, and the sentences that say so (trainhub_spawner.idle applies
it to the hub's servers)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from enum import StrEnum
from fractions import Fraction


@dataclass(frozen=True)
class IdlePolicy:
    threshold_percent: float = 5.0
    warn_after_minutes: float = 30.0
    stop_after_minutes: float = 60.0

    def __post_init__(self) -> None:
        if not 0 <= self.threshold_percent <= 100:
            raise ValueError(
                f"threshold_percent: {self.threshold_percent} is not between 0 and 100"
            )
        if not 0 <= self.warn_after_minutes <= self.stop_after_minutes:
            raise ValueError(
                "warn_after_minutes must be between 0 and stop_after_minutes "
                f"({self.warn_after_minutes} > {self.stop_after_minutes})"
            )


@dataclass(frozen=True)
class IdleState:
    """What the service remembers per server: since when its GPUs have been under the
    threshold (None: busy or unknown), and when it was warned about this idle stretch."""

    low_since: float | None = None
    warned_at: float | None = None


class Action(StrEnum):
    KEEP = "keep"
    WARN = "warn"
    STOP = "stop"


def observe(
    state: IdleState, now: float, utilization: float | None, policy: IdlePolicy
) -> IdleState:
    """Fold one utilization reading (percent, averaged over the session's GPUs) into the state."""
    if utilization is None or utilization >= policy.threshold_percent:
        return IdleState()  # busy (or unknown): a new idle stretch must start over
    if state.low_since is None:
        return replace(state, low_since=now, warned_at=None)
    return state


def decide(state: IdleState, now: float, policy: IdlePolicy) -> Action:
    if state.low_since is None:
        return Action.KEEP
    idle_minutes = (now - state.low_since) / 60
    if idle_minutes >= policy.stop_after_minutes:
        return Action.STOP
    if idle_minutes >= policy.warn_after_minutes and state.warned_at is None:
        return Action.WARN
    return Action.KEEP


def gpu_amount(gpus: float) -> str:
    """ "1 GPU", "2 GPUs", or a share: "1/4 of a GPU"."""
    if gpus == int(gpus):
        return f"{int(gpus)} GPU{'' if gpus == 1 else 's'}"
    share = Fraction(gpus).limit_denominator(64)
    return f"{share.numerator}/{share.denominator} of a GPU"


def warning_sentence(
    user: str, gpus: float, state: IdleState, now: float, policy: IdlePolicy
) -> str:
    idle = 0.0 if state.low_since is None else (now - state.low_since) / 60
    left = max(policy.stop_after_minutes - idle, 0)
    return (
        f"{user}'s server has used less than {policy.threshold_percent:g}% "
        f"of its {gpu_amount(gpus)} "
        f"for {idle:.0f} minutes; it will be stopped in {left:.0f} minutes unless it gets busy"
    )


def stopped_sentence(gpus: float, now: float, policy: IdlePolicy) -> str:
    """Why a server was stopped, as the spawn form says it ("This server was ...")."""
    minutes = policy.stop_after_minutes
    minute_word = "minute" if minutes == 1 else "minutes"
    at = time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(now))
    return (
        f"stopped at {at}: its {gpu_amount(gpus)} stayed under {policy.threshold_percent:g}% "
        f"for {minutes:g} {minute_word}"
    )
