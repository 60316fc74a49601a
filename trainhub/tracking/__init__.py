"""Mirroring jobs into a team's MLflow tracking server (optional; the teams file's ``mlflow:``).

:mod:`~trainhub.tracking.config` (the admin's section, its credentials read from files),
:mod:`~trainhub.tracking.batches` (pure: a job's record, scalars and state -> MLflow requests),
:mod:`~trainhub.tracking.rest` (MLflow's REST API over the standard library),
:mod:`~trainhub.tracking.cursor` (what was already sent, per job, durable),
:mod:`~trainhub.tracking.sync` (one job's catch-up), :mod:`~trainhub.tracking.pending` (every
enrolled job's, the pass a reconciler runs), :mod:`~trainhub.tracking.models` (a registered model
version, queued for its MLflow model version). Nothing here stands in a job's way: a server that
is down only delays the mirror.
"""
