"""Pipelines (control plane and front doors): notebooks as steps of one repeatable, cached run.

- ``spec``: the ``*.pipeline.yaml`` file's schema and reading it (pure); the JSON schema
  shipped for editors, ``pipeline.schema.json``
- ``graph``: its wiring, its mistakes and the order its steps run in (pure)
- ``steps``: a step as the job spec it runs as (pure)
- ``cache``: the cache key of a step's inputs (pure)
- ``checks``: every check before a run starts
- ``records``: durable runs; ``plan``: where a run stands and what it does next (pure)
- ``controller``: starts, advances, retries, cancels and shares runs
- ``models``: what the API and the CLI say of a run; ``cli``: the ``trainhub pipeline`` verbs
"""
