"""Alerts: a job's failure, preemption or end, and a team's idle GPU sessions, announced
through webhooks (a Slack-compatible JSON body) and e-mail (SMTP).

channels.py: where alerts go (the user's alerts file, the team's ``alerts:`` in the teams
file) and the SMTP settings; message.py (pure): what an alert says, secrets scrubbed;
outbox.py: one file per message and channel, delivered by a detached sender that retries with
exponential backoff, so a job never waits on or fails through an alert.
"""
