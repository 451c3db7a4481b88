"""Real answers of every JSON route, for check_types.mjs to hold against the TypeScript types of src/wire.ts.

    python frontend/tools/dump_answers.py OUT.jsonl LOGDIR...

Each line of OUT.jsonl is {"route", "request", "body"} for one answer of the plugin's routes
(through TensorBoard's WSGI app, as the tab asks them) or of the CLI's --json (which
prints the same JSON as report and compare). The first line is {"routes": [...]}: every
JSON route the plugin serves, so that a route the checker maps to no interface fails it.
Besides the given logdirs, a pod is made of their first profiles (one host each, and one
cut short; each with a companion file naming its never-freed buffers, so that families'
`holders` and the host's `holder_search` are), so that a host's `error`, the report's `errors`
and the overview's error rows are checked too, and a logdir of runs of several captures (tb_leakfinder.testing.history_runs: one
leaking, one clean, two of two hosts, one host's file of one capture cut short), so that `history`, its
`errors` and the CLI report's `histories` are. `history` is asked for every TensorBoard run
(the part of a session's name before its last "/"); `runs` again after every report, when it
knows which files could not be read.
Any answer other than 200 (0 or 1 for `diff`) is an error: the answers must be complete.
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import urllib.parse
from typing import Any, TextIO

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tb_leakfinder.engine.engine import analyze_file  # noqa: E402
from tb_leakfinder.engine.history import tensorboard_run  # noqa: E402
from tb_leakfinder.model.lifetimes import NEVER_FREED  # noqa: E402
from tb_leakfinder.testing.history_runs import slow_leak_run, strip_times  # noqa: E402
from tb_leakfinder.testing.plugin_client import PREFIX, make_client  # noqa: E402
from tb_leakfinder.testing.recordings_builder import companion, holder, write_companion  # noqa: E402

# Enough for the charts' answers to hold every kind of value; not the tab's page size.
POINTS = 1000
PAGE = 200


class Dump:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, route: str, request: str, body: Any) -> None:
        self.out.write(json.dumps({"route": route, "request": request, "body": body}) + "\n")

    def get(self, client: Any, logdir: pathlib.Path, route: str, **args: Any) -> Any:
        query = urllib.parse.urlencode({k: v for k, v in args.items() if v is not None})
        answer = client.get(f"{PREFIX}/{route}?{query}")
        request = f"{logdir.name}: {route}?{query}"
        body = json.loads(answer.get_data())
        if answer.status_code != 200:
            sys.exit(f"{request} answered {answer.status_code}: {body}")
        self.write(route, request, body)
        return body

    def cli(self, route: str, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        command = [sys.executable, "-m", "tb_leakfinder.views.cli", *args, "--json", "--no-cache"]
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
        request = "tb-leakfinder " + " ".join(args) + " --json"
        # diff exits 1 for a regression, which is an answer like any other.
        if done.returncode not in ((0, 1) if args[0] == "diff" else (0,)):
            sys.exit(f"{request} exited {done.returncode}:\n{done.stderr[-3000:]}")
        self.write(route, request, json.loads(done.stdout))

    def logdir(self, logdir: pathlib.Path) -> None:
        client, _ = make_client(str(logdir))
        runs = [r["run"] for r in self.get(client, logdir, "runs")["runs"]]
        for run in runs:
            self.run(client, logdir, run)
        # One history per TensorBoard run, of one capture as of several.
        for tb_run in sorted({tensorboard_run(run) for run in runs}):
            self.get(client, logdir, "history", tb_run=tb_run)
        # Neighbours in the list: leak against fixed, a program against none, one allocator against another.
        for run_a, run_b in itertools.pairwise(runs):
            self.get(client, logdir, "compare", run_a=run_a, run_b=run_b)
        self.get(client, logdir, "runs")
        self.cli("report", "report", str(logdir))
        if len(runs) > 1:
            self.cli("compare", "diff", str(logdir), str(logdir), "--run-a", runs[0], "--run-b", runs[1])

    def run(self, client: Any, logdir: pathlib.Path, run: str) -> None:
        report = self.get(client, logdir, "report", run=run)
        self.get(client, logdir, "overview", run=run)
        hosts = report["runs"][0]["hosts"]
        for host in hosts:
            name = host["host"]
            if len(hosts) > 1:
                if "error" in host:
                    continue
                self.get(client, logdir, "report", run=run, host=name)
            for allocator in host["allocators"]:
                at = {"run": run, "host": name, "allocator": allocator["memory_id"]}
                self.get(client, logdir, "timeline", points=POINTS, **at)
                self.get(client, logdir, "buffers", limit=PAGE, **at)
                if allocator["families"]:
                    self.get(client, logdir, "timeline", points=POINTS, family=0, **at)
                    self.get(client, logdir, "buffers", limit=PAGE, family=0, **at)
            for module in host["modules"]:
                space = module["memory_space"] or None
                self.get(client, logdir, "module", run=run, host=name, module=module["name"], memory_space=space, points=POINTS)


def pod(folder: pathlib.Path, logdirs: list[pathlib.Path]) -> pathlib.Path:
    """A run of several hosts: the first XProf profile of each logdir that has one, and a copy of one cut in half."""
    profiles = [p for d in logdirs for p in sorted(d.glob("**/plugins/profile/*/*.xplane.pb"))[:1]]
    session = folder / "pod" / "plugins" / "profile" / "session"
    session.mkdir(parents=True)
    for i, profile in enumerate(profiles):
        (session / f"host{i}.xplane.pb").write_bytes(profile.read_bytes())
        recorded(session / f"host{i}.xplane.pb")
    # And one whose families keep buffers, so that their holders are not all empty.
    kept = next(p for d in logdirs for p in sorted(d.glob("**/plugins/profile/*/*.xplane.pb")) if _keeps(p))
    (session / "host_held.xplane.pb").write_bytes(kept.read_bytes())
    recorded(session / "host_held.xplane.pb")
    data = profiles[0].read_bytes()
    (session / "host_cut.xplane.pb").write_bytes(data[: len(data) // 2])
    return folder / "pod"


def _keeps(profile: pathlib.Path) -> bool:
    result = analyze_file(str(profile), profile.name, str(profile.parent))
    return result.error is None and any(f.count for a in result.unwrap().allocators for f in a.suspects.families)


def recorded(profile: pathlib.Path) -> None:
    """A companion file beside `profile` whose one holder keeps every never-freed buffer of each of its allocators."""
    result = analyze_file(str(profile), profile.name, str(profile.parent))
    holders = []
    for a in result.unwrap().allocators:
        kept = a.buffers.addr[a.buffers.status == NEVER_FREED].tolist()[:4096]
        holders.append(holder(f"kept[{a.label!r}]", kept, kind="dict_entry", type_name="dict", created="/src/job.py:12 in main"))
    sources = {"/src/job.py:12": "kept = {}"}
    write_companion(profile, companion(holders=holders, status="partial", warning="a bound was hit", sources=sources))


def history_runs(folder: pathlib.Path) -> pathlib.Path:
    """TensorBoard runs of several captures: leaking, clean, of two hosts (a series each, and a note), one host's
    file of one capture cut short, copied without their times, and one whose growth no family explains."""
    logdir = folder / "history"
    slow_leak_run(logdir, "job")
    slow_leak_run(logdir, "clean", leak_bytes_per_step=0)
    slow_leak_run(logdir, "hosts", host="host1", leak_bytes_per_step=0)
    slow_leak_run(logdir, "hosts", host="host0")
    # Two hosts, one of whose files is cut short in one capture: the history's `errors` (a report of that capture
    # is its other host's; one of a capture's only host would be a 422).
    slow_leak_run(logdir, "cut", host="host1", leak_bytes_per_step=0)
    cut = next(slow_leak_run(logdir, "cut", host="host0").run_dir.glob("plugins/profile/*/host0.xplane.pb"))
    cut.write_bytes(cut.read_bytes()[:200])
    strip_times(slow_leak_run(logdir, "copied"))  # no time of their own: no rate per hour
    slow_leak_run(logdir, "between", captures=4, kept_in_window=False)  # unexplained growth
    return logdir


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    logdirs = [pathlib.Path(p).resolve() for p in sys.argv[2:]]
    # Answers of this tree's code, not of an analysis another version left in the cache folder.
    os.environ["TB_LEAKFINDER_NO_CACHE"] = "1"
    with open(sys.argv[1], "w") as out, tempfile.TemporaryDirectory() as folder:
        dump = Dump(out)
        _, plugin = make_client(str(logdirs[0]))
        out.write(json.dumps({"routes": sorted(r.strip("/") for r in plugin.json_handlers())}) + "\n")  # type: ignore[attr-defined]
        for logdir in [*logdirs, pod(pathlib.Path(folder), logdirs), history_runs(pathlib.Path(folder))]:
            dump.logdir(logdir)


if __name__ == "__main__":
    main()
