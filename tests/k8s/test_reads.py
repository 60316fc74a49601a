"""Reads of the Kubernetes backend on the real control plane: listing makes the same API
requests for 3 jobs as for 30 (each object kind listed once, no request per job); where a
controller runs, a session's page comes from its watch-fed cache and asks the API server
nothing, its team's ClusterQueue included; a read writes nothing to the job directory
(reconcile records what happened), and an apiserver call that never answers holds up no other
request of the server's worker threads."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from tests.k8s.apiproxy import ApiProxy
from tests.k8s.test_backend import Team, applied_team, wait_for
from trainhub.backends.kubernetes.backend import KubernetesBackend
from trainhub.errors import BackendUnavailable
from trainhub.jobs import submission
from trainhub.jobs.models import ListJobsQuery
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState
from trainhub.teams import Controller, Teams
from trainhub_server.calls import CallTimedOut, ServiceCalls


@pytest.fixture
def team(k8s_namespace: Any, tmp_path: Path) -> Iterator[Team]:
    yield from applied_team(k8s_namespace, tmp_path)


@pytest.fixture
def proxy(k8s_namespace: Any) -> Iterator[ApiProxy]:
    p = ApiProxy(k8s_namespace.kubeconfig)
    yield p
    p.close()


def through(team: Team, proxy: ApiProxy, teams: Teams | None = None, **kwargs: Any) -> JobService:
    """The team's job service with a backend whose every request goes through ``proxy``."""
    backend = KubernetesBackend(
        teams or team.backend.teams, team.ns, api_client=proxy.api_client(), **kwargs
    )
    return JobService(
        backend, workspace_root=team.service.workspace_root, jobs_root=backend.jobs_root
    )


