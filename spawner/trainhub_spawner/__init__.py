"""JupyterHub spawner that gives each user a GPU-quota-limited environment of their team."""
