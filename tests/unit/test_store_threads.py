"""The local store from several threads of one process: each has its own connection, so a
transaction in one never mixes with another's statements, and readers go on meanwhile."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from trainhub.backends.local.store import Store


def test_each_thread_has_its_own_connection_and_readers_go_on(tmp_path: Path) -> None:
    store = Store(tmp_path / "trainhub.db")
    store.set_machine_setting("slots", "1")
    holding, release = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def writer() -> None:
        with store.transaction() as conn:
            store.set_machine_setting("slots", "2")  # the thread's own connection: inside
            seen["inside"] = store.machine_setting("slots", conn)
            holding.set()
            release.wait(10)

    def second_writer() -> None:
        with store.transaction():  # waits for the first transaction, as another process would
            seen["after"] = store.machine_setting("slots")

    first = threading.Thread(target=writer)
    first.start()
    assert holding.wait(10)
    assert store.machine_setting("slots") == "1"  # this thread reads the committed value
    second = threading.Thread(target=second_writer)
    second.start()
    time.sleep(0.3)
    assert "after" not in seen  # the second transaction has not begun
    release.set()
    first.join(10)
    second.join(10)
    assert seen["inside"] == "2" and seen["after"] == "2"
    assert store.machine_setting("slots") == "2"
    store.close()
