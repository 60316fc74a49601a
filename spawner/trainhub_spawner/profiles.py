"""Team profiles: what a JupyterHub user may start, and the check of what they asked for.

Pure functions over :class:`trainhub.teams.Teams`. A user sees one profile per (team, pool)
of the teams their JupyterHub groups belong to; each profile offers the team's curated
images and the session GPU sizes that fit on one node of the pool. ``resolve_session`` is
the single gate every spawn request passes through (form or REST API): anything not
offered to the user is refused with a sentence naming what was asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from trainhub.backends.kubernetes.names import GPU
from trainhub.errors import NotAllowed
from trainhub.imagepolicy import choose_image
from trainhub.jobs.shares import parse_share, share_text, share_words
from trainhub.teams import Image, Pool, Team, Teams

OPTION_KEYS = ("profile", "image", "gpus")


class Refused(ValueError):
    """A spawn request the user's teams do not allow; ``str()`` is shown on the spawn page."""


@dataclass(frozen=True)
class Session:
    """A resolved, allowed choice: everything the pod is built from."""

    team: Team
    pool: Pool
    image: Image
    gpus: int
    share: Fraction | None = None  # a share of one GPU of a pool that shares its GPUs

    @property
    def profile(self) -> str:
        return profile_slug(self.team, self.pool)

    @property
    def gpu_requests(self) -> dict[str, str]:
        """The pod's GPU requests (= limits): whole GPUs, or one unit of the pool's share."""
        if self.share is not None and self.pool.shared_resource:
            return {self.pool.shared_resource: "1"}
        return {GPU: str(self.gpus)} if self.gpus else {}


def profile_slug(team: Team, pool: Pool) -> str:
    # Team and pool names are DNS labels, which hold no '.', so the slug is unambiguous.
    return f"{team.name}.{pool.name}"


def session_sizes(team: Team, pool: Pool) -> list[int | str]:
    """The team's session GPU sizes that fit on one node of the pool: on a pool that shares
    its GPUs N ways only the share 1/N (whole GPUs and CPU-only sessions go elsewhere)."""
    if pool.sharing is not None:
        return [n for n in team.session_gpus if n == share_text(pool.sharing.share)]
    return [n for n in team.session_gpus if isinstance(n, int) and n <= pool.gpus_per_node]


def _gpus_label(n: int | str, pool: Pool) -> str:
    if isinstance(n, str) and pool.sharing is not None:
        return share_words(parse_share(n), pool.sharing.strategy)
    return "no GPU" if n == 0 else f"{n} GPU" if n == 1 else f"{n} GPUs"


def _pool_title(pool: Pool) -> str:
    return pool.description or (pool.gpu_product or pool.name)


def profile_list(teams: Teams, groups: list[str]) -> list[dict[str, Any]]:
    """KubeSpawner ``profile_list`` entries for a user in these JupyterHub groups.

    Only data for the form: the pod is built from :func:`resolve_session`, never from a
    ``kubespawner_override`` carried in the profile."""
    profiles: list[dict[str, Any]] = []
    for team in teams.teams_of(groups):
        for pool_name in team.quota:
            pool = teams.pool(pool_name)
            sizes = session_sizes(team, pool)
            if not sizes:
                continue
            images = [teams.image(name) for name in team.images]
            profiles.append(
                {
                    "display_name": f"{team.name} · {pool.name}",
                    "slug": profile_slug(team, pool),
                    "description": f"Team {team.name} on {_pool_title(pool)}; "
                    f"namespace {team.namespace}",
                    "default": not profiles,
                    "profile_options": {
                        "image": {
                            "display_name": "Image",
                            "choices": {
                                i.name: {"display_name": _image_label(i), "default": k == 0}
                                for k, i in enumerate(images)
                            },
                        },
                        "gpus": {
                            "display_name": "GPUs",
                            "choices": {
                                str(n): {"display_name": _gpus_label(n, pool), "default": k == 0}
                                for k, n in enumerate(sizes)
                            },
                        },
                    },
                }
            )
    return profiles


