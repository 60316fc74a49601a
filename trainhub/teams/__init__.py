"""The admin's description of teams, pools and images (``hub_config/teams.yaml``).

One file drives the JupyterHub profiles, the Kubernetes namespaces and quotas, and the Kueue
queues (see :mod:`trainhub.backends.kubernetes.render`). Every mistake is reported with the
path of the offending field, e.g. ``teams[1].quota.a100.gpus: must be >= 0``.

The schema is a package, one module per part of the file: :mod:`~trainhub.teams.pools`,
:mod:`~trainhub.teams.images`, :mod:`~trainhub.teams.quotas`, :mod:`~trainhub.teams.team`,
:mod:`~trainhub.teams.controller`, the whole file (:mod:`~trainhub.teams.file`), the rules
across its sections (:mod:`~trainhub.teams.references`) and its reading
(:mod:`~trainhub.teams.loading`). ``from trainhub.teams import ...`` is the public way in.
"""

from trainhub.teams.controller import Controller, ControllerResources
from trainhub.teams.file import Teams
from trainhub.teams.images import Image, ImagePolicy, Scan, is_pinned
from trainhub.teams.loading import CatalogError, TeamsError, load_catalog, load_teams, parse_teams
from trainhub.teams.pools import Pool, Toleration
from trainhub.teams.quotas import Limits, PoolQuota, Preemption
from trainhub.teams.team import SharedVolume, Team, TeamDataset

__all__ = [
    "CatalogError",
    "Controller",
    "ControllerResources",
    "Image",
    "ImagePolicy",
    "Limits",
    "Pool",
    "PoolQuota",
    "Preemption",
    "Scan",
    "SharedVolume",
    "Team",
    "TeamDataset",
    "Teams",
    "TeamsError",
    "Toleration",
    "is_pinned",
    "load_catalog",
    "load_teams",
    "parse_teams",
]
