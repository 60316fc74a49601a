"""The training scalars of a comparison: which value of each is best (its goal), the last
and best value of every scalar in each job with the job holding the best, and each job's
curve of each scalar on a time axis from its start."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from trainhub.experiments.comparison import Goal, Point, ScalarRow, Series
from trainhub.experiments.curves import Curve
from trainhub.experiments.runs import Run
from trainhub.jobs.spec import field_error

# Scalars where smaller is better; every other scalar counts larger as better. The same rule
# as labextension/src/jobsummary.ts, so the job view and the comparison name the same best.
SMALLER_IS_BETTER = re.compile(r"loss|err|perplexity|mse|mae|rmse|nll|wer|cer", re.IGNORECASE)


def scalar_goal(name: str, goals: Mapping[str, Goal] | None = None) -> Goal:
    """Whether the best value of scalar ``name`` is its smallest or its largest: ``goals``
    first (the caller's say), else by its name (:data:`SMALLER_IS_BETTER`)."""
    if goals and name in goals:
        return goals[name]
    return "min" if SMALLER_IS_BETTER.search(name) else "max"


def parse_goals(items: Sequence[str] | None) -> dict[str, Goal]:
    """``["accuracy:min", "reward:max"]`` -> ``{"accuracy": "min", "reward": "max"}``."""
    goals: dict[str, Goal] = {}
    for item in items or ():
        name, sep, goal = item.rpartition(":")
        if not sep or not name or goal not in ("min", "max"):
            raise field_error("goal", f"{item!r}: use NAME:min or NAME:max")
        goals[name] = goal  # type: ignore[assignment]
    return goals


def _start(run: Run) -> float:
    """Where a job's time axis starts: its start, else its first scalar."""
    if run.record.started_at is not None:
        return run.record.started_at
    firsts = [run.scalars.curve(n).times[:1] for n in run.scalars.names]
    return min((t for first in firsts for t in first), default=0.0)


def _point(curve: Curve, i: int, t0: float) -> Point:
    return Point(step=curve.steps[i], value=curve.values[i], time=round(curve.times[i] - t0, 3))


def scalar_rows(runs: Sequence[Run], goals: Mapping[str, Goal] | None) -> list[ScalarRow]:
    names = sorted({n for r in runs for n in r.scalars.names})
    starts = [_start(r) for r in runs]
    rows = []
    for name in names:
        goal = scalar_goal(name, goals)
        better = min if goal == "min" else max
        last: list[Point | None] = []
        best: list[Point | None] = []
        for run, t0 in zip(runs, starts, strict=True):
            curve = run.scalars.curve(name)
            if not curve.steps:
                last.append(None)
                best.append(None)
                continue
            last.append(_point(curve, -1, t0))
            # The first step that reached the best value (index finds the earliest).
            best.append(_point(curve, curve.values.index(better(curve.values)), t0))
        present = [(p.value, i) for i, p in enumerate(best) if p is not None]
        winner = better(present, key=lambda vi: vi[0])[1] if present else None
        rows.append(
            ScalarRow(
                name=name,
                goal=goal,
                last=last,
                best=best,
                best_job=runs[winner].record.id if winner is not None else None,
            )
        )
    return rows


def series_of(runs: Sequence[Run], most: int | None) -> list[Series]:
    out = []
    for run in runs:
        t0 = _start(run)
        for name in run.scalars.names:
            c = run.scalars.curve(name)
            chosen = run.scalars.thinned(name, most) if most else range(len(c.steps))
            points = [(c.steps[i], round(c.times[i] - t0, 3), c.values[i]) for i in chosen]
            out.append(Series(name=name, job_id=run.record.id, points=points, total=len(c.steps)))
    return out
