"""The admin's description of teams, pools and images (``hub_config/teams.yaml``).

One file drives the JupyterHub profiles, the Kubernetes namespaces and quotas, and the Kueue
queues (see :mod:`trainhub.backends.kubernetes.render`). Every mistake is reported with the
path of the offending field, e.g. ``teams[1].quota.a100.gpus: must be >= 0``.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from trainhub.alerts.channels import TeamAlerts
from trainhub.datasets.catalog import DatasetEntry, check_names, mount_path
from trainhub.jobs.quantities import parse_cpu, parse_quantity
from trainhub.outputs.retention import Retention

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# An image must say which build it means: a tag other than "latest", or a digest.
_PINNED_IMAGE = re.compile(r"^[^\s@]+(:(?!latest$)[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
PRIORITY_NAMES = ("low", "normal", "high")


def is_pinned(reference: str) -> bool:
    """A tag other than 'latest', or a digest: the reference says which build it means."""
    return bool(_PINNED_IMAGE.match(reference))


class TeamsError(ValueError):
    """A refused teams file: one ``path: sentence`` per mistake."""

    def __init__(self, errors: list[tuple[str, str]], source: str | None = None):
        self.errors = errors
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(f"{p}: {m}" for p, m in errors))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def _quantity(value: str | int | float, parse: Any = parse_quantity) -> str:
    """Kubernetes quantities stay strings (as the API returns them); checked here once."""
    text = str(value)
    try:
        parse(text)
    except ValueError as e:
        raise ValueError(str(e)) from None
    return text


def _quantities(info: Any, value: Any) -> str:
    """A CPU field in cores or millicores (500m), a memory field in bytes with its unit."""
    return _quantity(value, parse_cpu if info.field_name == "cpu" else parse_quantity)


class Toleration(_Model):
    key: str
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    def manifest(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Pool(_Model):
    """A set of alike GPU nodes, chosen by node labels (a Kueue ResourceFlavor)."""

    name: str = Field(pattern=DNS_LABEL, max_length=63)
    node_labels: dict[str, str] = Field(min_length=1)
    tolerations: list[Toleration] = Field(default_factory=list)
    gpu_product: str | None = Field(None, description="e.g. NVIDIA-A100-SXM4-80GB")
    gpus_per_node: int = Field(ge=0, le=16)
    gpu_only: bool = Field(
        False, description="Only jobs that ask for GPUs run here; a CPU-only job is refused"
    )
    description: str = ""

    @field_validator("node_labels")
    @classmethod
    def _label_keys(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if not _LABEL_KEY.match(key):
                raise ValueError(f"{key!r} is not a Kubernetes label key")
        return v


class Scan(_Model):
    """The image's latest vulnerability scan, as the admin's scanner reported it."""

    status: Literal["passed", "failed", "unscanned"] = "unscanned"
    at: datetime.date | None = Field(None, description="When it was scanned (YYYY-MM-DD)")


class Image(_Model):
    """A curated image; researchers pick it by name."""

    name: str = Field(pattern=DNS_LABEL, max_length=63)
    image: str = Field(description="Reference pinned by tag or by digest")
    description: str = ""
    frameworks: dict[str, str] = Field(
        default_factory=dict, description="e.g. torch: '2.5', cuda: '12.4'"
    )
    owner: str = Field("", description="Who answers for the image, e.g. a person or a list")
    version: str = Field("", description="The image's own version; empty: the reference's tag")
    dockerfile_sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="sha256 of the Dockerfile it is built from (images/build.py --pin-dockerfiles)",
    )
    scan: Scan = Field(default_factory=Scan)

    @field_validator("image")
    @classmethod
    def _pinned(cls, v: str) -> str:
        if not _PINNED_IMAGE.match(v):
            raise ValueError(
                f"{v!r} is not pinned: give a tag other than 'latest' or an @sha256: digest"
            )
        return v


class Limits(_Model):
    """Per-resource caps; a resource left out has no cap."""

    gpus: int | None = Field(None, ge=0)
    cpu: str | None = None
    memory: str | None = None

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _quantities(cls, v: Any, info: ValidationInfo) -> str | None:
        return None if v is None else _quantities(info, v)


class PoolQuota(_Model):
    gpus: int = Field(ge=0)
    cpu: str
    memory: str
    borrowing_limit: Limits | None = Field(
        None, description="How much more this team may borrow; none: unbounded"
    )
    lending_limit: Limits | None = Field(
        None, description="How much of its quota others may borrow; none: all"
    )

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _quantities(cls, v: Any, info: ValidationInfo) -> str:
        return _quantities(info, v)


class Preemption(_Model):
    """Kueue's ClusterQueue preemption policy, in its own words."""

    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = (
        "LowerPriority"
    )
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "Never"


