"""The model registry end to end on the local backend with real torchrun jobs: a job of two
ranks trains and registers its own output from inside; the CLI registers the same output
of the ended job (linked, no copy), moves the production alias with a reason; a second job
loads ``clf@production`` by name and has it in its lineage as an input."""

from __future__ import annotations

import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.local.conftest import Trainhub

pytestmark = pytest.mark.slow

TRAIN = new_notebook(
    cells=[
        new_code_cell(
            "import os, torch, trainhub\n"
            "torch.manual_seed(0)\n"
            "model = torch.nn.Linear(4, 2)\n"
            "trainhub.log(step=7, val_acc=0.875)\n"
            "if os.environ['RANK'] == '0':\n"
            "    torch.save(model.state_dict(), trainhub.outputs.path() / 'model.pt')\n"
            "    v = trainhub.models.register('clf', path=trainhub.outputs.path() / 'model.pt')\n"
            "    print('registered', v.model, v.version, v.metrics, flush=True)\n"
        )
    ]
)
EVALUATE = new_notebook(
    cells=[
        new_code_cell(
            "import torch, trainhub\n"
            "torch.manual_seed(0)\n"
            "expected = torch.nn.Linear(4, 2).state_dict()\n"
            "weights = trainhub.models.load('clf@production')\n"
            "assert all(torch.equal(weights[k], expected[k]) for k in expected)\n"
            "print('loaded', trainhub.models.path('clf@production').name, flush=True)\n"
        )
    ]
)


def test_a_job_registers_its_model_and_another_loads_it_by_alias(
    trainhub_env: Trainhub,
) -> None:
    th = trainhub_env
    nbformat.write(TRAIN, th.workspace / "train.ipynb")
    nbformat.write(EVALUATE, th.workspace / "evaluate.ipynb")
    train = th.submit("train.ipynb", "--nproc", "2")
    assert th.wait(train)["state"] == "succeeded", th.logs(train)
    assert "registered clf 1 {'val_acc': 0.875}" in th.logs(train)

    # The ended job's output again, from the CLI: hard-linked, not copied.
    assert th.run("model", "register", "clf", "--from", f"{train}:model.pt").stdout.strip() == (
        "clf/2"
    )
    two = th.json("model", "describe", "clf/2")
    assert two["files"]["linked"] == 1 and two["source"] == {
        "job": train,
        "attempt": 0,
        "kind": "output",
        "step": None,
        "path": "model.pt",
    }
    assert two["lineage"]["job"]["id"] == train and two["lineage"]["source"]["path"] == (
        "train.ipynb"
    )
    kept = th.run("model", "path", "clf/2").stdout.strip()
    output = th.job_dir(train) / "outputs" / "model.pt"
    assert os.stat(kept).st_ino == os.stat(output).st_ino

    th.run("model", "alias", "clf", "production", "2", "--reason", "best val_acc")
    versions = th.run("model", "versions", "clf").stdout
    assert "@production" in versions and "val_acc" in versions and "0.875" in versions
    audit = th.json("model", "audit", "clf")
    assert audit[-1] == {**audit[-1], "event": "alias", "alias": "production", "version": 2,
                         "previous": None, "reason": "best val_acc"}  # fmt: skip

    output.unlink()  # what retention does to the job's outputs: the version stays
    evaluate = th.submit("evaluate.ipynb")
    assert th.wait(evaluate)["state"] == "succeeded", th.logs(evaluate)
    assert "loaded model.pt" in th.logs(evaluate)
    inputs = th.describe(evaluate)["lineage"]["models"]
    assert [(i["model"], i["version"], i["asked"], i["source_job"]) for i in inputs] == [
        ("clf", 2, "clf@production", train)
    ]
