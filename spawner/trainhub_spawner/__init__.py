"""JupyterHub spawner that gives each user a GPU-quota-limited environment of their team.

``TrainHubSpawner`` lives in :mod:`trainhub_spawner.spawner` (it imports KubeSpawner); the
profile, pod, quota and idle-policy functions beside it are pure and import no hub code.
"""


def __getattr__(name: str):  # keep `import trainhub_spawner` light for the pure modules
    if name == "TrainHubSpawner":
        from trainhub_spawner.spawner import TrainHubSpawner

        return TrainHubSpawner
    raise AttributeError(name)
