"""First paint of the Logs tab holding 1,000,000 lines, in Chromium (target: <= 1 s).

Loads the built log view (labextension/lib, from `jlpm build:lib`) on a bare page served from
here, feeds it a generated 1M-line log in the 1 MiB chunks the log stream sends, and measures
from the first chunk to the first painted rows. Side by side, the same page renders 100,000
lines the naive way (one DOM node per line) and with the virtualized view, and prints the ratio.

    python benchmarks/logs_first_paint.py [--lines 1000000] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import http.server
import json
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "labextension" / "lib"
CSS = ROOT / "labextension" / "style" / "base.css"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="/style/base.css">
<style>
  body { margin: 0; font: 13px monospace; }
  #box { height: 700px; width: 1200px; display: flex; flex-direction: column; }
  #naive { height: 700px; width: 1200px; overflow: auto; white-space: pre; }
</style></head>
<body><div id="box"></div><div id="naive" hidden></div>
<script type="module">
import { LogView } from '/lib/logview.js';

const LINES = __LINES__, NAIVE_LINES = __NAIVE__;
const paint = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));

function chunks(lines) {
  // A training log: timestamps, ranks, some colour; cut into 1 MiB chunks like the stream.
  const out = []; let buf = [];
  let size = 0;
  for (let i = 0; i < lines; i++) {
    const line = i % 50 === 0
      ? `\\x1b[32m2026-01-01 12:00:${String(i % 60).padStart(2, '0')}\\x1b[0m \
rank 0 step ${i}: loss 0.${i % 997}`
      : `2026-01-01 12:00:${String(i % 60).padStart(2, '0')} \
rank 0 step ${i}: loss 0.${i % 997} lr 0.05`;
    buf.push(line); size += line.length + 1;
    if (size >= 1048576) { out.push(buf.join('\\n') + '\\n'); buf = []; size = 0; }
  }
  if (buf.length) out.push(buf.join('\\n') + '\\n');
  return out;
}

async function virtualFirstPaint(lines) {
  const box = document.getElementById('box');
  box.textContent = '';
  const data = chunks(lines);
  await paint();
  const t0 = performance.now();
  const view = new LogView();
  box.appendChild(view.node);
  for (const c of data) view.append(c);
  view.render();
  await paint();
  const firstPaint = performance.now() - t0;
  const rows = view.node.querySelectorAll('.jp-trainhub-logview-row').length;
  const last = view.node.querySelector('.jp-trainhub-logview-row:last-child').textContent;
  // Scroll to the middle and find a line near the end.
  const t1 = performance.now();
  view.follow = false;
  view.scrollToLine(Math.floor(lines / 2));
  await paint();
  const scroll = performance.now() - t1;
  const t2 = performance.now();
  const hit = view.find(`step ${lines - 3}:`);
  await paint();
  const search = performance.now() - t2;
  // Count and mark every match ("k of n"), a slice of rows at a time.
  let countAll = null, matches = null;
  if (view.search) {
    const t3 = performance.now();
    view.search('loss 0.5');
    while (view.searchLabel.endsWith('+')) await new Promise(r => setTimeout(r, 0));
    await paint();
    countAll = performance.now() - t3;
    matches = view.searchLabel;
  }
  const count = view.lineCount;
  view.dispose();
  return { firstPaint, rows, last, scroll, search, hit, count, countAll, matches };
}

async function naiveFirstPaint(lines) {
  const box = document.getElementById('naive');
  box.hidden = false;
  const data = chunks(lines);
  await paint();
  const t0 = performance.now();
  for (const c of data) {
    for (const line of c.split('\\n')) {
      if (!line) continue;
      const div = document.createElement('div');
      div.textContent = line;
      box.appendChild(div);
    }
  }
  await paint();
  const firstPaint = performance.now() - t0;
  box.textContent = '';
  box.hidden = true;
  return { firstPaint };
}

const result = {};
try {
  result.naive = await naiveFirstPaint(NAIVE_LINES);
  result.virtualSmall = await virtualFirstPaint(NAIVE_LINES);
  result.virtual = await virtualFirstPaint(LINES);
  result.userAgent = navigator.userAgent;
} catch (e) {
  result.error = String(e && e.stack || e);
}
await fetch('/result', { method: 'POST', body: JSON.stringify(result) });
</script></body></html>
"""


def serve(lines: int, naive: int, results: queue.Queue[dict]) -> http.server.ThreadingHTTPServer:
    page = PAGE.replace("__LINES__", str(lines)).replace("__NAIVE__", str(naive)).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, body: bytes, ctype: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/":
                return self._send(page, "text/html")
            if self.path == "/style/base.css":
                return self._send(CSS.read_bytes(), "text/css")
            if self.path.startswith("/lib/"):
                # tsc keeps extensionless relative imports; resolve them as the bundler does.
                name = self.path[len("/lib/") :]
                target = (LIB / name).resolve()
                if target.suffix != ".js":
                    target = target.with_name(target.name + ".js")
                if target.is_relative_to(LIB.resolve()) and target.is_file():
                    return self._send(target.read_bytes(), "text/javascript")
            self.send_error(404)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(204)
            self.end_headers()
            results.put(json.loads(body))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--naive-lines", type=int, default=100_000)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    if not (LIB / "logview.js").is_file():
        sys.exit(f"{LIB / 'logview.js'} is missing: run `jlpm build:lib` (or scripts/setup-ui.sh)")

    results: queue.Queue[dict] = queue.Queue()
    server = serve(args.lines, args.naive_lines, results)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as profile:
        browser = subprocess.Popen(
            [
                args.chromium,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--window-size=1280,800",
                f"--user-data-dir={profile}",
                url,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            result = results.get(timeout=args.timeout)
        finally:
            browser.terminate()
            browser.wait(timeout=30)
            server.shutdown()
    if "error" in result:
        sys.exit(f"benchmark page failed: {result['error']}")

    v, vs, n = result["virtual"], result["virtualSmall"], result["naive"]
    assert v["count"] == args.lines, v
    print(f"Logs tab first paint in {result['userAgent'].split(') ')[-1]}")
    print()
    print("| view                       | lines     | first paint (ms) | rows in DOM |")
    print("|----------------------------|-----------|------------------|-------------|")
    print(
        f"| one DOM node per line      | {args.naive_lines:>9,} | "
        f"{n['firstPaint']:>16.0f} | {args.naive_lines:>11,} |"
    )
    print(
        f"| virtualized (trainhub)     | {args.naive_lines:>9,} | "
        f"{vs['firstPaint']:>16.0f} | {vs['rows']:>11,} |"
    )
    print(
        f"| virtualized (trainhub)     | {args.lines:>9,} | "
        f"{v['firstPaint']:>16.0f} | {v['rows']:>11,} |"
    )
    print()
    print(
        f"ratio at {args.naive_lines:,} lines (naive / virtualized): "
        f"{n['firstPaint'] / max(vs['firstPaint'], 0.1):.1f}x"
    )
    print(
        f"{args.lines:,} lines: first paint {v['firstPaint']:.0f} ms (target <= 1000 ms), "
        f"jump to middle {v['scroll']:.1f} ms, search to line {v['hit'] + 1:,} {v['search']:.0f} ms"
    )
    if v.get("countAll") is not None:
        print(f"count and mark every match: {v['countAll']:.0f} ms ({v['matches']})")
    return 0 if v["firstPaint"] <= 1000 else 1


if __name__ == "__main__":
    sys.exit(main())
