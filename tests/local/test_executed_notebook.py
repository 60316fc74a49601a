"""The executed notebook: real ranks (a real torchrun job and the runner as torchrun starts it)
write ``notebook.ipynb`` with streams, a matplotlib figure, HTML, results with their execution
counts and the failing cell's error, capped, and readable whole at any moment while they run."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests.local.conftest import Trainhub, wait_for
from tests.local.test_runner import cells_job, rank_env
from trainhub.jobs.directory import JobDir

FIGURE = "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')"
FAILING = "x = 1\ndef f():\n    return 1 / 0\nf()"
NOTEBOOK_CELLS = [
    new_markdown_cell("# A job"),
    new_code_cell("import os\nrank = os.environ['RANK']\nprint('hello from rank', rank)"),
    new_code_cell(FIGURE),
    new_code_cell("from IPython.display import HTML\nHTML('<b>bold</b> words')"),
    new_code_cell("6 * 7"),
    new_code_cell(FAILING),
    new_code_cell("print('never printed')"),
]


def read_notebook(path: Path) -> nbformat.NotebookNode:
    node = nbformat.reads(path.read_text(), as_version=4)
    nbformat.validate(node)
    return node


def outputs_of(cell: dict, kind: str) -> list[dict]:
    return [o for o in cell["outputs"] if o["output_type"] == kind]


def check_executed(nb: nbformat.NotebookNode, rank: int) -> None:
    """The notebook of NOTEBOOK_CELLS as rank ``rank`` ran it."""
    markdown, *cells = nb.cells
    assert markdown == NOTEBOOK_CELLS[0]  # kept as written
    assert [c.metadata.trainhub.cell_index for c in cells] == [1, 2, 3, 4, 5, 6]
    assert [c.execution_count for c in cells] == [1, 2, 3, 4, 5, None]
    assert [c.metadata.trainhub.status for c in cells] == ["ok"] * 4 + ["error", "not run"]
    assert cells[0].outputs == [
        {"output_type": "stream", "name": "stdout", "text": f"hello from rank {rank}\n"}
    ]
    (figure,) = outputs_of(cells[1], "display_data")
    assert base64.b64decode(figure["data"]["image/png"]).startswith(b"\x89PNG")
    (html,) = outputs_of(cells[2], "execute_result")
    assert html["data"]["text/html"] == "<b>bold</b> words" and html["execution_count"] == 3
    assert outputs_of(cells[3], "execute_result")[0]["data"] == {"text/plain": "42"}
    (error,) = cells[4].outputs
    assert (error["output_type"], error["ename"], error["evalue"]) == (
        "error",
        "ZeroDivisionError",
        "division by zero",
    )
    text = "\n".join(error["traceback"])
    assert "Cell 6, line 4" in text and "----> 3     return 1 / 0" in text
    assert cells[5].outputs == [] and cells[5].source == "print('never printed')"
    assert nb.metadata.trainhub.state == "failed" and nb.metadata.trainhub.rank == rank


@pytest.mark.slow
def test_a_two_rank_job_keeps_the_notebooks_its_spec_asks_for(trainhub_env: Trainhub) -> None:
    nbformat.write(new_notebook(cells=NOTEBOOK_CELLS), trainhub_env.workspace / "run.ipynb")
    job_id = trainhub_env.submit("run.ipynb", "--nproc", "2", "--notebook-ranks", "0,1")
    job = trainhub_env.wait(job_id)
    assert job["state"] == "failed" and job["verdict"]["failure_class"] == "code"
    job_dir = trainhub_env.job_dir(job_id)
    check_executed(read_notebook(job_dir / "notebook.ipynb"), rank=0)
    check_executed(read_notebook(job_dir / "notebook-rank-1.ipynb"), rank=1)
    assert "hello from rank 1" in trainhub_env.logs(job_id, rank=1)  # the log keeps it all too

    printed = json.loads(trainhub_env.run("output", job_id).stdout)
    assert printed == json.loads((job_dir / "notebook.ipynb").read_text())
    html = trainhub_env.workspace / "run.html"
    trainhub_env.run("output", job_id, "--rank", "1", "--html", "-o", str(html))
    page = html.read_text()
    assert "data:image/png;base64," in page and "hello from rank 1" in page
    assert "ZeroDivisionError" in page and "<b>bold</b> words" in page


@pytest.mark.slow
def test_by_default_only_rank_0_keeps_one(trainhub_env: Trainhub) -> None:
    nbformat.write(new_notebook(cells=NOTEBOOK_CELLS[:3]), trainhub_env.workspace / "ok.ipynb")
    job_id = trainhub_env.submit("ok.ipynb", "--nproc", "2")
    assert trainhub_env.wait(job_id)["state"] == "succeeded"
    job_dir = trainhub_env.job_dir(job_id)
    assert read_notebook(job_dir / "notebook.ipynb").metadata.trainhub.state == "completed"
    assert not (job_dir / "notebook-rank-1.ipynb").exists()
    refused = trainhub_env.run("output", job_id, "--rank", "1", check=False)
    assert refused.returncode == 1
    assert "Rank 1 of job" in refused.stderr and "keeps no executed notebook" in refused.stderr
    assert "its output is in its log" in refused.stderr

    bad = trainhub_env.run(
        "submit", "ok.ipynb", "--nproc", "2", "--notebook-ranks", "2", check=False
    )
    assert bad.returncode == 2
    assert "notebook_ranks: the job has no rank 2; its ranks are 0 to 1" in bad.stderr


def run_rank_with(job: JobDir, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainhub.rank.runner", str(job.bundle)],
        env={**rank_env(job), **env},
        cwd=job.root,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_outputs_and_the_file_are_capped_with_a_marker(tmp_path: Path) -> None:
    job = cells_job(
        tmp_path / "one",
        [
            "print('x' * 5000)\nprint('after the cut')",
            "from IPython.display import HTML\ndisplay(HTML('<p>' + 'y' * 5000 + '</p>'))",
            "print('small')",
        ],
    )
    run = run_rank_with(job, TRAINHUB_LIMIT_NOTEBOOK_OUTPUT_BYTES="1024")
    assert run.returncode == 0
    nb = read_notebook(job.root / "notebook.ipynb")
    (stream,) = nb.cells[0].outputs
    assert stream.text.startswith("x" * 1000) and len(stream.text) < 1200
    assert stream.text.endswith(
        "[trainhub: output cut at 1 KiB; the rest of it is in logs/rank-0.log]\n"
    )
    (marker,) = nb.cells[1].outputs
    assert marker.name == "stderr" and "over the 1 KiB an output may hold; left out" in marker.text
    assert "text/html" in marker.text and "y" * 100 not in marker.text
    assert nb.cells[2].outputs[0].text == "small\n"
    log = job.rank_log(0).read_text()
    assert "x" * 5000 in log and "after the cut" in log and "y" * 5000 in log  # all in the log

    job = cells_job(tmp_path / "whole", [f"for i in range(200):\n    print({'z' * 90!r}, i)"] * 3)
    run = run_rank_with(job, TRAINHUB_LIMIT_NOTEBOOK_BYTES=str(32 * 1024))
    assert run.returncode == 0
    path = job.root / "notebook.ipynb"
    assert path.stat().st_size <= 32 * 1024
    nb = read_notebook(path)
    assert nb.metadata.trainhub.truncated is True
    text = json.dumps(nb)
    assert text.count("the notebook reached its") == 1
    assert "further outputs are in logs/rank-0.log only" in text
    assert [c.execution_count for c in nb.cells] == [1, 2, 3]  # every cell is still there


def test_readers_see_the_cells_done_so_far_and_never_half_a_file(tmp_path: Path) -> None:
    go = tmp_path / "go"
    job = cells_job(
        tmp_path,
        [
            "print('first cell')",
            f"import os, time\nprint('inside the long cell', flush=True)\n"
            f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\nprint('released')",
            "print('last cell')",
        ],
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainhub.rank.runner", str(job.bundle)],
        env=rank_env(job),
        cwd=job.root,
    )
    path = job.root / "notebook.ipynb"
    reads = 0

    def seen() -> nbformat.NotebookNode | None:
        nonlocal reads
        if not path.exists():
            return None
        reads += 1
        nb = read_notebook(path)  # a torn file would fail to parse here
        long_cell = nb.cells[1]
        return nb if long_cell.outputs and long_cell.metadata.trainhub.status == "running" else None

    try:
        nb = wait_for(seen, 60, "the long cell's first output", interval=0.01)
        assert nb.cells[0].outputs[0].text == "first cell\n"
        assert nb.cells[0].metadata.trainhub.status == "ok"
        assert nb.cells[1].outputs[0].text == "inside the long cell\n"
        assert nb.cells[2].execution_count is None and nb.metadata.trainhub.state == "running"
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:  # rewritten meanwhile: always whole
            seen()
        go.touch()
        assert proc.wait(60) == 0
    finally:
        proc.kill()
    nb = read_notebook(path)
    assert [c.outputs[-1].text for c in nb.cells] == [
        "first cell\n",
        "inside the long cell\nreleased\n",  # one stream, as a kernel's output area merges it
        "last cell\n",
    ]
    assert nb.metadata.trainhub.state == "completed" and reads > 10


def test_a_rank_asked_to_stop_keeps_what_it_ran(tmp_path: Path) -> None:
    job = cells_job(
        tmp_path, ["print('done')", "import time\nprint('waiting', flush=True)\ntime.sleep(600)"]
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainhub.rank.runner", str(job.bundle)],
        env=rank_env(job),
        cwd=job.root,
        start_new_session=True,
    )
    path = job.root / "notebook.ipynb"
    try:
        wait_for(lambda: path.exists() and read_notebook(path).cells[1].outputs, 60, "cell 2")
        os.killpg(proc.pid, signal.SIGTERM)  # as torchrun and the supervisor stop a job
        proc.wait(60)
    finally:
        proc.kill()
    nb = read_notebook(path)
    assert nb.metadata.trainhub.state == "stopped"
    assert [c.metadata.trainhub.status for c in nb.cells] == ["ok", "stopped"]
    assert [c.outputs[0].text for c in nb.cells] == [
        "done\n",
        "waiting\n",  # trainhub's own "SIGTERM received" is in the log alone
    ]
    assert (
        "[trainhub] SIGTERM received: running the job's stop callbacks"
        in job.rank_log(0).read_text()
    )


def test_it_is_the_users_notebook_with_outputs(tmp_path: Path) -> None:
    from tests.local.test_runner import make_job, run_rank

    markdown = new_markdown_cell("# Title\n![x](attachment:x.png)", id="intro")
    markdown.attachments = {"x.png": {"image/png": base64.b64encode(b"png").decode()}}
    params = new_code_cell("lr = 0.1", id="params", metadata={"tags": ["parameters"]})
    skipped = new_code_cell("print('skipped')", id="skip", metadata={"tags": ["skip-execution"]})
    cells = [
        markdown,
        params,
        nbformat.v4.new_raw_cell("raw text", id="raw", metadata={"format": "text/plain"}),
        skipped,
        new_code_cell("print('lr', lr)", id="uses", metadata={"collapsed": True}),
    ]
    ws = tmp_path / "ws"
    ws.mkdir()
    written = new_notebook(cells=cells, metadata={"authors": [{"name": "a"}]})
    nbformat.write(written, ws / "nb.ipynb")
    job = make_job(tmp_path, ws, {"kind": "notebook", "path": "nb.ipynb"}, {"lr": 0.5})
    assert run_rank(job).proc.returncode == 0

    nb = read_notebook(job.root / "notebook.ipynb")
    nbformat.validate(nb)
    assert [c.id for c in nb.cells] == [
        "intro",
        "params",
        "raw",
        "skip",
        "trainhub-parameters",
        "uses",
    ]
    assert nb.cells[0] == markdown and nb.cells[2] == cells[2]  # as written, attachments too
    assert nb.metadata.authors == [{"name": "a"}]
    status = [c.metadata.get("trainhub", {}).get("status") for c in nb.cells]
    assert status == [None, "ok", None, "skipped", "ok", "ok"]
    assert nb.cells[3].outputs == [] and nb.cells[3].execution_count is None
    assert nb.cells[4].source.startswith("# Parameters injected by trainhub")
    assert nb.cells[5].metadata.collapsed is True
    assert [o.text for o in nb.cells[5].outputs] == ["lr 0.5\n"]
    assert [c.execution_count for c in nb.cells if c.cell_type == "code"] == [1, None, 2, 3]
