"""A plain-HTTP reverse proxy on 127.0.0.1 in front of the real kube-apiserver, for tests
that need to see or hold the requests a client makes (as ``kubectl proxy`` does, it talks to
the apiserver with the kubeconfig's own credentials).

- ``requests``: every request that passed through, as ``(method, path)`` (no query), but
  watches, which go to ``watches``: a watch-fed cache's own long reads, which it starts again
  whenever the API server ends one, never a request of the call under test.
- ``stall(part)``: from then on a request whose path contains ``part`` is held (never
  forwarded) until the proxy closes: an apiserver that does not answer that one call.

A watch (``watch=true``) is relayed as it comes, chunk by chunk, as the apiserver sends it.
"""

from __future__ import annotations

import http.client
import ssl
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class ApiProxy:
    def __init__(self, kubeconfig: Path):
        from kubernetes import client, config

        upstream = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=upstream)
        url = urllib.parse.urlsplit(upstream.host)
        self._target = (url.hostname or "127.0.0.1", url.port or 443)
        self._tls = ssl.create_default_context(cafile=upstream.ssl_ca_cert)
        self._tls.load_cert_chain(upstream.cert_file, upstream.key_file)
        self.requests: list[tuple[str, str]] = []
        self.watches: list[tuple[str, str]] = []
        self.held: list[str] = []
        self._stalled: list[str] = []
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def api_client(self) -> Any:
        """A kubernetes client that goes through this proxy."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        return client.ApiClient(configuration)

    def stall(self, part: str) -> None:
        with self._lock:
            self._stalled.append(part)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.watches.clear()

    def close(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    def _pass(self, method: str, path: str) -> bool:
        """Record the request; hold it (False) when it is one to stall."""
        bare = urllib.parse.urlsplit(path).path
        with self._lock:
            (self.watches if _watch(path) else self.requests).append((method, bare))
            stalled = any(part in bare for part in self._stalled)
            if stalled:
                self.held.append(bare)
        if stalled:
            self._released.wait()
        return not stalled

    def _forward(self, method: str, path: str, headers: Any, body: bytes | None) -> Any:
        # A watch's answer lasts minutes, with silences between events (bookmarks, a minute).
        timeout = 600 if _watch(path) else 60
        conn = http.client.HTTPSConnection(*self._target, context=self._tls, timeout=timeout)
        conn.request(
            method,
            path,
            body=body,
            headers={k: v for k, v in headers.items() if k.lower() not in _HOP},
        )
        return conn.getresponse(), conn


def _watch(path: str) -> bool:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    return query.get("watch", [""])[0] in ("true", "1")


def _handler(proxy: ApiProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if not proxy._pass(self.command, self.path):
                self.close_connection = True
                return
            response, conn = proxy._forward(self.command, self.path, self.headers, body)
            try:
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in _HOP:
                        self.send_header(name, value)
                if _watch(self.path):
                    self._stream(response)
                else:
                    data = response.read()
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
            finally:
                conn.close()

        def _stream(self, response: Any) -> None:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                while chunk := response.read1(65536):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (OSError, http.client.HTTPException):  # either side went away
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
