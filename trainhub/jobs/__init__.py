"""Jobs as every front door and backend sees them: the spec a researcher submits, states and
records, the job directory (the data plane), lineage, and the service behind the CLI, the
Python API and the server."""
