"""What happens when a rank or a pod ends: the rules both backends apply, so that they cannot
drift apart. The backends observe (exit codes, rank results, Kubernetes objects) and act
(write the job directory, start the next attempt); every decision in between is here.

- ``classify``: an exception's failure class, with the rule that decided it (also run inside
  a rank, by the runner: this package imports nothing heavy);
- ``results``: the ranks' own reports of an attempt, read from the job directory;
- ``verdict``: an attempt's verdict from that evidence, and the state it ends the job in;
- ``notebooks``: the executed notebooks its ranks left unfinished, closed with the verdict;
- ``retry``: whether, when and how often a failed attempt goes again, and the ``retry`` event;
- ``resume``: the checkpoint an attempt starts from;
- ``notify``: which alert an ending or a preemption raises.
"""
