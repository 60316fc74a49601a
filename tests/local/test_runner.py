"""The rank runner as torchrun starts it: a real ``python -m trainhub.rank.runner`` process
per rank."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from trainhub.bundle.compile import compile_bundle
from trainhub.jobs.directory import JobDir
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.classify import PIP_INSTALL_ERROR, classify_exception
from trainhub.rank.install import install_requirements

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks"
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
    "AAAABJRU5ErkJggg=="
)


class Run:
    def __init__(
        self, job: JobDir, proc: subprocess.CompletedProcess[str], rank: int = 0, attempt: int = 0
    ):
        self.job, self.proc, self.rank, self.attempt = job, proc, rank, attempt

    @property
    def log(self) -> str:
        return self.job.rank_log(self.rank).read_text()

    @property
    def status(self) -> dict:
        return json.loads(self.job.rank_status(self.attempt, self.rank).read_text())

    @property
    def events(self) -> list[dict]:
        return list(self.job.iter_events())


def make_job(tmp: Path, workspace: Path, source: dict, parameters: dict | None = None) -> JobDir:
    job = JobDir(tmp / "job").create()
    spec = JobSpec.model_validate({"name": "t", "source": source, "parameters": parameters or {}})
    compile_bundle(spec, workspace, job.bundle)
    return job


def rank_env(job: JobDir, rank: int = 0, attempt: int = 0) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRAINHUB_", "TORCHELASTIC_"))}
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE="1",
        LOCAL_WORLD_SIZE="1",
        TRAINHUB_JOB_ID="t-1",
        TRAINHUB_JOB_DIR=str(job.root),
        TRAINHUB_ATTEMPT=str(attempt),
    )
    return env


def run_rank(job: JobDir, rank: int = 0, attempt: int = 0) -> Run:
    proc = subprocess.run(
        [sys.executable, "-m", "trainhub.rank.runner", str(job.bundle)],
        env=rank_env(job, rank, attempt),
        cwd=job.root,
        capture_output=True,
        text=True,
        timeout=180,
    )
    return Run(job, proc, rank, attempt)


def notebook_job(tmp: Path, name: str, parameters: dict | None = None) -> JobDir:
    ws = tmp / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / name, ws / name)
    return make_job(tmp, ws, {"kind": "notebook", "path": name}, parameters)


def cells_job(tmp: Path, sources: list[str]) -> JobDir:
    ws = tmp / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(s) for s in sources]), ws / "nb.ipynb")
    return make_job(tmp, ws, {"kind": "notebook", "path": "nb.ipynb"})


# --- one run of the fixture notebook, looked at from every side ----------------------------------


@pytest.fixture(scope="module")
def runner_run(tmp_path_factory) -> Run:
    return run_rank(notebook_job(tmp_path_factory.mktemp("runner"), "runner.ipynb"))


def test_fails_with_exit_status_1_and_nothing_on_the_console(runner_run):
    assert runner_run.proc.returncode == 1
    assert runner_run.proc.stdout == "" and runner_run.proc.stderr == ""


def test_output_of_every_kind_lands_in_the_rank_log(runner_run):
    log = runner_run.log
    for expected in [
        "hello from rank 0",  # print
        "{'answer': 41}",  # display() of a plain object
        "bold words",  # HTML as text
        "\n42\n",  # the value of the last expression
        "hi from the shell",  # a ! subprocess writing to fd 1
        "Wall time:",  # %time
        "total 499500",
        "to stderr",  # sys.stderr
        "raw fd write",  # os.write(1, ...)
        "image saved: outputs/rank0-cell2-0.png",
    ]:
        assert expected in log, expected
    assert "<b>" not in log and "hidden()" not in log
    assert "never printed" not in log
    assert (runner_run.job.outputs / "rank0-cell2-0.png").read_bytes() == PNG_1X1


def test_events_per_cell_stop_at_the_failing_cell(runner_run):
    cells = [(e["cell_index"], e["phase"]) for e in runner_run.events if e["type"] == "cell"]
    assert cells == [(i, phase) for i in range(1, 8) for phase in ("start", "end")]
    ends = [e for e in runner_run.events if e["type"] == "cell" and e["phase"] == "end"]
    assert all(e["rank"] == 0 and e["seconds"] >= 0 for e in ends)
    assert [e["ok"] for e in ends] == [True] * 6 + [False]
    (error,) = [e for e in runner_run.events if e["type"] == "cell_error"]
    assert (error["cell_index"], error["line"], error["exception"], error["failure_class"]) == (
        7,
        3,
        "ValueError",
        "code",
    )


def test_error_is_mapped_to_cell_index_7_line_3(runner_run):
    status = runner_run.status
    assert status["outcome"] == "error"
    assert (status["cell_index"], status["line"], status["where"]) == (7, 3, "cell 8, line 3")
    assert (status["exception"], status["message"], status["failure_class"]) == (
        "ValueError",
        "boom on line 3",
        "code",
    )
    assert "Cell 8, line 3" in status["traceback"]
    assert "----> 3 raise ValueError('boom on line 3')" in status["traceback"]
    assert "Cell 8, line 3" in runner_run.log  # the same traceback, for people reading the log


def test_matplotlib_figures_are_saved_as_images(tmp_path):
    # matplotlib is optional in the image; where it is installed, figures must not be lost.
    pytest.importorskip("matplotlib")
    job = cells_job(
        tmp_path,
        [
            "import matplotlib, matplotlib.pyplot as plt\n"
            "print('backend', matplotlib.get_backend())",
            "plt.plot([1, 2, 3])\nplt.show()",
            "fig, ax = plt.subplots()\nax.plot([3, 2, 1])\ndisplay(fig)\nplt.close(fig)",
        ],
    )
    run = run_rank(job)
    assert run.proc.returncode == 0, run.log
    assert "backend module://matplotlib_inline.backend_inline" in run.log
    for name in ("rank0-cell1-0.png", "rank0-cell2-0.png"):
        assert f"image saved: outputs/{name}" in run.log
        assert (job.outputs / name).read_bytes().startswith(b"\x89PNG")


# --- outcomes ------------------------------------------------------------------------------------


def test_missing_module_is_an_environment_failure(tmp_path):
    run = run_rank(notebook_job(tmp_path, "missing_module.ipynb"))
    assert run.proc.returncode == 1
    status = run.status
    assert (status["failure_class"], status["exception"]) == ("environment", "ModuleNotFoundError")
    assert (status["cell_index"], status["line"]) == (1, 2)
    assert "trainhub_no_such_module" in status["message"]


def test_success_with_parameters_rank_and_attempt(tmp_path):
    job = notebook_job(tmp_path, "select.ipynb", {"lr": 2.0, "epochs": 5})
    run = run_rank(job, rank=3, attempt=1)
    assert run.proc.returncode == 0, run.log
    assert run.status == {"outcome": "ok"}
    assert "result 10.0" in run.log and "report 10.0" in run.log
    assert "skipped cell ran" not in run.log
    assert job.rank_log(3).exists() and not job.rank_log(0).exists()
    assert {e["attempt"] for e in run.events if e["type"] == "cell"} == {1}
    assert [e["cell_index"] for e in run.events if e["phase"] == "end"] == [1, 2, 3, 6]


def test_cells_run_in_the_notebook_directory_with_its_modules(tmp_path):
    ws = tmp_path / "ws"
    (ws / "proj").mkdir(parents=True)
    (ws / "proj" / "helper.py").write_text("VALUE = 'from helper'\n")
    (ws / "proj" / "data.txt").write_text("from data")
    nbformat.write(
        new_notebook(
            cells=[new_code_cell("import helper\nprint(helper.VALUE, open('data.txt').read())")]
        ),
        ws / "proj" / "nb.ipynb",
    )
    run = run_rank(make_job(tmp_path, ws, {"kind": "notebook", "path": "proj/nb.ipynb"}))
    assert run.proc.returncode == 0, run.log
    assert "from helper from data" in run.log


def test_a_traceback_names_workspace_files_by_their_path_in_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "proj").mkdir(parents=True)
    (ws / "proj" / "helper.py").write_text("def f():\n    return 1 / 0\n")
    cells = [new_code_cell("import helper\nhelper.f()")]
    nbformat.write(new_notebook(cells=cells), ws / "proj" / "nb.ipynb")
    run = run_rank(make_job(tmp_path, ws, {"kind": "notebook", "path": "proj/nb.ipynb"}))
    assert "File proj/helper.py:2, in f()" in run.status["traceback"]
    assert "bundle" not in run.status["traceback"] and "bundle" not in run.log
    (error,) = json.loads((run.job.root / "notebook.ipynb").read_text())["cells"][0]["outputs"]
    assert "File proj/helper.py:2, in f()" in "\n".join(error["traceback"])


def test_sys_exit_zero_before_the_last_cell_is_a_code_failure(tmp_path):
    run = run_rank(
        cells_job(tmp_path, ["print('before')", "import sys\nsys.exit(0)", "print('after')"])
    )
    assert run.proc.returncode == 1
    status = run.status
    assert (status["failure_class"], status["cell_index"], status["line"]) == ("code", 1, 2)
    assert status["message"] == (
        "sys.exit(0) before the notebook's last cell: the cells after cell 2 did not run"
    )
    assert "before" in run.log and "\nafter\n" not in run.log


def test_sys_exit_zero_in_the_last_cell_ends_successfully(tmp_path):
    run = run_rank(cells_job(tmp_path, ["print('before')", "import sys\nsys.exit(0)"]))
    assert run.proc.returncode == 0
    assert run.status == {"outcome": "ok"}
    assert "cell 2, the last, called sys.exit(0)" in run.log


def test_sys_exit_nonzero_is_a_code_failure(tmp_path):
    run = run_rank(cells_job(tmp_path, ["import sys\n\nsys.exit(3)"]))
    assert run.proc.returncode == 1
    status = run.status
    assert (status["exception"], status["message"], status["failure_class"]) == (
        "SystemExit",
        "exit status 3",
        "code",
    )
    assert (status["cell_index"], status["line"]) == (0, 3)


def test_error_raised_in_a_function_from_an_earlier_cell(tmp_path):
    run = run_rank(cells_job(tmp_path, ["def f():\n    return 1 / 0", "x = 1\nf()"]))
    status = run.status
    assert (status["cell_index"], status["line"], status["exception"]) == (
        1,
        2,
        "ZeroDivisionError",
    )
    assert status["raised_at"] == {"cell_index": 0, "line": 2}


def test_syntax_error_names_the_cell_and_line(tmp_path):
    run = run_rank(cells_job(tmp_path, ["x = 1", "y = 2\nif y\n    pass"]))
    status = run.status
    assert (status["cell_index"], status["line"], status["exception"]) == (1, 2, "SyntaxError")
    assert status["failure_class"] == "code"


def test_script_with_args_and_an_error_in_a_workspace_module(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "lib.py").write_text(
        "def check(n):\n    if n > 1:\n        raise RuntimeError(f'n={n}')\n"
    )
    (ws / "src" / "train.py").write_text(
        "import sys\nimport lib\n\nprint('argv', sys.argv[1:])\nlib.check(int(sys.argv[2]))\n"
    )
    job = make_job(tmp_path, ws, {"kind": "script", "path": "src/train.py", "args": ["--n", "5"]})
    run = run_rank(job)
    assert run.proc.returncode == 1
    assert "argv ['--n', '5']" in run.log and "RuntimeError: n=5" in run.log
    status = run.status
    assert (status["file"], status["line"], status["where"]) == (
        "src/train.py",
        5,
        "src/train.py, line 5",
    )
    assert status["raised_at"] == {"file": "src/lib.py", "line": 3}
    assert status["failure_class"] == "code"
    assert [e["phase"] for e in run.events if e["type"] == "script"] == ["start", "end"]


def test_script_success(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.txt").write_text("payload")
    (ws / "ok.py").write_text("print(open('data.txt').read())\nraise SystemExit(0)\n")
    run = run_rank(make_job(tmp_path, ws, {"kind": "script", "path": "ok.py"}))
    assert run.proc.returncode == 0 and run.status == {"outcome": "ok"}
    assert "payload" in run.log


def test_unreadable_bundle_is_an_infrastructure_failure(tmp_path):
    job = JobDir(tmp_path / "job").create()  # an empty bundle: no manifest
    run = run_rank(job)
    assert run.proc.returncode == 1
    assert run.status["failure_class"] == "infrastructure"
    assert "cannot load the bundle" in run.log


# --- pip -----------------------------------------------------------------------------------------


def write_wheel(path: Path) -> None:
    """A minimal pure-Python wheel, so pip installs without an index."""
    files = {
        "tinypkg/__init__.py": "VALUE = 7\n",
        "tinypkg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
        "tinypkg-0.1.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + "tinypkg-0.1.dist-info/RECORD,,\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
        zf.writestr("tinypkg-0.1.dist-info/RECORD", record)


def test_install_requirements_runs_pip_from_the_bundle(tmp_path):
    ws = tmp_path / "ws"
    write_wheel(ws / "dist" / "tinypkg-0.1-py3-none-any.whl")
    nbformat.write(
        new_notebook(
            cells=[
                new_code_cell(
                    "%pip install --no-index --no-deps --target=site "
                    "./dist/tinypkg-0.1-py3-none-any.whl\nx = 1"
                )
            ]
        ),
        ws / "nb.ipynb",
    )
    job = make_job(tmp_path, ws, {"kind": "notebook", "path": "nb.ipynb"})
    ok, detail, failed = install_requirements(job.bundle, job.supervisor_log)
    assert ok and failed is None, job.supervisor_log.read_text()
    assert "1 pip line" in detail
    assert (job.bundle / "site" / "tinypkg" / "__init__.py").read_text() == "VALUE = 7\n"
    assert "cell 1, line 1: %pip install" in job.supervisor_log.read_text()


def test_install_requirements_failure_is_an_environment_failure(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    nbformat.write(
        new_notebook(
            cells=[
                new_code_cell(
                    "x = 1\n!pip install --no-index --find-links=. trainhub-no-such-package-xyz"
                )
            ]
        ),
        ws / "nb.ipynb",
    )
    job = make_job(tmp_path, ws, {"kind": "notebook", "path": "nb.ipynb"})
    ok, detail, failed = install_requirements(job.bundle, job.supervisor_log)
    assert not ok and (failed.cell_index, failed.line) == (0, 2)
    assert "cell 1, line 2" in detail and "trainhub-no-such-package-xyz" in detail
    assert "exited with status 1" in detail
    assert "No matching distribution" in job.supervisor_log.read_text()
    assert classify_exception(PIP_INSTALL_ERROR, detail, "") is FailureClass.ENVIRONMENT


def test_no_requirements_is_a_quick_yes(tmp_path):
    job = cells_job(tmp_path, ["x = 1"])
    assert install_requirements(job.bundle, job.supervisor_log) == (
        True,
        "no packages to install",
        None,
    )
    assert not job.supervisor_log.exists()


# --- under torchrun ------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_ranks_under_torchrun(tmp_path):
    job = notebook_job(tmp_path, "distributed.ipynb")
    env = {
        k: v
        for k, v in rank_env(job).items()
        if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "trainhub.rank.runner",
            str(job.bundle),
        ],
        env=env,
        cwd=job.bundle,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr + "".join(
        job.rank_log(r).read_text() for r in job.log_ranks()
    )
    assert job.log_ranks() == [0, 1]
    for rank in (0, 1):
        assert f"rank {rank} of 2: sum 3" in job.rank_log(rank).read_text()
        assert json.loads(job.rank_status(0, rank).read_text()) == {"outcome": "ok"}
    ends = {(e["rank"], e["cell_index"]) for e in job.iter_events() if e.get("phase") == "end"}
    assert ends == {(r, c) for r in (0, 1) for c in (0, 1, 2)}
