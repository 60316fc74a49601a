"""Input stalls of real torchrun jobs: a notebook whose dataset sleeps in ``__getitem__`` waits
for its data most of each step, and its description says what to try; the same loop over a
fast dataset hardly waits. The wait is lost time in the jobs' goodput. Neither notebook mentions
trainhub's measuring."""

from __future__ import annotations

import sqlite3

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.local.conftest import Trainhub

CELL = """import time
import torch
import trainhub
from torch.utils.data import DataLoader, Dataset

class Items(Dataset):
    def __len__(self):
        return 24
    def __getitem__(self, i):
        time.sleep(LOAD_S)
        return torch.tensor([float(i)])

loader = DataLoader(Items(), batch_size=4)
for epoch in range(2):
    for batch in loader:
        time.sleep(0.02)  # the step's compute
        trainhub.log(total=batch.sum())"""


def notebook(th: Trainhub, name: str, load_s: float) -> str:
    cell = new_code_cell(CELL.replace("LOAD_S", repr(load_s)))
    nbformat.write(new_notebook(cells=[cell]), th.workspace / name)
    return name


def test_a_slow_dataset_waits_and_says_what_to_try(trainhub_env: Trainhub) -> None:
    th = trainhub_env
    slow = th.submit(notebook(th, "slow.ipynb", 0.03), "--nproc", "2")
    fast = th.submit(notebook(th, "fast.ipynb", 0.0), "--nproc", "2")
    for job in th.wait_all([slow, fast]):
        assert job["state"] == "succeeded", th.logs(job["id"])

    waited = th.describe(slow)["data_wait"]
    # Each batch loads 4 x 30 ms and computes 20 ms: about 86 % of the step waits.
    assert waited["fraction"] > 0.6
    assert set(waited["ranks"]) == {"0", "1"}
    assert all(share > 0.6 for share in waited["ranks"].values())
    assert waited["num_workers"] == 0 and waited["pin_memory"] is False
    assert waited["advice"] == (
        f"{round(waited['fraction'] * 100)} % of each step waits for data: "
        "try num_workers=4, pin_memory=True (the DataLoader has num_workers=0)"
    )
    text = th.run("describe", slow).stdout
    assert "waits for data: try num_workers=4" in text

    quick = th.describe(fast)["data_wait"]
    assert quick["fraction"] < 0.3 and quick["advice"] is None

    # The ended jobs' usage rows: the slow one lost most of its steps' time to the wait.
    th.run("usage", "--since", "1d")
    with sqlite3.connect(th.home / "trainhub.db") as conn:
        rows = dict(conn.execute("SELECT job_id, data_wait_s FROM usage").fetchall())
    assert rows[slow] > 0.6 * 12 * 0.12  # 2 epochs x 6 batches of 4 x 30 ms, most of it
    assert rows[fast] < rows[slow] / 10
