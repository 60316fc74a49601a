"""Inside a job: where the datasets it asked for by name are.

    import trainhub
    root = trainhub.datasets.path("imagenet")

Standard library only: every rank may import this. The launcher sets ``TRAINHUB_DATASETS``
(the names the job asked for) and ``TRAINHUB_DATASET_<NAME>`` (each one's path: the source
path on the local backend, ``/datasets/<name>`` on Kubernetes). What a dataset is and who may
read it is :mod:`trainhub.datasets.catalog`'s business, on the submitting side.
"""

from __future__ import annotations

import os
from pathlib import Path

NAMES_VARIABLE = "TRAINHUB_DATASETS"


class UnknownDataset(KeyError):
    """A dataset the job did not ask for; the message names those it did."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def variable(name: str) -> str:
    """``TRAINHUB_DATASET_<NAME>``: where a rank finds the dataset it asked for by name."""
    return f"TRAINHUB_DATASET_{name.upper().replace('-', '_')}"


def names() -> list[str]:
    """The datasets this job asked for, in the order it asked."""
    return [n for n in os.environ.get(NAMES_VARIABLE, "").split(",") if n]


def path(name: str) -> Path:
    """The path of dataset ``name`` as this rank sees it; read-only where the backend can make
    it so. A name the job did not ask for raises :class:`UnknownDataset` (a ``KeyError``)
    naming those it did."""
    value = os.environ.get(variable(name)) if name in names() else None
    if not value:
        asked = ", ".join(names()) or "none"
        raise UnknownDataset(
            f"dataset {name!r} is not one this job asked for (it asked for: {asked}); "
            "name it when submitting, e.g. --dataset NAME or datasets=[NAME]"
        )
    return Path(value)


__all__ = ["UnknownDataset", "names", "path", "variable"]
