"""Local backend: jobs run as torchrun process groups on this machine.

The process chain, one module each: ``backend`` (the admitting process: store, admission,
detached launch), ``launch`` (the launcher, started detached, that starts torchrun and becomes
the supervisor), ``supervisor`` (follows one job's attempts to their verdict)."""
