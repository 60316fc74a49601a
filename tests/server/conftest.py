"""Server tests: the real extension on a real Jupyter server, the real local backend.

Jobs run as real torchrun process groups (gloo on CPU, no GPUs), kept to a print and a
``trainhub.log`` call. Jobs that only need to exist are inserted into the store directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
from jupyter_server.auth.identity import IdentityProvider, User
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from pytest_jupyter.jupyter_server import *  # noqa: F403  (jp_fetch, jp_ws_fetch, jp_serverapp, ...)

from tests.local.conftest import job_processes
from trainhub.backends.local.backend import LocalBackend
from trainhub.backends.local.store_rows import LocalJob
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

# pytest-asyncio runs the tests; these would run coroutines on a loop of their own.
for _hook in ("pytest_pycollect_makeitem", "pytest_pyfunc_call"):
    globals().pop(_hook, None)

USER = "alice"
OTHER = "someone-else"
SLOTS = 2
NOTEBOOK = "tiny.ipynb"
SLEEPER = "sleeper.ipynb"


class FixedUserIdentity(IdentityProvider):
    """Token users are normally anonymous and random; tests need one stable name."""

    def generate_anonymous_user(self, handler: Any) -> User:
        return User(username=USER, name=USER, display_name=USER)


def tiny_notebook() -> nbformat.NotebookNode:
    cell = new_code_cell("lr = 0.1\nepochs = 2\nshape = (3, 4)")
    cell.metadata["tags"] = ["parameters"]
    return new_notebook(
        cells=[
            new_markdown_cell("# Tiny"),
            cell,
            new_code_cell(
                "import trainhub\nprint('hello from the job', lr)\ntrainhub.log(step=0, loss=1.5)"
            ),
        ]
    )


def sleeper_notebook() -> nbformat.NotebookNode:
    return new_notebook(
        cells=[new_code_cell("import time\nprint('sleeping', flush=True)\ntime.sleep(120)")]
    )


def write_workspace(root: Path) -> None:
    nbformat.write(tiny_notebook(), root / NOTEBOOK)
    nbformat.write(sleeper_notebook(), root / SLEEPER)


def spec(path: str = NOTEBOOK, **fields: Any) -> dict[str, Any]:
    return {
        "name": Path(path).stem,
        "source": {"path": path},
        "resources": {"processes_per_worker": 1},
        **fields,
    }


def kill_jobs(home: Path) -> None:
    jobs = home / "jobs"
    for job_dir in jobs.glob("*") if jobs.exists() else []:
        for proc in job_processes(job_dir.name):
            with contextlib.suppress(psutil.Error):
                proc.kill()


def new_job_dir(service: JobService, prefix: str) -> JobDir:
    """A created job directory under the service's jobs root, named ``<prefix>-<random>``: the
    job's id."""
    return JobDir(service.jobs_root / f"{prefix}-{os.urandom(4).hex()}").create()


def store_job(
    service: JobService,
    jobdir: JobDir,
    local: LocalJob | None = None,
    *,
    gpus: int = 0,
    **fields: Any,
) -> JobRecord:
    """The job of ``jobdir`` (priority 1; ``fields``: the rest of its JobRecord) as a row of the
    service's store, inserted directly: nothing runs."""
    backend: LocalBackend = service.backend  # type: ignore[assignment]
    record = JobRecord(
        id=jobdir.root.name, job_dir=str(jobdir.root), priority=1, gpus=gpus, **fields
    )
    with backend.store.transaction() as conn:
        return backend.store.insert(conn, record, LocalJob() if local is None else local)


def insert_job(
    service: JobService,
    *,
    user: str = USER,
    state: JobState = JobState.RUNNING,
    name: str = "inserted",
) -> JobRecord:
    """A job row and directory without torchrun. An active one gets a stand-in supervisor (a
    sleeping child carrying the job's id), so reconcile and cancel treat it as real."""
    jobdir = new_job_dir(service, name)
    supervisor = None
    if state.active:
        supervisor = psutil.Popen(
            ["sleep", "600"],
            env={**os.environ, "TRAINHUB_JOB_ID": jobdir.root.name},
            start_new_session=True,
        )
    local = LocalJob(
        supervisor_pid=supervisor.pid if supervisor else None,
        supervisor_start=supervisor.create_time() if supervisor else None,
    )
    record = store_job(
        service,
        jobdir,
        local,
        name=name,
        user=user,
        state=state,
        spec=parse_spec(spec()),
        created_at=time.time(),
        started_at=time.time(),
        finished_at=time.time() if state.terminal else None,
    )
    jobdir.emit("state", state=state.value)
    return record


