"""Comments on what a team discusses (a job, a sweep, a pipeline run, a model version):
Markdown text with ``@mentions`` of teammates, kept where the backend keeps the team's records.

kinds.py: which objects take comments, each with its access rule (one entry per kind);
mentions.py (pure): which ``@names`` of a text are teammates; model.py: the record and what
the API answers; board.py: adding, listing, editing and deleting, under the object's rule;
notify.py: a mention as a notice in JupyterLab and an alert to the person's channels.
"""
