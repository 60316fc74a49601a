"""Jupyter Server extension: REST and websocket API over the trainhub job service."""
