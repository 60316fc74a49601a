"""Which image a job or a session may run: the one rule, as pure functions.

A team's policy (``image_policy`` in ``teams.yaml``, :class:`trainhub.teams.ImagePolicy`)
allows the catalog images the team lists (``policy: catalog``, the default), or those and any
pinned image below ``allowed_prefixes`` (``policy: prefixes``). A catalog image whose scan
``failed`` is refused too. Anything else is refused with one sentence naming the image and
the policy, at submit (both backends, through :class:`trainhub.jobs.service.JobService`) and
at spawn (``trainhub_spawner.profiles``).

The embedded default reads the same keys from a local images file (``$TRAINHUB_HOME/
images.yaml`` or ``TRAINHUB_IMAGES_FILE``)::

    images:                          # catalog entries, the schema of images/catalog.yaml
      - {name: base, image: ghcr.io/trainhub/base:0.1.0}
    image_policy: {policy: prefixes, allowed_prefixes: [registry.example.org/me/]}

Locally the image is a label only: the ranks run in this machine's Python environment (what
lineage records as the job's ``ran_image``), so there the policy keeps submissions honest
rather than confining anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainhub.adminfiles import in_file, load_file, top_level, validated
from trainhub.errors import BackendUnavailable, NotAllowed
from trainhub.teams import CatalogError, Image, ImagePolicy, is_pinned
from trainhub.teams.loading import catalog_images


@dataclass(frozen=True)
class Allowed:
    """An image the policy allows: the reference a pod names, and why it is allowed."""

    reference: str
    entry: Image | None  # the catalog's entry; None for an image allowed by a prefix
    rule: str  # "catalog", "prefix ghcr.io/acme/" or "no policy"


def describe_policy(team: str | None, offered: Sequence[Image], policy: ImagePolicy) -> str:
    """The policy in words: 'team vision allows its catalog images only (pytorch)'."""
    who = f"team {team}" if team else "this installation"
    names = ", ".join(i.name for i in offered) or "none"
    if policy.policy == "catalog":
        return f"{who} allows its catalog images only ({names})"
    prefixes = ", ".join(policy.allowed_prefixes)
    return f"{who} allows its catalog images ({names}) and pinned images under {prefixes}"


def choose_image(
    wanted: str | None,
    *,
    team: str | None,
    offered: Sequence[Image],
    policy: ImagePolicy,
) -> Allowed:
    """The image ``wanted`` (a catalog name or a reference; None: the first catalog image) if
    the policy allows it, else :class:`NotAllowed` with a sentence naming image and policy."""
    if wanted is None:
        if not offered:
            raise NotAllowed(f"no image was given and {describe_policy(team, offered, policy)}")
        wanted = offered[0].name
    for image in offered:
        if wanted in (image.name, image.image):
            if image.scan.status == "failed":
                when = f" on {image.scan.at.isoformat()}" if image.scan.at else ""
                raise NotAllowed(
                    f"image {image.name} ({image.image}) failed its scan{when}; "
                    f"{describe_policy(team, offered, policy)}, none that failed a scan"
                )
            return Allowed(image.image, image, "catalog")
    if policy.policy == "prefixes":
        prefix = next((p for p in policy.allowed_prefixes if wanted.startswith(p)), None)
        if prefix is not None:
            if not is_pinned(wanted):
                raise NotAllowed(
                    f"image {wanted!r} is under the allowed prefix {prefix} but not pinned: "
                    "give a tag other than 'latest' or an @sha256: digest"
                )
            return Allowed(wanted, None, f"prefix {prefix}")
    raise NotAllowed(f"image {wanted!r} is not allowed: {describe_policy(team, offered, policy)}")


# --- the local images file ----------------------------------------------------------------------


class ImagesFileError(BackendUnavailable):
    """A refused local images file (the admin's to mend): ``file: field: sentence``."""


_refused = in_file(ImagesFileError)


@dataclass(frozen=True)
class LocalImages:
    images: list[Image]
    policy: ImagePolicy


def parse_images_file(data: Any, source: str) -> LocalImages:
    data = top_level(
        data,
        source,
        _refused,
        ("images", "image_policy"),
        "must be a mapping with images and image_policy",
    )
    if data is None:
        return LocalImages([], ImagePolicy())
    entries = data.get("images") or []
    if not isinstance(entries, list):
        raise ImagesFileError(f"{source}: images: must be a list of images")
    try:
        images = catalog_images(entries, source)  # the catalog's schema, read as the catalog is
    except CatalogError as e:
        raise ImagesFileError(str(e)) from None
    policy = validated(
        ImagePolicy, data.get("image_policy") or {}, _refused, source, "image_policy"
    )
    return LocalImages(images, policy)


def load_images_file(path: Path) -> LocalImages | None:
    """The local images file; None when there is none (then no image is refused)."""
    return load_file(path, parse_images_file, _refused, absent=None)


def local_image(wanted: str | None, images: LocalImages | None, *, team: str | None) -> Allowed:
    """The local backend's gate: no images file, no policy (the image is a label only)."""
    if images is None:
        return Allowed(wanted or "", None, "no policy")
    if wanted is None:
        return Allowed("", None, "none asked")  # the job runs in this machine's environment
    return choose_image(wanted, team=team, offered=images.images, policy=images.policy)
