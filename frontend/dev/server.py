"""Dev server for the Leaks tab outside TensorBoard's page (not used by the tests).

Serves a page that loads the bundle from the working tree the way
TensorBoard's plugin_entry.html does (same <base href>), and proxies the data
routes to a running TensorBoard: edit, `npm run build`, reload.

    python frontend/dev/server.py --tb http://127.0.0.1:6006 --port 8099
"""

from __future__ import annotations

import argparse
import os
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLE = os.path.join(HERE, "..", "..", "tb_leakfinder", "webapp", "index.js")
PREFIX = "/data/plugin/leakfinder/"
PAGE = b"""<!DOCTYPE html><head><base href="data/plugin/leakfinder/" /></head>
<body><script type="module">import("./index.js").then((m) => void m.render());</script></body>"""


class Handler(BaseHTTPRequestHandler):
    tb = ""

    def send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/":
            return self.send(200, PAGE, "text/html")
        if url.path == PREFIX + "index.js":
            with open(BUNDLE, "rb") as f:
                return self.send(200, f.read(), "application/javascript")
        try:
            with urllib.request.urlopen(self.tb + self.path) as r:
                status, body = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read()
        self.send(status, body, "application/json")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tb", required=True)
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    Handler.tb = args.tb.rstrip("/")
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
