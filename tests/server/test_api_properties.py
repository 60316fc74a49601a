"""Property-based run of the whole REST API against a real Jupyter server with the trainhub
extension and the local backend, as two users (schemathesis, generated from the served OpenAPI
document): no answer is a server error, every answer is one the document allows, and neither
user ever receives the other's jobs; every refusal as invalid (400) names the field.

Bounded: a fixed number of examples per operation and mode, a fixed seed, no shrinking. Jobs
the run submits (resubmits, resumes) queue behind a job that holds all of the machine's slots, so
nothing piles up; one real job per user, run to the end first, gives the reads real data.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_notebook
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

import trainhub_server
from tests.server.conftest import kill_jobs
from tests.server.token_users import TOKENS_VARIABLE, tokens_text
from trainhub.backends.local.backend import LocalBackend
from trainhub.backends.local.store_rows import LocalJob
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

pytestmark = pytest.mark.slow

USERS = ("ada", "bob")
HOLDER = "holder"  # owns the job that keeps the machine full
NOTEBOOK = "fuzz.ipynb"
SLOTS = len(USERS)  # the users' jobs run side by side; then one job holds them all
ENDED = ("succeeded", "failed", "cancelled")
EXAMPLES = int(os.environ.get("TRAINHUB_FUZZ_EXAMPLES", "50"))  # per operation and mode
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
OTHER_EXTENSIONS = ("jupyterlab", "jupyter_lsp", "notebook_shim", "jupyter_server_terminals")
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    url: str  # ends in trainhub/api
    tokens: dict[str, str]  # user -> token
    jobs: dict[str, str]  # user -> the id of that user's real job
    secrets: dict[str, str]  # user -> a value only that user's job carries

    def headers(self, user: str) -> dict[str, str]:
        return {"Authorization": f"token {self.tokens[user]}"}


def fuzz_notebook() -> nbformat.NotebookNode:
    cell = new_code_cell("marker = ''")
    cell.metadata["tags"] = ["parameters"]
    return new_notebook(
        cells=[
            cell,
            new_code_cell(
                "import torch, trainhub, trainhub.checkpoint as ckpt\n"
                "print('job of', marker, flush=True)\n"
                "trainhub.log(step=1, loss=0.5)\n"
                "ckpt.save({'w': torch.zeros(2)}, 1, metrics={'loss': 0.5})"
            ),
        ]
    )


def job_state(server: Server, user: str) -> str:
    url = f"{server.url}/jobs/{server.jobs[user]}"
    return requests.get(url, headers=server.headers(user)).json()["state"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException):
            result = check()
            if result:
                return result
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s: {what}")


def hold_the_machine(backend: LocalBackend, jobs_root: Path, slots: int) -> psutil.Popen:
    """A running job of a third user holding every slot, with a stand-in supervisor (a sleeping
    process carrying its id) so that reconcile keeps it running."""
    job_id = f"hold-{secrets.token_hex(4)}"
    jobdir = JobDir(jobs_root / job_id).create()
    supervisor = psutil.Popen(
        ["sleep", "900"], env={**os.environ, "TRAINHUB_JOB_ID": job_id}, start_new_session=True
    )
    spec = parse_spec({"name": "hold", "source": {"path": NOTEBOOK}})
    record = JobRecord(
        id=job_id,
        name="hold",
        user=HOLDER,
        priority=1,
        state=JobState.RUNNING,
        spec=spec,
        job_dir=str(jobdir.root),
        gpus=0,
        created_at=time.time(),
        started_at=time.time(),
    )
    local = LocalJob(
        slots=slots, supervisor_pid=supervisor.pid, supervisor_start=supervisor.create_time()
    )
    with backend.store.transaction() as conn:
        backend.store.insert(conn, record, local)
    return supervisor


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("fuzz")
    home, workspace, jupyter = root / "home", root / "workspace", root / "jupyter"
    for d in (home, workspace, jupyter / "config"):
        d.mkdir(parents=True)
    nbformat.write(fuzz_notebook(), workspace / NOTEBOOK)
    tokens = {user: secrets.token_hex(16) for user in USERS}
    config = {
        "ServerApp": {
            "jpserver_extensions": {
                "trainhub_server": True,
                **{name: False for name in OTHER_EXTENSIONS},
            },
            "allow_unauthenticated_access": False,
            "allow_root": True,
            "identity_provider_class": "tests.server.token_users.TokenUsers",
            "ip": "127.0.0.1",
            "port": free_port(),
            "port_retries": 0,
            "open_browser": False,
            "root_dir": str(workspace),
        },
        "IdentityProvider": {"token": secrets.token_hex(16)},  # no user's: auth stays on
        "TrainhubExtension": {
            "home": str(home),
            "user_source": "identity",
            "backend_kwargs": {"slots": SLOTS},
            "reconcile_interval": 1.0,
        },
    }
    (jupyter / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
    package_root = Path(trainhub_server.__file__).resolve().parents[1]
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(jupyter / "config"),
        "JUPYTER_DATA_DIR": str(jupyter / "data"),
        "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
        "PYTHONPATH": os.pathsep.join([str(REPO), str(package_root)]),
        "TRAINHUB_HOME": str(home),
        "TRAINHUB_GPUS": "0",
        "TRAINHUB_CANCEL_GRACE": "3",
        TOKENS_VARIABLE: tokens_text({token: user for user, token in tokens.items()}),
    }
    log = (root / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server"],
        env=env,
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    holder = None
    try:
        url = f"http://127.0.0.1:{config['ServerApp']['port']}/trainhub/api"
        server = Server(url, tokens, {}, {u: f"secret-{u}-{secrets.token_hex(6)}" for u in USERS})

        def up() -> bool:
            assert proc.poll() is None, (root / "server.log").read_text()[-3000:]
            return requests.get(f"{url}/config", headers=server.headers(USERS[0])).ok

        wait_until(up, 60, "the server answers")
        for user in USERS:  # one real job each, through the API, side by side
            body = {
                "name": f"job-{user}",
                "source": {"path": NOTEBOOK},
                "parameters": {"marker": server.secrets[user]},
                "resources": {"processes_per_worker": 1},
            }
            answer = requests.post(f"{url}/jobs", json=body, headers=server.headers(user))
            assert answer.status_code == 201, answer.text
            server.jobs[user] = answer.json()["id"]
        for user in USERS:
            wait_until(lambda u=user: job_state(server, u) in ENDED, 180, f"{user}'s job ends")
            assert job_state(server, user) == "succeeded", server.jobs[user]
        backend = LocalBackend(home, slots=SLOTS)
        holder = hold_the_machine(backend, home / "jobs", slots=SLOTS)
        backend.close()
        yield server
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if holder is not None:
            holder.kill()
        kill_jobs(home)
        log.close()


def leaks(server: Server, user: str, path: str, status: int, text: str) -> list[str]:
    """What an answer to ``user`` tells of another user's jobs: a request naming another's job
    is refused as not found (or as invalid before any look-up), and an answer never carries
    another's data, nor another's job id unless the request named it."""
    found = []
    for other in USERS:
        if other == user:
            continue
        named = server.jobs[other] in path
        if named and status not in (400, 404, 413):
            found.append(f"{status} for {other}'s job")
        found += [v for v in (server.secrets[other],) if v in text]
        if not named and server.jobs[other] in text:
            found.append(server.jobs[other])
    return found


def names_fields(error: dict[str, Any]) -> bool:
    """A refusal as invalid names each field it refuses."""
    errors = error.get("errors") or []
    return bool(errors) and all(e.get("field") for e in errors)


def exercise(
    server: Server, operation: Any, mode: GenerationMode, failures: list[str], calls: list[int]
) -> None:
    """Up to EXAMPLES generated requests of one operation, each as one of the users and often
    on a real job (own or not); what fails is collected, not raised."""

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # the same examples every run
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a bounded run
        suppress_health_check=list(HealthCheck),
    )
    @given(
        case=operation.as_strategy(generation_mode=mode),
        user=st.sampled_from(USERS),
        job=st.one_of(st.none(), st.sampled_from(sorted(server.jobs.values()))),
        real_source=st.booleans(),
    )
    def run(case: Any, user: str, job: str | None, real_source: bool) -> None:
        if job is not None and "job_id" in (case.path_parameters or {}):
            case.path_parameters["job_id"] = job
        body = case.body if isinstance(case.body, dict) else {}
        # A submit's source, or a sweep's (its job is beside the space).
        job_body = body.get("job") if isinstance(body.get("job"), dict) else body
        source = job_body.get("source")
        if real_source and isinstance(source, dict):
            # A notebook that exists takes a submit or a sweep past the path checks, into the
            # bundle and the queue (where it waits behind the held machine).
            source.update(kind="notebook", path=NOTEBOOK)
        headers = server.headers(user)
        calls.append(1)
        where = f"{operation.label} ({mode.value}, as {user})"
        try:
            response = case.call_and_validate(
                base_url=server.url, headers=headers, checks=CHECKS, timeout=30
            )
        except (Exception, BaseExceptionGroup) as e:  # schemathesis groups its failures
            failures.append(f"{where}: {str(e)[:600]}\n  {case.as_curl_command(headers)[:600]}")
            return
        path = case.formatted_path
        problems = leaks(server, user, path, response.status_code, response.text)
        if response.status_code == 400 and not names_fields(response.json()):
            problems.append("a 400 that names no field")
        if problems:
            failures.append(f"{where}: {problems}\n  {case.as_curl_command(headers)[:600]}")

    run()


def test_no_server_error_no_schema_violation_no_other_users_data(server: Server) -> None:
    document = requests.get(f"{server.url}/openapi.json", headers=server.headers(USERS[0]))
    assert document.status_code == 200
    schema = schemathesis.openapi.from_dict(document.json())
    operations = [
        result.ok()
        for result in schema.get_all_operations()
        if not result.ok().definition.raw.get("x-websocket")
    ]
    assert len(operations) > 15
    failures: list[str] = []
    calls: list[int] = []
    started = time.monotonic()
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                exercise(server, operation, mode, failures, calls)
            except Exception as e:  # no example could be generated in this mode
                if "Unsatisfiable" not in type(e).__name__:
                    raise
    elapsed = time.monotonic() - started
    print(f"{len(calls)} requests in {elapsed:.0f}s, {len(failures)} failures")
    assert len(calls) >= 2 * len(operations)
    assert not failures, "\n".join(failures[:40])
    # Each user still sees only their own jobs.
    for user in USERS:
        page = requests.get(f"{server.url}/jobs?limit=500", headers=server.headers(user)).json()
        assert {job["user"] for job in page["jobs"]} == {user}
        assert server.jobs[user] in {job["id"] for job in page["jobs"]}
        # What the run submitted waited behind the held machine: nothing ran.
        started = [
            j["id"] for j in page["jobs"] if j["id"] != server.jobs[user] and j["started_at"]
        ]
        assert not started, started
