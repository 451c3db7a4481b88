"""One capture through XProf's own client (the one behind the Profile tab's Capture button), in a process of its own.

    python -m tb_leakfinder.capture.remote_trace REQUEST_JSON

REQUEST_JSON holds `address`, `logdir`, `duration_ms`, `options` (the session's, see server_session.server_options)
and `result`, the file that receives the outcome, `{"error": null}` or `{"error": "<message>"}` (the client's
native library prints to stdout and logs to stderr, which the watch sends to a log file of its own).
`tb-leakfinder watch` runs each capture so: a capture in flight can be abandoned by ending its process, and the
native client's output, and any crash of it, stay out of the watch.
"""

from __future__ import annotations

import importlib
import json
import sys

from tb_leakfinder.capture.server_session import XPROF_CLIENT


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    error: str | None = None
    try:
        client = importlib.import_module(XPROF_CLIENT)
        client.trace(request["address"], request["logdir"], "", False, int(request["duration_ms"]), 1, request["options"])
    except Exception as exc:  # noqa: BLE001 - the client's RuntimeError, or a failed import: the watch logs it
        error = str(exc).strip() or type(exc).__name__
    with open(request["result"], "w", encoding="utf-8") as result:
        json.dump({"error": error}, result)
    return 0 if error is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
