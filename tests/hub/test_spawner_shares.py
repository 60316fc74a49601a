"""A session on a shared GPU, without a hub: the profile offering the share, the pod asking
for one unit of the pool's shared resource and saying which share it holds, the last look at
the manifest, and the quota sentence in shares."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from tests.fixtures.shared_gpus import SHARED_TAINT, with_shared_pool
from trainhub.teams import parse_teams
from trainhub_spawner.pod import CONTAINER_SECURITY, pod_deviation, session_overrides
from trainhub_spawner.profiles import Refused, profile_list, resolve_session
from trainhub_spawner.quota import shortfall

SHIPPED = yaml.safe_load((Path(__file__).parents[2] / "hub_config" / "teams.yaml").read_text())
TEAMS = parse_teams(with_shared_pool(SHIPPED))
SHARED = "nvidia.com/gpu.shared"


def test_the_shared_pool_offers_only_its_share() -> None:
    profiles = {
        p["slug"]: p["profile_options"]["gpus"]["choices"] for p in profile_list(TEAMS, ["vision"])
    }
    assert {k: list(v) for k, v in profiles.items()} == {
        "vision.a100": ["0", "1"],
        "vision.t4": ["0", "1"],
        "vision.t4-shared": ["1/4"],
    }
    assert (
        profiles["vision.t4-shared"]["1/4"]["display_name"]
        == "¼ of a GPU (time-sliced with 3 others)"
    )
    with pytest.raises(
        Refused, match=r"'1' GPUs is not a session size of team vision in pool t4-shared \(1/4\)"
    ):
        resolve_session(TEAMS, ["vision"], {"profile": "vision.t4-shared", "gpus": "1"})
    with pytest.raises(
        Refused, match=r"'1/4' GPUs is not a session size of team vision in pool t4 "
    ):
        resolve_session(TEAMS, ["vision"], {"profile": "vision.t4", "gpus": "1/4"})


def test_a_shared_session_pod_asks_for_one_share_and_says_which() -> None:
    s = resolve_session(TEAMS, ["vision"], {"profile": "vision.t4-shared", "gpus": "1/4"})
    assert (s.gpus, s.share) == (0, Fraction(1, 4))
    o = session_overrides(s)
    assert o["extra_resource_guarantees"] == o["extra_resource_limits"] == {SHARED: "1"}
    assert o["node_selector"] == {"trainhub.io/pool": "t4-shared"}
    assert o["tolerations"] == [SHARED_TAINT]
    env = o["environment"]
    assert (env["TRAINHUB_GPU_SHARE"], env["TRAINHUB_GPU_SHARING"]) == ("1/4", "time-slicing")
    assert "NVIDIA_VISIBLE_DEVICES" not in env  # the device plugin gives the replica's GPU
    assert o["extra_labels"]["trainhub.io/session-gpus"] == "0.25"

    resources = {"limits": {SHARED: "1"}, "requests": {SHARED: "1"}}
    pod = {
        "spec": {
            "serviceAccountName": "trainhub-notebook",
            "nodeSelector": {"trainhub.io/pool": "t4-shared"},
            "containers": [
                {
                    "name": "notebook",
                    "image": s.image.image,
                    "resources": resources,
                    "securityContext": dict(CONTAINER_SECURITY),
                }
            ],
        }
    }
    assert pod_deviation(pod, s, "team-vision") is None
    two = copy.deepcopy(pod)
    two["spec"]["containers"][0]["resources"] = {"limits": {SHARED: "2"}, "requests": {SHARED: "2"}}
    assert (
        pod_deviation(two, s, "team-vision")
        == f"the session asks for 1 {SHARED} but its pod requests 2"
    )
    whole = copy.deepcopy(pod)
    whole["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1"
    whole["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    assert (
        pod_deviation(whole, s, "team-vision")
        == "the session asks for 0 GPUs but its pod requests 1"
    )


def test_the_quota_sentence_counts_shares() -> None:
    hard = {f"requests.{SHARED}": "8", "requests.nvidia.com/gpu": "12"}
    used = {f"requests.{SHARED}": "8", "requests.nvidia.com/gpu": "0"}
    q = [{"status": {"hard": hard, "used": used}}]
    assert shortfall("vision", q, {f"requests.{SHARED}": "1", "requests.nvidia.com/gpu": "0"}) == (
        f"team vision uses 8 of 8 shares of a GPU ({SHARED}); this profile needs 1"
    )
