"""Alerts of real jobs on the local backend, delivered to a real HTTP receiver (http.server on
loopback) and a real SMTP server (aiosmtpd): one message per channel, retried with backoff,
never in the way of the job, never carrying its secrets."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import nbformat
import pytest
from aiosmtpd.controller import Controller
from nbformat.v4 import new_code_cell, new_notebook

from tests.local.conftest import Trainhub, wait_for

SECRET = "sk-live-0123456789abcdefXYZ"  # a key the job is given: no alert may carry it


class Receiver:
    """A webhook receiver answering the given statuses in turn (then 200), keeping each body."""

    def __init__(self, statuses: list[int] | None = None):
        self.statuses = list(statuses or [])
        self.posts: list[tuple[int, dict[str, Any]]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                receiver.posts.append((status, body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Mailbox:
    def __init__(self) -> None:
        self.mails: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mails.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
        return "250 OK"


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    box = Mailbox()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    yield box, port
    controller.stop()


@pytest.fixture
def alerting(trainhub_env: Trainhub, smtp: tuple[Mailbox, int]) -> Trainhub:
    _, port = smtp
    trainhub_env.env.update(
        TRAINHUB_SMTP_HOST="127.0.0.1",
        TRAINHUB_SMTP_PORT=str(port),
        TRAINHUB_SMTP_FROM="trainhub@example.org",
        TRAINHUB_ALERT_BACKOFF_SECONDS="0.3",
    )
    nbformat.write(
        new_notebook(
            cells=[
                new_code_cell(
                    "import os\nkey = os.environ['WANDB_API_KEY']\n"
                    "raise ValueError(f'could not log in with {key}')"
                )
            ]
        ),
        trainhub_env.workspace / "broken.ipynb",
    )
    nbformat.write(
        new_notebook(cells=[new_code_cell("print('done')")]), trainhub_env.workspace / "ok.ipynb"
    )
    return trainhub_env


def channels(th: Trainhub, webhook: str, email: bool = True) -> None:
    th.home.mkdir(parents=True, exist_ok=True)
    (th.home / "alerts.yaml").write_text(
        json.dumps({"webhooks": [webhook], "email": ["ada@example.org"] if email else []})
    )


def outbox(th: Trainhub) -> Path:
    return th.home / "alerts" / "outbox"


def delivered(th: Trainhub) -> list[dict[str, Any]]:
    path = outbox(th) / "delivered.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_failed_job_is_announced_once_per_channel_with_its_verdict_and_no_secret(
    alerting: Trainhub, smtp: tuple[Mailbox, int]
) -> None:
    box, _ = smtp
    receiver = Receiver()
    try:
        channels(alerting, receiver.url)
        job_id = alerting.submit(
            "broken.ipynb", "--notify", "failure,end", "--env", f"WANDB_API_KEY={SECRET}"
        )
        job = alerting.wait(job_id)
        assert job["state"] == "failed"
        wait_for(lambda: receiver.posts and box.mails, 30, "the webhook and the mail")
        time.sleep(1.5)  # nothing more comes: failure and end are one alert
        assert len(receiver.posts) == 1 and len(box.mails) == 1

        (status, body), (rcpt, mail) = receiver.posts[0], box.mails[0]
        assert status == 200 and rcpt == ["ada@example.org"]
        assert body["text"].startswith(f"trainhub job broken ({job_id}) failed: ")
        assert job["verdict"]["reason"].split(":")[0] in body["text"]
        assert body["blocks"][0]["text"]["text"] == body["text"]
        fields = json.dumps(body["blocks"][1]["fields"])
        assert "ValueError" in fields and '"*failure class*\\ncode"' in fields
        assert mail["Subject"] == f"trainhub job broken ({job_id}) failed"
        assert job["verdict"]["failure_class"] in mail.get_payload()
        # The verdict's message carried the key; what was sent did not.
        assert SECRET in json.dumps(job["verdict"])
        assert SECRET not in json.dumps(body) and SECRET not in mail.as_string()
        assert "[redacted]" in json.dumps(body)
        assert [d["attempts"] for d in delivered(alerting)] == [1, 1]
    finally:
        receiver.close()


def test_a_receiver_that_fails_twice_gets_the_message_on_the_third_try(
    alerting: Trainhub,
) -> None:
    receiver = Receiver([500, 500])
    try:
        channels(alerting, receiver.url, email=False)
        job_id = alerting.submit("ok.ipynb", "--notify", "end")
        assert alerting.wait(job_id)["state"] == "succeeded"
        wait_for(lambda: delivered(alerting), 30, "the delivery")
        assert [s for s, _ in receiver.posts] == [500, 500, 200]
        assert all(b == receiver.posts[0][1] for _, b in receiver.posts)  # the same message
        assert receiver.posts[0][1]["text"] == f"trainhub job ok ({job_id}) ended: succeeded."
        (record,) = delivered(alerting)
        assert record["attempts"] == 3 and record["kind"] == "webhook"
        assert list(outbox(alerting).glob("*.json")) == []
    finally:
        receiver.close()


def test_a_dead_receiver_leaves_the_job_as_it_was_and_is_given_up_on_after_its_tries(
    alerting: Trainhub,
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/hook"
    channels(alerting, dead, email=False)
    alerting.env.update(TRAINHUB_SMTP_HOST="", TRAINHUB_ALERT_ATTEMPTS="3")
    announced = alerting.submit("broken.ipynb", "--notify", "failure")
    silent = alerting.submit("broken.ipynb")
    a, b = alerting.wait(announced), alerting.wait(silent)
    assert a["state"] == b["state"] == "failed"
    assert a["verdict"]["failure_class"] == b["verdict"]["failure_class"] == "code"
    events = (alerting.job_dir(announced) / "events.jsonl").read_text()
    assert '"alert"' not in events  # queued without a problem

    failed = outbox(alerting) / "failed"
    (path,) = wait_for(lambda: list(failed.glob("*.json")), 30, "the message given up on")
    message = json.loads(path.read_text())
    assert message["attempts"] == 3 and message["error"].startswith("URLError")
    # Tries at least 0.3 s, then 0.6 s apart: exponential backoff (never sooner).
    first, second, third = message["tries"]
    assert second - first >= 0.3 and third - second >= 0.6
    assert list(outbox(alerting).glob("*.json")) == [] and delivered(alerting) == []
