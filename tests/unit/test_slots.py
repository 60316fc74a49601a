"""The machine's CPU slots are one value in the store: a process configured otherwise (a CLI
with another TRAINHUB_LOCAL_SLOTS beside the server) reads it and cannot over-admit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_store import record
from trainhub.backends.local.admitter import Admitter, default_slots
from trainhub.backends.local.backend import LocalBackend
from trainhub.backends.local.store_rows import LocalJob
from trainhub.jobs.states import JobState


def cli(home: Path, *args: str, slots: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TRAINHUB_HOME": str(home),
        "TRAINHUB_LOCAL_SLOTS": slots,
        "TRAINHUB_GPUS": "0",
    }
    return subprocess.run(
        [sys.executable, "-m", "trainhub.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_process_with_other_settings_reads_the_machines_slots_and_admits_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = LocalBackend(tmp_path, slots=2)  # the server, configured with 2
    monkeypatch.setenv("TRAINHUB_LOCAL_SLOTS", "4")  # a CLI beside it, configured with 4
    other = Admitter(tmp_path, server.store)
    other.__dict__["gpus"] = ()
    assert other.slots() == 2

    with server.store.transaction() as conn:
        for n in range(3):
            server.store.insert(conn, record(f"j-{n}"), LocalJob(slots=1))
        admitted = other.admit(conn)
    assert admitted == ["j-0", "j-1"]
    assert server.store.get("j-2").state == JobState.QUEUED  # type: ignore[union-attr]


def test_the_first_process_seeds_the_slots_and_trainhub_slots_changes_them(tmp_path: Path) -> None:
    assert cli(tmp_path, "slots", slots="3").stdout.strip() == "3"
    assert cli(tmp_path, "slots", slots="8").stdout.strip() == "3"  # seeded once
    assert cli(tmp_path, "slots", "5", slots="8").stdout.strip() == "5"
    assert LocalBackend(tmp_path).admitter.slots() == 5
    bad = cli(tmp_path, "slots", "0", slots="8")
    assert bad.returncode != 0 and "slots: expected at least 1" in bad.stderr


def test_a_bad_slot_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINHUB_LOCAL_SLOTS", "many")
    with pytest.raises(ValueError, match="TRAINHUB_LOCAL_SLOTS='many'"):
        default_slots()
