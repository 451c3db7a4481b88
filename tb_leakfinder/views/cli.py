"""`tb-leakfinder`: the report and a CI gate from the command line."""

from __future__ import annotations

import argparse
import json
import sys

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.service import Engine
from tb_leakfinder.views.text import render_report

EXIT_OK = 0
EXIT_LEAK = 1
EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tb-leakfinder", description="Find memory leaks in XProf profiles (.xplane.pb).")
    sub = parser.add_subparsers(dest="command", required=True)
    path_help = "a logdir, one profile session folder, or one <host>.xplane.pb file"
    rep_help = "print the leak report"
    rep = sub.add_parser("report", help=rep_help, description=rep_help)
    rep.add_argument("path", help=path_help)
    rep.add_argument("--run", help="only this run (as listed by TensorBoard, e.g. train/2026_11_29_09_31_25)")
    rep.add_argument("--host", help="only this host")
    rep.add_argument("--json", action="store_true", help="print the report JSON (the same as the plugin's /report)")
    chk_help = "exit 1 if any run leaks, 0 if none, 2 on bad input"
    chk = sub.add_parser("check", help=chk_help, description=chk_help)
    chk.add_argument("path", help=path_help)
    chk.add_argument("--run", help="only this run")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        engine = Engine.for_path(args.path)
        result = engine.report(args.run, getattr(args, "host", None))
    except LeakfinderError as exc:
        print(f"tb-leakfinder: error: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.command == "report":
        print(json.dumps(result, indent=1) if args.json else render_report(result))
        return EXIT_OK
    leaking = [r for r in result["runs"] if r["verdict"] == "leak"]
    for run in result["runs"]:
        reasons = "; ".join(h["reason"] for h in run["hosts"])
        print(f"{run['verdict']:>12}  {run['run']}: {reasons}")
    return EXIT_LEAK if leaking else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
