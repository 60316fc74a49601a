"""Early-stopping rules of a sweep, as pure decisions on learning curves.

A curve is a trial's ``(step, value)`` points of the chosen metric, in any order. Each rule
looks at one candidate (a running trial) against every other trial's curve (running or
ended) and answers the sentence saying why it stops, or None to let it go on.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from trainhub.experiments.sweep import EarlyStop

Curve = Sequence[tuple[int, float]]


def best_until(curve: Curve, step: int, mode: str) -> float | None:
    """The best value of ``curve`` at steps up to ``step`` (None when it has none)."""
    values = [v for s, v in curve if s <= step]
    if not values:
        return None
    return min(values) if mode == "min" else max(values)


def last_step(curve: Curve) -> int | None:
    return max((s for s, _ in curve), default=None)


def _worse(a: float, b: float, mode: str) -> bool:
    return a > b if mode == "min" else a < b


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def median_stop(candidate: Curve, others: Sequence[Curve], rule: EarlyStop) -> str | None:
    """Median stopping: the candidate's best so far, at its latest step ``s``, is worse than
    the median of the best values up to ``s`` of the other trials that reached ``s``."""
    step = last_step(candidate)
    if step is None or step < rule.min_steps:
        return None
    mine = best_until(candidate, step, rule.mode)
    assert mine is not None
    peers = [
        b
        for c in others
        if (last_step(c) or -1) >= step and (b := best_until(c, step, rule.mode)) is not None
    ]
    if len(peers) < rule.min_trials:
        return None
    median = statistics.median(peers)
    if not _worse(mine, median, rule.mode):
        return None
    return (
        f"{rule.metric} {_fmt(mine)} (best by step {step}) is worse than the median "
        f"{_fmt(median)} of {len(peers)} other trial(s) at that step"
    )


def rungs(rule: EarlyStop, up_to: int) -> list[int]:
    """The steps successive halving judges at: min_steps, min_steps * eta, ... up to ``up_to``."""
    out, step = [], rule.min_steps
    while step <= up_to:
        out.append(step)
        step *= rule.eta
    return out


def halving_stop(candidate: Curve, others: Sequence[Curve], rule: EarlyStop) -> str | None:
    """Successive halving (asynchronous): at the highest rung the candidate reached, it goes on
    only among the best ``1/eta`` of every trial that reached that rung (``eta`` of them at
    least, so that early trials are not judged alone)."""
    step = last_step(candidate)
    if step is None:
        return None
    reached = rungs(rule, step)
    if not reached:
        return None
    rung = reached[-1]
    mine = best_until(candidate, rung, rule.mode)
    assert mine is not None
    values = [
        b
        for c in others
        if (last_step(c) or -1) >= rung and (b := best_until(c, rung, rule.mode)) is not None
    ]
    values.append(mine)
    if len(values) < rule.eta:
        return None
    keep = max(1, len(values) // rule.eta)
    ranked = sorted(values, reverse=rule.mode == "max")
    cutoff = ranked[keep - 1]
    if not _worse(mine, cutoff, rule.mode):
        return None
    return (
        f"{rule.metric} {_fmt(mine)} at step {rung} is not among the best {keep} of "
        f"{len(values)} trial(s) there (successive halving, 1 in {rule.eta} goes on)"
    )


RULES = {"median": median_stop, "halving": halving_stop}


def decide(rule: EarlyStop, running: Mapping[str, Curve], ended: Sequence[Curve]) -> dict[str, str]:
    """``{trial key: why it stops}`` for the running trials the rule stops this time."""
    judge = RULES[rule.rule]
    stops: dict[str, str] = {}
    for key, curve in running.items():
        others = [*ended, *(c for k, c in running.items() if k != key)]
        reason = judge(curve, others, rule)
        if reason is not None:
            stops[key] = reason
    return stops
