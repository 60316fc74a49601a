"""TensorBoard's SummaryWriter scalars read into trainhub's, incrementally, with tensorboard's
own reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainhub.metrics.tensorboard import TensorBoardReader

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
