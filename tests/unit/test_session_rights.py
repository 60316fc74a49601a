"""A session's rights, pure parts: the owner label and account name of a user, the session
Role and account where a controller runs (and the shared account where none does), the
admission policy's objects, and when the controller deactivates a suspended Job's Workload.
The policy's CEL runs on a real API server in tests/k8s/test_session_rights.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from trainhub.backends.kubernetes.controlplane import CONTROLLER
from trainhub.backends.kubernetes.identity import owner_label, session_account
from trainhub.backends.kubernetes.names import NOTEBOOK_ACCOUNT
from trainhub.backends.kubernetes.policies import SESSION_RIGHTS_POLICY
from trainhub.backends.kubernetes.rbac import notebook_rbac, session_account_objects
from trainhub.backends.kubernetes.render import render
from trainhub.backends.kubernetes.status import SUSPEND_ANNOTATION, deactivation_due
from trainhub.teams import parse_teams

ROOT = Path(__file__).resolve().parents[2]
LABEL_VALUE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NAMES = [
    "ada",
    "a-b",
    "a@b",
    "a.b",
    "a_b",
    "A-b",
    "a-2db",
    "@ada",
    "-ada",
    "ada@example.org",
    "zoë",
    "x" * 63,
    "x" * 64,
    "x" * 200,
    "x" * 199 + "y",
]


def teams(controller: bool):
    data = yaml.safe_load((ROOT / "hub_config" / "teams.yaml").read_text())
    if controller:
        data["controller"] = {"namespace": "trainhub-system"}
    return parse_teams(data)


def test_owner_labels_are_valid_label_values_and_account_names_and_never_shared() -> None:
    labels = [owner_label(n) for n in NAMES]
    assert len(set(labels)) == len(NAMES)
    for name, label in zip(NAMES, labels, strict=True):
        assert LABEL_VALUE.match(label) and len(label) <= 63, (name, label)
        assert LABEL_VALUE.match(session_account(name)), name
    assert owner_label("ada") == "ada"  # a plain name reads as itself
    assert owner_label("ada@example.org") == "ada-40example-2eorg"
    assert owner_label("a-b") == "a-2db"
    assert owner_label("x" * 200).startswith("x" * 40) and "--" in owner_label("x" * 200)
    assert session_account("ada") == "trainhub-user-ada"


def test_an_owner_needs_a_name() -> None:
    with pytest.raises(ValueError, match="user"):
        owner_label("")


def test_without_a_controller_the_team_shares_one_account_which_may_deactivate_workloads() -> None:
    objs = render(teams(controller=False))
    assert not [o for o in objs if o["metadata"]["name"] == SESSION_RIGHTS_POLICY]
    account, role, binding = notebook_rbac(teams(controller=False).teams[0])
    assert account["kind"] == "ServiceAccount" and account["metadata"]["name"] == NOTEBOOK_ACCOUNT
    assert {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["patch"]} in (
        role["rules"]
    )
    assert binding["subjects"][0]["name"] == NOTEBOOK_ACCOUNT


def test_with_a_controller_each_user_has_an_account_bound_to_a_role_that_reads_workloads() -> None:
    t = teams(controller=True)
    team = t.teams[0]
    (role,) = notebook_rbac(team, controlled=True)
    workloads = [r for r in role["rules"] if "workloads" in r["resources"]]
    assert [r["verbs"] for r in workloads] == [["get", "list", "watch"]]
    pods = [r["verbs"] for r in role["rules"] if r["resources"] == ["pods"]]
    assert pods == [["get", "list", "watch"]]

    account, binding = session_account_objects(team, "ada@example.org")
    assert account["metadata"]["name"] == "trainhub-user-ada-40example-2eorg"
    assert account["metadata"]["namespace"] == team.namespace
    assert account["metadata"]["annotations"] == {"hub.jupyter.org/username": "ada@example.org"}
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": team.namespace}
    ]

    objs = render(t)
    assert not [
        o
        for o in objs
        if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == NOTEBOOK_ACCOUNT
    ]
    (reader,) = [o for o in objs if o["kind"] == "ClusterRoleBinding"]
    # the team's session accounts, and the controller (which explains waits and ends those
    # no node could ever take): readers of nodes and queues, nothing more
    assert reader["subjects"] == [
        {
            "kind": "Group",
            "apiGroup": "rbac.authorization.k8s.io",
            "name": f"system:serviceaccounts:{tm.namespace}",
        }
        for tm in t.teams
    ] + [{"kind": "ServiceAccount", "name": CONTROLLER, "namespace": t.controller.namespace}]


def test_the_policy_refuses_session_accounts_only_on_jobs_and_services_of_managed_namespaces() -> (
    None
):
    objs = [
        o for o in render(teams(controller=True)) if o["metadata"]["name"] == SESSION_RIGHTS_POLICY
    ]
    policy, binding = objs
    assert (
        policy["kind"] == "ValidatingAdmissionPolicy" and policy["spec"]["failurePolicy"] == "Fail"
    )
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert {(r["apiGroups"][0], r["resources"][0]) for r in rules} == {
        ("batch", "jobs"),
        ("", "services"),
    }
    assert all(r["operations"] == ["CREATE", "UPDATE", "DELETE"] for r in rules)
    (condition,) = policy["spec"]["matchConditions"]
    # The controller's and the hub's accounts hold no ':trainhub-user-': they are not matched.
    assert "':trainhub-user-'" in condition["expression"]
    checks = " ".join(v["expression"] for v in policy["spec"]["validations"])
    assert "oldObject" in str(policy["spec"]["variables"]) and "serviceAccountName" in checks
    assert binding["kind"] == "ValidatingAdmissionPolicyBinding"
    assert binding["spec"] == {
        "policyName": SESSION_RIGHTS_POLICY,
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"trainhub.io/managed": "true"}}},
    }


def _job(suspend: bool) -> dict:
    notes = {SUSPEND_ANNOTATION: "lunch"} if suspend else {}
    return {"metadata": {"uid": "u1", "annotations": notes}}


def _workload(active: bool | None = None, finished: bool = False) -> dict:
    spec = {} if active is None else {"active": active}
    conditions = [{"type": "Finished", "status": "True"}] if finished else []
    return {"metadata": {"name": "w"}, "spec": spec, "status": {"conditions": conditions}}


def test_the_controller_deactivates_a_marked_jobs_workload_once_while_it_is_active() -> None:
    assert deactivation_due(_job(True), _workload())
    assert deactivation_due(_job(True), _workload(active=True))
    assert not deactivation_due(_job(True), _workload(active=False))  # done already
    assert not deactivation_due(_job(True), _workload(finished=True))
    assert not deactivation_due(_job(True), None)  # not yet known to Kueue
    assert not deactivation_due(_job(False), _workload())
