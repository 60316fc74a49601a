"""Where a job's datasets may come from: the workspace and the dataset roots an admin names
(``TRAINHUB_DATASET_ROOTS``), plus those the backend mounts itself (a cluster team's shared
volume and datasets).

A path outside them is refused before anything looks at it, with a sentence that is the same
whether or not something exists there: the server must not answer questions about its files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from trainhub.jobs.spec import field_error
from trainhub.jobs.specparts import Dataset


def within(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def check_dataset_paths(datasets: Sequence[Dataset], roots: Sequence[Path]) -> None:
    """Refuse, naming the field, a dataset path of the user's own outside ``roots`` (links
    resolved first), then one that does not exist."""
    for i, dataset in enumerate(datasets):
        if dataset.catalog or dataset.path is None:
            continue  # a dataset by name: its declaration placed it (trainhub.datasets.catalog)
        field = f"datasets.{i}.path"
        if not os.path.isabs(dataset.path):
            raise field_error(
                field, f"dataset {dataset.name}: give an absolute path (each rank starts elsewhere)"
            )
        real = Path(os.path.realpath(dataset.path))  # '..' and links cannot lead out of a root
        if not within(real, roots):
            raise field_error(
                field,
                f"dataset {dataset.name}: the path is outside the dataset roots, so it was not "
                f"looked at; a dataset lies in the workspace or below {roots_text(roots[1:])}",
            )
        if not real.exists():
            raise field_error(field, f"dataset {dataset.name}: no such path {dataset.path}")


def roots_text(roots: Sequence[Path]) -> str:
    if not roots:
        return "a root the admin names in TRAINHUB_DATASET_ROOTS (none is named)"
    return "one of " + ", ".join(str(r) for r in roots)
