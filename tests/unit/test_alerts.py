"""Alerts, the pure parts: what a job asks for, what an alert says (secrets scrubbed), where it
goes (the user's file, the team's entry, each mistake named), backoff, saturated quotas."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from trainhub.alerts import saturation
from trainhub.alerts.channels import AlertsFileError, Channels, TeamEvent, user_channels
from trainhub.alerts.message import REDACTED, job_alert, scrub, secret_values
from trainhub.alerts.outbox import deliver_due, enqueue, retry_delay
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import SpecError, parse_spec
from trainhub.jobs.specparts import NotifyOn
from trainhub.jobs.states import FailureClass, JobState
from trainhub.lifecycle.notify import end_alert_kind
from trainhub.teams import TeamsError, load_teams, parse_teams

REPO = Path(__file__).resolve().parents[2]
SPEC = {"name": "train", "source": {"path": "train.ipynb"}}


def test_notify_is_validated_naming_the_field() -> None:
    assert parse_spec({**SPEC, "notify": ["failure", "end"]}).notify == [
        NotifyOn.FAILURE,
        NotifyOn.END,
    ]
    with pytest.raises(SpecError) as refused:
        parse_spec({**SPEC, "notify": ["failure", "sometimes"]})
    assert [e.field for e in refused.value.errors] == ["notify.1"]
    assert "failure" in str(refused.value) and "preemption" in str(refused.value)


@pytest.mark.parametrize(
    ("notify", "state", "kind"),
    [
        (["failure"], JobState.FAILED, "failure"),
        (["failure", "end"], JobState.FAILED, "failure"),  # one alert, not two
        (["end"], JobState.FAILED, "failure"),
        (["end"], JobState.SUCCEEDED, "end"),
        (["failure"], JobState.SUCCEEDED, None),
        (["preemption"], JobState.FAILED, None),
        ([], JobState.FAILED, None),
    ],
)
def test_one_alert_per_end_at_most(notify, state, kind) -> None:
    assert end_alert_kind([NotifyOn(n) for n in notify], state) == kind


def test_secrets_are_scrubbed_in_every_shape() -> None:
    env = {"HF_TOKEN": "hf_abcdefghijkl", "HOME": "/root", "DB_PASSWORD": "hunter2hunter2"}
    secrets = secret_values(env, job_env={"WANDB_API_KEY": "w4nd8-secret-value"})
    assert secrets == {"hf_abcdefghijkl", "hunter2hunter2", "w4nd8-secret-value"}
    text = scrub(
        "login failed with w4nd8-secret-value and hunter2hunter2; token=abc123def; "
        "api_key: 'xyz' https://ada:pa55w0rd@git.example.org/repo Bearer eyJhbGciOiJIUzI1"
        " ghp_0123456789abcdefghijABCDEFGHIJ in /home/ada/private/run.py",
        secrets,
    )
    for leaked in ("w4nd8", "hunter2", "abc123def", "xyz", "pa55w0rd", "eyJhbG", "ghp_0123"):
        assert leaked not in text
    assert text.count(REDACTED) == 7
    assert "/home/ada/private" not in text and "run.py" in text


def record(**fields) -> JobRecord:
    return JobRecord(
        id="train-1a2b",
        name="train",
        user="ada",
        team="vision",
        priority=1,
        state=JobState.FAILED,
        spec=parse_spec({**SPEC, "env": {"KEY": "s3cr3t-k3y"}}),
        job_dir="/nowhere",
        gpus=2,
        created_at=0.0,
        **fields,
    )


def test_a_job_alert_is_a_slack_body_and_a_mail_without_the_jobs_env() -> None:
    verdict = Verdict(
        failure_class=FailureClass.CODE,
        reason="KeyError in cell 3, line 2",
        exception="KeyError",
        message="'s3cr3t-k3y'",
        cell_index=3,
        line=2,
    )
    job = record(verdict=verdict)
    alert = job_alert(job, "failure", secret_values(job_env=job.spec.env))
    body = alert.slack_body()
    assert body["text"] == "trainhub job train (train-1a2b) failed: KeyError in cell 3, line 2"
    assert body["blocks"][0] == {
        "type": "section",
        "text": {"type": "mrkdwn", "text": body["text"]},
    }
    fields = {
        f["text"].split("\n")[0]: f["text"].split("\n")[1] for f in body["blocks"][1]["fields"]
    }
    assert fields["*team*"] == "vision" and fields["*where*"] == "cell 3, line 2"
    assert fields["*exception*"] == f"KeyError: '{REDACTED}'"
    assert "s3cr3t" not in json.dumps(body) and "s3cr3t" not in alert.mail_text()


def test_the_users_alerts_file_names_a_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "alerts.yaml"
    assert user_channels(path) == Channels()  # no file: no channel
    path.write_text(
        yaml.safe_dump({"webhooks": ["https://hooks.example.org/x"], "email": ["a@b.org"]})
    )
    assert user_channels(path).webhooks == ["https://hooks.example.org/x"]
    path.write_text(yaml.safe_dump({"webhooks": ["ftp://hooks.example.org/x"]}))
    with pytest.raises(
        AlertsFileError, match=r"alerts.yaml: webhooks\[0\]: .*not an http\(s\) URL"
    ):
        user_channels(path)
    path.write_text(yaml.safe_dump({"email": ["ada"], "slack": []}))
    with pytest.raises(AlertsFileError, match=r"alerts.yaml: (email\[0\]|slack)"):
        user_channels(path)


def test_team_alerts_in_the_teams_file() -> None:
    teams = load_teams(REPO / "hub_config" / "teams.yaml")
    vision = teams.team("vision").alerts
    assert vision is not None and vision.email == ["vision-oncall@example.org"]
    assert set(vision.events) == set(TeamEvent) and teams.team("nlp").alerts is None
    data = copy.deepcopy(yaml.safe_load((REPO / "hub_config" / "teams.yaml").read_text()))
    data["teams"][0]["alerts"]["email"] = ["not an address"]
    data["teams"][0]["alerts"]["events"] = ["sometimes"]
    with pytest.raises(TeamsError) as refused:
        parse_teams(data)
    assert {p for p, _ in refused.value.errors} == {
        "teams[0].alerts.email[0]",
        "teams[0].alerts.events[0]",
    }


def test_backoff_doubles_up_to_its_cap() -> None:
    assert [retry_delay(n, 2.0) for n in (1, 2, 3, 4)] == [2.0, 4.0, 8.0, 16.0]
    assert retry_delay(20, 2.0) == 300.0


def test_the_outbox_keeps_one_message_per_channel_and_retries_each_alone(tmp_path: Path) -> None:
    alert = job_alert(record(), "end")
    channels = Channels(
        webhooks=["http://a.example.org/", "http://b.example.org/"], email=["x@y.org"]
    )
    assert enqueue(tmp_path, alert, channels, start_sender=False) == 3
    sent: list[str] = []

    def transport(message) -> None:
        channel = message["channel"]
        if channel.get("url") == "http://a.example.org/":
            raise OSError("down")
        sent.append(channel.get("url") or channel["kind"])

    upcoming = deliver_due(tmp_path, now=1e12, transport=transport)
    assert sorted(sent) == ["email", "http://b.example.org/"]
    (waiting,) = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert waiting["attempts"] == 1 and waiting["error"] == "OSError: down"
    assert upcoming == waiting["next_try"] == 1e12 + 2.0
    assert deliver_due(tmp_path, now=1e12 + 1, transport=transport) == upcoming  # not yet due


def test_a_quota_is_announced_once_per_saturated_stretch() -> None:
    state = saturation.Saturation()
    fired = []
    for minute, used in enumerate([8, 8, 8, 8, 8, 3, 8, 8, 8]):
        state, fire = saturation.observe(state, minute * 60.0, used, 8, minutes=2)
        fired.append(fire)
    assert fired == [False, False, True, False, False, False, False, False, True]
    assert saturation.observe(saturation.Saturation(), 0, 0, 0, 1) == (
        saturation.Saturation(),
        False,
    )


def test_an_ending_announced_again_under_its_key_is_no_new_message(tmp_path: Path) -> None:
    """A controller that records an ending twice (it stopped between writing the outbox and
    the job's final state) announces it once: queued, delivered or given up."""
    alert, channels = job_alert(record(), "failure"), Channels(webhooks=["http://a.example.org/"])
    assert enqueue(tmp_path, alert, channels, start_sender=False, key="j1-a0-failure") == 1
    assert enqueue(tmp_path, alert, channels, start_sender=False, key="j1-a0-failure") == 0
    deliver_due(tmp_path, now=2e9, transport=lambda message: None)
    assert not list(tmp_path.glob("*.json"))
    assert enqueue(tmp_path, alert, channels, start_sender=False, key="j1-a0-failure") == 0
    assert enqueue(tmp_path, alert, channels, start_sender=False, key="j1-a1-failure") == 1


def test_a_members_alerts_file_is_read_without_following_a_link(tmp_path: Path) -> None:
    from trainhub.alerts.channels import member_alerts_path, member_channels

    secret = tmp_path / "controller-token"
    secret.write_text("webhooks: [not-a-url-but-a-secret]\n")
    path = tmp_path / "team" / member_alerts_path("ada")
    path.parent.mkdir(parents=True)
    path.symlink_to(secret)
    with pytest.raises(AlertsFileError) as refused:
        member_channels(tmp_path / "team", "ada")
    assert "secret" not in str(refused.value)
    path.unlink()
    path.write_text("webhooks: ['http://a.example.org/']\n")
    assert member_channels(tmp_path / "team", "ada").webhooks == ["http://a.example.org/"]
    assert member_channels(tmp_path / "team", "bo") == Channels()
    assert member_alerts_path("../../etc").parts[2] == "-..-etc"  # one name, not a way up
