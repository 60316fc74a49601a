"""JupyterHub configuration for trainhub: team profiles, GPU-quota-limited sessions, idle GPUs.

Loaded as is by ``jupyterhub -f hub_config/jupyterhub_config.py`` or, under
Zero-to-JupyterHub, from ``hub.extraConfig`` (see values.yaml). Everything it reads:

- TRAINHUB_TEAMS_FILE: the teams file (default: teams.yaml beside this file)
- TRAINHUB_GROUP_MEMBERS: optional YAML file {group: [user, ...]} for authenticators that do
  not manage groups; the teams' groups are created either way unless the authenticator
  manages groups (``Authenticator.manage_groups``)
- TRAINHUB_IDLE_THRESHOLD_PERCENT, TRAINHUB_IDLE_WARN_MINUTES, TRAINHUB_IDLE_STOP_MINUTES,
  TRAINHUB_IDLE_INTERVAL_SECONDS, TRAINHUB_PROMETHEUS_URL, TRAINHUB_IDLE_WEBHOOK: the
  idle-GPU policy (service off when TRAINHUB_IDLE_STOP_MINUTES is 0)
- TRAINHUB_IDLE_STATE_FILE: where the idle-GPU service leaves its sessions for the metrics
  service (default: idle-gpu-sessions.json in the hub's working directory), and beside it why
  it stopped each server, which the spawn form says
- TRAINHUB_PROXY_URL: the proxy's public side as the idle-GPU service reaches it, to post its
  warning into the user's JupyterLab (default: the hub's public URL, else http://proxy-public,
  Zero-to-JupyterHub's Service)
- TRAINHUB_METRICS_PORT (10102; 0 turns the metrics service off), TRAINHUB_METRICS_SCRAPE_TOKEN:
  the cluster-wide Prometheus exporter at /services/trainhub-metrics/metrics, and the token
  Prometheus scrapes it with (a ``prometheus`` service allowed to access it, nothing else)
"""

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from trainhub.teams import load_teams

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

teams_file = os.environ.get("TRAINHUB_TEAMS_FILE") or str(Path(__file__).with_name("teams.yaml"))
teams = load_teams(teams_file)  # a broken teams file stops the hub here, naming the field

# --- sessions --------------------------------------------------------------------------------
c.JupyterHub.spawner_class = "trainhub_spawner.spawner.TrainHubSpawner"
c.TrainHubSpawner.teams_file = teams_file
c.TrainHubSpawner.enable_user_namespaces = False  # each session runs in its team's namespace
# The profiles are the teams file's (TrainHubSpawner's own list). Zero-to-JupyterHub sets
# KubeSpawner.profile_list from singleuser.profileList, [] by default, which would hide them:
# no spawn form, every user started with their first team's defaults.
c.KubeSpawner.pop("profile_list", None)
c.KubeSpawner.cmd = ["jupyterhub-singleuser"]
c.KubeSpawner.default_url = "/lab"
c.KubeSpawner.cpu_guarantee = float(os.environ.get("TRAINHUB_SESSION_CPU", "1"))
c.KubeSpawner.mem_guarantee = os.environ.get("TRAINHUB_SESSION_MEMORY", "4G")
c.KubeSpawner.start_timeout = 600  # a GPU node may need to be found and an image pulled
# Zero-to-JupyterHub gives the hub's URL by its Service's short name (http://hub:8081), which
# resolves in the hub's own namespace only: sessions run in their team's namespace, so they
# get it qualified by the hub's namespace (the chart sets POD_NAMESPACE).
hub_namespace = os.environ.get("POD_NAMESPACE")
chart_hub_url = urlsplit(str(c.JupyterHub.get("hub_connect_url", "")))
if hub_namespace and chart_hub_url.hostname and "." not in chart_hub_url.hostname:
    port = f":{chart_hub_url.port}" if chart_hub_url.port else ""
    c.KubeSpawner.hub_connect_url = chart_hub_url._replace(
        netloc=f"{chart_hub_url.hostname}.{hub_namespace}.svc{port}"
    ).geturl()