def finish_job(service: JobService, job_id: str, state: JobState = JobState.SUCCEEDED) -> None:
    backend: LocalBackend = service.backend  # type: ignore[assignment]
    backend.store.update(None, job_id, state=state, finished_at=time.time())
    for proc in job_processes(job_id):
        with contextlib.suppress(psutil.Error):
            proc.kill()


def wait_state(
    service: JobService, job_id: str, states: set[JobState], timeout: float = 120
) -> JobRecord:
    deadline = time.monotonic() + timeout
    while True:
        record = service.record(job_id)
        if record.state in states:
            return record
        if time.monotonic() > deadline:
            log = JobDir(record.job_dir).read_log(0)[0].decode(errors="replace")
            sup = JobDir(record.job_dir).supervisor_log
            raise AssertionError(
                f"{job_id} still {record.state} after {timeout}s\n{log}\n"
                f"{sup.read_text() if sup.exists() else ''}"
            )
        time.sleep(0.3)


@pytest.fixture
def jp_asyncio_loop(_function_scoped_runner: Any) -> asyncio.AbstractEventLoop:
    """Serve on the loop pytest-asyncio runs the test on (the fixture's own loop never runs
    while a test awaits, so requests would hang)."""
    return _function_scoped_runner.get_loop()


@pytest.fixture(scope="session")
def trainhub_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One trainhub home for the session, so a job run once serves many tests."""
    home = tmp_path_factory.mktemp("trainhub-home")
    saved = {
        k: os.environ.get(k) for k in ("TRAINHUB_HOME", "TRAINHUB_GPUS", "TRAINHUB_CANCEL_GRACE")
    }
    os.environ.update(TRAINHUB_HOME=str(home), TRAINHUB_GPUS="0", TRAINHUB_CANCEL_GRACE="3")
    yield home
    kill_jobs(home)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def session_service(trainhub_home: Path, tmp_path_factory: pytest.TempPathFactory) -> JobService:
    workspace = tmp_path_factory.mktemp("workspace")
    write_workspace(workspace)
    return JobService(
        LocalBackend(trainhub_home, slots=SLOTS),
        workspace_root=workspace,
        jobs_root=trainhub_home / "jobs",
    )


@pytest.fixture(scope="session")
def finished_job(session_service: JobService) -> str:
    """Alice's tiny notebook, run to the end once."""
    described = session_service.submit(spec(), user=USER)
    record = wait_state(session_service, described.id, {JobState.SUCCEEDED, JobState.FAILED})
    assert record.state == JobState.SUCCEEDED, record.verdict
    return described.id


@pytest.fixture
def jp_server_config(trainhub_home: Path) -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"trainhub_server": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
            "identity_provider_class": FixedUserIdentity,
        },
        "TrainhubExtension": {
            "home": str(trainhub_home),
            "user_source": "identity",
            "backend_kwargs": {"slots": SLOTS},
            "reconcile_interval": 1.0,
        },
    }


@pytest.fixture
def workspace(jp_root_dir: Path) -> Path:
    write_workspace(jp_root_dir)
    return jp_root_dir


@pytest.fixture
def server_service(jp_serverapp: Any) -> JobService:
    """The service inside the running server."""
    return jp_serverapp.extension_manager.extension_points["trainhub"].app.service


@pytest.fixture
def api(jp_fetch: Any, workspace: Path) -> Any:
    """``await api("GET", "jobs", params=..., body=...)`` -> (status, JSON or bytes, headers)."""

    async def call(
        method: str,
        *parts: str,
        body: Any = None,
        params: dict[str, Any] | None = None,
        raw: bool = False,
    ) -> tuple[int, Any, Any]:
        kwargs: dict[str, Any] = {"method": method, "raise_error": False}
        if body is not None or method == "POST":
            kwargs["body"] = body if isinstance(body, str | bytes) else json.dumps(body or {})
        response = await jp_fetch("trainhub", "api", *parts, params=params, **kwargs)
        if raw or response.code == 204:
            return response.code, response.body, response.headers
        return response.code, json.loads(response.body or b"null"), response.headers

    return call


@pytest.fixture
def raw_fetch(http_server_client: Any, jp_auth_header: dict[str, str], jp_base_url: str) -> Any:
    """A request whose path is sent exactly as written (jp_fetch would escape '%')."""

    async def fetch(path: str) -> Any:
        return await http_server_client.fetch(
            jp_base_url + path, headers=jp_auth_header, raise_error=False
        )

    return fetch
