"""Show that a change leaves every answer byte for byte as it was: a corpus served by two trees.

The corpus: the demo runs, the accuracy benchmark's real captures, the real
unmarked TF captures of tests/data, the real JAX GPU profiles of
../shared/profiles (when present), and profiles synthesized here with the
test builders (training loops, devices with each allocator key and step
source, runs of several captures). Each tree serves the same files through its plugin's routes, without
the disk cache, in a process of its own, and the digests of every answer are
compared: runs, report, the history of each TensorBoard run, and per
allocator the timeline and buffers (with and without a family), per module its
detail. Routes, not functions: they stay as they are whatever the code's layout.

    python tools/report_identity.py                 # this working tree against HEAD
    python tools/report_identity.py --against REV   # against any revision
    python tools/report_identity.py --against REV --changes docs/report_v2_changes.json
        # across a version change of the JSON: equal modulo its renamed, added keys and route arguments

Exits 1 when any digest differs, naming the profile and the part.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
REAL = [
    ROOT / "demo_logs",
    ROOT / "benchmarks" / "accuracy" / "captures",
    ROOT / "tests" / "data" / "tf_unmarked",
    ROOT.parent / "shared" / "profiles" / "jax_gpu",
]

# Run in each tree's process: the digests of what its package answers for every run of a logdir.
DIGEST_PROGRAM = r"""
import argparse, hashlib, json, sys, urllib.parse
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client
from tb_leakfinder.plugin_loader import LeakfinderLoader

def client(logdir):
    parser = argparse.ArgumentParser()
    LeakfinderLoader().define_flags(parser)
    plugin = LeakfinderLoader().load(base_plugin.TBContext(logdir=logdir, flags=parser.parse_args([])))
    return Client(application.TensorBoardWSGI([plugin]))

# A version change (--changes): the base tree asked with its arguments' old names, its answers' old keys renamed
# ("key", or "parent.key" for a key of the objects under the old key `parent`) and the values of a key renamed,
# this tree's answers with the added keys dropped, then both written back one way; each logdir is walked by this
# tree's names.
CHANGES, ROLE = json.loads(sys.argv[1]), sys.argv[2]
KEYS, ADDED, ARGS = CHANGES.get("keys", {}), set(CHANGES.get("added", [])), CHANGES.get("args", {})
VALUES = CHANGES.get("values", {})  # {new key: {old value: new value}}
OLD_ARGS = {route: {new: old for old, new in renamed.items()} for route, renamed in ARGS.items()}

ROUTE_KEYS, ROUTE = CHANGES.get("route_keys", {}), [""]  # {route: {"parent.key": new}}: keys of one route's answer

def new(key, parent=""):
    scoped = f"{parent}.{key}"
    return ROUTE_KEYS.get(ROUTE[0], {}).get(scoped, KEYS.get(scoped, KEYS.get(key, key)))

def changed(value, parent=""):
    if isinstance(value, dict):
        if ROLE == "base":
            return {new(k, parent): changed(v, k) for k, v in value.items()}
        return {k: changed(v, k) for k, v in value.items() if k not in ADDED and f"{parent}.{k}" not in ADDED}
    if isinstance(value, list):
        return [changed(v, parent) for v in value]
    if ROLE == "base" and isinstance(value, (str, int)) and not isinstance(value, bool):
        return VALUES.get(new(parent), {}).get(str(value), value)
    return value

def get(c, route, **args):
    if ROLE == "base":
        args = {OLD_ARGS.get(route, {}).get(k, k): v for k, v in args.items()}
    ROUTE[0] = route
    answer = c.get(f"/data/plugin/leakfinder/{route}?" + urllib.parse.urlencode(args))
    body = answer.get_data()
    if CHANGES and answer.status_code == 200:
        body = json.dumps(changed(json.loads(body)), sort_keys=True).encode()
    return answer.status_code, body

def digest(answer):
    return f"{answer[0]} " + hashlib.sha256(answer[1]).hexdigest()[:16]

out = {}
for logdir in sys.argv[3:]:
    c, found = client(logdir), {}
    found["runs"] = digest(get(c, "runs"))
    runs = json.loads(get(c, "runs")[1])["runs"]
    for tb_run in sorted({run["run"].rpartition("/")[0] for run in runs}):
        found[f"{tb_run} history"] = digest(get(c, "history", tb_run=tb_run))
    for run in runs:
        name = run["run"]
        body = get(c, "report", run=name)
        found[f"{name} report"] = digest(body)
        for host in json.loads(body[1])["runs"][0]["hosts"]:
            host_name = host["host"]
            at = {"run": name, "host": host_name}
            for a in host["allocators"]:
                memory_id = a["memory_id"]
                mine = {**at, "allocator": memory_id}
                where = f"{name}/{host_name}/{memory_id}"
                found[where + " timeline"] = digest(get(c, "timeline", points=1000, **mine))
                found[where + " buffers"] = digest(get(c, "buffers", limit=5000, **mine))
                if a["families"]:
                    found[where + " family timeline"] = digest(get(c, "timeline", points=1000, family=0, **mine))
                    found[where + " family buffers"] = digest(get(c, "buffers", limit=5000, family=0, **mine))
            for m in host["modules"]:
                found[f"{name}/{host_name}/{m['name']} module"] = digest(get(c, "module", module=m["name"], **at))
    out[logdir] = found
