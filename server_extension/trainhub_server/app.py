"""The trainhub Jupyter Server extension: one job service per server, REST and websockets."""

from __future__ import annotations

import asyncio
import getpass
import os
import time
from pathlib import Path
from typing import Any

from jupyter_server.auth.identity import User
from jupyter_server.extension.application import ExtensionApp
from tornado.ioloop import PeriodicCallback
from traitlets import Bool, Dict, Enum, Float, List, Type, Unicode, default

from trainhub import settings
from trainhub.backends import factory
from trainhub.backends.base import Backend
from trainhub.backends.capabilities import WatchFedReads
from trainhub.comments.board import Comments
from trainhub.jobs.models import JobSummary
from trainhub.jobs.service import JobService
from trainhub.metrics.tensorboard_processes import TensorBoards
from trainhub.schedules import local as local_scheduler
from trainhub_server import exit_guard, routes, watch
from trainhub_server.calls import DEFAULT_TIME_LIMIT_S, ServiceCalls
from trainhub_server.notices import Notices
from trainhub_server.watch import JobsWatcher

# What the server's own shutdown (kernels, terminals) gets after the extension has stopped.
EXIT_GRACE_S = 30.0
BOARD_REAP_S = 60.0  # how often idle TensorBoards are looked for


class TrainhubExtension(ExtensionApp):
    name = "trainhub"
    description = "Submit notebooks as distributed training jobs and follow them."
    load_other_extensions = True

    backend_class = Type(
        klass=Backend,
        help="The job backend (default: from $TRAINHUB_BACKEND, else local); built with "
        "backend_class.from_settings(<home>, **backend_kwargs).",
    ).tag(config=True)
    backend_kwargs = Dict(help="Extra keyword arguments for the backend class.").tag(config=True)
    home = Unicode(
        "", help="trainhub's data directory (default: $TRAINHUB_HOME or ~/.local/share/trainhub)."
    ).tag(config=True)
    jobs_root = Unicode("", help="Where job directories live (default: <home>/jobs).").tag(
        config=True
    )
    allow_pip = Bool(
        help="Whether %pip install in submitted notebooks runs (default: $TRAINHUB_ALLOW_PIP)."
    ).tag(config=True)
    user_source = Enum(
        ["identity", "process"],
        help=(
            "Whose jobs the API serves. 'identity': the authenticated user's name (JupyterHub). "
            "'process': the account running this server, as the CLI and the notebook API record "
            "it; for a personal server, whose token users are anonymous. Default: 'identity' "
            "under JupyterHub, else 'process'."
        ),
    ).tag(config=True)
    images = List(
        Dict(), help="Curated images offered in the submit dialog: {name, image, description}."
    ).tag(config=True)
    teams = List(Dict(), help="Teams and their queues: {name, queues: [...]}.").tag(config=True)
    limits = Dict(
        help="Overrides of max_workers, max_processes_per_worker, max_gpus_per_worker."
    ).tag(config=True)
    reconcile_interval = Float(
        5.0, help="Seconds between reconciles of the backend (0: never)."
    ).tag(config=True)
    tensorboard_idle_timeout = Float(
        1800.0,
        help="Seconds a TensorBoard opened from a job runs without a request before it stops.",
    ).tag(config=True)
    call_time_limit = Float(
        DEFAULT_TIME_LIMIT_S,
        help="Seconds a request may wait for the job service (reading a job's files, the "
        "backend) before it ends with a 503; other requests never wait behind it.",
    ).tag(config=True)

    service: JobService
    calls: ServiceCalls
    jobs_watcher: JobsWatcher
    notices: Notices
    tensorboards: TensorBoards
    comments: Comments
    _reconciler: PeriodicCallback | None = None
    _board_reaper: PeriodicCallback | None = None
    _reconciling = False

    @default("backend_class")
    def _default_backend_class(self) -> type[Backend]:
        return factory.backend_class()

    @default("allow_pip")
    def _default_allow_pip(self) -> bool:
        return settings.allow_pip()

    @default("user_source")
    def _default_user_source(self) -> str:
        return "identity" if os.environ.get("JUPYTERHUB_API_TOKEN") else "process"

    # --- wiring -------------------------------------------------------------------------
    def initialize_settings(self) -> None:
        home = Path(self.home).expanduser().resolve() if self.home else settings.home()
        backend = self.backend_class.from_settings(home, **self.backend_kwargs)
        jobs_root = Path(self.jobs_root).expanduser() if self.jobs_root else backend.jobs_root
        self.service = JobService(
            backend,
            workspace_root=Path(self.serverapp.root_dir),
            jobs_root=jobs_root,
            allow_pip=self.allow_pip,
        )
        local_scheduler.attach(self.service, home)  # a schedule's change wakes the scheduler
        self._home = home
        self.calls = ServiceCalls(self.service, time_limit=self.call_time_limit)
        self.jobs_watcher = JobsWatcher(self._job_snapshot)
        self.notices = Notices()
        self.tensorboards = TensorBoards(idle_seconds=self.tensorboard_idle_timeout)
        self.comments = Comments(self.service, home=home)
        self.log.info("trainhub: %s backend, jobs in %s", backend.name, jobs_root)

    def initialize_handlers(self) -> None:
        self.handlers.extend(routes.handlers())

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        backend = self.service.backend
        if isinstance(backend, WatchFedReads):
            # Off the event loop and unwaited: until the cache syncs, lists ask the API server.
            asyncio.get_running_loop().run_in_executor(None, backend.watch_reads)
        # Schedules fire from a process of their own, which outlives this server.
        asyncio.get_running_loop().run_in_executor(None, self._start_scheduler)
        self._board_reaper = PeriodicCallback(self.tensorboards.reap, BOARD_REAP_S * 1000)
        self._board_reaper.start()
        if self.reconcile_interval > 0:
            self._reconciler = PeriodicCallback(self._reconcile, self.reconcile_interval * 1000)
            self._reconciler.start()

    def _start_scheduler(self) -> None:
        try:
            local_scheduler.start_if_scheduled(self.service, self._home)
        except Exception:
            self.log.exception("trainhub: the local scheduler could not be started")

    async def _job_snapshot(self, user: str, watched: set[str]) -> dict[str, JobSummary]:
        return await self.calls.call(watch.snapshot, self.service, user, watched)

    async def _reconcile(self) -> None:
        if self._reconciling:  # a slow reconcile is never stacked on another
            return
        self._reconciling = True
        try:
            await self.calls.call(self.service.reconcile)
        except Exception:
            self.log.exception("trainhub: reconcile failed")
        finally:
            self._reconciling = False

    async def stop_extension(self) -> None:
        if self._reconciler is not None:
            self._reconciler.stop()
        if self._board_reaper is not None:
            self._board_reaper.stop()
        if hasattr(self, "tensorboards"):
            self.tensorboards.stop_all()  # none outlives the server
        if hasattr(self, "jobs_watcher"):
            self.jobs_watcher.stop()
        if hasattr(self, "calls"):
            # Off the event loop: a call still running may need it to finish, and the server
            # shuts the kernels down after the extensions, on this loop.
            started = time.monotonic()
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self.calls.shutdown)
            await loop.run_in_executor(None, self.service.backend.close)
            self.log.info("trainhub: stopped in %.1f s", time.monotonic() - started)
        if getattr(self.serverapp, "_stopping", False):  # exiting, not a test's cleanup
            exit_guard.arm(EXIT_GRACE_S, self.log)

    # --- identity -------------------------------------------------------------------------
    def job_owner(self, user: User) -> str:
        if self.user_source == "process":
            return getpass.getuser()
        return user.username
