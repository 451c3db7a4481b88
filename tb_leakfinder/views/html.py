"""A standalone HTML report: the Leaks tab's own bundle with the routes' answers inlined, one file.

It opens from disk (file://) with no server and no network: a Content-Security-Policy forbids
every request, and the tab reads its data from the page (frontend/src/inline.ts) instead of fetching.
"""

from __future__ import annotations

import base64
import datetime
import html
import importlib.resources
import json
import math
from typing import Any
from urllib.parse import quote

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.plugin_flags import PLUGIN_NAME
from tb_leakfinder.views.atomic import write_texts
from tb_leakfinder.views.terminal import encoded_size

DATA_ID = "tb-leakfinder-data"
BUNDLE_ID = "tb-leakfinder-bundle"
BUNDLE_PACKAGE = "tb_leakfinder.webapp"

# Inline scripts and styles, and the bundle loaded from a blob: URL; no fetch, image or font from anywhere.
CSP = (
    "default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)

# The bundle is an ES module: decoded into a blob: URL, imported, and rendered as TensorBoard would.
BOOTSTRAP = f"""
const view = JSON.parse(document.getElementById('{DATA_ID}').textContent).view_hash;
if (view && !location.hash) history.replaceState(null, '', '#' + view);
const code = atob(document.getElementById('{BUNDLE_ID}').textContent.trim());
const bytes = Uint8Array.from(code, (c) => c.charCodeAt(0));
const url = URL.createObjectURL(new Blob([bytes], {{type: 'text/javascript'}}));
const tab = await import(url);
await tab.render();
"""


def bundle() -> bytes:
    """The Leaks tab's built bundle, as the plugin serves it."""
    return importlib.resources.files(BUNDLE_PACKAGE).joinpath("index.js").read_bytes()


def _finite(data: Any) -> Any:
    """`data` with NaN and the infinities as the strings TensorBoard's responses send for them."""
    if isinstance(data, float) and not math.isfinite(data):
        return "NaN" if math.isnan(data) else "Infinity" if data > 0 else "-Infinity"
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(item) for item in data]
    return data


def script_json(data: object) -> str:
    """JSON that cannot end its <script> element or open a comment, whatever its strings hold.

    NaN and infinities become the strings the server sends for them.
    """
    try:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data), ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def view_hash(state: dict[str, str]) -> str:
    """The tab's URL-hash state (`p.leakfinder.<key>=<value>`), encoded as encodeURIComponent does."""
    safe = "-_.!~*'()"
    return "&".join(f"{quote(f'p.{PLUGIN_NAME}.{k}', safe=safe)}={quote(v, safe=safe)}" for k, v in state.items() if v)


# '{"version":1,"notes":[],"errors":{},"aliases":{},"view_hash":,"answers":{}}', with room.
DATA_KEYS_BYTES = 256
HEADER_STYLE = "font:12px/1.5 system-ui,sans-serif;padding:6px 16px;border-bottom:1px solid #8884;color:#666;background:#8881"


def header(title: str, notes: list[str]) -> str:
    """A line above the tab saying what this page is, since it looks like TensorBoard but is a saved copy."""
    written = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<strong>{html.escape(title)}</strong>",
        f"a standalone report, written {written}",
        "no server: zooming shows the inlined points",
        *(html.escape(n) for n in notes),
    ]
    return f'<header role="note" data-standalone style="{HEADER_STYLE}">{" · ".join(parts)}</header>'


def standalone_html(title: str, data: str, notes: list[str], code: bytes | None = None) -> str:
    """The page: `data` (a StandalonePage's `script_data`) inlined, with `notes` above the tab."""
    encoded = base64.b64encode(bundle() if code is None else code).decode("ascii")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="generator" content="tb-leakfinder">
<title>{html.escape(title)}</title>
</head>
<body>
{header(title, notes)}
<script type="application/json" id="{DATA_ID}">{data}</script>
<script type="text/plain" id="{BUNDLE_ID}">{encoded}</script>
<script type="module">{BOOTSTRAP}</script>
</body>
</html>
"""


def page_overhead(title: str, view: dict[str, str]) -> int:
    """The bytes of a page besides its answers and notes: its bundle, its markup and the data's own keys."""
    return encoded_size(standalone_html(title, "", [])) + len(script_json(view_hash(view))) + DATA_KEYS_BYTES


def write_html(path: str, page: str) -> None:
    try:
        write_texts([(path, page)])
    except OSError as exc:
        raise LeakfinderError(f"{path}: cannot write the HTML report ({exc.strerror}); a file there is unchanged") from exc
