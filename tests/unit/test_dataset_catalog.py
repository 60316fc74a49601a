"""Datasets by name: the one schema in teams.yaml and the local datasets file, who may read
what, the resolution of a spec's names (refusals name what may be read), the Kubernetes mounts
of a dataset another team shares, and trainhub.datasets.path() as a rank calls it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trainhub.backends.kubernetes import manifests
from trainhub.datasets.catalog import (
    Catalog,
    DatasetsFileError,
    Readable,
    load_datasets_file,
    local_catalog,
)
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import SpecError, parse_spec
from trainhub.jobs.states import JobState
from trainhub.teams import TeamsError, parse_teams

REPO = Path(__file__).resolve().parents[2]
TEAMS = yaml.safe_load((REPO / "hub_config" / "teams.yaml").read_text())


def teams_with(mutate):
    data = copy.deepcopy(TEAMS)
    mutate(data)
    return parse_teams(data)


def teams_errors(mutate) -> dict[str, str]:
    with pytest.raises(TeamsError) as info:
        teams_with(mutate)
    return dict(info.value.errors)


def spec(*datasets):
    return parse_spec({"name": "t", "source": {"path": "t.ipynb"}, "datasets": list(datasets)})


# --- teams.yaml ---------------------------------------------------------------------------------


def test_a_team_reads_its_own_datasets_and_those_shared_with_it() -> None:
    def share(d):
        d["teams"][1]["datasets"]["c4"].update(
            teams=["vision"], description="Colossal Clean Crawled Corpus", owner="nlp-data"
        )

    teams = teams_with(share)
    assert list(teams.readable_datasets("vision")) == ["c4", "coco", "imagenet"]
    assert list(teams.readable_datasets("nlp")) == ["c4"]
    owner, c4 = teams.readable_datasets("vision")["c4"]
    assert owner.name == "nlp" and c4.owner == "nlp-data" and c4.read_only is True


def test_sharing_mistakes_are_named_by_their_field() -> None:
    def mutate(d):
        d["teams"][1]["datasets"]["c4"]["teams"] = ["robotics"]
        d["teams"][0]["datasets"]["coco"]["teams"] = ["nlp"]

    errors = teams_errors(mutate)
    assert errors["teams[1].datasets.c4.teams"] == "unknown team 'robotics' (known: nlp, vision)"
    assert "share it through a claim" in errors["teams[0].datasets.coco.teams"]


def test_entry_mistakes_are_named_by_their_field() -> None:
    def mutate(d):
        d["teams"][0]["datasets"]["imagenet"]["read_only"] = False
        d["teams"][0]["datasets"]["coco"]["colour"] = "blue"

    errors = teams_errors(mutate)
    assert "datasets are mounted read-only" in errors["teams[0].datasets.imagenet"]
    assert errors["teams[0].datasets.coco.colour"] == "is not a known field"


def test_a_shared_name_may_not_hide_a_readers_own_dataset() -> None:
    def mutate(d):
        d["teams"][0]["datasets"]["imagenet"]["teams"] = ["nlp"]
        d["teams"][1]["datasets"]["imagenet"] = {"claim": "imagenet-copy"}

    errors = teams_errors(mutate)
    assert errors["teams[0].datasets.imagenet.teams"] == (
        "team nlp already has a dataset named 'imagenet'"
    )


def test_two_teams_may_not_share_one_name_with_the_same_reader() -> None:
    def mutate(d):
        third = copy.deepcopy(d["teams"][1])
        third.update(name="audio", groups=["audio"], namespace="team-audio")
        third["shared_volume"] = {"claim": "audio-shared", "mount_path": "/shared/audio"}
        third["datasets"] = {"c4": {"claim": "c4-audio", "teams": ["vision"]}}
        d["teams"][1]["datasets"]["c4"]["teams"] = ["vision"]
        d["teams"].append(third)

    errors = teams_errors(mutate)
    assert errors == {
        "teams[2].datasets.c4.teams": (
            "team nlp already shares a dataset named 'c4' with team vision"
        )
    }


def test_the_job_pod_mounts_a_shared_claim_read_only_at_datasets_name() -> None:
    teams = teams_with(lambda d: d["teams"][1]["datasets"]["c4"].update(teams=["vision"]))
    vision = teams.team("vision")
    readable = {n: ds for n, (_, ds) in teams.readable_datasets("vision").items()}
    record = JobRecord(
        id="r-1",
        name="r",
        user="ada",
        priority=1,
        gpus=0,
        state=JobState.QUEUED,
        spec=spec({"name": "c4", "path": "/datasets/c4", "catalog": True}),
        job_dir="/shared/vision/jobs/r-1",
        created_at=0.0,
    )
    job = manifests.job_manifest(
        record, team=vision, pool=teams.pool("t4"), image="img:1", datasets=readable
    )
    pod = job["spec"]["template"]["spec"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"] == "/datasets/c4"]
    assert mount == {"name": "dataset-c4", "mountPath": "/datasets/c4", "readOnly": True}
    volume = next(v for v in pod["volumes"] if v["name"] == "dataset-c4")
    assert volume["persistentVolumeClaim"] == {"claimName": "c4-corpus", "readOnly": True}
    # Without the share (the team's own datasets) the name is not mounted but refused.
    with pytest.raises(ValueError, match="not one team vision may read"):
        manifests.job_manifest(record, team=vision, pool=teams.pool("t4"), image="img:1")


# --- resolution ----------------------------------------------------------------------------------


def catalog(team="vision"):
    teams = teams_with(lambda d: None)
    return Catalog(
        (
            Readable(n, ds, rank_path=f"/datasets/{n}", view_path=None, team=owner.name)
            for n, (owner, ds) in teams.readable_datasets(team).items()
        ),
        team=team,
    )


def test_names_resolve_to_where_the_ranks_find_them_and_own_paths_stay() -> None:
    resolved, named = catalog().resolve(spec("imagenet", {"name": "mine", "path": "/data/x"}))
    assert [d.model_dump() for d in resolved.datasets] == [
        {"name": "imagenet", "path": "/datasets/imagenet", "read_only": True, "catalog": True},
        {"name": "mine", "path": "/data/x", "read_only": True, "catalog": False},
    ]
    assert list(named) == ["imagenet"] and named["imagenet"].entry.claim == "imagenet"
    # A resubmitted spec is resolved anew: the path it carries is not taken on trust.
    again, _ = catalog().resolve(spec({"name": "coco", "path": "/etc", "catalog": True}))
    assert again.datasets[0].path == "/datasets/coco"


def test_another_teams_dataset_and_an_unknown_one_get_the_same_sentence() -> None:
    answers = []
    for name in ("c4", "nothing"):
        with pytest.raises(SpecError) as err:
            catalog().resolve(spec("imagenet", name))
        (error,) = err.value.errors
        answers.append((error.field, error.message.replace(repr(name), "NAME")))
    assert (
        answers[0]
        == answers[1]
        == (
            "datasets.1.name",
            "no dataset NAME that team vision may read (team vision may read: coco, imagenet)",
        )
    )


def test_the_listing_says_what_the_rest_api_shows() -> None:
    infos = catalog("nlp").infos()
    assert [i.model_dump() for i in infos] == [
        {
            "name": "c4",
            "description": "Colossal Clean Crawled Corpus, English",
            "read_only": True,
            "owner": "nlp-data@example.org",
            "team": "nlp",
            "path": "/datasets/c4",
        }
    ]


# --- the local datasets file -------------------------------------------------------------------


def test_the_local_file_has_the_same_schema_and_its_paths_lie_below_a_root(tmp_path) -> None:
    root = tmp_path / "data"
    (root / "imagenet").mkdir(parents=True)
    f = tmp_path / "datasets.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "datasets": {
                    "imagenet": {"path": str(root / "imagenet"), "owner": "me"},
                    "c4": {"path": str(root / "c4"), "teams": ["nlp"]},
                }
            },
            sort_keys=False,
        )
    )
    entries = load_datasets_file(f)
    mine = local_catalog(entries, team=None, roots=[root], source=str(f))
    assert [i.name for i in mine.infos()] == ["imagenet"]
    assert mine.infos()[0].path == str(root / "imagenet")
    nlp = local_catalog(entries, team="nlp", roots=[root], source=str(f))
    assert [i.name for i in nlp.infos()] == ["c4", "imagenet"]
    with pytest.raises(DatasetsFileError) as err:
        local_catalog(entries, team=None, roots=[tmp_path / "elsewhere"], source="datasets.yaml")
    assert str(err.value) == (
        f"datasets.yaml: datasets.imagenet.path: {root / 'imagenet'} is not below a dataset "
        "root (TRAINHUB_DATASET_ROOTS)"
    )
    assert load_datasets_file(tmp_path / "absent.yaml") == {}


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("datasets: {a: {path: /d, size: 3}}", "f.yaml: datasets.a.size: is not a known field"),
        ("datasets: {a: {path: d}}", "f.yaml: datasets.a: path 'd' must be absolute"),
        ("datasets: {A: {path: /d}}", "f.yaml: datasets.A: dataset name 'A': use lower-case"),
        ("datasets: {a: {}}", "f.yaml: datasets.a: give either 'claim'"),
        ("datasets: [a]", "f.yaml: datasets: must be a mapping of name to dataset"),
        ("sets: {}", "f.yaml: sets: is not a known field"),
        ("datasets: {a: [", "f.yaml: is not valid YAML"),
    ],
)
def test_a_bad_local_file_is_refused_naming_the_field(tmp_path, text, sentence) -> None:
    f = tmp_path / "f.yaml"
    f.write_text(text)
    with pytest.raises(DatasetsFileError) as err:
        load_datasets_file(f)
    assert str(err.value).replace(str(tmp_path) + "/", "").startswith(sentence)


def test_a_claim_in_the_local_file_is_refused() -> None:
    entries = {"c4": parse_teams(TEAMS).team("nlp").datasets["c4"]}
    with pytest.raises(DatasetsFileError, match=r"datasets\.c4\.claim: a claim is mounted"):
        local_catalog(entries, team=None, roots=[], source="f.yaml")


# --- inside a rank -------------------------------------------------------------------------------


def rank(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_a_rank_finds_its_datasets_by_name_with_the_standard_library_alone() -> None:
    code = (
        "import sys, trainhub\n"
        "print(trainhub.datasets.path('image-net'), trainhub.datasets.names())\n"
        "try:\n"
        "    trainhub.datasets.path('coco')\n"
        "except KeyError as e:\n"
        "    print(e)\n"
        "print('pydantic' in sys.modules, 'yaml' in sys.modules)\n"
    )
    out = rank(
        code, TRAINHUB_DATASETS="image-net,c4", TRAINHUB_DATASET_IMAGE_NET="/datasets/image-net"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "/datasets/image-net ['image-net', 'c4']",
        "dataset 'coco' is not one this job asked for (it asked for: image-net, c4); "
        "name it when submitting, e.g. --dataset NAME or datasets=[NAME]",
        "False False",
    ]
    # A variable set by hand for a name the job did not ask for does not count.
    out = rank(
        "import trainhub; trainhub.datasets.path('x')", TRAINHUB_DATASET_X="/tmp", PYTHONPATH="."
    )
    assert out.returncode == 1 and "(it asked for: none)" in out.stderr


def test_the_python_api_and_the_cli_ask_by_name_or_by_path(tmp_path, monkeypatch) -> None:
    from trainhub.api import build_spec
    from trainhub.cli.jobargs import datasets

    by_api = parse_spec(build_spec("t.ipynb", datasets=["imagenet", {"name": "x", "path": "/p"}]))
    by_dict = parse_spec(build_spec("t.ipynb", datasets={"x": "/p"}))
    monkeypatch.chdir(tmp_path)
    by_cli = parse_spec(build_spec("t.ipynb", datasets=datasets(["imagenet", "x=p"])))
    assert [(d.name, d.path) for d in by_api.datasets] == [("imagenet", None), ("x", "/p")]
    assert [(d.name, d.path) for d in by_dict.datasets] == [("x", "/p")]
    assert [(d.name, d.path) for d in by_cli.datasets] == [
        ("imagenet", None),
        ("x", str(tmp_path / "p")),
    ]
