"""Shared GPUs in the teams file: a pool that offers each GPU as shares, the sizes a team
offers, the mistakes named by their path, and the quota objects that count a share as 1/N GPU."""

from __future__ import annotations

import copy
import os
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from tests.fixtures.shared_gpus import SHARED_POOL, with_shared_pool
from trainhub.backends.kubernetes import render
from trainhub.jobs.shares import parse_share, share_words
from trainhub.teams import TeamsError, parse_teams

GOLDEN = Path(__file__).parent / "golden"
BASE = yaml.safe_load((GOLDEN / "teams.yaml").read_text())


def shared_teams(mutate=lambda d: None):
    data = with_shared_pool(BASE)
    mutate(data)
    return parse_teams(data)


def errors_of(mutate) -> dict[str, str]:
    with pytest.raises(TeamsError) as info:
        shared_teams(mutate)
    return dict(info.value.errors)


def test_a_team_offers_a_share_of_a_shared_pool() -> None:
    teams = shared_teams()
    vision, pool = teams.team("vision"), teams.pool("t4-shared")
    assert vision.session_gpus == [0, "1/4", 1]
    assert vision.session_shares == [Fraction(1, 4)]
    assert pool.shared_resource == "nvidia.com/gpu.shared"
    mig = shared_teams(
        lambda d: d["pools"][2].update(
            sharing={"strategy": "mig", "replicas": 4, "profile": "1g.10gb"}
        )
    )
    assert mig.pool("t4-shared").shared_resource == "nvidia.com/mig-1g.10gb"


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (
            lambda d: d["teams"][0].update(session_gpus=[0, "2/4"]),
            "teams[0].session_gpus",
            "not a GPU share",
        ),
        (lambda d: d["teams"][0].update(session_gpus=["1/3"]), "teams[0].session_gpus", "3 ways"),
        (lambda d: d["pools"][2].update(tolerations=[]), "pools[2].tolerations", "tainted"),
        (
            lambda d: d["pools"][2]["sharing"].update(replicas=1),
            "pools[2].sharing.replicas",
            ">= 2",
        ),
        (
            lambda d: d["pools"][2]["sharing"].update(strategy="mps"),
            "pools[2].sharing.strategy",
            "time-slicing",
        ),
        (lambda d: d["pools"][2]["sharing"].update(strategy="mig"), "pools[2].sharing", "profile"),
        (
            lambda d: d["pools"].append(
                {
                    **copy.deepcopy(SHARED_POOL),
                    "name": "x",
                    "sharing": {"strategy": "time-slicing", "replicas": 2},
                }
            ),
            "pools[3].sharing.replicas",
            "one size of share",
        ),
    ],
)
def test_sharing_mistakes_name_their_field(mutate, path: str, words: str) -> None:
    errors = errors_of(mutate)
    assert path in errors, errors
    assert words in errors[path]


def test_whole_gpus_of_a_session_come_from_pools_that_do_not_share() -> None:
    def only_shared(d):
        d["teams"][0]["quota"] = {"t4-shared": d["teams"][0]["quota"]["t4-shared"]}
        d["teams"][0]["session_gpus"] = [0, 1, "1/4"]

    errors = errors_of(only_shared)
    assert errors["teams[0].session_gpus"].startswith("1 GPUs do not fit on one node")


def test_share_text_and_words() -> None:
    assert parse_share(" 1/4 ") == Fraction(1, 4)
    with pytest.raises(ValueError, match="not a GPU share"):
        parse_share("1/17")
    assert share_words(Fraction(1, 4), "time-slicing") == "¼ of a GPU (time-sliced with 3 others)"
    assert share_words(Fraction(1, 7), "mig") == "⅐ of a GPU (a MIG partition)"


def test_quota_objects_count_shares_golden() -> None:
    """The team's ClusterQueue covers the shared resource beside whole GPUs, every flavor
    listing both (quota 0 where a pool has none of it); one GPU of the shared pool is 4 units,
    limits too; the namespace's ResourceQuota caps each resource alike. A team without a
    shared pool keeps its objects as they were."""
    teams = shared_teams()
    objs = render.render(teams)
    picked = [
        o
        for o in objs
        if o["kind"] in ("ClusterQueue", "ResourceQuota", "ResourceFlavor")
        and o["metadata"]["name"] in ("vision", "nlp", "trainhub-quota", "t4-shared")
    ]
    text = render.to_yaml(picked)
    path = GOLDEN / "shared-gpus.yaml"

    if os.environ.get("TRAINHUB_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), "shared-gpus.yaml differs from the golden file"
    plain = render.render(parse_teams(copy.deepcopy(BASE)))
    nlp = [o for o in objs if o["metadata"]["name"] == "nlp" and o["kind"] == "ClusterQueue"]
    assert nlp == [
        o for o in plain if o["metadata"]["name"] == "nlp" and o["kind"] == "ClusterQueue"
    ]
