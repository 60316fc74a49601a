"""Comparing runs: 2 to 10 jobs side by side, built from their records and job directories.

Two halves. :func:`trainhub.experiments.runs.read_run` reads what a comparison needs from one
job directory, through :mod:`trainhub.jobs.confined` (a job may have swapped its files for
links or FIFOs): the lineage, the code that ran (the bundle's cells, or a script's file) and
the training scalars (:mod:`trainhub.experiments.curves`). :func:`compare` is pure: from those
runs it builds the :class:`~trainhub.experiments.comparison.Comparison` every front door
answers (``JobService.compare``, ``GET trainhub/api/compare``, ``trainhub compare``, the
JupyterLab compare view), from its parts: :mod:`~trainhub.experiments.compare_rows` (the
properties), :mod:`~trainhub.experiments.compare_code` (the code),
:mod:`~trainhub.experiments.compare_scalars` (the scalars and their curves).

Rows hold one value per job, in the order the jobs were asked for; a row ``differs`` when any
two values are not the same JSON. Code is compared cell by cell against the first job (the
baseline) with :mod:`difflib`. The injected parameters cell is left out of that diff: its
difference is the parameters' difference, shown in their own rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trainhub.experiments.compare_code import diff_code
from trainhub.experiments.compare_rows import (
    compared_job,
    dataset_texts,
    lineage_rows,
    outcome,
    package_rows,
    resources,
    rows_by_key,
)
from trainhub.experiments.compare_scalars import scalar_rows, series_of
from trainhub.experiments.comparison import Comparison, Goal
from trainhub.experiments.runs import Run
from trainhub.jobs.spec import field_error

MIN_JOBS, MAX_JOBS = 2, 10


def check_ids(ids: Sequence[str]) -> list[str]:
    """The ids to compare, each once in the order given; 2 to 10 of them."""
    unique = list(dict.fromkeys(i for i in ids if i))
    if not MIN_JOBS <= len(unique) <= MAX_JOBS:
        raise field_error(
            "ids", f"compare {MIN_JOBS} to {MAX_JOBS} different jobs; got {len(unique)}"
        )
    return unique


def compare(
    runs: Sequence[Run],
    *,
    goals: Mapping[str, Goal] | None = None,
    series: bool = True,
    points: int | None = None,
    now: float,
) -> Comparison:
    """The comparison of ``runs`` (2 to 10), in their order; the first is the code baseline.
    ``goals`` overrides :func:`~trainhub.experiments.compare_scalars.scalar_goal`'s rule per
    scalar; ``series`` adds each scalar's curve per job, downsampled to at most ``points``
    points each when given; ``now`` is the time a running job's elapsed time counts to."""
    if not MIN_JOBS <= len(runs) <= MAX_JOBS:
        raise field_error("ids", f"compare {MIN_JOBS} to {MAX_JOBS} jobs; got {len(runs)}")
    packages = package_rows(runs)
    return Comparison(
        jobs=[compared_job(r, now) for r in runs],
        parameters=rows_by_key([r.record.spec.parameters for r in runs]),
        lineage=lineage_rows(runs),
        packages=[p for p in packages if p.differs],
        packages_same=sum(not p.differs for p in packages),
        datasets=rows_by_key([dataset_texts(r.lineage) for r in runs]),
        resources=rows_by_key([resources(r.record, now) for r in runs]),
        outcome=rows_by_key([outcome(r.record) for r in runs]),
        code=diff_code(runs),
        scalars=scalar_rows(runs, goals),
        series=series_of(runs, points) if series else [],
    )
