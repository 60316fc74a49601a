"""ResourceQuota status -> the sentence on the spawn page."""

from __future__ import annotations

from decimal import Decimal

import pytest

from trainhub_spawner.quota import parse_quantity, shortfall


def quota(hard: dict[str, str], used: dict[str, str]) -> dict:
    return {
        "metadata": {"name": "trainhub-quota"},
        "spec": {"hard": hard},
        "status": {"hard": hard, "used": used},
    }


GPU = "requests.nvidia.com/gpu"


def test_a_session_over_the_gpu_quota_is_refused_with_the_numbers() -> None:
    q = [quota({GPU: "8", "requests.cpu": "96"}, {GPU: "7", "requests.cpu": "10"})]
    assert (
        shortfall("vision", q, {GPU: "2"}) == "team vision uses 7 of 8 GPUs; this profile needs 2"
    )
    assert shortfall("vision", q, {GPU: "1"}) is None
    assert shortfall("vision", q, {GPU: "0"}) is None


def test_cpu_and_memory_are_checked_in_their_own_units() -> None:
    q = [
        quota(
            {"requests.cpu": "4", "requests.memory": "16Gi"},
            {"requests.cpu": "3500m", "requests.memory": "15Gi"},
        )
    ]
    assert (
        shortfall("nlp", q, {"requests.cpu": "1"})
        == "team nlp uses 3.5 of 4 CPUs; this profile needs 1"
    )
    assert shortfall("nlp", q, {"requests.cpu": "500m"}) is None
    assert (
        shortfall("nlp", q, {"requests.memory": str(2 * 2**30)})
        == "team nlp uses 15Gi of 16Gi of memory; this profile needs 2Gi"
    )


def test_every_quota_of_the_namespace_counts_and_unlimited_resources_fit() -> None:
    qs = [quota({"requests.cpu": "100"}, {}), quota({GPU: "4"}, {GPU: "4"})]
    assert (
        shortfall("nlp", qs, {GPU: "1", "requests.cpu": "1"})
        == "team nlp uses 4 of 4 GPUs; this profile needs 1"
    )
    assert shortfall("nlp", [], {GPU: "16"}) is None
    fresh = [{"spec": {"hard": {GPU: "2"}}}]  # the quota controller has not written status yet
    assert shortfall("nlp", fresh, {GPU: "3"}) == "team nlp uses 0 of 2 GPUs; this profile needs 3"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", Decimal(2)),
        ("500m", Decimal("0.5")),
        ("16Gi", Decimal(16 * 2**30)),
        ("1k", Decimal(1000)),
        ("1e3", Decimal(1000)),
        ("1.5", Decimal("1.5")),
    ],
)
def test_quantities(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_a_bad_quantity_names_itself() -> None:
    with pytest.raises(ValueError, match="'2 GPUs' is not a Kubernetes quantity"):
        parse_quantity("2 GPUs")
