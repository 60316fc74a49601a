"""The bundle: the code snapshot every rank of a job runs.

Modules, by concern:

- ``compile``: ``compile_bundle(spec, workspace_root, bundle_dir)``, the entry point at submit.
- ``cells``: reading the notebook, cell selection and tags, parameters injection.
- ``requirements``: ``%pip`` lines taken out of the cells, and ``load_requirements``, the one
  reader of requirements.json.
- ``workspace``: the files next to the entry, .gitignore honoured through ``pathspec``.
- ``hashing``: file and bundle content hashes.
- ``snapshot``: a workspace frozen for later compiles (a sweep's trials), written and read
  back without following links, checked against its digest.
- ``schema``: the one schema of the bundle's files (plain dataclasses) and the readers a rank
  uses, ``read_manifest`` and ``read_cells``; free of pydantic so that a rank reaches its
  first cell as soon as the interpreter is up.
- ``layout``: the names of the files in a bundle directory.
- ``errors``: ``BundleError``, whose sentence names the file, cell or field at fault.

This package's ``__init__`` imports nothing, so a rank loads only what it reads.
"""
