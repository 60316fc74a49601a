"""The dependency direction of DESIGN.md, checked in fresh interpreters."""

import json
import subprocess
import sys

import pytest

CORE = [
    "trainhub", "trainhub.api", "trainhub.cli", "trainhub.jobs.service", "trainhub.rank.runner",
    "trainhub.bundle.compile", "trainhub.checkpoint", "trainhub.checkpoint.layout", "trainhub.metrics.sampler",
    "trainhub.backends.local.supervisor", "trainhub.backends.local.admission",
]


def loaded_after(modules: list[str]) -> set[str]:
    code = "import importlib, json, sys\n" + "".join(
        f"importlib.import_module({m!r})\n" for m in modules
    ) + "print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_core_imports_neither_jupyter_server_nor_jupyterhub():
    loaded = loaded_after(CORE)
    assert not {m for m in loaded if m.split(".")[0] in {"jupyter_server", "jupyterhub", "kubespawner"}}


def test_import_trainhub_stays_light():
    loaded = loaded_after(["trainhub"])
    assert "torch" not in loaded and "pydantic" not in loaded and "IPython" not in loaded


@pytest.mark.parametrize(("module", "forbidden"), [
    ("trainhub_server", "jupyterhub"),
    ("trainhub_spawner", "jupyter_server"),
])
def test_server_extension_and_spawner_stay_apart(module, forbidden):
    loaded = loaded_after([module])
    assert not {m for m in loaded if m.split(".")[0] == forbidden}
