"""MLflow's REST API (``/api/2.0/mlflow/...`` and the tracking server's ``mlflow-artifacts``
proxy) over the standard library: trainhub speaks the documented protocol, the ``mlflow``
package is no dependency of it. Each request is short (``TIMEOUT``): a server that is down or
slow fails this pass of the mirror, which tries again later."""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, BinaryIO

from trainhub.tracking.config import MlflowServer

TIMEOUT = 10.0
API = "/api/2.0/mlflow/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts/"
PROXIED = "mlflow-artifacts:/"


class MlflowError(Exception):
    """The server answered with an error (``code``: MLflow's error_code, e.g.
    RESOURCE_ALREADY_EXISTS), or could not be reached (``code`` None)."""

    def __init__(self, message: str, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.code, self.status = code, status


class Client:
    def __init__(self, server: MlflowServer, timeout: float = TIMEOUT):
        self.server, self.timeout = server, timeout

    # --- the transport ---------------------------------------------------------------------------
    def _send(
        self,
        method: str,
        path: str,
        body: bytes | BinaryIO | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        request = urllib.request.Request(
            self.server.tracking_uri + path, data=body, method=method, headers=headers or {}
        )
        auth = self.server.authorization()
        if auth:
            request.add_header("Authorization", auth)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            raise _answer_error(e) from None
        except (OSError, ValueError, http.client.HTTPException) as e:  # refused, timed out, cut
            reason = getattr(e, "reason", e)
            where = self.server.tracking_uri
            raise MlflowError(f"MLflow at {where} unreachable: {reason}") from None
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise MlflowError(f"MLflow answered {path} with something not JSON") from None

    def call(self, endpoint: str, body: dict[str, Any] | None = None, **query: str) -> Any:
        """POST ``body`` (GET with ``query``) to ``/api/2.0/mlflow/<endpoint>``."""
        if body is None:
            return self._send("GET", API + endpoint + "?" + urllib.parse.urlencode(query))
        data = json.dumps(body).encode()
        return self._send("POST", API + endpoint, data, {"Content-Type": "application/json"})

    # --- what the mirror uses --------------------------------------------------------------------
    def experiment_id(self, name: str) -> str:
        """The experiment's id, made when there is none yet (another maker winning the race
        is fine: its experiment is found)."""
        try:
            found = self.call("experiments/get-by-name", experiment_name=name)
            return str(found["experiment"]["experiment_id"])
        except MlflowError as e:
            if e.code != "RESOURCE_DOES_NOT_EXIST":
                raise
        try:
            return str(self.call("experiments/create", {"name": name})["experiment_id"])
        except MlflowError as e:
            if e.code != "RESOURCE_ALREADY_EXISTS":
                raise
        found = self.call("experiments/get-by-name", experiment_name=name)
        return str(found["experiment"]["experiment_id"])

    def find_run(self, experiment_id: str, tag: str, value: str) -> dict[str, Any] | None:
        """The run info of the experiment's run tagged ``tag = value``, if one exists."""
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        found = self.call(
            "runs/search",
            {
                "experiment_ids": [experiment_id],
                "filter": f"tags.`{tag}` = '{escaped}'",
                "max_results": 1,
            },
        )
        runs = found.get("runs") or []
        return runs[0]["info"] if runs else None

    def create_run(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("runs/create", body)["run"]["info"]

    def log_batch(self, body: dict[str, Any]) -> None:
        self.call("runs/log-batch", body)

    def update_run(self, run_id: str, status: str, end_time: int | None) -> None:
        body: dict[str, Any] = {"run_id": run_id, "status": status}
        if end_time is not None:
            body["end_time"] = end_time
        self.call("runs/update", body)

    def upload(self, artifact_uri: str, path: str, data: BinaryIO, size: int) -> None:
        """PUT one file under the run's artifact root through the server's artifacts proxy
        (``mlflow server`` serving artifacts, its default); a run whose artifacts live
        elsewhere (no proxy) is refused with a sentence."""
        if not artifact_uri.startswith(PROXIED):
            raise MlflowError(
                f"the run's artifacts go to {artifact_uri.split(':', 1)[0]}:, not through the "
                "tracking server (start it with artifact serving)",
                code="ARTIFACTS_NOT_PROXIED",
            )
        where = artifact_uri[len(PROXIED) :].strip("/") + "/" + path
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
        self._send("PUT", ARTIFACTS + urllib.parse.quote(where), data, headers)

    def upload_tree(self, artifact_uri: str, local: Path, under: str) -> None:
        """Upload a file, or a directory's regular files (links are not followed), under
        ``under`` of the run's artifacts."""
        if local.is_file() and not local.is_symlink():
            self._upload_file(artifact_uri, local, f"{under}/{local.name}")
            return
        for folder, dirs, files in os.walk(local):
            dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
            for name in sorted(files):
                path = Path(folder, name)
                if not path.is_symlink():
                    self._upload_file(artifact_uri, path, f"{under}/{path.relative_to(local)}")

    def _upload_file(self, artifact_uri: str, path: Path, target: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            self.upload(artifact_uri, target, f, os.fstat(f.fileno()).st_size)


def _answer_error(error: urllib.error.HTTPError) -> MlflowError:
    try:
        body = json.loads(error.read() or b"{}")
    except (OSError, ValueError):
        body = {}
    code = body.get("error_code") if isinstance(body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    return MlflowError(
        f"MLflow answered {error.code}: {message or error.reason}"[:500], code, error.code
    )
