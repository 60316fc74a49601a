"""What a real local job's ranks see of their environment (gloo on CPU, real torchrun)."""

from __future__ import annotations

import json

import nbformat
import pytest

from tests.local.conftest import Trainhub

pytestmark = pytest.mark.slow

PRINT_ENV = "import json, os\nprint('ENV=' + json.dumps(dict(os.environ)))"


def rank_environ(trainhub_env: Trainhub, job_id: str, rank: int) -> dict[str, str]:
    line = next(
        x for x in trainhub_env.logs(job_id, rank=rank).splitlines() if x.startswith("ENV=")
    )
    return json.loads(line.removeprefix("ENV="))


def test_no_server_token_reaches_a_rank_and_the_spec_env_does(trainhub_env: Trainhub):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PRINT_ENV)])
    nbformat.write(nb, trainhub_env.workspace / "env.ipynb")
    # As a Jupyter server under JupyterHub would submit it.
    trainhub_env.env.update(
        JUPYTER_TOKEN="server-token",
        JUPYTERHUB_API_TOKEN="hub-token",
        JPY_API_TOKEN="hub-token",
        SOME_SERVICE_PASSWORD="pw",
        NCCL_DEBUG="WARN",
    )
    job_id = trainhub_env.submit("env.ipynb", "--nproc", "2", "--env", "MY_SETTING=42")
    job = trainhub_env.wait(job_id)
    assert job["state"] == "succeeded", trainhub_env.logs(job_id)
    for rank in (0, 1):
        env = rank_environ(trainhub_env, job_id, rank)
        leaked = {k for k, v in env.items() if v in {"server-token", "hub-token", "pw"}}
        assert not leaked, f"rank {rank} sees {sorted(leaked)}"
        assert env["MY_SETTING"] == "42" and env["NCCL_DEBUG"] == "WARN"
        assert env["TRAINHUB_JOB_ID"] == job_id and env["RANK"] == str(rank)
