"""The model registry's pure parts (references, alias moves, the permission rule, the
lineage snapshot) and the registry itself on real files: versions kept by hard link or copy,
never overwritten, aliases and archives read back from an append-only log."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainhub.errors import Conflict, NotAllowed, NotFound
from trainhub.jobs.directory import JobDir
from trainhub.jobs.records import FileRecords
from trainhub.jobs.spec import SpecError
from trainhub.registry import here
from trainhub.registry.entries import Entry
from trainhub.registry.policy import (
    UNPROTECTED,
    ModelPolicy,
    ModelsFileError,
    check_move,
    parse_models_file,
)
from trainhub.registry.refs import Ref, Source, parse_ref, parse_source
from trainhub.registry.service import Registry
from trainhub.registry.snapshot import JobFacts, lineage_of, metrics_at


def test_references_parse_to_a_version_an_alias_or_the_newest() -> None:
    assert parse_ref("classifier") == Ref("classifier")
    assert parse_ref("classifier@production") == Ref("classifier", alias="production")
    assert parse_ref("classifier@latest") == Ref("classifier")
    assert parse_ref("classifier/3") == parse_ref("classifier/v3") == Ref("classifier", version=3)
    for bad in ("", "a.b", "../x", "c/0", "c/x", "c@Prod", "c@", "@x"):
        with pytest.raises(SpecError) as e:
            parse_ref(bad, "model")
        assert e.value.errors[0].field == "model"


def test_sources_name_a_checkpoint_an_output_or_the_job() -> None:
    assert parse_source("train-1a") == Source("train-1a")
    assert parse_source("train-1a:1200") == Source("train-1a", step=1200)
    assert parse_source("train-1a:eval/model.pt") == Source("train-1a", path="eval/model.pt")
    for bad in ("Train", "job:../x", "job:/etc/passwd", ":3"):
        with pytest.raises(SpecError) as e:
            parse_source(bad)
        assert e.value.errors[0].field == "from"


def test_a_protected_alias_needs_its_role_and_the_refusal_names_it() -> None:
    policy = ModelPolicy(roles={"model-approver": ["ada"]})
    check_move(policy, "ada", "production", model="clf", team="vision")
    check_move(policy, "bo", "staging", model="clf", team="vision")  # not protected
    with pytest.raises(NotAllowed, match="needs the role model-approver") as e:
        check_move(policy, "bo", "production", model="clf", team="vision")
    assert "held by ada" in str(e.value) and "bo does not hold it" in str(e.value)
    check_move(UNPROTECTED, "bo", "production", model="clf", team=None)
    custom = parse_models_file(
        {"models": {"roles": {"leads": ["cy"]}, "protected_aliases": {"prod": "leads"}}}, "f"
    )
    with pytest.raises(NotAllowed, match="role leads"):
        check_move(custom, "bo", "prod", model="clf", team=None)
    with pytest.raises(ModelsFileError, match=r"models\.protected_aliases"):
        parse_models_file({"models": {"protected_aliases": {"Prod": "x"}}}, "models.yaml")


def test_metrics_are_taken_at_the_registered_step_from_rank_0() -> None:
    rows = [
        {"step": 10, "name": "loss", "value": 2.0, "rank": 0},
        {"step": 20, "name": "loss", "value": 1.0, "rank": 0},
        {"step": 20, "name": "loss", "value": 9.0, "rank": 1},
        {"step": 30, "name": "loss", "value": 0.5, "rank": 0},
        {"step": 15, "name": "acc", "value": 0.8},
        {"step": 15, "name": "nan", "value": float("nan")},
    ]
    assert metrics_at(rows, 20) == {"acc": 0.8, "loss": 1.0}
    assert metrics_at(rows, None) == {"acc": 0.8, "loss": 0.5}
    assert metrics_at(rows, 5) == {}


def test_lineage_snapshot_keeps_job_code_parameters_image_and_datasets() -> None:
    job = JobFacts("train-1", "train", "ada", 2, "/x", state="succeeded")
    lineage = {
        "source": {"path": "train.ipynb", "cells": [1, 2]},
        "parameters": {"lr": 0.1},
        "image": "pytorch",
        "ran_image": {"digest": "sha256:abc"},
        "datasets": [{"name": "imagenet", "fingerprint": {"files": 3}, "read_only": True}],
        "packages": {"torch": "2.5"},
    }
    kept = lineage_of(job, lineage, {"parameters": {"lr": 9}})
    assert kept["job"] == {"id": "train-1", "name": "train", "user": "ada", "attempt": 2,
                           "state": "succeeded"}  # fmt: skip
    assert kept["parameters"] == {"lr": 0.1} and kept["ran_image"] == {"digest": "sha256:abc"}
    assert kept["source"]["cells"] == [1, 2]
    assert kept["datasets"] == [{"name": "imagenet", "fingerprint": {"files": 3}}]
    assert "packages" not in kept


# --- the registry on real files ----------------------------------------------------------------
def make_job(root: Path, job_id: str = "train-1") -> JobFacts:
    jobdir = JobDir(root / job_id).create()
    (jobdir.root / "outputs").mkdir(exist_ok=True)
    (jobdir.root / "outputs" / "model.pt").write_bytes(b"weights-1")
    (jobdir.root / "outputs" / "eval").mkdir()
    (jobdir.root / "outputs" / "eval" / "metrics.json").write_text("{}")
    (jobdir.root / "lineage.json").write_text(json.dumps({"parameters": {"lr": 0.1}}))
    (jobdir.root / "metrics").mkdir(exist_ok=True)
    (jobdir.root / "metrics" / "scalars.jsonl").write_text(
        json.dumps({"step": 3, "name": "acc", "value": 0.9, "rank": 0}) + "\n"
    )
    return JobFacts(job_id, "train", "ada", 0, str(jobdir.root), state="succeeded")


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    home = tmp_path / "jobs" / ".models"
    policy = ModelPolicy(roles={"model-approver": ["ada"]})
    return Registry(FileRecords(home, Entry, team_readable=True), home, policy=lambda: policy)


def test_versions_are_numbered_kept_by_link_and_outlive_the_job_files(
    registry: Registry, tmp_path: Path
) -> None:
    job = make_job(tmp_path / "jobs")
    one = registry.register("clf", Source(job.id, path="model.pt"), job, user="ada")
    two = registry.register("clf", Source(job.id), job, user="bo", description="all outputs")
    assert (one.version, two.version) == (1, 2)
    assert one.source.kind == "output" and two.source.kind == "outputs"
    assert one.metrics == {"acc": 0.9} and one.lineage["parameters"] == {"lr": 0.1}
    kept = registry.files(one)
    original = Path(job.job_dir) / "outputs" / "model.pt"
    assert kept.read_bytes() == b"weights-1" and one.files.linked == 1
    assert os.stat(kept).st_ino == os.stat(original).st_ino  # a hard link: no copy
    assert registry.files(two).is_dir() and two.files.files == 2
    original.unlink()  # what retention does to the job's outputs
    assert registry.files(registry.version("clf/1")).read_bytes() == b"weights-1"
    assert not [p for p in registry.home.iterdir() if p.name.startswith(".staging-")]
    view = registry.describe("clf")
    assert [v.version for v in view.versions] == [2, 1] and view.metric_names == ["acc"]


def test_a_running_job_output_is_copied_not_linked(registry: Registry, tmp_path: Path) -> None:
    job = make_job(tmp_path / "jobs")
    running = JobFacts(job.id, job.name, job.user, 0, job.job_dir, state="running")
    v = registry.register("clf", Source(job.id, path="model.pt"), running, user="ada")
    assert v.files.linked == 0
    original = Path(job.job_dir) / "outputs" / "model.pt"
    assert os.stat(registry.files(v)).st_ino != os.stat(original).st_ino
    original.write_bytes(b"overwritten in place")  # a job saving again: the version stays
    assert registry.files(v).read_bytes() == b"weights-1"


def test_a_version_is_never_overwritten_and_races_take_the_next_number(
    registry: Registry, tmp_path: Path
) -> None:
    job = make_job(tmp_path / "jobs")
    registry.register("clf", Source(job.id), job, user="ada")
    first = registry.records.get("clf.v1")
    assert first is not None
    assert not registry.records.create_new(first.model_copy(update={"user": "mallory"}))
    assert registry.records.get("clf.v1") == first


def test_aliases_move_with_an_audit_log_and_protected_ones_need_the_role(
    registry: Registry, tmp_path: Path
) -> None:
    job = make_job(tmp_path / "jobs")
    for _ in range(2):
        registry.register("clf", Source(job.id), job, user="bo")
    registry.move_alias("clf", "staging", 1, user="bo", reason="first try")
    view = registry.move_alias("clf", "staging", 2, user="bo", reason="better")
    assert view.aliases == {"staging": 2}
    with pytest.raises(NotAllowed, match="model-approver"):
        registry.move_alias("clf", "production", 2, user="bo")
    view = registry.move_alias("clf", "production", 2, user="ada", reason="ship it")
    moves = [(a.user, a.alias, a.previous, a.version, a.reason) for a in view.audit[2:]]
    assert moves == [
        ("bo", "staging", None, 1, "first try"),
        ("bo", "staging", 1, 2, "better"),
        ("ada", "production", None, 2, "ship it"),
    ]
    assert registry.version("clf@production").version == 2
    assert registry.version("clf@production").aliases == ["production", "staging"]
    with pytest.raises(NotFound, match="no alias canary"):
        registry.version("clf@canary")


def test_archived_versions_are_kept_and_left_out_of_the_newest(
    registry: Registry, tmp_path: Path
) -> None:
    job = make_job(tmp_path / "jobs")
    for _ in range(2):
        registry.register("clf", Source(job.id), job, user="bo")
    registry.move_alias("clf", "staging", 2, user="bo")
    with pytest.raises(Conflict, match="@staging"):
        registry.archive("clf", 2, user="bo")
    registry.archive("clf", 1, user="bo", reason="bad data")
    assert registry.version("clf").version == 2
    assert registry.version("clf/1").archived  # still there, by number
    with pytest.raises(Conflict, match="archived"):
        registry.move_alias("clf", "canary", 1, user="bo")
    registry.move_alias("clf", "staging", None, user="bo")
    registry.archive("clf", 2, user="bo")
    with pytest.raises(NotFound, match="not archived"):
        registry.version("clf")
    assert registry.archive("clf", 1, user="bo", archived=False).latest == 1


def test_a_job_finds_the_registry_beside_its_directory(tmp_path: Path) -> None:
    job = make_job(tmp_path / "jobs")
    found = here.beside(Path(job.job_dir).parent)
    assert isinstance(found.records, FileRecords)
    assert found.home == tmp_path / "jobs" / ".models"
    assert found.policy().protected_aliases == {"production": "model-approver"}


def test_a_long_scalars_file_is_read_a_page_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainhub.registry import snapshot

    job = make_job(tmp_path / "jobs")
    rows = [{"step": s, "name": "loss", "value": 10.0 - s, "rank": 0} for s in range(1, 8)]
    scalars = Path(job.job_dir) / "metrics" / "scalars.jsonl"
    scalars.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(snapshot, "SCALAR_PAGE", 2)
    assert snapshot.read_job(job, 5)[1] == {"loss": 5.0}
    assert snapshot.read_job(job, None)[1] == {"loss": 3.0}


def test_versions_list_their_metrics_side_by_side(registry: Registry, tmp_path: Path) -> None:
    import trainhub.cli  # noqa: F401 - the groups' verb modules load through the CLI's parser
    from trainhub.registry.cli import audit_table, versions_table

    job = make_job(tmp_path / "jobs")
    registry.register("clf", Source(job.id), job, user="bo")
    (Path(job.job_dir) / "metrics" / "scalars.jsonl").write_text(
        json.dumps({"step": 9, "name": "loss", "value": 0.25}) + "\n"
    )
    registry.register("clf", Source(job.id), job, user="bo")
    view = registry.move_alias("clf", "staging", 2, user="bo", reason="lower loss")
    table = versions_table(view)
    assert table[0] == ("VERSION", "ALIASES", "JOB", "BY", "REGISTERED", "acc", "loss", "STATE")
    assert [(r[0], r[1], r[5], r[6]) for r in table[1:]] == [
        ("2", "@staging", "-", "0.25"),
        ("1", "-", "0.9", "-"),
    ]
    assert audit_table(view)[-1][1:] == ("bo", "@staging none -> 2", "lower loss")


def test_on_a_guarded_volume_entries_stay_readable_by_the_team(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    os.chmod(jobs, 0o1777)  # what the controller makes of a team's jobs root (and .models)
    (jobs / ".models").mkdir()
    os.chmod(jobs / ".models", 0o1777)
    job = make_job(jobs)
    found = here.beside(jobs)
    version = found.register("clf", Source(job.id), job, user="ada")
    entry = jobs / ".models" / "clf.v1.json"
    assert entry.stat().st_mode & 0o777 == 0o644  # a sweep's record there would be 0600
    folder = found.home / version.files.folder
    assert folder.stat().st_mode & 0o777 == 0o755
    assert all(p.stat().st_mode & 0o777 == 0o444 for p in folder.rglob("*") if p.is_file())


def write_checkpoint(job: JobFacts, step: int, metrics: dict[str, float]) -> Path:
    from trainhub.checkpoint.layout import step_name

    folder = Path(job.job_dir) / "checkpoints" / step_name(step)
    folder.mkdir(parents=True)
    (folder / "state.pt").write_bytes(b"state-%d" % step)
    files = [{"name": "state.pt", "bytes": (folder / "state.pt").stat().st_size, "sha256": "x"}]
    manifest = {"step": step, "time": 1.0, "metrics": metrics, "files": files, "attempt": 1}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_checkpoint_is_linked_even_from_a_running_job_with_its_step_metrics(
    registry: Registry, tmp_path: Path
) -> None:
    job = make_job(tmp_path / "jobs")
    running = JobFacts(job.id, job.name, job.user, 1, job.job_dir, state="running")
    write_checkpoint(job, 3, {"val_loss": 0.5})
    newest = write_checkpoint(job, 8, {"val_loss": 0.25})
    v = registry.register("clf", Source(job.id), running, user="ada")  # the newest
    assert (v.source.kind, v.source.step, v.source.attempt) == ("checkpoint", 8, 1)
    assert v.metrics == {"acc": 0.9, "val_loss": 0.25} and v.files.linked == 2
    assert os.stat(registry.files(v) / "state.pt").st_ino == os.stat(newest / "state.pt").st_ino
    older = registry.register("clf", Source(job.id, step=3), running, user="ada")
    assert older.source.step == 3 and older.metrics["val_loss"] == 0.5
    with pytest.raises(NotFound, match=r"no checkpoint of step 5 \(3, 8\)"):
        registry.register("clf", Source(job.id, step=5), running, user="ada")
    assert [v.version for v in registry.describe("clf").versions] == [2, 1]
