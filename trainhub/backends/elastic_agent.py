"""torchrun's elastic agent as both backends start it (``--nnodes MIN:MAX``, c10d rendezvous):
the environment and rendezvous settings that every agent of an elastic job shares."""

from __future__ import annotations

# The agent's module: torchrun's own, run by trainhub so that what its rendezvous decides is
# kept in the job directory (rank/agent.py: logs/rendezvous-<worker>-attempt-<n>.log).
AGENT_MODULE = "trainhub.rank.agent"

# Without it, an agent that becomes rank 0 of a later round never publishes the master address
# of that round (it keeps the one it shared before), and the others wait for it until their
# store times out (seen with torch 2.15, on one machine and on the real node alike).
ELASTIC_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}


def rdzv_conf(*, last_call: int, store_elsewhere: bool = False) -> str:
    """``--rdzv-conf``: a dead agent is dropped after 5 missed one-second heartbeats (torchrun's
    default is 3 of 5 s); a round waits ``last_call`` seconds past MIN for more agents (30 by
    default, paid at every membership change). ``store_elsewhere``: no agent hosts the store
    (on one machine trainhub does, so that any agent may leave)."""
    conf = f"join_timeout=600,last_call_timeout={last_call},keep_alive_interval=1,"
    conf += "keep_alive_max_attempt=5"
    return ("is_host=false," + conf) if store_elsewhere else conf