print(json.dumps(out))
"""


def synthesize(folder: pathlib.Path) -> list[pathlib.Path]:
    """Profiles made with this tree's test builders, one logdir each."""
    sys.path.insert(0, str(ROOT))
    from tb_leakfinder.testing.history_runs import slow_leak_run, strip_times
    from tb_leakfinder.testing.xspace_builder import synthesize_devices, synthesize_training, write_session

    made = []
    trainings = {
        "training_two_gpus": {"num_events": 20_000, "steps": 20, "seed": 1},
        "training_cpu_leak": {"num_events": 8_000, "steps": 12, "allocators": ("cpu",), "seed": 2},
        "training_no_leak": {"num_events": 8_000, "steps": 15, "leak_bytes_per_step": 0, "seed": 3},
    }
    for name, kwargs in trainings.items():
        builder, _ = synthesize_training(**kwargs)  # type: ignore[arg-type]
        write_session(folder / name, "run", "session", {"host0": builder})
        made.append(folder / name)
    devices = {
        "tpu_leak": {"leak_device": 2},
        "gpu_ordinal": {"platform": "GPU", "id_stat": "device_ordinal", "leak_device": 0},
        "tpu_markers": {"step_markers": True},
    }
    for name, kwargs in devices.items():
        builder, _ = synthesize_devices(**kwargs)  # type: ignore[arg-type]
        write_session(folder / name, "run", "session", {"host0": builder})
        made.append(folder / name)
    # Histories: timed by the captures' own clocks and session names, and by their files' mtimes alone.
    slow_leak_run(folder / "histories", "job", captures=6)
    slow_leak_run(folder / "histories", "clean", captures=4, leak_bytes_per_step=0)
    strip_times(slow_leak_run(folder / "histories", "copied", captures=4, kept_in_window=False))
    made.append(folder / "histories")
    return made


def digests(tree: pathlib.Path, logdirs: list[pathlib.Path], changes: dict[str, Any], role: str) -> dict[str, dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(tree), "TB_LEAKFINDER_NO_CACHE": "1"}
    program = [sys.executable, "-c", DIGEST_PROGRAM, json.dumps(changes), role, *map(str, logdirs)]
    done = subprocess.run(program, env=env, capture_output=True, text=True, cwd=tree)
    if done.returncode != 0:
        sys.exit(f"{tree}: the digest program failed:\n{done.stderr[-3000:]}")
    result: dict[str, dict[str, str]] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="HEAD", help="the revision to compare with (default HEAD)")
    parser.add_argument(
        "--changes",
        type=pathlib.Path,
        help="a JSON file of a version change: {keys: {old: new}, route_keys: {route: {old: new}}, values: {key: "
        "{old: new}}, added: [key or parent.key], args: {route: {old: new}}}; the "
        "answers are then compared modulo it (re-serialized alike on both sides) rather than byte for byte",
    )
    args = parser.parse_args()
    changes: dict[str, Any] = json.loads(args.changes.read_text(encoding="utf-8")) if args.changes else {}
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.against], check=True, capture_output=True
        )
        try:
            # The compiled scanner is built per tree; without it both trees use the pure-Python decoder alike.
            subprocess.run([sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"], cwd=base, capture_output=True)
            logdirs = [p for p in REAL if p.is_dir()] + synthesize(pathlib.Path(tmp) / "synthetic")
            before, after = digests(base, logdirs, changes, "base"), digests(ROOT, logdirs, changes, "tree")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    differ = [
        f"{logdir}: {part}"
        for logdir in after
        for part in sorted(set(before.get(logdir, {})) | set(after[logdir]))
        if before.get(logdir, {}).get(part) != after[logdir].get(part)
    ]
    parts = sum(len(v) for v in after.values())
    if differ:
        print(f"{len(differ)} of {parts} answers differ from {args.against}:")
        print("\n".join(f"  {d}" for d in differ))
        return 1
    alike = f"equal to {args.against}'s modulo {args.changes}" if changes else f"byte-identical to {args.against}"
    print(f"all {parts} answers of {len(after)} logdirs are {alike}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
