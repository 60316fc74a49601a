"""Inside a job: where its products go (weights, evaluation results, configs).

    import trainhub
    (trainhub.outputs.path() / "eval.json").write_text(json.dumps(results))

Standard library only: every rank may import this. Every job has ``outputs/`` in its job
directory (on Kubernetes on the team's shared volume, the same path in every pod); the
launcher tells the ranks where in ``TRAINHUB_OUTPUT_DIR``. What is written there is kept
after the job ends, listed and downloaded from the job view's Outputs tab, the REST API and
``trainhub outputs <job>``, until the team's retention policy says otherwise
(:mod:`trainhub.outputs.retention`, applied by ``trainhub cleanup``).
"""

from __future__ import annotations

import os
from pathlib import Path

VARIABLE = "TRAINHUB_OUTPUT_DIR"
FOLDER = "outputs"  # below the job directory


def path() -> Path:
    """This job's outputs directory (made if a rank removed it). Outside a job there is none:
    a RuntimeError says so."""
    value = os.environ.get(VARIABLE)
    if not value:
        raise RuntimeError(
            f"{VARIABLE} is not set: trainhub.outputs.path() is the outputs directory of a job, "
            "known inside its ranks once it is submitted"
        )
    where = Path(value)
    where.mkdir(parents=True, exist_ok=True)
    return where


__all__ = ["FOLDER", "VARIABLE", "path"]
