"""Team profiles and the gate every spawn request passes through (no hub needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainhub.teams import load_teams
from trainhub_spawner.profiles import Refused, options_from_formdata, profile_list, resolve_session

TEAMS = load_teams(Path(__file__).parents[2] / "hub_config" / "teams.yaml")


def test_each_user_sees_only_their_teams_pools_images_and_sizes() -> None:
    vision = profile_list(TEAMS, ["vision"])
    assert [p["slug"] for p in vision] == ["vision.a100", "vision.t4"]
    assert [p["default"] for p in vision] == [True, False]
    a100 = vision[0]["profile_options"]
    assert list(a100["image"]["choices"]) == ["pytorch"]
    assert list(a100["gpus"]["choices"]) == ["0", "1"]
    assert a100["image"]["choices"]["pytorch"]["display_name"] == "pytorch (torch 2.5.1, cuda 12.4)"
    assert "kubespawner_override" not in vision[0]

    nlp = profile_list(TEAMS, ["nlp-interns"])
    assert [p["slug"] for p in nlp] == ["nlp.a100", "nlp.t4"]
    assert list(nlp[0]["profile_options"]["image"]["choices"]) == ["pytorch", "pytorch-nlp"]
    assert list(nlp[0]["profile_options"]["gpus"]["choices"]) == ["0", "1", "2"]

    assert profile_list(TEAMS, ["marketing"]) == []
    both = profile_list(TEAMS, ["vision", "nlp"])
    assert [p["slug"] for p in both] == ["vision.a100", "vision.t4", "nlp.a100", "nlp.t4"]


def test_sizes_larger_than_a_pool_node_are_not_offered_there() -> None:
    data = TEAMS.model_dump(mode="json", exclude={"image_catalog"})
    data["teams"][1]["session_gpus"] = [0, 8]
    from trainhub.teams import parse_teams

    teams = parse_teams(data)
    nlp = {p["slug"]: p for p in profile_list(teams, ["nlp"])}
    assert list(nlp["nlp.a100"]["profile_options"]["gpus"]["choices"]) == ["0", "8"]
    assert list(nlp["nlp.t4"]["profile_options"]["gpus"]["choices"]) == ["0"]
    with pytest.raises(
        Refused, match=r"'8' GPUs is not a session size of team nlp in pool t4 \(0\)"
    ):
        resolve_session(teams, ["nlp"], {"profile": "nlp.t4", "gpus": "8"})


def test_a_chosen_session_resolves_to_the_team_pool_image_and_size() -> None:
    s = resolve_session(
        TEAMS, ["nlp"], {"profile": "nlp.a100", "image": "pytorch-nlp", "gpus": "2"}
    )
    assert (s.team.name, s.pool.name, s.image.name, s.gpus) == ("nlp", "a100", "pytorch-nlp", 2)
    assert s.profile == "nlp.a100"
    by_ref = resolve_session(
        TEAMS,
        ["nlp"],
        {"profile": "nlp.t4", "image": "ghcr.io/trainhub/pytorch:2.5.1-cuda12.4", "gpus": 1},
    )
    assert (by_ref.pool.name, by_ref.image.name, by_ref.gpus) == ("t4", "pytorch", 1)


def test_empty_options_mean_the_first_profile_image_and_smallest_size() -> None:
    for options in ({}, None):
        s = resolve_session(TEAMS, ["vision"], options)
        assert (s.team.name, s.pool.name, s.image.name, s.gpus) == ("vision", "a100", "pytorch", 0)


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (
            {"profile": "nlp.a100"},
            r"profile 'nlp.a100' is not offered to you \(yours: vision.a100, vision.t4\)",
        ),
        (
            {"profile": "vision.a100", "image": "pytorch-nlp"},
            r"image 'pytorch-nlp' is not allowed: team vision allows its catalog images only "
            r"\(pytorch\)",
        ),
        (
            {"profile": "vision.a100", "image": "docker.io/evil/miner:1"},
            r"image 'docker.io/evil/miner:1' is not",
        ),
        (
            {"profile": "vision.a100", "gpus": "2"},
            r"'2' GPUs is not a session size of team vision in pool a100",
        ),
        ({"profile": "vision.a100", "gpus": True}, r"True GPUs is not a session size"),
        ({"profile": "vision.a100", "gpus": "-1"}, r"'-1' GPUs is not a session size"),
        (
            {"profile": "vision.a100", "namespace": "team-nlp"},
            r"option 'namespace' cannot be chosen",
        ),
        (
            {"profile": "vision.a100", "image--unlisted-choice": "x:1"},
            r"option 'image--unlisted-choice' cannot",
        ),
        (["vision.a100"], r"spawn options must be a JSON object"),
        ({"profile": ["vision.a100"]}, r"profile \['vision.a100'\] is not offered to you"),
    ],
)
def test_anything_not_offered_is_refused_with_a_sentence(options: object, sentence: str) -> None:
    with pytest.raises(Refused, match=sentence):
        resolve_session(TEAMS, ["vision"], options)


def test_a_user_in_no_team_is_told_how_to_get_one() -> None:
    with pytest.raises(Refused, match=r"you are in no team: ask an admin .* \(guests, marketing\)"):
        resolve_session(TEAMS, ["marketing", "guests"], {})


def test_the_form_keeps_only_the_chosen_profiles_fields() -> None:
    form = {
        "profile": ["nlp.t4"],
        "profile-option-nlp.t4--image": ["pytorch-nlp"],
        "profile-option-nlp.t4--gpus": ["1"],
        "profile-option-nlp.a100--gpus": ["2"],
        "profile-option-nlp.t4--namespace": ["kube-system"],
        "namespace": ["kube-system"],
    }
    assert options_from_formdata(form) == {"profile": "nlp.t4", "image": "pytorch-nlp", "gpus": "1"}
    assert options_from_formdata({}) == {}


def test_spawn_follows_the_teams_image_policy() -> None:
    from trainhub.teams import parse_teams

    data = TEAMS.model_dump(mode="json", exclude={"image_catalog"})
    data["teams"][0]["image_policy"] = {
        "policy": "prefixes",
        "allowed_prefixes": ["ghcr.io/vision-lab/"],
    }
    data["images"][1]["scan"] = {"status": "failed", "at": "2026-11-30"}  # pytorch-nlp
    teams = parse_teams(data)
    custom = resolve_session(
        teams, ["vision"], {"profile": "vision.a100", "image": "ghcr.io/vision-lab/exp:3"}
    )
    assert (custom.image.name, custom.image.image) == ("custom", "ghcr.io/vision-lab/exp:3")
    for image, sentence in {
        "ghcr.io/vision-lab-x/exp:3": "image 'ghcr.io/vision-lab-x/exp:3' is not allowed: team "
        "vision allows its catalog images (pytorch) and pinned images under ghcr.io/vision-lab/",
        "ghcr.io/vision-lab/exp:latest": "image 'ghcr.io/vision-lab/exp:latest' is under the "
        "allowed prefix ghcr.io/vision-lab/ but not pinned: give a tag other than 'latest' or "
        "an @sha256: digest",
    }.items():
        with pytest.raises(Refused) as e:
            resolve_session(teams, ["vision"], {"profile": "vision.a100", "image": image})
        assert str(e.value) == sentence
    # Team nlp keeps the catalog policy; its image whose scan failed is refused.
    with pytest.raises(Refused) as e:
        resolve_session(teams, ["nlp"], {"profile": "nlp.a100", "image": "pytorch-nlp"})
    assert str(e.value).startswith(
        "image pytorch-nlp (ghcr.io/trainhub/pytorch-nlp:2.5.1-cuda12.4) failed its scan on "
        "2026-11-30"
    )
    with pytest.raises(Refused, match="catalog images only"):
        resolve_session(
            teams, ["nlp"], {"profile": "nlp.a100", "image": "ghcr.io/vision-lab/exp:3"}
        )