def _image_label(image: Image) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in image.frameworks.items())
    return f"{image.name} ({versions})" if versions else image.name


def _known(values: list[str]) -> str:
    return ", ".join(values) or "none"


def resolve_session(teams: Teams, groups: list[str], user_options: Any) -> Session:
    """The session ``user_options`` ask for, if this user's teams allow it; else :class:`Refused`.

    Empty options mean the first profile with its first image and smallest GPU size.
    An image may be named by its curated name or by its exact reference."""
    if user_options is None:
        user_options = {}
    if not isinstance(user_options, dict):
        raise Refused("spawn options must be a JSON object with profile, image and gpus")
    unknown = sorted(str(k) for k in user_options if k not in OPTION_KEYS)
    if unknown:
        raise Refused(
            f"option {unknown[0]!r} cannot be chosen; a session is chosen by "
            f"{', '.join(OPTION_KEYS)}"
        )
    mine = teams.teams_of(groups)
    if not mine:
        raise Refused(
            "you are in no team: ask an admin to add one of your JupyterHub groups "
            f"({_known(sorted(groups))}) to a team"
        )

    offered = {p["slug"]: p for p in profile_list(teams, groups)}
    if not offered:
        raise Refused("your teams offer no session profile")
    slug = user_options.get("profile") or next(iter(offered))
    if not isinstance(slug, str) or slug not in offered:
        raise Refused(f"profile {slug!r} is not offered to you (yours: {_known(list(offered))})")
    team_name, pool_name = slug.split(".", 1)
    team, pool = teams.team(team_name), teams.pool(pool_name)

    wanted_image = user_options.get("image") or team.images[0]
    image = _allowed_image(teams, team, wanted_image)

    sizes = session_sizes(team, pool)
    raw_gpus = user_options.get("gpus", sizes[0])
    gpus = session_size(raw_gpus)
    if gpus is None or gpus not in sizes:
        raise Refused(
            f"{raw_gpus!r} GPUs is not a session size of team {team.name} in pool "
            f"{pool.name} ({', '.join(map(str, sizes))})"
        )
    if isinstance(gpus, str):
        return Session(team=team, pool=pool, image=image, gpus=0, share=parse_share(gpus))
    return Session(team=team, pool=pool, image=image, gpus=gpus)


def _allowed_image(teams: Teams, team: Team, wanted: Any) -> Image:
    """The team's image policy decides (:mod:`trainhub.imagepolicy`): a catalog image, or a
    pinned reference under one of its allowed prefixes (then an entry of its own, ``custom``)."""
    if not isinstance(wanted, str):
        raise Refused(f"image {wanted!r} must be a catalog name or an image reference")
    offered = [teams.image(name) for name in team.images]
    try:
        allowed = choose_image(wanted, team=team.name, offered=offered, policy=team.image_policy)
    except NotAllowed as e:
        raise Refused(str(e)) from None
    return allowed.entry or Image(name="custom", image=allowed.reference)


def session_size(value: Any) -> int | str | None:
    """A number of GPUs, or a share's text ("1/4"); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    try:
        return share_text(parse_share(value))
    except ValueError:
        return None


def options_from_formdata(formdata: dict[str, list[str]]) -> dict[str, str]:
    """The spawn form's fields -> ``user_options`` (profile, and that profile's image and gpus).

    Mirrors KubeSpawner's field names (``profile-option-<slug>--<option>``) and keeps nothing
    else, so a crafted form cannot smuggle extra options in."""
    slug = (formdata.get("profile") or [""])[0]
    options: dict[str, str] = {}
    if not slug:
        return options
    options["profile"] = slug
    prefix = f"profile-option-{slug}--"
    for key in ("image", "gpus"):
        values = formdata.get(prefix + key)
        if values:
            options[key] = values[0]
    return options
