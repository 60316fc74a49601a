"""The alerts outbox: one JSON file per message and channel, delivered by a detached sender.

``enqueue`` writes the files (a new file renamed into place) and starts a sender
(``python -m trainhub.alerts.outbox <dir>``) in a session of its own: whoever announces (the
local supervisor as a job ends, the idle-GPU service) never waits on a receiver and never
fails through one. The sender holds ``.lock`` (one sender per outbox; another waits, then
finds nothing to do), sends what is due, and reschedules a failure after
``backoff * 2**(attempts - 1)`` seconds (TRAINHUB_ALERT_BACKOFF_SECONDS, 2; at most 300) until
TRAINHUB_ALERT_ATTEMPTS (8) tries; then the message moves to ``failed/`` with its last error.
Each delivery is a line of ``delivered.jsonl`` (message id, channel kind, attempts, time).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import smtplib
import sys
import time
import urllib.request
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from trainhub import detached
from trainhub.alerts.channels import Channels, Smtp
from trainhub.alerts.message import Alert

LOCK = ".lock"
SUFFIX = ".json"
MAX_BACKOFF = 300.0
TIMEOUT = 10.0  # seconds a receiver may take to answer one try


def backoff_base() -> float:
    return float(os.environ.get("TRAINHUB_ALERT_BACKOFF_SECONDS") or 2.0)


def max_attempts() -> int:
    return int(os.environ.get("TRAINHUB_ALERT_ATTEMPTS") or 8)


def retry_delay(attempts: int, base: float) -> float:
    """Seconds before the next try after ``attempts`` failed ones."""
    return min(base * 2 ** max(attempts - 1, 0), MAX_BACKOFF)


def _write_new(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def messages(
    alert: Alert, channels: Channels, now: float, key: str | None = None
) -> list[dict[str, Any]]:
    """One message per channel, so one receiver's retries never resend another's; ``key``
    names what is announced (a job's ending), so that announcing it again is no new message."""
    group = key or f"{int(now * 1000)}-{secrets.token_hex(6)}"
    out = [{"kind": "webhook", "url": url} for url in channels.webhooks]
    if channels.email:
        out.append({"kind": "email", "to": list(channels.email)})
    return [
        {
            "id": f"{group}-{i}",
            "channel": channel,
            "alert": alert.as_dict(),
            "created": now,
            "attempts": 0,
            "next_try": now,
            "error": None,
        }
        for i, channel in enumerate(out)
    ]


def enqueue(
    outbox: Path,
    alert: Alert,
    channels: Channels,
    *,
    start_sender: bool = True,
    key: str | None = None,
) -> int:
    """Write the alert's messages into ``outbox`` and start a sender; returns how many. With a
    ``key``, a message already queued, delivered or given up is not written again: whoever
    records an ending twice (a controller that stopped between the two) announces it once."""
    if channels.empty:
        return 0
    outbox.mkdir(parents=True, exist_ok=True)
    found = messages(alert, channels, time.time(), key)
    if key is not None:
        seen = known_ids(outbox)
        found = [m for m in found if m["id"] not in seen]
    for message in found:
        _write_new(outbox / (message["id"] + SUFFIX), message)
    if start_sender:
        spawn_sender(outbox)
    return len(found)


def known_ids(outbox: Path) -> set[str]:
    """The ids of the messages queued, given up or delivered in ``outbox``."""
    ids = {p.name.removesuffix(SUFFIX) for p in outbox.glob("*" + SUFFIX)}
    ids |= {p.name.removesuffix(SUFFIX) for p in (outbox / "failed").glob("*" + SUFFIX)}
    with contextlib.suppress(FileNotFoundError), (outbox / "delivered.jsonl").open() as log:
        for line in log:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                ids.add(json.loads(line)["id"])
    return ids


def spawn_sender(outbox: Path) -> None:
    detached.spawn("trainhub.alerts.outbox", str(outbox), outbox / "sender.log")


# --- transports ----------------------------------------------------------------------------------
def send_webhook(url: str, alert: dict[str, Any]) -> None:
    body = json.dumps(Alert(**{**alert, "fields": tuple(map(tuple, alert["fields"]))}).slack_body())
    request = urllib.request.Request(
        url, data=body.encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        if not 200 <= response.status < 300:
            raise OSError(f"the webhook answered {response.status}")


def send_email(to: list[str], alert: dict[str, Any], smtp: Smtp | None) -> None:
    if smtp is None:
        raise OSError("no SMTP server configured (TRAINHUB_SMTP_HOST)")
    mail = EmailMessage()
    mail["Subject"] = alert["subject"]
    mail["From"] = smtp.sender
    mail["To"] = ", ".join(to)
    mail.set_content(Alert(**{**alert, "fields": tuple(map(tuple, alert["fields"]))}).mail_text())
    with smtplib.SMTP(smtp.host, smtp.port, timeout=TIMEOUT) as client:
        if smtp.starttls:
            client.starttls()
        if smtp.user and smtp.password:
            client.login(smtp.user, smtp.password)
        client.send_message(mail)


def send(message: dict[str, Any]) -> None:
    channel = message["channel"]
    if channel["kind"] == "webhook":
        send_webhook(channel["url"], message["alert"])
    else:
        send_email(channel["to"], message["alert"], Smtp.from_env())


# --- the sender ----------------------------------------------------------------------------------
def _error_text(error: BaseException) -> str:
    # urllib's HTTPError carries the receiver's page; its status is what matters.
    code = getattr(error, "code", None)
    return f"{type(error).__name__}: {code}" if code else f"{type(error).__name__}: {error}"[:300]


def deliver_due(
    outbox: Path, now: float, transport: Callable[[dict[str, Any]], None] = send
) -> float | None:
    """One pass: send each message due by ``now``; returns when the next one is due (None:
    the outbox is empty)."""
    base, most = backoff_base(), max_attempts()
    upcoming: float | None = None
    for path in sorted(outbox.glob("*" + SUFFIX)):
        try:
            message = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being written, or taken meanwhile
        if message["next_try"] > now:
            upcoming = min(upcoming or message["next_try"], message["next_try"])
            continue
        message["attempts"] += 1
        message["tries"] = [*message.get("tries", []), now][-max(most, 1) :]
        try:
            transport(message)
        except Exception as error:
            message["error"] = _error_text(error)
            if message["attempts"] >= most:
                (outbox / "failed").mkdir(exist_ok=True)
                _write_new(outbox / "failed" / path.name, message)
                path.unlink(missing_ok=True)
                continue
            message["next_try"] = now + retry_delay(message["attempts"], base)
            _write_new(path, message)
            upcoming = min(upcoming or message["next_try"], message["next_try"])
            continue
        with (outbox / "delivered.jsonl").open("a") as log:
            log.write(
                json.dumps(
                    {
                        "id": message["id"],
                        "kind": message["channel"]["kind"],
                        "alert": message["alert"]["kind"],
                        "attempts": message["attempts"],
                        "time": time.time(),
                    }
                )
                + "\n"
            )
        path.unlink(missing_ok=True)
    return upcoming


def run_sender(outbox: Path) -> None:
    """Deliver until the outbox is empty, sleeping until the next retry is due."""
    outbox.mkdir(parents=True, exist_ok=True)
    with (outbox / LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one sender at a time; a later one finds it done
        while True:
            upcoming = deliver_due(outbox, time.time())
            if upcoming is None:
                return
            time.sleep(max(0.05, min(upcoming - time.time(), MAX_BACKOFF)))


if __name__ == "__main__":
    sys.exit(detached.main(run_sender))
