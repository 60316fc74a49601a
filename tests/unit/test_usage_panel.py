"""The Usage panel's pure parts: quotas from a Kueue ClusterQueue and from the local
admission's capacity, the week and month starts, and the panel over a store of rows."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from tests.unit.test_usage import T0, record
from trainhub.jobs.models import Verdict
from trainhub.jobs.states import FailureClass, JobState
from trainhub.usage.compute import usage_row
from trainhub.usage.panel import cluster_queue_quotas, local_quotas, panel, period_starts
from trainhub.usage.store import UsageStore

CLUSTER_QUEUE = {
    "metadata": {"name": "team-vision"},
    "spec": {
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "a100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "32"},
                            {"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 2},
                        ],
                    },
                    {
                        "name": "h100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "1500m"},
                            {"name": "nvidia.com/gpu", "nominalQuota": "4"},
                        ],
                    },
                ],
            }
        ]
    },
    "status": {
        "flavorsReservation": [
            {
                "name": "a100",
                "resources": [
                    {"name": "cpu", "total": "2500m", "borrowed": "0"},
                    {"name": "nvidia.com/gpu", "total": "3", "borrowed": "0"},
                ],
            },
            {
                "name": "h100",
                "resources": [{"name": "nvidia.com/gpu", "total": "6", "borrowed": "2"}],
            },
        ]
    },
}


def test_a_cluster_queue_gives_used_nominal_borrowed_and_lendable_per_pool():
    quotas = {(q.pool, q.resource): q for q in cluster_queue_quotas(CLUSTER_QUEUE)}
    a100 = quotas[("a100", "nvidia.com/gpu")]
    assert (a100.used, a100.nominal, a100.borrowed) == (3, 8, 0)
    assert a100.lendable == 2  # 5 unused, but the lending limit is 2
    h100 = quotas[("h100", "nvidia.com/gpu")]
    assert (h100.used, h100.nominal, h100.borrowed, h100.lendable) == (6, 4, 2, 0)
    assert quotas[("a100", "cpu")].used == pytest.approx(2.5)
    assert quotas[("h100", "cpu")].nominal == pytest.approx(1.5)
    assert quotas[("h100", "cpu")].used == 0  # nothing reserved there
    assert cluster_queue_quotas(None) == []
    assert cluster_queue_quotas({"spec": {"resourceGroups": [{"flavors": [{}]}]}}) == []


def test_the_local_admission_offers_its_gpus_and_slots():
    gpus, slots = local_quotas(gpus=4, gpus_free=1, slots=8, slots_free=8)
    assert (gpus.resource, gpus.used, gpus.nominal, gpus.lendable) == ("gpus", 3, 4, 1)
    assert (slots.resource, slots.used, slots.borrowed) == ("cpu slots", 0, 0)
    assert [q.resource for q in local_quotas(0, 0, 2, 1)] == ["cpu slots"]


def test_weeks_start_on_monday_and_months_on_the_first_utc():
    now = datetime(2026, 12, 2, 15, 30, tzinfo=UTC).timestamp()  # a Wednesday
    week, month = period_starts(now)
    assert datetime.fromtimestamp(week, UTC) == datetime(2026, 11, 30, tzinfo=UTC)
    assert datetime.fromtimestamp(month, UTC) == datetime(2026, 12, 1, tzinfo=UTC)


def test_the_panel_keeps_to_the_user_and_their_team():
    conn = sqlite3.connect(":memory:")
    usage = UsageStore(lambda: conn)
    now = T0 + 200
    failed = dict(
        state=JobState.FAILED,
        verdict=Verdict(failure_class=FailureClass.INFRASTRUCTURE, reason="node lost"),
    )
    usage.record(
        [
            usage_row(record("a1", user="ada", team="vision"), threshold_pct=10),
            usage_row(record("a2", user="ada", team="vision", **failed), threshold_pct=10),
            usage_row(record("g1", user="grace", team="vision", gpus=4), threshold_pct=10),
            usage_row(record("o1", user="olga", team="nlp", gpus=8), threshold_pct=10),
        ]
    )
    shown = panel(
        usage,
        user="ada",
        team="vision",
        now=now,
        quotas=[],
        quota_source="local admission",
        waiting=3,
        waiting_mine=1,
        waste_utilization_pct=10,
    )
    # Each job ran 100 s: ada's two with 2 GPUs; the team's adds grace's 4; olga's is out.
    assert shown.mine.month == pytest.approx(2 * 2 * 100 / 3600)
    assert shown.team_hours is not None
    assert shown.team_hours.month == pytest.approx((2 * 2 + 4) * 100 / 3600)
    assert [(f.failure_class, f.jobs, f.rate) for f in shown.failures] == [
        ("infrastructure", 1, pytest.approx(1 / 3))
    ]
    assert shown.ended_30d == 3
    assert shown.typical_wait_s == pytest.approx(5)
    assert sum(d.mine for d in shown.daily) == pytest.approx(shown.mine.month)
    assert shown.wasteful == []  # no idle GPU, no step logged: nothing known lost
    alone = panel(
        usage,
        user="ada",
        team=None,
        now=now,
        quotas=[],
        quota_source="",
        waiting=0,
        waiting_mine=0,
        waste_utilization_pct=10,
    )
    assert alone.team_hours is None and alone.ended_30d == 2
