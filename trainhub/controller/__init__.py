"""trainhub's control plane on a cluster (``trainhub controller``): an always-on, leader-elected
process that keeps every job's promises with nobody logged in. ``leader`` (the Lease),
``workqueue``, ``manager`` (what runs when), ``metrics``, ``serve`` (the process, its probes);
the watch-fed cache it reads is ``trainhub.backends.kubernetes.cache``, its objects are
rendered by ``trainhub.backends.kubernetes.controlplane``."""