class SharedVolume(_Model):
    """The team's PersistentVolumeClaim holding job directories; mounted at the same path
    everywhere."""

    claim: str = Field(pattern=DNS_LABEL, max_length=253)
    mount_path: str
    controller_claim: str | None = Field(
        None,
        pattern=DNS_LABEL,
        max_length=253,
        description="The claim in the controller's namespace bound to the same storage "
        "(default: <team>-<claim>)",
    )
    # With a size, the claim is one of the rendered objects (admin render/apply, the chart): a
    # ReadWriteMany claim of that size, of storage_class or the cluster's default class.
    # Without, the administrator makes the claim (an existing volume, a static PV).
    size: str | None = None
    storage_class: str | None = Field(None, pattern=DNS_LABEL, max_length=253)

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> str | None:
        return None if v is None else _quantity(v)

    @field_validator("mount_path")
    @classmethod
    def _absolute(cls, v: str) -> str:
        p = PurePosixPath(v)
        if not p.is_absolute() or ".." in p.parts or p == PurePosixPath("/"):
            raise ValueError(f"{v!r} must be an absolute path below /, without '..'")
        return str(p)


class ImagePolicy(_Model):
    """Which images a team's jobs and sessions may run (:mod:`trainhub.imagepolicy`):
    the catalog images the team lists, or also any pinned image below ``allowed_prefixes``."""

    policy: Literal["catalog", "prefixes"] = "catalog"
    allowed_prefixes: list[str] = Field(
        default_factory=list, description="e.g. ghcr.io/vision-lab/ (with policy: prefixes)"
    )

    @field_validator("allowed_prefixes")
    @classmethod
    def _prefixes(cls, v: list[str]) -> list[str]:
        for prefix in v:
            if not prefix or any(c.isspace() for c in prefix) or "@" in prefix:
                raise ValueError(f"{prefix!r} is not an image prefix such as ghcr.io/acme/")
            if not prefix.endswith("/"):
                # Without it "ghcr.io/acme" would also allow ghcr.io/acme-other/...
                raise ValueError(f"{prefix!r} must end with '/', e.g. {prefix}/")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> ImagePolicy:
        if self.policy == "prefixes" and not self.allowed_prefixes:
            raise ValueError("policy 'prefixes' needs allowed_prefixes")
        if self.policy == "catalog" and self.allowed_prefixes:
            raise ValueError("allowed_prefixes go with policy 'prefixes', not 'catalog'")
        return self


# A team's dataset has the one schema of a declared dataset (trainhub.datasets.catalog).
TeamDataset = DatasetEntry


class Team(_Model):
    name: str = Field(pattern=DNS_LABEL, max_length=63)
    groups: list[str] = Field(
        min_length=1, description="JupyterHub groups whose members belong to the team"
    )
    namespace: str = Field(max_length=63)
    quota: dict[str, PoolQuota] = Field(min_length=1, description="Nominal quota per pool")
    cohort: str | None = Field(None, pattern=DNS_LABEL, max_length=63)
    preemption: Preemption = Field(default_factory=Preemption)
    images: list[str] = Field(
        min_length=1, description="Names of the curated images the team may use"
    )
    image_policy: ImagePolicy = Field(default_factory=ImagePolicy)
    session_gpus: list[int] = Field(
        default_factory=lambda: [0], description="GPU sizes offered for sessions"
    )
    shared_volume: SharedVolume
    datasets: dict[str, TeamDataset] = Field(default_factory=dict)
    local_queue: str = Field("jobs", pattern=DNS_LABEL, max_length=63)
    alerts: TeamAlerts | None = Field(
        None, description="Where the team's alerts go (trainhub/alerts): webhooks, e-mail"
    )
    retention: Retention | None = Field(
        None, description="How long the team's job outputs are kept (trainhub cleanup)"
    )
    wait_grace_minutes: int = Field(
        10,
        ge=0,
        le=24 * 60,
        description="How long a job's pod may wait on a cause that cannot heal by waiting (an "
        "image not found, an untolerated taint) before the job ends with that cause",
    )

    @field_validator("namespace")
    @classmethod
    def _dns_label(cls, v: str) -> str:
        if not re.match(DNS_LABEL, v):
            raise ValueError(f"{v!r} is not a DNS label (lower-case letters, digits and '-')")
        if v.startswith("kube-") or v in {"default", "kueue-system"}:
            raise ValueError(f"{v!r} is reserved for the cluster itself")
        return v

    @field_validator("session_gpus")
    @classmethod
    def _sizes(cls, v: list[int]) -> list[int]:
        if any(n < 0 or n > 16 for n in v):
            raise ValueError("sizes must be between 0 and 16")
        return sorted(set(v))

    @field_validator("datasets")
    @classmethod
    def _dataset_names(cls, v: dict[str, TeamDataset]) -> dict[str, TeamDataset]:
        check_names(v)
        return v

    @property
    def cluster_queue(self) -> str:
        return self.name

    def dataset_mount(self, name: str) -> str:
        return mount_path(name)


