"""Schedules: a notebook job (later a pipeline) fired on a cron expression in a time zone."""
