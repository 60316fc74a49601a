"""ValidatingAdmissionPolicies: Jobs in team namespaces stay on their team's queue, and where
a controller runs a session writes only its own user's Jobs and Services.
"""

from __future__ import annotations

from trainhub.backends.kubernetes.identity import SESSION_ACCOUNT_PREFIX, USER_LABEL
from trainhub.backends.kubernetes.names import (
    MANAGED_LABEL,
    NAMESPACE_QUEUE_LABEL,
    QUEUE_LABEL,
    Manifest,
    meta,
)

REQUIRE_QUEUE_POLICY = "trainhub-require-team-queue"
SESSION_RIGHTS_POLICY = "trainhub-session-rights"


def require_queue_policy() -> list[Manifest]:
    """Kueue only manages Jobs that name a queue; this refuses, in every trainhub namespace, a
    Job that names none or another team's queue, so no Job can bypass quota."""
    expression = (
        f"has(object.metadata.labels) && '{QUEUE_LABEL}' in object.metadata.labels && "
        f"object.metadata.labels['{QUEUE_LABEL}'] == "
        f"namespaceObject.metadata.labels['{NAMESPACE_QUEUE_LABEL}']"
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": meta(REQUIRE_QUEUE_POLICY),
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["batch"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["jobs"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": expression,
                        "messageExpression": (
                            f"'Jobs in this namespace must carry the label {QUEUE_LABEL}=' + "
                            f"namespaceObject.metadata.labels['{NAMESPACE_QUEUE_LABEL}'] + "
                            "' so that Kueue admits them within the team quota'"
                        ),
                        "reason": "Forbidden",
                    }
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": meta(REQUIRE_QUEUE_POLICY),
            "spec": {
                "policyName": REQUIRE_QUEUE_POLICY,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {MANAGED_LABEL: "true"}}},
            },
        },
    ]


def session_rights_policy() -> list[Manifest]:
    """A session account (``trainhub-user-<owner>``, identity.py) may create Jobs and Services
    only labelled ``trainhub.io/user=<owner>``, and update, patch or delete only those so
    labelled; the Jobs it creates run as the namespace's default account (a pod of another
    account would hold that account's token). Rendered where a controller runs: its own and
    the hub's accounts (and Kueue's, the garbage collector's, an admin's) are not session
    accounts, so the match conditions leave them out."""
    caller = "request.userInfo.username"

    def owner_of(obj: str) -> str:
        return (
            f"has({obj}.metadata.labels) && '{USER_LABEL}' in {obj}.metadata.labels ? "
            f"{obj}.metadata.labels['{USER_LABEL}'] : ''"
        )

    pod = "object.spec.template.spec"
    default_account = " && ".join(
        f"(!has({pod}.{field}) || {pod}.{field} in ['', 'default'])"
        for field in ("serviceAccountName", "serviceAccount")
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": meta(SESSION_RIGHTS_POLICY),
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [group],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE", "DELETE"],
                            "resources": [resource],
                        }
                        for group, resource in (("batch", "jobs"), ("", "services"))
                    ]
                },
                "matchConditions": [
                    {
                        "name": "session-accounts",
                        # neither a namespace nor an account name holds a colon
                        "expression": f"{caller}.startsWith('system:serviceaccount:') && "
                        f"{caller}.contains(':{SESSION_ACCOUNT_PREFIX}')",
                    }
                ],
                "variables": [
                    {
                        "name": "prefix",
                        "expression": "'system:serviceaccount:' + request.namespace + "
                        f"':{SESSION_ACCOUNT_PREFIX}'",
                    },
                    {
                        "name": "caller",
                        "expression": f"{caller}.startsWith(variables.prefix) ? "
                        f"{caller}.substring(size(variables.prefix)) : ''",
                    },
                    {
                        "name": "owner",
                        "expression": f"request.operation == 'DELETE' ? '' : {owner_of('object')}",
                    },
                    {
                        "name": "was",
                        "expression": "request.operation == 'CREATE' ? '' : "
                        + owner_of("oldObject"),
                    },
                ],
                "validations": [
                    {
                        "expression": "variables.caller != ''",
                        "messageExpression": f"{caller} + ' acts only in its own team namespace'",
                        "reason": "Forbidden",
                    },
                    {
                        "expression": "request.operation == 'CREATE' || "
                        "variables.was == variables.caller",
                        "messageExpression": "request.resource.resource + ' ' + request.name + "
                        f"' belongs to {USER_LABEL}=' + variables.was + ', and a session may "
                        "change or delete only those of its own user, ' + variables.caller",
                        "reason": "Forbidden",
                    },
                    {
                        "expression": "request.operation == 'DELETE' || "
                        "variables.owner == variables.caller",
                        "messageExpression": "'a session labels its Jobs and Services "
                        f"{USER_LABEL}=' + variables.caller + ' (its own user): ' + "
                        "(variables.owner == '' ? 'this one has none' : 'not ' + variables.owner)",
                        "reason": "Forbidden",
                    },
                    {
                        "expression": "request.operation == 'DELETE' || "
                        f"request.resource.resource != 'jobs' || ({default_account})",
                        "message": "a session's Jobs run as the namespace's default "
                        "ServiceAccount, not another account",
                        "reason": "Forbidden",
                    },
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": meta(SESSION_RIGHTS_POLICY),
            "spec": {
                "policyName": SESSION_RIGHTS_POLICY,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {MANAGED_LABEL: "true"}}},
            },
        },
    ]
