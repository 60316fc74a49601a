"""hub_config/values.yaml against the Zero-to-JupyterHub chart it is written for, 4.4.0, vendored
beside the checkout (../shared/vendor/zero-to-jupyterhub-4.4.0, used from there): `helm template`
validates them with the chart's values.schema.json (generated from its values.schema.yaml, as
the chart's release does) and renders the hub with trainhub's image, files and environment."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
VENDORED = Path("shared", "vendor", "zero-to-jupyterhub-4.4.0", "jupyterhub")
HUB_CONFIG = ROOT / "hub_config"
# What cannot run in the test cluster is switched off here, not in the product's values.
TEST_VALUES = {
    "prePuller": {"hook": {"enabled": False}, "continuous": {"enabled": False}},
    "ingress": {"enabled": False},
}


def vendored_chart() -> Path:
    """The vendored chart beside the checkout, or beside a folder holding it (a worktree)."""
    for folder in ROOT.parents:
        if (folder / VENDORED / "Chart.yaml").is_file():
            return folder / VENDORED
    pytest.skip(f"no {VENDORED} beside {ROOT} or a folder above it")


@pytest.fixture
def z2jh(built_tool: Callable[[str], Path], tmp_path: Path) -> Callable[..., Any]:
    """`helm template` of a copy of the vendored chart with its values.schema.json."""
    chart = tmp_path / "jupyterhub"
    shutil.copytree(vendored_chart(), chart)
    schema = yaml.safe_load((chart / "values.schema.yaml").read_text())
    (chart / "values.schema.json").write_text(json.dumps(schema))
    test_values = tmp_path / "test-values.yaml"
    test_values.write_text(yaml.safe_dump(TEST_VALUES))
    env = {**os.environ, **{f"HELM_{d}_HOME": str(tmp_path / d) for d in ("CONFIG", "CACHE")}}

    def template(*values: Path) -> subprocess.CompletedProcess[str]:
        files = [a for v in (HUB_CONFIG / "values.yaml", test_values, *values) for a in ("-f", v)]
        argv = [built_tool("helm"), "template", "jhub", chart, "--namespace", "jhub", *files]
        argv += ["--set-file", f"hub.extraFiles.teams.stringData={HUB_CONFIG / 'teams.yaml'}"]
        argv += [
            "--set-file",
            f"hub.extraFiles.config.stringData={HUB_CONFIG / 'jupyterhub_config.py'}",
        ]
        return subprocess.run(
            [str(a) for a in argv], env=env, capture_output=True, text=True, timeout=120
        )

    return template


def test_the_hub_values_render_with_chart_4_4_0(z2jh: Callable[..., Any]) -> None:
    proc = z2jh()
    assert proc.returncode == 0, proc.stderr
    objs = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(proc.stdout) if o}
    kinds = {kind for kind, _ in objs}
    assert not kinds & {"DaemonSet", "Ingress"}, kinds  # no image puller, no ingress
    assert {("NetworkPolicy", "hub"), ("NetworkPolicy", "proxy")} <= objs.keys()

    hub = objs[("Deployment", "hub")]["spec"]["template"]["spec"]["containers"][0]
    assert hub["image"] == "ghcr.io/trainhub/hub:0.1.0"
    env = {e["name"]: e.get("value") for e in hub["env"]}
    assert env["TRAINHUB_TEAMS_FILE"] == "/usr/local/etc/trainhub/teams.yaml"
    mounts = {m["mountPath"] for m in hub["volumeMounts"]}
    assert mounts >= {
        "/usr/local/etc/trainhub/teams.yaml",
        "/usr/local/etc/trainhub/jupyterhub_config.py",
    }
    secret = objs[("Secret", "hub")]
    files = {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}
    files |= secret.get("stringData", {})
    assert (HUB_CONFIG / "teams.yaml").read_text() in files.values()
    config = yaml.safe_load(files["values.yaml"])
    # on the chart's own config object (test_z2jh_install.py: the chart's services stay)
    assert "runpy.run_path(" in config["hub"]["extraConfig"]["trainhub"]


def test_the_chart_schema_refuses_a_misspelt_key(z2jh: Callable[..., Any], tmp_path: Path) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump({"hub": {"extraEnvv": {"A": "1"}}}))
    proc = z2jh(typo)
    assert proc.returncode != 0 and "extraEnvv" in proc.stderr, proc.stderr


def test_the_hub_and_proxy_images_build_the_software_of_chart_4_4_0s() -> None:
    """images/hub installs the pinned requirements of the chart's hub image, unchanged, and
    images/proxy the configurable-http-proxy its values name."""
    vendored = vendored_chart().parent
    ours = ROOT / "images" / "hub" / "requirements.txt"
    assert ours.read_text() == (vendored / "images" / "hub" / "requirements.txt").read_text()
    chp = yaml.safe_load((vendored_chart() / "values.yaml").read_text())["proxy"]["chp"]["image"]
    dockerfile = (ROOT / "images" / "proxy" / "Dockerfile").read_text()
    assert f"ARG CHP_VERSION={chp['tag']}\n" in dockerfile, chp
