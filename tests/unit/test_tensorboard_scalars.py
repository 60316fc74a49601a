"""TensorBoard's SummaryWriter scalars read into trainhub's, incrementally, with tensorboard's
own reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainhub.metrics.tensorboard import TensorBoardReader
from trainhub.rank import podmetrics

pytest.importorskip("tensorboard")
summary = pytest.importorskip("torch.utils.tensorboard")


def test_scalars_are_read_once_each_as_they_are_written(tmp_path: Path) -> None:
    records: list[dict] = []
    problems: list[str] = []
    reader = TensorBoardReader([tmp_path], records.append, lambda: 2, problems.append)
    writer = summary.SummaryWriter(str(tmp_path / "runs" / "a"))
    for step in range(3):
        writer.add_scalar("loss/train", 1.0 / (step + 1), step)
    writer.add_text("note", "not a scalar", 0)
    writer.flush()
    assert reader.poll() == 3
    writer.add_scalar("loss/train", float("nan"), 3)
    writer.add_scalars("lr", {"group0": 0.5}, 3)  # a file of its own, found on the next scan
    writer.flush()
    assert reader.poll(rescan=True) == 2
    assert reader.poll(rescan=True) == 0
    writer.close()
    assert [(r["step"], r["name"], r["value"]) for r in records[:3]] == [
        (0, "loss/train", 1.0),
        (1, "loss/train", 0.5),
        (2, "loss/train", pytest.approx(1 / 3)),
    ]
    assert {r["name"] for r in records[3:]} == {"loss/train", "lr/group0"}
    assert next(r for r in records if r["step"] == 3 and r["name"] == "loss/train") | {
        "time": 0
    } == {
        "time": 0,
        "step": 3,
        "name": "loss/train",
        "value": None,
        "nonfinite": "nan",
        "rank": 0,
        "attempt": 2,
        "source": "tensorboard",
    }
    assert problems == []


def pod_environment(job_dir: Path, worker: int, attempt: int) -> dict[str, str]:
    """What a Kubernetes job's pod is given (manifests.job_environment, the Indexed Job)."""
    return {
        "TRAINHUB_JOB_ID": "tb-job",
        "TRAINHUB_JOB_DIR": str(job_dir),
        "NODE_RANK": str(worker),
        "TRAINHUB_ATTEMPT": str(attempt),
    }


def scalars(job_dir: Path) -> list[dict]:
    path = job_dir / "metrics" / "scalars.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_pods_sampler_reads_its_attempts_event_files_on_worker_0_only(tmp_path: Path) -> None:
    """On a cluster the pods' samplers read the event files: worker 0's, only the files its
    attempt began (attempt 0's were read by attempt 0's pod), as the attempt the pod runs."""
    job_dir = tmp_path / "tb-job"
    runs = job_dir / "bundle" / "workspace" / "runs"
    earlier = summary.SummaryWriter(str(runs / "attempt-0"))
    earlier.add_scalar("loss", 9.0, 0)
    earlier.close()

    samplers = [
        podmetrics.start(0, 1, pod_environment(job_dir, worker, attempt=1)) for worker in (0, 1)
    ]
    writer = summary.SummaryWriter(str(runs / "attempt-1"))
    for step in (20, 21):
        writer.add_scalar("loss", 1.0 / step, step)
    outputs = summary.SummaryWriter(str(job_dir / "outputs" / "tb"))
    outputs.add_scalar("accuracy", 0.75, 21)
    writer.close()
    outputs.close()
    for sampler in samplers:
        assert sampler is not None
        sampler.stop()  # its last poll looks for new files and reads them to their end

    read = sorted((r["name"], r["step"], r["attempt"]) for r in scalars(job_dir))
    assert read == [("accuracy", 21, 1), ("loss", 20, 1), ("loss", 21, 1)]
    assert {r["source"] for r in scalars(job_dir)} == {"tensorboard"}


def test_a_pods_attempt_must_be_a_number(tmp_path: Path) -> None:
    env = pod_environment(tmp_path, worker=0, attempt=0) | {"TRAINHUB_ATTEMPT": "one"}
    with pytest.raises(ValueError, match="TRAINHUB_ATTEMPT"):
        podmetrics.pod_metrics(0, 1, env)
