"""An identity provider for a real Jupyter server with several users, one token each.

A personal Jupyter server knows one token and an anonymous user; the server tests that need
two users (each must never read the other's jobs) start it with this provider and the tokens
in ``TRAINHUB_TEST_TOKENS`` ("<token>=<user>,<token>=<user>").
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.identity import IdentityProvider, User

if TYPE_CHECKING:
    import pytest

TOKENS_VARIABLE = "TRAINHUB_TEST_TOKENS"


def tokens_text(tokens: dict[str, str]) -> str:
    return ",".join(f"{token}={user}" for token, user in tokens.items())


def parse_tokens(text: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {token: user for token, _, user in pairs if token and user}


class TokenUsers(IdentityProvider):
    """``Authorization: token <t>`` is the user that token names; anything else is nobody."""

    def get_user_token(self, handler: Any) -> User | None:
        name = parse_tokens(os.environ.get(TOKENS_VARIABLE, "")).get(self.get_token(handler) or "")
        return User(username=name, name=name, display_name=name) if name else None

    def get_user_cookie(self, handler: Any) -> User | None:
        return None  # every request names its user: no cookie may carry another's identity


def token_users_config(
    server_config: dict[str, Any], tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """``server_config`` with this provider for ``tokens`` (token -> user): what a module's
    ``jp_server_config`` fixture returns for a server of these users."""
    monkeypatch.setenv(TOKENS_VARIABLE, tokens_text(tokens))
    return {
        **server_config,
        "ServerApp": {**server_config["ServerApp"], "identity_provider_class": TokenUsers},
    }


def token_header(tokens: dict[str, str], user: str) -> dict[str, str]:
    """The ``Authorization`` header of ``user``'s token among ``tokens``."""
    return {"Authorization": f"token {next(t for t, u in tokens.items() if u == user)}"}
