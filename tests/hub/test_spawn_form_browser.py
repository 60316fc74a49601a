"""The spawn form in Debian's Chromium (playwright from the UI tests' node_modules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import needs_chromium, visit
from tests.hub.conftest import PASSWORD, HubWorld, wait_for

pytestmark = [pytest.mark.timeout(600), needs_chromium]


def test_a_user_spawns_from_the_form_in_a_browser(hub_world: HubWorld, tmp_path: Path) -> None:
    result = visit(
        Path(__file__).with_name("spawn_form.cjs"),
        hub_world.hub.url,
        "ada",
        PASSWORD,
        "browser",
        "vision.a100",
        "0",
        tmp_path,
        timeout=400,
    )
    assert "error" not in result, f"{result}\n{hub_world.hub.log_tail()}"
    assert result["profiles"] == ["vision.a100", "vision.t4"]
    assert result["titles"] == ["vision · a100", "vision · t4"]
    assert result["gpuChoices"] == ["0", "1"]
    assert result["landed"].startswith("/user/ada/browser/")
    assert (tmp_path / "spawn-form-ada.png").stat().st_size > 10_000
    pods = [
        p
        for p in hub_world.pods("vision")
        if p.metadata.annotations.get("hub.jupyter.org/servername") == "browser"
    ]
    assert [p.spec.node_selector for p in pods] == [{"trainhub.io/pool": "a100"}]
    assert not (pods[0].spec.containers[0].resources.limits or {}).get("nvidia.com/gpu")
    hub_world.hub.api("DELETE", "/users/ada/servers/browser")
    wait_for(
        "the browser server's pod to go",
        lambda: (
            not [
                p
                for p in hub_world.pods("vision")
                if p.metadata.annotations.get("hub.jupyter.org/servername") == "browser"
            ]
        ),
        timeout=120,
    )
