"""``%pip install`` in a job installs into that job's own layer: its ranks import what it
installed, a later job does not; a failing line is an environment verdict naming its cell,
with pip's words in the job's log."""

from __future__ import annotations

import json

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.local.conftest import Trainhub
from tests.local.test_runner import write_wheel

IMPORT = "import tinypkg\nprint('tinypkg', tinypkg.VALUE, tinypkg.__file__)"


def notebook(th: Trainhub, name: str, cells: list[str]) -> str:
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), th.workspace / name)
    return name


def installed_in_its_layer(th: Trainhub, name: str, options: str = "") -> str:
    """The log of a job whose %pip installs the workspace's wheel, then imports it from the
    job's own layer."""
    write_wheel(th.workspace / "dist" / "tinypkg-0.1-py3-none-any.whl")
    pip = f"%pip install {options}--no-index --no-deps ./dist/tinypkg-0.1-py3-none-any.whl"
    job_id = th.submit(notebook(th, name, [pip, IMPORT]))
    job = th.wait(job_id)
    log = th.logs(job_id)
    assert job["state"] == "succeeded", log
    assert "tinypkg 7" in log and f"jobs/{job_id}/env/" in log  # from the job's own layer
    return log


def test_pip_installs_into_the_job_alone(trainhub_env: Trainhub) -> None:
    log = installed_in_its_layer(trainhub_env, "with.ipynb")
    assert "Successfully installed tinypkg-0.1" in log  # pip's words where the job's are

    later = trainhub_env.submit(notebook(trainhub_env, "without.ipynb", [IMPORT]))
    job = trainhub_env.wait(later)
    assert job["verdict"]["exception"] == "ModuleNotFoundError", job


def test_a_failing_pip_line_is_an_environment_verdict_naming_its_cell(trainhub_env: Trainhub):
    pip = "x = 1\n%pip install --no-index trainhub-no-such-package-xyz"
    job_id = trainhub_env.submit(notebook(trainhub_env, "bad.ipynb", ["print(0)", pip]))
    job = trainhub_env.wait(job_id)
    verdict = job["verdict"]
    assert (verdict["failure_class"], verdict["cell_index"], verdict["line"]) == (
        "environment",
        1,
        2,
    )
    assert "No matching distribution" in trainhub_env.logs(job_id)
    executed = json.loads((trainhub_env.job_dir(job_id) / "notebook.ipynb").read_text())
    assert executed["metadata"]["trainhub"]["state"] == "failed"
    assert [c["metadata"]["trainhub"]["status"] for c in executed["cells"]] == ["not run", "error"]
    (error,) = executed["cells"][1]["outputs"]
    assert error["ename"] == "PipInstallError" and "cell 2, line 2" in error["evalue"]


def test_pip_user_installs_into_the_job_alone(trainhub_env: Trainhub, tmp_path) -> None:
    """``--user`` would put the package in ~/.local, where every later job and the user's kernel
    would find it: the job's layer takes it instead."""
    home = tmp_path / "user-home"
    trainhub_env.env["HOME"] = str(home)
    installed_in_its_layer(trainhub_env, "user.ipynb", "--user ")
    assert not list(home.rglob("tinypkg*"))


RUNTIME_PIP = (
    "import subprocess, sys\n"
    "subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-index', '--no-deps',\n"
    "                'dist/tinypkg-0.1-py3-none-any.whl'], check=True)"
)


def test_a_cells_own_pip_installs_into_the_job_alone(trainhub_env: Trainhub, tmp_path) -> None:
    """pip run by a cell (not a %pip line the compiler takes out) goes into the job's layer,
    which is on its ranks' path: the next cell imports it, a later job does not."""
    home = tmp_path / "user-home"
    trainhub_env.env["HOME"] = str(home)
    write_wheel(trainhub_env.workspace / "dist" / "tinypkg-0.1-py3-none-any.whl")
    job_id = trainhub_env.submit(notebook(trainhub_env, "runtime.ipynb", [RUNTIME_PIP, IMPORT]))
    job = trainhub_env.wait(job_id)
    log = trainhub_env.logs(job_id)
    assert job["state"] == "succeeded", log
    assert "tinypkg 7" in log and f"jobs/{job_id}/env/" in log
    assert not list(home.rglob("tinypkg*"))

    later = trainhub_env.submit(notebook(trainhub_env, "without.ipynb", [IMPORT]))
    job = trainhub_env.wait(later)
    assert job["verdict"]["exception"] == "ModuleNotFoundError", job
