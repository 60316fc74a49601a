"""The team's model registry: named models, their numbered versions kept from a job's
checkpoint or output with the lineage of the job that made them, aliases (``@staging``,
``@production``) moved by people and written in an audit log.

The public Python API is :mod:`trainhub.models`. The parts: ``refs`` (names and references,
pure), ``entries`` (what is stored), ``policy`` (who may move which alias, pure),
``snapshot`` (a version's lineage, read once from the job), ``keeping`` (the files, linked or
copied), ``views`` (versions and aliases read back, pure), ``service`` (register, alias,
archive, resolve), ``here`` (the registry a notebook or a job reaches, a job's inputs),
``cli`` (``trainhub model``).
"""
