"""Jupyter Server extension: REST and websocket API over the trainhub job service."""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from trainhub_server.app import TrainhubExtension

    return [{"module": "trainhub_server", "app": TrainhubExtension}]
