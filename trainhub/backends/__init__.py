"""Where jobs run: the backend interface (``base``), the factory that picks one from the
settings, the local backend (torchrun process groups under a detached supervisor) and the
Kubernetes backend (Kueue-queued Indexed Jobs)."""
