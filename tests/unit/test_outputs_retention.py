"""Retention of job outputs: the policy's schema (teams file and local file, each mistake
named by its field), the pure plan of what cleanup deletes, and where ranks find outputs."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.unit.test_k8s_manifests import TEAMS, record
from trainhub.backends.kubernetes import manifests
from trainhub.jobs.environment import job_environment
from trainhub.outputs.retention import (
    DAY,
    JobOutputs,
    OutputFile,
    Retention,
    RetentionFileError,
    load_retention_file,
    plan,
)
from trainhub.teams import TeamsError, load_teams, parse_teams

REPO = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((REPO / "hub_config" / "teams.yaml").read_text())
NOW = 1_800_000_000.0


def job(job_id: str, *files: tuple[str, int, float], team: str = "vision", ended: bool = True):
    return JobOutputs(
        job_id=job_id,
        user="ada",
        team=team,
        state="succeeded" if ended else "running",
        ended=ended,
        files=tuple(OutputFile(p, b, NOW - age * DAY) for p, b, age in files),
    )


def deleted(jobs: list[JobOutputs], policy: Retention) -> list[tuple[str, str, str]]:
    decided = plan(jobs, {"vision": policy}, now=NOW)
    return [(d.job_id, d.path, d.reason) for d in decided.deletions]


def test_the_shipped_teams_file_carries_a_policy() -> None:
    policy = load_teams(REPO / "hub_config" / "teams.yaml").team("vision").retention
    assert policy == Retention(days=90, max_job_size="50Gi", max_team_size="2Ti")
    assert policy.job_bytes == 50 * 2**30 and policy.team_bytes == 2 * 2**40


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("days", 0, "must be >= 1"),
        ("max_job_size", "lots", "'lots' is not a quantity such as 512Mi, 16Gi or 2G"),
        ("max_team_size", "0", "must be more than 0 bytes"),
        ("keep", 3, "is not a known field"),
    ],
)
def test_a_bad_policy_in_the_teams_file_names_its_field(field: str, value, message: str) -> None:
    data = copy.deepcopy(BASE)
    data["teams"][1]["retention"] = {field: value}
    with pytest.raises(TeamsError) as info:
        parse_teams(data)
    assert dict(info.value.errors) == {f"teams[1].retention.{field}": message}


def test_the_local_file_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "retention.yaml"
    assert load_retention_file(path) is None  # no file: everything kept
    path.write_text("retention: {days: 7, max_job_size: 1Gi}\n")
    assert load_retention_file(path) == Retention(days=7, max_job_size="1Gi")
    for text, said in (
        ("retention: {days: -1}\n", "retention.days: must be >= 1"),
        ("retention: {max_job_size: huge}\n", "retention.max_job_size: 'huge' is not a quantity"),
        ("retention: {max_team_size: true}\n", "retention.max_team_size: True is not a size"),
        ("retention: {days: 1}\nkeep: all\n", "keep: is not a known field"),
        ("retention: [1]\n", "retention: Input should be a valid dictionary"),
        ("retention: {days: [\n", "is not valid YAML"),
    ):
        path.write_text(text)
        with pytest.raises(RetentionFileError) as info:
            load_retention_file(path)
        assert str(info.value).startswith(f"{path}: ") and said in str(info.value), text


def test_days_delete_old_files_of_ended_jobs_only() -> None:
    jobs = [
        job("done", ("old.bin", 10, 40), ("new.bin", 10, 1)),
        job("running", ("old.bin", 10, 40), ended=False),
    ]
    assert deleted(jobs, Retention(days=30)) == [("done", "old.bin", "days")]


def test_a_job_over_its_cap_loses_its_oldest_files_first() -> None:
    jobs = [job("a", ("c", 40, 1), ("a", 40, 3), ("b", 40, 2)), job("b", ("x", 200, 9))]
    got = deleted(jobs, Retention(max_job_size="100"))
    assert got == [("a", "a", "max_job_size"), ("b", "x", "max_job_size")]


def test_a_team_over_its_cap_loses_the_oldest_files_of_its_ended_jobs() -> None:
    jobs = [
        job("a", ("a1", 50, 5), ("a2", 50, 1)),
        job("b", ("b1", 50, 3)),
        job("live", ("l1", 100, 10), ended=False),  # counts towards the team, never deleted
        job("other", ("o1", 500, 20), team="nlp"),  # another team's: no policy, kept
    ]
    got = deleted(jobs, Retention(max_team_size="160"))
    assert got == [("a", "a1", "max_team_size"), ("b", "b1", "max_team_size")]
    # Still over (the running job's 100 + a2's 50 would fit; nothing ended is left to take).
    assert deleted(jobs, Retention(max_team_size="100")) == [
        ("a", "a1", "max_team_size"),
        ("b", "b1", "max_team_size"),
        ("a", "a2", "max_team_size"),
    ]


def test_no_policy_keeps_everything() -> None:
    jobs = [job("a", ("old", 10**12, 10_000))]
    assert plan(jobs, {"vision": None}, now=NOW).deletions == []
    assert deleted(jobs, Retention()) == []


def test_every_rank_is_told_where_its_outputs_go() -> None:
    env = job_environment(
        {}, job_id="j", job_dir="/data/jobs/j", attempt=0, resume_from=None, dataset_paths={}
    )
    assert env["TRAINHUB_OUTPUT_DIR"] == "/data/jobs/j/outputs"


def test_pods_get_the_outputs_directory_on_the_shared_volume() -> None:
    rec = record()
    team = TEAMS.team("vision")
    job_obj = manifests.job_manifest(
        rec, team=team, pool=TEAMS.pool("a100"), image=TEAMS.image("pytorch").image
    )
    container = job_obj["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["TRAINHUB_OUTPUT_DIR"] == f"{rec.job_dir}/outputs"
    shared = [
        m["mountPath"]
        for m in container["volumeMounts"]
        if m["name"] == "shared" and "subPath" not in m  # not a path dataset's mount
    ]
    assert shared == [team.shared_volume.mount_path]
    assert Path(env["TRAINHUB_OUTPUT_DIR"]).is_relative_to(shared[0])