class ControllerResources(_Model):
    cpu: str = "250m"
    memory: str = "512Mi"
    memory_limit: str = "1Gi"


class Controller(_Model):
    """trainhub's control plane on the cluster (trainhub.controller): with this section, it
    keeps every job's promises (states, verdicts, retries, sweeps, alerts, usage) and sessions
    and the CLI only submit and read. It mounts every team's volume at the team's own
    ``mount_path`` through a claim of its own namespace (``shared_volume.controller_claim``)."""

    namespace: str = Field("trainhub-system", pattern=DNS_LABEL, max_length=63)
    image: str = Field(
        "trainhub-controller", description="A catalog image's name, or a pinned reference"
    )
    replicas: int = Field(2, ge=1, le=5, description="Candidates for the lease; one acts")
    resources: ControllerResources = Field(default_factory=ControllerResources)
    metrics_port: int = Field(8080, ge=1024, le=65535)


class Teams(_Model):
    pools: list[Pool] = Field(min_length=1)
    images: list[Image] = Field(default_factory=list)
    image_catalog: str | None = Field(
        None, description="YAML file with more images (path relative to this file)"
    )
    priorities: dict[Literal["low", "normal", "high"], int] = Field(
        default_factory=lambda: {"low": 100, "normal": 1000, "high": 10000}  # type: ignore[arg-type]
    )
    teams: list[Team] = Field(min_length=1)
    controller: Controller | None = Field(
        None, description="trainhub's controller on the cluster; none: sessions reconcile"
    )

    @field_validator("priorities")
    @classmethod
    def _ordered(cls, v: dict[str, int]) -> dict[str, int]:
        missing = [p for p in PRIORITY_NAMES if p not in v]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        values = [v[p] for p in PRIORITY_NAMES]
        if values != sorted(set(values)):
            raise ValueError("values must increase strictly from low to normal to high")
        return v

    @model_validator(mode="after")
    def _references(self) -> Teams:
        errors: list[tuple[str, str]] = []
        errors += _duplicates("pools", [p.name for p in self.pools], "name")
        errors += _duplicates("images", [i.name for i in self.images], "name")
        errors += _duplicates("teams", [t.name for t in self.teams], "name")
        errors += _duplicates("teams", [t.namespace for t in self.teams], "namespace")
        pools = {p.name for p in self.pools}
        images = {i.name for i in self.images}
        for i, team in enumerate(self.teams):
            for pool in team.quota:
                if pool not in pools:
                    errors.append(
                        (
                            f"teams[{i}].quota.{pool}",
                            f"unknown pool {pool!r} (known: {_known(pools)})",
                        )
                    )
            for j, image in enumerate(team.images):
                if image not in images:
                    errors.append(
                        (
                            f"teams[{i}].images[{j}]",
                            f"unknown image {image!r} (known: {_known(images)})",
                        )
                    )
            mount = PurePosixPath(team.shared_volume.mount_path)
            for name, ds in team.datasets.items():
                if ds.path is not None and not PurePosixPath(ds.path).is_relative_to(mount):
                    errors.append(
                        (
                            f"teams[{i}].datasets.{name}.path",
                            f"{ds.path!r} is not below the shared volume's mount path "
                            f"{str(mount)!r}",
                        )
                    )
                errors += _dataset_readers(self, i, team, name, ds)
            biggest = max((p.gpus_per_node for p in self.pools if p.name in team.quota), default=0)
            too_big = [n for n in team.session_gpus if n > biggest]
            if too_big:
                errors.append(
                    (
                        f"teams[{i}].session_gpus",
                        f"{too_big[0]} GPUs do not fit on one node of the team's pools "
                        f"(at most {biggest})",
                    )
                )
            if self.controller and team.shared_volume.size:
                errors.append(
                    (
                        f"teams[{i}].shared_volume.size",
                        "a claim trainhub makes gets a volume of its own, which the controller's "
                        "claim cannot share: with a controller, bind both claims to one "
                        "PersistentVolume yourself and leave size out",
                    )
                )
        errors += _shared_twice(self)
        if self.controller is not None:
            errors += _mounts_apart(self)
        if errors:
            raise _ReferenceErrors(errors)
        return self

    # --- lookups ---------------------------------------------------------------------------------
    def team(self, name: str) -> Team:
        for team in self.teams:
            if team.name == name:
                return team
        raise KeyError(f"no team {name!r} (known: {_known(t.name for t in self.teams)})")

    def pool(self, name: str) -> Pool:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(f"no pool {name!r} (known: {_known(p.name for p in self.pools)})")

    def image(self, name: str) -> Image:
        for image in self.images:
            if image.name == name:
                return image
        raise KeyError(f"no image {name!r} (known: {_known(i.name for i in self.images)})")

    def readable_datasets(self, team: str) -> dict[str, tuple[Team, TeamDataset]]:
        """The datasets team ``team`` may read: its own, and those other teams share with it
        (``teams: [...]``), each with the team that declared it."""
        found: dict[str, tuple[Team, TeamDataset]] = {}
        for owner in self.teams:
            for name, ds in owner.datasets.items():
                if owner.name == team or team in ds.teams:
                    found.setdefault(name, (owner, ds))
        return dict(sorted(found.items()))

    def teams_of(self, groups: list[str]) -> list[Team]:
        """The teams a JupyterHub user with these groups belongs to."""
        return [t for t in self.teams if set(t.groups) & set(groups)]