def files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file below ``root``: size and modification time."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            st = os.stat(Path(dirpath) / name, follow_symlinks=False)
            out[str((Path(dirpath) / name).relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def test_listing_makes_the_same_requests_for_3_jobs_as_for_30(team: Team, proxy: ApiProxy) -> None:
    service = through(team, proxy)

    def listed(jobs: int) -> list[tuple[str, str]]:
        # 8 GPUs of quota: two 4-GPU jobs run, the rest wait (each with its reason).
        def settled() -> Any:
            page = service.list_jobs(ListJobsQuery(limit=50), user="ada")
            running = [j for j in page.jobs if j.state == JobState.RUNNING]
            return len(page.jobs) == jobs and len(running) == 2 and page

        wait_for(f"{jobs} jobs, 2 running", settled)
        proxy.reset()
        page = service.list_jobs(ListJobsQuery(limit=50), user="ada")
        assert page.total == jobs and len(page.jobs) == jobs
        queued = [j for j in page.jobs if j.state == JobState.QUEUED]
        assert len(queued) == jobs - 2 and all(j.wait_reason for j in queued)
        return sorted(proxy.requests)

    for i in range(3):
        team.submit(f"few-{i}", gpus=4)
    few = listed(3)
    for i in range(27):
        team.submit(f"many-{i}", gpus=4)
    many = listed(30)

    assert few == many
    # Each kind listed, never one job (nor one job's pods) asked for by name.
    job_paths = [p for _, p in many if "/jobs" in p or "/pods" in p]
    assert job_paths and all(p.endswith(("/jobs", "/pods")) for p in job_paths), job_paths
    # One look for the page, its total and its wait reasons: Jobs, pods, Workloads, the queue.
    assert len(many) == 4, many


def test_where_a_controller_runs_a_page_asks_the_api_server_nothing(
    team: Team, proxy: ApiProxy
) -> None:
    controlled = team.backend.teams.model_copy(
        update={"controller": Controller(namespace=f"{team.ns}-c")}
    )
    service = through(team, proxy, teams=controlled)
    backend = service.backend
    for i in range(3):
        team.submit(f"cached-{i}", gpus=4)
    backend.watch_reads()  # type: ignore[attr-defined]
    try:
        assert backend.lists is not None  # type: ignore[attr-defined]

        seen: list[Any] = []

        def settled() -> Any:
            page = service.list_jobs(ListJobsQuery(limit=50), user="ada")
            seen[:] = [(j.state.value, j.wait_reason) for j in page.jobs]
            queued = [j for j in page.jobs if j.state == JobState.QUEUED]
            # Kueue's sentence with the ClusterQueue's figures (its quota of 8 GPUs): the
            # queue was read, from the cache
            figures = [j for j in queued if re.search(r"\(\d+ of 8 in use\)", j.wait_reason or "")]
            return len(page.jobs) == 3 and len(queued) == 1 and figures and page

        try:
            wait_for("2 admitted, 1 waiting on the quota", settled)
        except AssertionError as e:
            raise AssertionError(f"{e}; the page: {seen}") from None
        proxy.reset()
        page = service.list_jobs(ListJobsQuery(limit=50), user="ada")
        assert page.total == 3 and proxy.requests == []
        team.submit("cached-3", gpus=4)  # through another client: the watch brings it in
        wait_for(
            "the new job on the next page",
            lambda: service.list_jobs(ListJobsQuery(limit=50), user="ada").total == 4,
        )
        assert proxy.requests == []
    finally:
        backend.close()  # type: ignore[attr-defined]


def test_jobs_submitted_in_one_millisecond_are_each_on_one_page_once(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages are cut by a job's seq: jobs submitted together must each keep a seq of their own,
    the same whether its Job object is there or gone (read from its directory)."""
    start = time.time()
    clock = iter([start, start + 0.0002, start + 0.0004])
    monkeypatch.setattr(submission, "time", SimpleNamespace(time=lambda: next(clock)))
    ids = [team.submit(f"together-{i}", gpus=1) for i in range(3)]
    monkeypatch.undo()

    def paged() -> list[str]:
        seen: list[str] = []
        before = None
        while True:
            page = team.service.list_jobs(ListJobsQuery(limit=1, before=before), user="ada")
            seen += [j.id for j in page.jobs]
            if page.next_before is None:
                return seen
            before = page.next_before

    assert paged() == ids[::-1]
    batch = client.BatchV1Api(team.api)
    batch.delete_namespaced_job(ids[1], team.ns, propagation_policy="Background")
    wait_for(
        "the Job gone",
        lambda: ids[1] not in {j.metadata.name for j in batch.list_namespaced_job(team.ns).items},
    )
    assert paged() == ids[::-1]


def test_a_read_writes_nothing_and_reconcile_records_what_happened(team: Team) -> None:
    job_id = team.submit("quiet", gpus=1)
    running = wait_for(
        "running",
        lambda: (d := team.service.describe(job_id, user="ada")).state.value == "running" and d,
    )
    jobdir = Path(running.job_dir)
    before = files(jobdir)
    recorded = [e["type"] for e in team.events(job_id)]
    for _ in range(3):
        assert team.backend.get(job_id).state == JobState.RUNNING
        team.service.describe(job_id, user="ada")
        team.service.list_jobs(user="ada")
        team.service.log(job_id, user="ada")
    assert files(jobdir) == before
    assert recorded == ["submitted", "state"]  # what the submit wrote, nothing since

    team.backend.reconcile()
    events = team.events(job_id)
    assert [e["state"] for e in events if e["type"] == "state"] == ["queued", "running"]
    kinds = {e["kind"] for e in events if e["type"] == "k8s_event"}
    assert {"Job", "Pod", "Workload"} <= kinds, kinds
    after = files(jobdir)
    # Nothing new happened: nothing is written twice, nor by a server started afresh.
    team.backend.reconcile()
    KubernetesBackend(team.backend.teams, team.ns, api_client=team.api).reconcile()
    assert files(jobdir) == after


def test_a_cluster_call_that_never_answers_holds_up_no_other_request(
    team: Team, proxy: ApiProxy
) -> None:
    stuck, other = team.submit("stuck", gpus=1), team.submit("other", gpus=1)
    service = through(team, proxy, request_timeout=(3.0, 3.0))
    calls = ServiceCalls(service, time_limit=30)
    proxy.stall(f"/jobs/{stuck}")

    async def both() -> tuple[Any, float, BaseException | None, float]:
        start = time.monotonic()
        slow = asyncio.ensure_future(calls.call(service.describe, stuck, user="ada"))
        while not proxy.held:
            await asyncio.sleep(0.02)
        fast = await calls.call(service.describe, other, user="ada")
        fast_s = time.monotonic() - start
        assert not slow.done()  # still waiting for the apiserver
        try:
            await slow
            error = None
        except BaseException as e:
            error = e
        return fast, fast_s, error, time.monotonic() - start

    try:
        fast, fast_s, error, slow_s = asyncio.run(both())
    finally:
        calls.shutdown()
    assert fast.id == other and fast.state in (JobState.QUEUED, JobState.STARTING, JobState.RUNNING)
    # Ended by its own request time limit (after urllib3's retries), with a sentence: not
    # by the server writing its thread off.
    assert isinstance(error, BackendUnavailable) and not isinstance(error, CallTimedOut), error
    assert "the cluster did not answer within 3 s" in str(error)
    assert fast_s < slow_s and 3.0 <= slow_s < 30
    assert calls._calls.stuck == 0
