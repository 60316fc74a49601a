"""Kubernetes backend: jobs as Kueue-queued Indexed Jobs in a team's namespace; pure builders
(``manifests``, ``render``, ``status``) apart from the code that talks to the cluster."""