class _ReferenceErrors(ValueError):
    def __init__(self, errors: list[tuple[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{p}: {m}" for p, m in errors))


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
            errors.append((where, f"unknown team {reader!r} (known: {_known(known)})"))
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


def _known(names: Any) -> str:
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


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "teams file"


def _message(item: dict[str, Any]) -> str:
    msg: str = item["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    kind = item["type"]
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "missing":
        return "is required"
    if kind in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}:
        op = {
            "greater_than_equal": ">=",
            "less_than_equal": "<=",
            "greater_than": ">",
            "less_than": "<",
        }[kind]
        limit = next(iter(item.get("ctx", {}).values()), "")
        return f"must be {op} {limit}"
    if kind == "string_pattern_mismatch":
        return "use lower-case letters, digits and '-', starting and ending with a letter or digit"
    return msg


def parse_teams(data: Any, *, source: str | None = None, base_dir: Path | None = None) -> Teams:
    """Validate teams data (as loaded from YAML); raises :class:`TeamsError` naming each field."""
    if not isinstance(data, dict):
        raise TeamsError([("teams file", "must be a mapping with pools, images and teams")], source)
    catalog = data.get("image_catalog")
    if catalog and base_dir is not None:
        data = {
            **data,
            "images": [*data.get("images", []), *_load_catalog(base_dir / catalog, source)],
        }
    try:
        return Teams.model_validate(data)
    except ValidationError as e:
        errors = []
        for item in e.errors(include_url=False):
            ctx_error = item.get("ctx", {}).get("error")
            if isinstance(ctx_error, _ReferenceErrors):
                errors += ctx_error.errors
            else:
                errors.append((_path(item["loc"]), _message(dict(item))))
        raise TeamsError(errors, source) from None


def _load_catalog(path: Path, source: str | None) -> list[Any]:
    try:
        loaded = yaml.safe_load(path.read_text())
    except OSError as e:
        raise TeamsError([("image_catalog", f"cannot read {path}: {e.strerror}")], source) from None
    images = loaded.get("images") if isinstance(loaded, dict) else loaded
    if not isinstance(images, list):
        raise TeamsError([("image_catalog", f"{path} has no list of images")], source)
    return images


def load_teams(path: str | Path) -> Teams:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise TeamsError([("teams file", f"cannot read it: {e.strerror}")], str(path)) from None
    except yaml.YAMLError as e:
        raise TeamsError([("teams file", f"is not valid YAML: {e}")], str(path)) from None
    return parse_teams(data, source=str(path), base_dir=path.parent)
