"""The test's stand-in for a kubelet, at KubeSpawner's lowest hook (``get_pod_url``).

kwok runs no containers, so when the hub asks where a Running pod serves, this starts the
real ``jupyterhub-singleuser`` on 127.0.0.1 from that pod's own spec (its command, args
and env, JUPYTERHUB_* included) and answers with the port it chose. Only the listening
address, HOME (and --allow-root where the tests run as root) differ from the pod, plus what
the kubelet would mount: the ServiceAccount's credentials and the teams file. One server
per pod uid, recorded under
$TRAINHUB_TEST_PODS_DIR, so a restarted hub finds the same server again.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _executable(name: str) -> str:
    here = Path(sys.executable).parent / name  # the environment the hub runs in
    return str(here) if here.exists() else (shutil.which(name) or name)


def _mounted(root: Path, pod: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """What a kubelet gives the pod besides its env: its ServiceAccount's token (here a
    kubeconfig the test wrote for that account, under accounts/<namespace>.kubeconfig) and the
    teams ConfigMap (here the hub's own teams file)."""
    out: dict[str, str] = {}
    account = root / "accounts" / f"{pod['metadata']['namespace']}.kubeconfig"
    if account.exists():
        out["KUBECONFIG"] = str(account)
    if "TRAINHUB_TEAMS_FILE" in env and os.environ.get("TRAINHUB_TEAMS_FILE"):
        out["TRAINHUB_TEAMS_FILE"] = os.environ["TRAINHUB_TEAMS_FILE"]
    return out


def serve_pod(spawner: Any, pod: dict[str, Any]) -> str:
    root = Path(os.environ["TRAINHUB_TEST_PODS_DIR"])
    uid = pod["metadata"]["uid"]
    record = root / f"{uid}.json"
    if record.exists():
        known = json.loads(record.read_text())
        if _alive(known["pid"]):
            return f"http://127.0.0.1:{known['port']}"
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "notebook")
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    argv[0] = _executable(argv[0])
    if os.geteuid() == 0:  # the pod runs as its non-root uid; this machine's tests run as root
        argv.append("--allow-root")
    env = {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}
    port = _free_port()
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX", "/")
    env["JUPYTERHUB_SERVICE_URL"] = f"http://127.0.0.1:{port}{prefix}"
    home = root / "homes" / pod["metadata"]["name"]
    home.mkdir(parents=True, exist_ok=True)
    env.update({"HOME": str(home), "PATH": os.environ.get("PATH", ""), "TRAINHUB_GPUS": "0"})
    env.update(_mounted(root, pod, env))
    log = (root / f"{pod['metadata']['name']}-{uid[:8]}.log").open("ab")
    proc = subprocess.Popen(
        argv, env=env, cwd=home, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    record.write_text(
        json.dumps(
            {
                "pid": proc.pid,
                "port": port,
                "pod": pod["metadata"]["name"],
                "namespace": pod["metadata"]["namespace"],
                "argv": argv,
                "env": sorted(env),
            }
        )
    )
    return f"http://127.0.0.1:{port}"
