"""What an alert says (pure): a subject and a text, the webhook's Slack-compatible body
(``{"text": ..., "blocks": [...]}``), secrets scrubbed.

An alert carries the job's name, id, user, team, state and the verdict's sentence, exception
and place: never its environment, parameters, log or traceback. What it carries is scrubbed
anyway (:func:`scrub`): the values of the job's ``env`` and of the sender's own secret-named
variables, ``name=value`` pairs whose name says secret, URL credentials, bearer tokens and the
usual token shapes, and server paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from trainhub.errors import scrub_paths

REDACTED = "[redacted]"
SECRET_NAME = re.compile(r"(?i)(token|secret|passw(or)?d|passwd|api[_-]?key|credential|auth)")
_PAIR = re.compile(
    r"(?i)\b([\w.-]*(?:token|secret|passw(?:or)?d|api[_-]?key|credential|auth)[\w.-]*)"
    r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;]+)"
)
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@")
_BEARER = re.compile(r"(?i)\b(bearer|token)\s+[A-Za-z0-9._~+/=-]{8,}")
_SHAPES = re.compile(
    r"\b(gh[pousr]_[A-Za-z0-9]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{16,}"
    r"|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+)"
)
MAX_TEXT = 3000  # Slack's limit for a section's text


def secret_values(*environments: Mapping[str, str], job_env: Mapping[str, str] = {}) -> set[str]:
    """Values never to be sent: each of the job's ``env`` (a user puts keys there), and each
    variable of ``environments`` whose name says secret; short values (ordinary words) left."""
    values = {v for v in job_env.values() if len(v) >= 4}
    for env in environments:
        values |= {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= 6}
    return values


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    for value in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _PAIR.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + " " + REDACTED, text)
    text = _SHAPES.sub(REDACTED, text)
    return scrub_paths(text)


@dataclass(frozen=True)
class Alert:
    kind: str  # failure, preemption, end, idle_gpu_session, quota_saturated
    subject: str
    text: str
    fields: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def slack_body(self) -> dict[str, Any]:
        """Slack's incoming-webhook body; chat bridges that read ``text`` alone work too."""
        blocks: list[dict[str, Any]] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": self.text[:MAX_TEXT]}}
        ]
        if self.fields:
            blocks.append(
                {
                    "type": "section",
                    "fields": [
                        {"type": "mrkdwn", "text": f"*{k}*\n{v}"[:2000]}
                        for k, v in self.fields[:10]
                    ],
                }
            )
        return {"text": self.text[:MAX_TEXT], "blocks": blocks}

    def mail_text(self) -> str:
        return "\n".join([self.text, "", *(f"{k}: {v}" for k, v in self.fields)]) + "\n"


def job_alert(record: Any, kind: str, secrets: Iterable[str] = ()) -> Alert:
    """The alert of a job (a JobRecord) that failed, was preempted or ended."""
    verdict = record.verdict
    what = {
        "failure": "failed",
        "preemption": "was preempted",
        "end": f"ended: {record.state.value}",
    }[kind]
    team = record.team or record.spec.team
    head = f"trainhub job {record.name} ({record.id}) {what}"
    text = head + (f": {verdict.reason}" if verdict is not None and verdict.reason else ".")
    fields = [("job", record.id), ("user", record.user), ("state", record.state.value)]
    if team:
        fields.append(("team", team))
    if verdict is not None:
        fields.append(("failure class", verdict.failure_class.value))
        if verdict.exception:
            fields.append(("exception", f"{verdict.exception}: {verdict.message or ''}".strip()))
        if verdict.cell_index is not None:
            where = f"cell {verdict.cell_index}"
            fields.append(("where", where + (f", line {verdict.line}" if verdict.line else "")))
        if verdict.attempt:
            fields.append(("attempt", str(verdict.attempt)))
    s = list(secrets)
    return Alert(
        kind=kind,
        subject=scrub(head, s),
        text=scrub(text, s),
        fields=tuple((k, scrub(v, s)) for k, v in fields),
    )


def team_alert(kind: str, team: str, sentence: str) -> Alert:
    return Alert(
        kind=kind,
        subject=f"trainhub team {team}: {kind.replace('_', ' ')}",
        text=scrub(f"trainhub team {team}: {sentence}"),
        fields=(("team", team),),
    )


def schedule_alert(
    schedule_id: str, user: str, team: str | None, when: str, why: str, what: str = "was refused"
) -> Alert:
    """The alert of a schedule's run that was refused (no job was made), or that ``what``
    says happened to it (its pipeline run failed)."""
    head = f"trainhub schedule {schedule_id}: the run of {when} {what}"
    fields = [("schedule", schedule_id), ("user", user)] + ([("team", team)] if team else [])
    return Alert(
        kind="failure", subject=scrub(head), text=scrub(f"{head}: {why}"), fields=tuple(fields)
    )
