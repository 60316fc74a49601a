"""Job outputs on the local backend with real jobs: a notebook writes to
trainhub.outputs.path(), ``trainhub outputs`` lists and fetches them after the job ended, and
``trainhub cleanup`` applies the retention policy without touching a running job."""

from __future__ import annotations

import json
import os
import time

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.local.conftest import Trainhub, wait_for

pytestmark = pytest.mark.slow

WRITER = new_notebook(
    cells=[
        new_code_cell(
            "import json, os, trainhub\n"
            "out = trainhub.outputs.path()\n"
            "assert str(out) == os.environ['TRAINHUB_OUTPUT_DIR']\n"
            "rank = int(os.environ['RANK'])\n"
            "(out / f'rank-{rank}.txt').write_text(f'rank {rank} was here\\n')\n"
            "if rank == 0:\n"
            "    (out / 'eval').mkdir()\n"
            "    (out / 'eval' / 'results.json').write_text(json.dumps({'accuracy': 0.93}))\n"
            "    (out / 'weights.bin').write_bytes(bytes(range(256)) * 64)\n"
        )
    ]
)
RESULTS = len(json.dumps({"accuracy": 0.93}))
RANK_LINE = len("rank 0 was here\n")
# Writes one output, then runs until cancelled.
LINGERER = new_notebook(
    cells=[
        new_code_cell(
            "import time, trainhub\n"
            "(trainhub.outputs.path() / 'partial.txt').write_text('still training')\n"
            "time.sleep(300)"
        )
    ]
)


def test_a_notebook_writes_outputs_that_are_listed_and_fetched(trainhub_env: Trainhub) -> None:
    nbformat.write(WRITER, trainhub_env.workspace / "writer.ipynb")
    job_id = trainhub_env.submit("writer.ipynb", "--nproc", "2")
    assert trainhub_env.wait(job_id)["state"] == "succeeded", trainhub_env.logs(job_id)

    listing = trainhub_env.json("outputs", job_id)
    entries = {e["path"]: e for e in listing["entries"]}
    assert list(entries) == [
        "eval",
        "eval/results.json",
        "rank-0.txt",
        "rank-1.txt",
        "weights.bin",
    ]
    assert entries["weights.bin"]["bytes"] == 256 * 64
    assert entries["eval"] == {**entries["eval"], "kind": "dir", "bytes": RESULTS}
    assert listing["files"] == 4 and listing["bytes"] == 16384 + RESULTS + 2 * RANK_LINE
    assert abs(entries["rank-1.txt"]["mtime"] - time.time()) < 600

    text = trainhub_env.run("outputs", job_id).stdout
    assert "eval/results.json" in text and "16.0Ki" in text

    dest = trainhub_env.workspace / "fetched"
    dest.mkdir()
    trainhub_env.run("outputs", job_id, "eval/results.json", "-o", str(dest))
    assert json.loads((dest / "results.json").read_text()) == {"accuracy": 0.93}
    out = trainhub_env.run("outputs", job_id, "rank-1.txt", "-o", "-").stdout
    assert out == "rank 1 was here\n"

    # Links the job leaves in its outputs are neither listed nor followed.
    outputs = trainhub_env.job_dir(job_id) / "outputs"
    os.symlink("/etc/passwd", outputs / "passwd")
    os.symlink(trainhub_env.job_dir(job_id), outputs / "jobdir")
    assert "passwd" not in trainhub_env.run("outputs", job_id).stdout
    for name in ("passwd", "jobdir/spec.json", "../spec.json", "/etc/passwd"):
        refused = trainhub_env.run("outputs", job_id, name, "-o", "-", check=False)
        assert refused.returncode != 0 and "root:" not in refused.stdout, name
        assert "trainhub:" in refused.stderr, name
    assert not (trainhub_env.workspace / "passwd").exists()


def test_cleanup_applies_the_policy_and_never_touches_a_running_job(
    trainhub_env: Trainhub,
) -> None:
    nbformat.write(WRITER, trainhub_env.workspace / "writer.ipynb")
    nbformat.write(LINGERER, trainhub_env.workspace / "lingerer.ipynb")
    done = trainhub_env.submit("writer.ipynb")
    running = trainhub_env.submit("lingerer.ipynb")
    assert trainhub_env.wait(done)["state"] == "succeeded", trainhub_env.logs(done)
    partial = trainhub_env.job_dir(running) / "outputs" / "partial.txt"
    wait_for(partial.exists, 120, "the running job's output")

    # Everything is 40 days old but the finished job's weights.
    old = time.time() - 40 * 86400
    outputs = trainhub_env.job_dir(done) / "outputs"
    for path in [*outputs.rglob("*"), partial]:
        if path.name != "weights.bin":
            os.utime(path, (old, old))
    (trainhub_env.home / "retention.yaml").write_text("retention: {days: 30}\n")

    planned = trainhub_env.json("cleanup", "--dry-run")
    rows = {j["job_id"]: j for j in planned["jobs"]}
    assert planned["dry_run"] is True
    assert rows[done]["deleted_files"] == 2 and rows[done]["freed"] == RESULTS + RANK_LINE
    assert rows[running]["freed"] == 0 and rows[running]["state"] == "running"
    assert (outputs / "eval" / "results.json").exists()  # a dry run deletes nothing

    applied = trainhub_env.json("cleanup")
    rows = {j["job_id"]: j for j in applied["jobs"]}
    assert rows[done]["kept"] == 16384 and rows[done]["bytes"] == 16384 + RESULTS + RANK_LINE
    assert sorted(p.name for p in outputs.rglob("*")) == ["weights.bin"]  # empty eval/ gone
    assert partial.read_text() == "still training"
    [team] = applied["teams"]
    assert team["team"] == "-" and team["policy"] == {
        "days": 30,
        "max_job_size": None,
        "max_team_size": None,
    }
    assert team["freed"] == RESULTS + RANK_LINE
    assert team["bytes"] == 16384 + RESULTS + RANK_LINE + len("still training")

    # A size cap: the finished job may keep 1 KiB, so its weights go too; the running
    # job's file stays whatever its age and the team's total.
    (trainhub_env.home / "retention.yaml").write_text(
        "retention: {max_job_size: 1Ki, max_team_size: '1'}\n"
    )
    table = trainhub_env.run("cleanup").stdout
    assert "FREED" in table and done in table and running in table
    assert not (outputs / "weights.bin").exists() and partial.exists()

    (trainhub_env.home / "retention.yaml").write_text("retention: {max_job_size: lots}\n")
    bad = trainhub_env.run("cleanup", check=False)
    assert bad.returncode == 1
    assert "retention.yaml: retention.max_job_size: 'lots' is not a quantity" in bad.stderr
    trainhub_env.run("cancel", running)
