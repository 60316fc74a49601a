"""GET config and GET notebook/parameters."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.server.conftest import USER


async def test_config_describes_backend_user_and_limits(api: Any) -> None:
    status, body, _ = await api("GET", "config")
    assert status == 200
    assert body["backend"] == "local"
    assert {"gpus", "priority", "pip_install"} <= set(body["features"])
    assert body["user"] == USER
    assert body["allow_pip"] is True
    # TRAINHUB_GPUS=0 hides every GPU; the local backend has two CPU slots in these tests.
    assert body["limits"] == {
        "max_workers": 2,
        "max_processes_per_worker": 2,
        "max_gpus_per_worker": 0,
    }
    assert body["images"] == [] and body["teams"] == []


async def test_notebook_parameters(api: Any, workspace: Path) -> None:
    status, body, _ = await api("GET", "notebook", "parameters", params={"path": "tiny.ipynb"})
    assert status == 200
    assert body == {
        "parameters": {"lr": 0.1, "epochs": 2, "shape": "(3, 4)"},
        "cell_index": 1,
        "source_text": ["shape"],
        "texts": {"lr": "0.1", "epochs": "2", "shape": "(3, 4)"},
    }


async def test_notebook_parameters_without_a_parameters_cell(api: Any, workspace: Path) -> None:
    sub = workspace / "sub"
    sub.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), sub / "plain.ipynb")
    status, body, _ = await api("GET", "notebook", "parameters", params={"path": "sub/plain.ipynb"})
    assert (status, body) == (
        200,
        {"parameters": {}, "cell_index": None, "source_text": [], "texts": {}},
    )


async def test_notebook_parameters_refuses_bad_paths(
    api: Any, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("secret = 1")]), outside)
    status, body, _ = await api(
        "GET", "notebook", "parameters", params={"path": f"../{outside.name}"}
    )
    assert status == 400
    assert body["errors"][0]["field"] == "path"
    assert "outside the workspace" in body["errors"][0]["message"]
    status, body, _ = await api("GET", "notebook", "parameters", params={"path": "missing.ipynb"})
    assert status == 404 and "missing.ipynb" in body["message"]
    status, body, _ = await api("GET", "notebook", "parameters", params={})
    assert status == 400 and body["errors"][0]["field"] == "path"


def test_process_user_source_serves_the_server_account() -> None:
    from jupyter_server.auth.identity import User

    from trainhub_server.app import TrainhubExtension

    app = TrainhubExtension(user_source="process")
    assert app.job_owner(User(username="anonymous-moon")) == getpass.getuser()
    app = TrainhubExtension(user_source="identity")
    assert app.job_owner(User(username="alice")) == "alice"


async def test_a_session_on_a_shared_gpu_says_its_share(api: Any, monkeypatch: Any) -> None:
    """The spawner's TRAINHUB_GPU_SHARE reaches the config and the Usage panel's answers; the
    memory others use is unknown here (TRAINHUB_GPUS=0 hides the GPUs), and says why."""
    status, body, _ = await api("GET", "config")
    assert (status, body["session_gpu"]) == (200, None)
    monkeypatch.setenv("TRAINHUB_GPU_SHARE", "1/4")
    monkeypatch.setenv("TRAINHUB_GPU_SHARING", "time-slicing")
    for path in (("config",), ("usage", "panel")):
        status, body, _ = await api("GET", *path)
        assert status == 200
        assert body["session_gpu"] == {
            "share": "1/4",
            "strategy": "time-slicing",
            "words": "¼ of a GPU (time-sliced with 3 others)",
            "gpu_name": None,
            "memory_total_bytes": None,
            "others_bytes": None,
            "line": "¼ of a GPU (time-sliced with 3 others)",
            "reason": "GPUs are hidden by TRAINHUB_GPUS=0.",
        }
