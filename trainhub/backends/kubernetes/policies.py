"""ValidatingAdmissionPolicies: Jobs in team namespaces stay on their team's queue, and where
a controller runs a session writes only its own user's Jobs and Services, whose pods run as
that user's own ids where members have their own.
"""

from __future__ import annotations

from trainhub.backends.kubernetes.identity import (
    SESSION_ACCOUNT_PREFIX,
    USER_IDS_CONFIGMAP,
    USER_LABEL,
)
from trainhub.backends.kubernetes.names import (
    MANAGED_LABEL,
    NAMESPACE_QUEUE_LABEL,
    QUEUE_LABEL,
    Manifest,
    meta,
)

REQUIRE_QUEUE_POLICY = "trainhub-require-team-queue"
SESSION_RIGHTS_POLICY = "trainhub-session-rights"
SESSION_IDS_POLICY = "trainhub-session-user-ids"
# What a policy of Jobs looks at: each Job created or changed.
JOB_WRITES = {
    "resourceRules": [
        {
            "apiGroups": ["batch"],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["jobs"],
        }
    ]
}
_CALLER = "request.userInfo.username"
# Session accounts only (neither a namespace nor an account name holds a colon): the
# controller, the hub, Kueue, the garbage collector and admins are left out.
_SESSION_ACCOUNTS = {
    "name": "session-accounts",
    "expression": f"{_CALLER}.startsWith('system:serviceaccount:') && "
    f"{_CALLER}.contains(':{SESSION_ACCOUNT_PREFIX}')",
}
# The owner label of the caller's user: its account's name after the prefix, in its own
# namespace; '' for an account of another namespace.
_CALLER_VARIABLES = [
    {
        "name": "prefix",
        "expression": f"'system:serviceaccount:' + request.namespace + ':{SESSION_ACCOUNT_PREFIX}'",
    },
    {
        "name": "caller",
        "expression": f"{_CALLER}.startsWith(variables.prefix) ? "
        f"{_CALLER}.substring(size(variables.prefix)) : ''",
    },
]


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
                "matchConstraints": JOB_WRITES,
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
    caller = _CALLER

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
                "matchConditions": [_SESSION_ACCOUNTS],
                "variables": [
                    *_CALLER_VARIABLES,
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


def _labelled(obj: str) -> str:
    """``obj`` carries the caller's owner label."""
    return (
        f"has({obj}.metadata.labels) && '{USER_LABEL}' in {obj}.metadata.labels && "
        f"{obj}.metadata.labels['{USER_LABEL}'] == variables.caller"
    )


def _same_ids(ctx: str) -> str:
    """``ctx`` (a securityContext) sets no user or group but the member's."""
    return " && ".join(
        f"(!has({ctx}.{field}) || string({ctx}.{field}) == variables.id)"
        for field in ("runAsUser", "runAsGroup")
    )


def session_user_ids_policy() -> Manifest:
    """Where members have ids of their own, a session's Jobs run as its member's: the pod's
    runAsUser and runAsGroup the id the namespace's ConfigMap ``trainhub-user-ids`` gives
    the caller's owner label (kept by the hub, which no session may change), no container
    another, and no fsGroup or supplementary group (each would be another member's private
    group, or hand the team volume's files to one). A Job made before its member had an id
    cannot be changed by a session (it may still delete it)."""
    pod = "variables.pod"
    ctx = f"{pod}.securityContext"
    containers = (
        f"{pod}.containers.all(c, !has(c.securityContext) || ({_same_ids('c.securityContext')}))"
        f" && (!has({pod}.initContainers) || {pod}.initContainers.all(c, "
        f"!has(c.securityContext) || ({_same_ids('c.securityContext')})))"
    )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": meta(SESSION_IDS_POLICY),
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": JOB_WRITES,
            "matchConditions": [_SESSION_ACCOUNTS],
            "variables": [
                *_CALLER_VARIABLES,
                {
                    "name": "id",
                    "expression": "has(params.data) && variables.caller in params.data ? "
                    "params.data[variables.caller] : ''",
                },
                {"name": "pod", "expression": "object.spec.template.spec"},
                # The caller's own Jobs, before and after: the rights policy refuses every
                # other change already, in its own words.
                {
                    "name": "mine",
                    "expression": f"({_labelled('object')}) && (request.operation == "
                    f"'CREATE' || ({_labelled('oldObject')}))",
                },
            ],
            "validations": [
                {
                    "expression": "!variables.mine || variables.id != ''",
                    "messageExpression": f"{_CALLER} + ' has no user id in ConfigMap "
                    f"{USER_IDS_CONFIGMAP}: the hub gives a member one before their "
                    "first session'",
                    "reason": "Forbidden",
                },
                {
                    "expression": f"!variables.mine || (has({ctx}) && has({ctx}.runAsUser) && "
                    f"has({ctx}.runAsGroup) && {_same_ids(ctx)})",
                    "messageExpression": "'the Jobs of a session run as the own ids of its "
                    "member: runAsUser and runAsGroup ' + variables.id",
                    "reason": "Forbidden",
                },
                {
                    "expression": f"!variables.mine || !has({ctx}) || (!has({ctx}.fsGroup) "
                    f"&& (!has({ctx}.supplementalGroups) || "
                    f"size({ctx}.supplementalGroups) == 0))",
                    "message": "a session's Jobs take no fsGroup or supplementary group: "
                    "a member's files are theirs alone",
                    "reason": "Forbidden",
                },
                {
                    "expression": f"!variables.mine || ({containers})",
                    "messageExpression": "'every container of the Job of a session runs as "
                    "the own ids of its member (' + variables.id + ')'",
                    "reason": "Forbidden",
                },
            ],
        },
    }


def user_ids_objects(namespace: str) -> list[Manifest]:
    """A team namespace's user ids, empty as rendered (the hub adds each member's,
    trainhub_spawner.user_ids, and server-side apply keeps what it added), then the policy's
    binding there, which reads them: one namespace's, so that a namespace of a team whose
    members share one id is not held to it. Where the ConfigMap went missing no Job may be
    written in that namespace (not even by Kueue): loudly, rather than without the check."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(USER_IDS_CONFIGMAP, namespace),
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": meta(f"{SESSION_IDS_POLICY}-{namespace}"),
            "spec": {
                "policyName": SESSION_IDS_POLICY,
                "validationActions": ["Deny"],
                "paramRef": {
                    "name": USER_IDS_CONFIGMAP,
                    "namespace": namespace,
                    "parameterNotFoundAction": "Deny",
                },
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
                },
            },
        },
    ]
