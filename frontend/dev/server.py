"""Dev server for the Leaks tab outside TensorBoard (not used by the tests).

Serves a page that loads the bundle the way TensorBoard's plugin_entry.html
does (same <base href>), and proxies the data routes to a running
TensorBoard. Until the plugin itself answers `module` (and fills the report's
`modules`), it fills them from tb_leakfinder.analyses.static_buffers.

    python frontend/dev/server.py --tb http://127.0.0.1:6006 --logdir demo_logs --port 8099
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLE = os.path.join(HERE, "..", "..", "tb_leakfinder", "static", "index.js")
PREFIX = "/data/plugin/leakfinder/"
PAGE = b"""<!DOCTYPE html><head><base href="data/plugin/leakfinder/" /></head>
<body><script type="module">import("./index.js").then((m) => void m.render());</script></body>"""


def hlo_modules(logdir: str, run: str, host: str):
    from tb_leakfinder.read.hlo import decode_modules
    from tb_leakfinder.read.xspace import read_host

    tb_run, _, session = run.rpartition("/")
    path = glob.glob(os.path.join(logdir, tb_run, "plugins", "profile", session, f"{host}.xplane.pb"))[0]
    return decode_modules(read_host(path, host).hlo_protos, path)[0]


class Handler(BaseHTTPRequestHandler):
    tb = ""
    logdir = ""

    def send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        url = urllib.parse.urlsplit(self.path)
        args = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/":
            return self.send(200, PAGE, "text/html")
        if url.path == PREFIX + "index.js":
            with open(BUNDLE, "rb") as f:
                return self.send(200, f.read(), "application/javascript")
        if url.path == PREFIX + "module":
            from tb_leakfinder.analyses.static_buffers import module_detail

            modules = {m.key: m for m in hlo_modules(self.logdir, args["run"], args["host"])}
            if args.get("module") not in modules:
                return self.send(404, json.dumps({"error": f"no module {args.get('module')!r}"}).encode(), "application/json")
            space = int(args["memory_space"]) if "memory_space" in args else None
            detail = module_detail(modules[args["module"]], space, int(args.get("points", 1000)))
            return self.send(200, json.dumps(detail).encode(), "application/json")
        try:
            with urllib.request.urlopen(self.tb + self.path) as r:
                status, body = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read()
        if url.path == PREFIX + "report" and status == 200:
            from tb_leakfinder.analyses.static_buffers import module_summaries

            report = json.loads(body)
            for run in report["runs"]:
                for host in run["hosts"]:
                    if not host.get("modules"):
                        host["modules"] = module_summaries(hlo_modules(self.logdir, run["run"], host["host"]))
            body = json.dumps(report).encode()
        self.send(status, body, "application/json")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tb", required=True)
    parser.add_argument("--logdir", required=True)
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    Handler.tb = args.tb.rstrip("/")
    Handler.logdir = args.logdir
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
