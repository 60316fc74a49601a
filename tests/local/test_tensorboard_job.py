"""A job that logs with TensorBoard's SummaryWriter, as most PyTorch code does: its scalars
are the job's training scalars, as if logged with trainhub.log."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.local.conftest import Trainhub

CELL = """from torch.utils.tensorboard import SummaryWriter
writer = SummaryWriter()  # runs/<date>_<host>, as by default
for step in range(5):
    writer.add_scalar('loss', 1.0 / (step + 1), step)
writer.close()"""


def test_summary_writer_scalars_are_the_jobs_scalars(trainhub_env: Trainhub) -> None:
    nbformat.write(new_notebook(cells=[new_code_cell(CELL)]), trainhub_env.workspace / "tb.ipynb")
    job_id = trainhub_env.submit("tb.ipynb")
    assert trainhub_env.wait(job_id)["state"] == "succeeded", trainhub_env.logs(job_id)
    scalars = trainhub_env.job_dir(job_id) / "metrics" / "scalars.jsonl"
    records = [json.loads(line) for line in scalars.read_text().splitlines()]
    assert [(r["step"], r["name"], r["value"]) for r in records] == [
        (step, "loss", pytest.approx(1.0 / (step + 1))) for step in range(5)
    ]
    assert {(r["source"], r["attempt"]) for r in records} == {("tensorboard", 0)}
