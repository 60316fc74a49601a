"""A team's MLflow tracking server, as the admin describes it in the teams file::

    mlflow:
      tracking_uri: https://mlflow.example.org
      experiment: vision-jobs            # default: trainhub-<team>
      token_file: /etc/trainhub/mlflow/token          # a bearer token, or
      username: trainhub                               # basic auth with
      password_file: /etc/trainhub/mlflow/password    # a password read from a file

Credentials live in files (a mounted Kubernetes Secret on a cluster) read when a request is
sent: never in the teams file, a job's spec, record or directory.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_SECRET_BYTES = 4096


class MlflowServer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    tracking_uri: str = Field(description="The tracking server's http(s) URL")
    experiment: str | None = Field(
        None, max_length=500, description="The experiment jobs go to (default trainhub-<team>)"
    )
    token_file: str | None = Field(None, description="A file holding a bearer token")
    username: str | None = Field(None, description="Basic auth user (with password_file)")
    password_file: str | None = Field(None, description="A file holding the basic auth password")

    @field_validator("tracking_uri")
    @classmethod
    def _http(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{v!r} must be an http:// or https:// URL")
        if parts.username or parts.password:
            raise ValueError("must carry no credentials: use token_file or password_file")
        if parts.query or parts.fragment:
            raise ValueError(f"{v!r} must have no query or fragment")
        return v.rstrip("/")

    @field_validator("token_file", "password_file")
    @classmethod
    def _absolute(cls, v: str | None) -> str | None:
        if v is not None and not os.path.isabs(v):
            raise ValueError(f"{v!r} must be an absolute path")
        return v

    @model_validator(mode="after")
    def _one_way(self) -> MlflowServer:
        if self.token_file and (self.username or self.password_file):
            raise ValueError("give token_file or username with password_file, not both")
        if bool(self.username) != bool(self.password_file):
            raise ValueError("username and password_file go together")
        return self

    def experiment_for(self, team: str) -> str:
        return self.experiment or f"trainhub-{team}"

    def authorization(self) -> str | None:
        """The Authorization header's value, read from the credential files now (a rotated
        Secret is picked up by the next request)."""
        if self.token_file:
            return f"Bearer {_secret(self.token_file, 'token_file')}"
        if self.username and self.password_file:
            pair = f"{self.username}:{_secret(self.password_file, 'password_file')}"
            return "Basic " + base64.b64encode(pair.encode()).decode()
        return None


def _secret(path: str, field: str) -> str:
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_SECRET_BYTES).decode().strip()
    except (OSError, UnicodeDecodeError) as e:
        raise OSError(f"mlflow.{field}: cannot read {Path(path).name}: {e.strerror or e}") from None
    if not text:
        raise OSError(f"mlflow.{field}: {Path(path).name} is empty")
    return text
