"""Local backend: jobs run as torchrun process groups on this machine.

The process chain, one module each: ``admitter`` (in whichever process changes the queue:
admission in a store transaction, the first attempt's plan, a detached launcher), ``launcher``
(starts the planned ranks with the standard library alone, then becomes the supervisor),
``supervisor`` (follows one job's attempts to their verdict, retries, admits the next jobs).
Beside them: ``backend`` (the verbs), ``store``, ``admission`` (the pure policy), ``plan`` and
``torchrun`` (what an attempt starts), ``startup`` (starting it), ``processes`` (liveness, kill).
"""
