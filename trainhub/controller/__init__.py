"""trainhub's control plane on a cluster (``trainhub controller``): an always-on, leader-elected
process that keeps every job's promises with nobody logged in. ``cache`` (watch-fed lists),
``leader`` (the Lease), ``workqueue``, ``manager`` (what runs when), ``metrics``, ``serve``
(the process, its probes); its objects are rendered by ``manifests``."""