# --- groups ------------------------------------------------------------------------------------
members_file = os.environ.get("TRAINHUB_GROUP_MEMBERS")
members = yaml.safe_load(Path(members_file).read_text()) if members_file else {}
if not c.Authenticator.get("manage_groups", False):
    groups = {}
    for team in teams.teams:
        for group in team.groups:
            groups[group] = {
                "users": list(members.get(group, [])),
                "properties": {"trainhub_team": team.name},
            }
    c.JupyterHub.load_groups = groups

idle_state_file = os.environ.get("TRAINHUB_IDLE_STATE_FILE") or str(
    Path.cwd() / "idle-gpu-sessions.json"
)
c.TrainHubSpawner.idle_state_file = idle_state_file  # the spawn form says why it stopped one
# A hub service gets only the environment it is given: the backend's, the teams file, the
# alerts' SMTP settings and the cluster's; never the scrape token.
service_env = {
    k: v
    for k, v in os.environ.items()
    if (k.startswith("TRAINHUB_") and k != "TRAINHUB_METRICS_SCRAPE_TOKEN")
    or k in {"HOME", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}
}
service_env.setdefault("TRAINHUB_TEAMS_FILE", teams_file)

# --- idle GPU sessions ---------------------------------------------------------------------------
stop_minutes = float(os.environ.get("TRAINHUB_IDLE_STOP_MINUTES", "60"))
if stop_minutes > 0:
    idle = "trainhub-idle-gpu"
    command = [
        sys.executable,
        "-m",
        "trainhub_spawner.idle",
        f"--threshold-percent={os.environ.get('TRAINHUB_IDLE_THRESHOLD_PERCENT', '5')}",
        "--warn-after-minutes="
        f"{os.environ.get('TRAINHUB_IDLE_WARN_MINUTES', str(stop_minutes / 2))}",
        f"--stop-after-minutes={stop_minutes}",
        f"--interval-seconds={os.environ.get('TRAINHUB_IDLE_INTERVAL_SECONDS', '60')}",
        f"--prometheus-url={os.environ.get('TRAINHUB_PROMETHEUS_URL', '')}",
        f"--warning-webhook={os.environ.get('TRAINHUB_IDLE_WEBHOOK', '')}",
        f"--state-file={idle_state_file}",
    ]  # and TRAINHUB_PROXY_URL, through its environment
    services = list(c.JupyterHub.get("services", []))
    services.append({"name": idle, "command": command, "environment": service_env})
    c.JupyterHub.services = services
    roles = list(c.JupyterHub.get("load_roles", []))
    # as jupyterhub-idle-culler: list the servers, read their state (pod, namespace), stop
    # them; and reach them, to post the warning that JupyterLab shows
    roles.append(
        {
            "name": idle,
            "scopes": ["list:users", "read:users", "admin:servers", "access:servers"],
            "services": [idle],
        }
    )
    c.JupyterHub.load_roles = roles

# --- cluster-wide Prometheus metrics -------------------------------------------------------------
metrics_port = int(os.environ.get("TRAINHUB_METRICS_PORT", "10102"))
if metrics_port:
    metrics = "trainhub-metrics"
    services = list(c.JupyterHub.get("services", []))
    services.append(
        {
            "name": metrics,
            "url": f"http://127.0.0.1:{metrics_port}",
            "command": [sys.executable, "-m", "trainhub_spawner.metrics_service"],
            "environment": {**service_env, "TRAINHUB_IDLE_STATE_FILE": idle_state_file},
            "display": False,
        }
    )
    scrape_token = os.environ.get("TRAINHUB_METRICS_SCRAPE_TOKEN")
    roles = list(c.JupyterHub.get("load_roles", []))
    if scrape_token:
        # Prometheus' bearer token: it may read the metrics service and nothing else.
        services.append({"name": "prometheus", "api_token": scrape_token})
        roles.append(
            {
                "name": "prometheus",
                "scopes": [f"access:services!service={metrics}"],
                "services": ["prometheus"],
            }
        )
    c.JupyterHub.services = services
    c.JupyterHub.load_roles = roles
