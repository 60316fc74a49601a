"""GPU usage accounting: per job, what it was allocated and what it used (compute.py, pure),
kept as one row per ended job in the store (store.py) and aggregated there in SQL; Kueue's
Workload times for the cluster (kueue.py)."""
