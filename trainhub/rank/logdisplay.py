"""Display data as the rank log shows it: HTML and the other rich forms as text, images saved
into the job's ``outputs/`` with a line naming the file. The executed notebook keeps the data
itself (:mod:`trainhub.rank.nbcapture`); the log is text, read by ``trainhub logs`` and grep."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from typing import Any

from trainhub.rank.context import RankContext
from trainhub.rank.logmarks import say

_IMAGE_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/svg+xml": "svg"}
_DEFAULT_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-f]+)?>$")


class _TextFromHTML(HTMLParser):
    _BLOCKS = frozenset(
        {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "pre"}
    )

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._hidden += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append("\t")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._hidden = max(self._hidden - 1, 0)

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextFromHTML()
    parser.feed(html)
    lines = (re.sub(r"[ \t]+", " ", ln).strip() for ln in "".join(parser.parts).splitlines())
    return "\n".join(ln for ln in lines if ln)


class OutputWriter:
    """Renders display data into the log: text as text, images into outputs/."""

    def __init__(self, ctx: RankContext) -> None:
        self.ctx = ctx
        self.cell_index: int | None = None
        self._counts: dict[int | None, int] = {}

    def render(self, data: dict[str, Any]) -> None:
        for mime, ext in _IMAGE_EXTENSIONS.items():
            if mime in data:
                self._save_image(data[mime], ext)
                return
        plain = data.get("text/plain")
        if "text/html" in data and (plain is None or _DEFAULT_REPR.match(plain.strip())):
            print(html_to_text(data["text/html"]))
        elif plain is not None:
            print(plain)
        elif "text/markdown" in data:
            print(data["text/markdown"])

    def _save_image(self, payload: str | bytes, ext: str) -> None:
        n = self._counts.get(self.cell_index, 0)
        self._counts[self.cell_index] = n + 1
        where = "params" if self.cell_index is None else str(self.cell_index)
        name = f"rank{self.ctx.rank}-cell{where}-{n}.{ext}"
        if isinstance(payload, str):
            payload = payload.encode() if ext == "svg" else base64.b64decode(payload)
        self.ctx.job.outputs.mkdir(parents=True, exist_ok=True)
        (self.ctx.job.outputs / name).write_bytes(payload)
        say(f"image saved: outputs/{name}")
