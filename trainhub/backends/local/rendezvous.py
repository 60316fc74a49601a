"""The rendezvous store of an elastic job's attempt:
``python -m trainhub.backends.local.rendezvous PORT``.

torchrun's c10d rendezvous keeps its state in a TCP store that, left to itself, the first agent
hosts: were that agent preempted or lost, every other agent would lose the rendezvous with it.
The supervisor starts this process instead, and the agents join as clients (``is_host=false``),
so any of them may leave. It ends with its supervisor.
"""

from __future__ import annotations

import os
import sys
import time


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m trainhub.backends.local.rendezvous PORT", file=sys.stderr)
        return 2
    from torch.distributed import TCPStore

    parent = os.getppid()
    store = TCPStore(
        "127.0.0.1", int(args[0]), is_master=True, wait_for_workers=False, multi_tenant=True
    )
    while os.getppid() == parent:  # the supervisor went away: nobody will rendezvous here
        time.sleep(1)
    del store
    return 0


if __name__ == "__main__":
    sys.exit(main())
