"""The teams file's rules across sections: unique names, quotas and images that name known
pools and images, datasets below the shared volume and shared with known teams, session sizes
that fit a node, and volumes the controller can mount side by side. Each mistake is a
``(path, sentence)``; the file's model raises them together (:class:`ReferenceErrors`).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainhub.teams.file import Teams
    from trainhub.teams.team import Team, TeamDataset


class ReferenceErrors(ValueError):
    def __init__(self, errors: list[tuple[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{p}: {m}" for p, m in errors))


def reference_errors(teams: Teams) -> list[tuple[str, str]]:
    """Every mistake across sections, each with the path of the field it is about."""
    errors: list[tuple[str, str]] = []
    errors += _duplicates("pools", [p.name for p in teams.pools], "name")
    errors += _duplicates("images", [i.name for i in teams.images], "name")
    errors += _duplicates("teams", [t.name for t in teams.teams], "name")
    errors += _duplicates("teams", [t.namespace for t in teams.teams], "namespace")
    pools = {p.name for p in teams.pools}
    images = {i.name for i in teams.images}
    for i, team in enumerate(teams.teams):
        for pool in team.quota:
            if pool not in pools:
                errors.append(
                    (
                        f"teams[{i}].quota.{pool}",
                        f"unknown pool {pool!r} (known: {known_names(pools)})",
                    )
                )
        for j, image in enumerate(team.images):
            if image not in images:
                errors.append(
                    (
                        f"teams[{i}].images[{j}]",
                        f"unknown image {image!r} (known: {known_names(images)})",
                    )
                )
        mount = PurePosixPath(team.shared_volume.mount_path)
        for name, ds in team.datasets.items():
            if ds.path is not None and not PurePosixPath(ds.path).is_relative_to(mount):
                errors.append(
                    (
                        f"teams[{i}].datasets.{name}.path",
                        f"{ds.path!r} is not below the shared volume's mount path {str(mount)!r}",
                    )
                )
            errors += _dataset_readers(teams, i, team, name, ds)
        # Whole GPUs come from pools that do not share theirs; shares from pools that do.
        whole = [p for p in teams.pools if p.name in team.quota and p.sharing is None]
        biggest = max((p.gpus_per_node for p in whole), default=0)
        too_big = [n for n in team.session_gpus if isinstance(n, int) and n > biggest]
        if too_big:
            errors.append(
                (
                    f"teams[{i}].session_gpus",
                    f"{too_big[0]} GPUs do not fit on one node of the team's pools "
                    f"(at most {biggest})",
                )
            )
        errors += _shares_offered(teams, i, team)
        if teams.controller and team.shared_volume.size:
            errors.append(
                (
                    f"teams[{i}].shared_volume.size",
                    "a claim trainhub makes gets a volume of its own, which the controller's "
                    "claim cannot share: with a controller, bind both claims to one "
                    "PersistentVolume yourself and leave size out",
                )
            )
    errors += _shared_twice(teams)
    errors += _sharing_pools(teams)
    if teams.controller is not None:
        errors += _mounts_apart(teams)
    return errors


def _dataset_readers(
    teams: Teams, i: int, team: Team, name: str, ds: TeamDataset
) -> list[tuple[str, str]]:
    """A dataset shared with other teams: known teams, a claim (another team's pods do not
    mount this team's shared volume), and no name a reader already has."""
    errors: list[tuple[str, str]] = []
    where = f"teams[{i}].datasets.{name}.teams"
    known = {t.name for t in teams.teams}
    for reader in ds.teams:
        if reader not in known:
            errors.append((where, f"unknown team {reader!r} (known: {known_names(known)})"))
        elif reader != team.name and name in teams.team(reader).datasets:
            errors.append((where, f"team {reader} already has a dataset named {name!r}"))
    if ds.path is not None and set(ds.teams) - {team.name}:
        errors.append(
            (
                where,
                "a path dataset lies on this team's shared volume, which other teams' pods do "
                "not mount; share it through a claim",
            )
        )
    return errors


def _shares_offered(teams: Teams, i: int, team: Team) -> list[tuple[str, str]]:
    """A session share 1/N needs a pool of the team that shares its GPUs N ways."""
    ways = {p.sharing.replicas for p in teams.pools if p.name in team.quota and p.sharing}
    for share in team.session_shares:
        if share.denominator not in ways:
            offered = ", ".join(f"1/{n}" for n in sorted(ways)) or "none"
            return [
                (
                    f"teams[{i}].session_gpus",
                    f"no pool of the team shares its GPUs {share.denominator} ways, so "
                    f"{share} cannot be offered (shares of its pools: {offered})",
                )
            ]
    return []


def _sharing_pools(teams: Teams) -> list[tuple[str, str]]:
    """A shared pool is tainted (ordinary GPU jobs must never land there), and one shared
    resource means one size of share (quota counts its units as 1/N GPU)."""
    errors: list[tuple[str, str]] = []
    replicas: dict[str, tuple[int, str]] = {}
    for i, pool in enumerate(teams.pools):
        if pool.sharing is None:
            continue
        if problem := pool.sharing.profile_error():
            errors.append((f"pools[{i}].sharing.profile", problem))
        if not pool.tolerations:
            errors.append(
                (
                    f"pools[{i}].tolerations",
                    "a pool that shares its GPUs needs its nodes tainted, so that jobs asking "
                    "for whole GPUs stay off them: list the taint its pods tolerate",
                )
            )
        first = replicas.setdefault(pool.sharing.resource, (pool.sharing.replicas, pool.name))
        if first[0] != pool.sharing.replicas:
            errors.append(
                (
                    f"pools[{i}].sharing.replicas",
                    f"pool {first[1]} already offers {pool.sharing.resource} as 1/{first[0]} of "
                    "a GPU; one resource counts as one size of share",
                )
            )
    return errors


def _shared_twice(teams: Teams) -> list[tuple[str, str]]:
    """Two teams sharing datasets of one name with the same reader: which would it mean?"""
    errors: list[tuple[str, str]] = []
    first: dict[tuple[str, str], str] = {}
    for i, owner in enumerate(teams.teams):
        for name, ds in owner.datasets.items():
            for reader in ds.teams:
                if reader == owner.name:
                    continue
                earlier = first.setdefault((reader, name), owner.name)
                if earlier != owner.name:
                    errors.append(
                        (
                            f"teams[{i}].datasets.{name}.teams",
                            f"team {earlier} already shares a dataset named {name!r} with "
                            f"team {reader}",
                        )
                    )
    return errors


def _mounts_apart(teams: Teams) -> list[tuple[str, str]]:
    """The controller mounts every team's volume at the team's own mount path: none may lie
    inside another's."""
    errors = []
    mounts = [PurePosixPath(t.shared_volume.mount_path) for t in teams.teams]
    for i, mine in enumerate(mounts):
        for j, other in enumerate(mounts[:i]):
            if mine.is_relative_to(other) or other.is_relative_to(mine):
                errors.append(
                    (
                        f"teams[{i}].shared_volume.mount_path",
                        f"{str(mine)!r} overlaps teams[{j}]'s {str(other)!r}: the controller "
                        "mounts every team's volume at its own path",
                    )
                )
    return errors


def known_names(names: Any) -> str:
    return ", ".join(sorted(names)) or "none"


def _duplicates(where: str, names: list[str], field: str) -> list[tuple[str, str]]:
    seen: dict[str, int] = {}
    errors = []
    for i, name in enumerate(names):
        if name in seen:
            errors.append(
                (f"{where}[{i}].{field}", f"{name!r} is already used by {where}[{seen[name]}]")
            )
        seen.setdefault(name, i)
    return errors
