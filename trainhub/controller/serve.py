"""``trainhub controller``: the controller's process. Probes and metrics on one port:
``/healthz`` (its threads alive), ``/readyz`` (its cache synced), ``/metrics`` (Prometheus)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import secrets
import signal
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainhub.controller.leader import Timing

if TYPE_CHECKING:  # the CLI builds its parser on every call: the manager loads when it runs
    from trainhub.controller.manager import Controller

log = logging.getLogger("trainhub.controller")


def probe_server(controller: Controller, host: str, port: int) -> ThreadingHTTPServer:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    class Probes(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                self._send(200, generate_latest(controller.metrics.registry), CONTENT_TYPE_LATEST)
            elif self.path in ("/healthz", "/readyz"):
                ok = controller.healthy if self.path == "/healthz" else controller.ready
                self._send(200 if ok else 503, b"ok\n" if ok else b"not yet\n", "text/plain")
            else:
                self._send(404, b"not found\n", "text/plain")

        def _send(self, code: int, body: bytes, kind: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass  # probes every few seconds would drown the log

    server = ThreadingHTTPServer((host, port), Probes)
    threading.Thread(target=server.serve_forever, name="probes", daemon=True).start()
    return server


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "controller",
        help="run trainhub's controller for the teams file's namespaces (on a cluster)",
    )
    c.add_argument(
        "--teams", default=os.environ.get("TRAINHUB_TEAMS_FILE", "/etc/trainhub/teams.yaml")
    )
    c.add_argument("--kubeconfig", help="default: in-cluster, else $KUBECONFIG")
    c.add_argument("--lease-namespace", help="default: the teams file's controller namespace")
    c.add_argument("--identity", help="default: the host name and a random suffix")
    c.add_argument("--listen", default="0.0.0.0", help="address of the probes and metrics")
    c.add_argument("--port", type=int, help="default: the teams file's metrics_port; 0: any")
    c.add_argument("--lease-seconds", type=float, default=Timing.lease)
    c.add_argument("--renew-seconds", type=float, default=Timing.renew)
    c.add_argument("--retry-seconds", type=float, default=Timing.retry)
    c.add_argument("--resync-seconds", type=float, default=60.0)
    c.add_argument("--workers", type=int, default=4, help="team namespaces reconciled side by side")
    c.set_defaults(func=run, verb="controller")


def _api_client(kubeconfig: str | None) -> Any:
    from kubernetes import client, config

    if kubeconfig:
        api = config.new_client_from_config(config_file=kubeconfig)
    else:
        try:
            config.load_incluster_config()
            api = client.ApiClient()
        except config.ConfigException:
            api = config.new_client_from_config()
    _ca_readable_by_all(api.configuration.ssl_ca_cert)
    return api


def _ca_readable_by_all(ca: str | None) -> None:
    """A thread acting as a member on their files (trainhub.jobs.ownership) may open a new
    connection meanwhile, which reads the cluster's CA bundle as that member: it is public,
    and no member's process runs beside the controller. A kubeconfig's bundle is a temporary
    file of the client's, its owner's alone (the service account's is readable already)."""
    if not ca:
        return
    with contextlib.suppress(OSError):
        mode = os.stat(ca).st_mode
        if not mode & 0o004:
            os.chmod(ca, mode | 0o444)


def run(args: argparse.Namespace) -> int:
    from trainhub.controller.manager import Controller, Settings
    from trainhub.teams import load_teams

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ["TRAINHUB_TEAMS_FILE"] = str(Path(args.teams).resolve())  # team alerts read it
    teams = load_teams(args.teams)
    if teams.controller is None:
        raise ValueError(f"{args.teams}: has no controller: section")
    settings = Settings(
        lease_namespace=args.lease_namespace or teams.controller.namespace,
        identity=args.identity or f"{socket.gethostname()}-{secrets.token_hex(3)}",
        timing=Timing(args.lease_seconds, args.renew_seconds, args.retry_seconds),
        resync_seconds=args.resync_seconds,
        workers=args.workers,
    )
    controller = Controller(teams, _api_client(args.kubeconfig), settings)
    port = teams.controller.metrics_port if args.port is None else args.port
    server = probe_server(controller, args.listen, port)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    controller.start()
    log.info(
        "controller %s: %d team namespaces, probes on port %d",
        settings.identity,
        len(teams.teams),
        server.server_address[1],
    )
    stop.wait()
    controller.close()  # a leader releases the lease: the standby takes over at once
    server.shutdown()
    return 0
