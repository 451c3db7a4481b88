"""`tb-leakfinder`: the report and a CI gate from the command line."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import io
import json
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from tb_leakfinder.errors import BadArgumentError, LeakfinderError
from tb_leakfinder.lazy import LazyModule
from tb_leakfinder.plugin_flags import size_gib
from tb_leakfinder.read import files
from tb_leakfinder.read.formats import registry
from tb_leakfinder.store.location import DEFAULT_MAX_BYTES, default_dir, disabled_by_env, entry_path, resolved_folder
from tb_leakfinder.views import export
from tb_leakfinder.views.numpy_start import import_numpy_single_threaded
from tb_leakfinder.views.terminal import ENCODING_ERRORS, visible

if TYPE_CHECKING:
    from tb_leakfinder import wire as reports
    from tb_leakfinder.analyses import verdict, words
    from tb_leakfinder.capture import watch
    from tb_leakfinder.engine import engine as engines
    from tb_leakfinder.engine import history as engine_history
    from tb_leakfinder.engine import precompute, queries
    from tb_leakfinder.read import discovery
    from tb_leakfinder.store import disk_cache
    from tb_leakfinder.views import atomic, markdown, progress, source_lines, text
    from tb_leakfinder.wire import Json
else:
    # Cold start: the modules the commands use load when a command first reads from them, so that `--help` and a
    # usage error load no numpy, and a report neither the disk cache, precompute's worker pools, the watch's client,
    # nor the Markdown it was not asked for.
    reports = LazyModule("tb_leakfinder.wire")
    verdict = LazyModule("tb_leakfinder.analyses.verdict")
    words = LazyModule("tb_leakfinder.analyses.words")
    watch = LazyModule("tb_leakfinder.capture.watch")
    engines = LazyModule("tb_leakfinder.engine.engine")
    engine_history = LazyModule("tb_leakfinder.engine.history")
    precompute = LazyModule("tb_leakfinder.engine.precompute")
    queries = LazyModule("tb_leakfinder.engine.queries")
    discovery = LazyModule("tb_leakfinder.read.discovery")
    disk_cache = LazyModule("tb_leakfinder.store.disk_cache")
    atomic = LazyModule("tb_leakfinder.views.atomic")
    markdown = LazyModule("tb_leakfinder.views.markdown")
    progress = LazyModule("tb_leakfinder.views.progress")
    source_lines = LazyModule("tb_leakfinder.views.source_lines")
    text = LazyModule("tb_leakfinder.views.text")

EXIT_OK = 0
EXIT_LEAK = 1
EXIT_BAD_INPUT = 2
YOUNG_COLLECTION_OBJECTS = 100_000


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tb-leakfinder",
        description=f"Find memory leaks in {registry.file_kinds()}.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    path_help = registry.path_help()
    rep_help = "print the leak report"
    rep = sub.add_parser("report", help=rep_help, description=rep_help)
    rep.add_argument("path", help=path_help)
    rep.add_argument("--run", help="only this run (as listed by TensorBoard, e.g. train/2026_11_29_09_31_25)")
    rep.add_argument("--host", help="only this host")
    allocator_help = "only this allocator: its memory id as XProf shows it (e.g. 2, GPU_0_bfc) or its label (e.g. TPU:2)"
    rep.add_argument("--allocator", help=allocator_help)
    rep.add_argument("--json", action="store_true", help="print the report JSON (the same as the plugin's /report)")
    rep.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown to FILE (a CI comment)")
    chk_help = "exit 1 if any run leaks (a run of several captures: by its history), 0 if none, 2 on bad input"
    chk = sub.add_parser("check", help=chk_help, description=chk_help)
    chk.add_argument("path", help=path_help)
    chk.add_argument("--run", help="only this run")
    chk.add_argument("--allocator", help=allocator_help)
    dif_help = "compare run B with base run A; exit 1 if B brings a new growing leak or a leak verdict"
    dif = sub.add_parser("diff", help=dif_help, description=dif_help)
    dif.add_argument("path_a", help=f"base (A): {path_help}")
    dif.add_argument("path_b", help=f"change (B): {path_help}")
    for side in ("a", "b"):
        dif.add_argument(f"--run-{side}", help=f"the run of {side.upper()} when its path holds several")
        dif.add_argument(f"--host-{side}", help=f"only this host of {side.upper()}")
    dif.add_argument("--json", action="store_true", help="print the comparison JSON (the same as the plugin's /compare)")
    dif.add_argument("--markdown", metavar="FILE", help="also write the comparison as Markdown to FILE")
    for cmd in (rep, dif):
        export.add_options(cmd)
    his_help = "a run's captures over time as one history: exit 1 if it leaks"
    his = sub.add_parser("history", help=his_help, description=his_help)
    his.add_argument("path", help="a logdir")
    his.add_argument("--tb-run", help="the TensorBoard run (default: the only one with several captures)")
    his.add_argument("--json", action="store_true", help="print the history JSON (the same as the plugin's /history)")
    pre_help = "analyse every host of a logdir into the cache folder, so TensorBoard and the CLI answer at once"
    pre = sub.add_parser("precompute", help=pre_help, description=pre_help)
    pre.add_argument("path", help=path_help)
    pre.add_argument("--engine", choices=("local", "ray"), default="local", help="local processes, or a Ray cluster")
    pre.add_argument("--workers", type=int, help="hosts analysed at once (default: one per CPU)")
    pre.add_argument("--address", help="the Ray cluster to use (default: start a local one)")
    for cmd in (rep, chk, dif, his, pre):
        cmd.add_argument("--cache-dir", help=f"the analysis cache folder, shared with TensorBoard (default: {default_dir()})")
        cmd.add_argument("--cache-gb", type=size_gib, default=DEFAULT_MAX_BYTES / (1 << 30), help="its size bound in GiB (LRU)")
        if cmd is not pre:
            cmd.add_argument("--no-cache", action="store_true", help="neither read nor fill the cache folder")
    _add_watch(sub)
    return parser


def _add_watch(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    what = "capture a running job's profiler server into a logdir every so often, one profile session per capture"
    watch = sub.add_parser("watch", help=what, description=f"{what}, with memory events and Python events (Ctrl-C stops)")
    server = "tf.profiler.experimental.server.start(port) or jax.profiler.start_server(port)"
    watch.add_argument("address", metavar="ADDR", help=f"host:port of the job's profiler server ({server})")
    watch.add_argument("--logdir", required=True, help="the local folder to write sessions into (<DIR>/plugins/profile/)")
    durations = "(500ms, 30s, 10m, 1h)"
    watch.add_argument("--every", default="10m", help=f"time from one capture's start to the next's {durations}")
    watch.add_argument("--duration", default="2s", help=f"how long each capture records {durations}")
    count_help = "stop after this many attempts, failed or not (default: until Ctrl-C); exit 1 if one failed"
    watch.add_argument("--count", help=count_help)
    watch.add_argument("--timeout", help=f"stop this long after the start {durations}; exit 1 if --count is not reached")


def _cache_folder(args: argparse.Namespace) -> str | None:
    """The disk cache's folder as the options and environment give it, or None when the command uses no cache."""
    explicit = args.command == "precompute" or args.cache_dir is not None
    if getattr(args, "no_cache", False) or args.cache_gb <= 0 or (disabled_by_env() and not explicit):
        return None
    return str(args.cache_dir or default_dir())


def _disk(args: argparse.Namespace, path: str) -> disk_cache.DiskCache | None:
    folder = _cache_folder(args)
    if folder is None:
        return None
    logdir = path if files.isdir(path) else files.dirname(path)
    return disk_cache.DiskCache.for_logdir(folder, int(args.cache_gb * (1 << 30)), logdir)


def _read_ahead(args: argparse.Namespace) -> list[discovery.Run] | None:
    """Cold start: the runs a report or check covers, found before numpy loads, and the file of the first host it
    analyses begun reading on a thread meanwhile (read/read_ahead.py), unless the disk cache holds that host's
    analysis. None for other commands, and for a path or name that is wrong: the command says why."""
    if args.command not in ("report", "check"):
        return None
    try:
        runs = discovery.runs_for_path(args.path)
    except LeakfinderError:
        return None
    folder = _cache_folder(args)

    def wanted() -> bool:
        if folder is None:
            return True
        from tb_leakfinder.store.version import analysis_version

        real_path = files.identity(path).real_path
        return not os.path.exists(entry_path(resolved_folder(folder), analysis_version(), real_path))

    try:
        run = runs[0] if args.run is None else discovery.find_run(runs, args.run)
        path = run.host_path(getattr(args, "host", None))[1]
        registry.read_ahead(path, wanted)
    except LeakfinderError:
        pass  # a run or host of no such name: the report says so, from these runs
    return runs


def _progress(engine: engines.Engine, what: str) -> progress.HostProgress:
    hosts = [path for run in engine.runs() for path in run.hosts.values()]
    return progress.HostProgress(len(hosts), sum(_size(p) for p in hosts), what)


def _size(path: str) -> int:
    """A host file's size for the progress; 0 for one that cannot be stat'ed, which its report names."""
    try:
        return files.identity(path).size
    except LeakfinderError:
        return 0


def _precompute(args: argparse.Namespace) -> int:
    disk = _disk(args, args.path)
    assert disk is not None
    tasks, unstattable = precompute.host_tasks(discovery.runs_for_path(args.path))
    total = sum(t.identity.size for t in tasks)
    with progress.HostProgress(len(tasks), total, "precompute") as shown:
        outcomes = precompute.precompute(
            tasks, disk, args.engine, args.workers, args.address, lambda o: shown(o.task.host, o.task.identity.size)
        )
    analysed = sum(1 for o in outcomes if o.status == "analysed")
    errors = [f"{o.task.run} host {o.task.host}: {o.error}" for o in outcomes if o.error is not None] + unstattable
    cached = len(outcomes) - analysed
    hosts = words.count_of(len(outcomes) + len(unstattable), "host")
    print(f"{hosts} in {disk.folder}: {analysed} analysed, {cached} already cached, {len(errors)} not readable")
    for message in errors:
        _error(message)
    return EXIT_BAD_INPUT if errors else EXIT_OK


def _side(path: str, run_name: str | None, args: argparse.Namespace) -> tuple[engines.Engine, discovery.Run]:
    engine = engines.Engine.for_path(path, disk=_disk(args, path))
    runs = engine.runs()
    if run_name is None and len(runs) > 1:
        names = ", ".join(r.name for r in runs)
        raise BadArgumentError(f"{path} holds {len(runs)} runs ({names}); choose one with --run-a/--run-b")
    return engine, engine.run(run_name) if run_name is not None else runs[0]


def _diff(args: argparse.Namespace) -> int:
    (engine_a, run_a), (engine_b, run_b) = _side(args.path_a, args.run_a, args), _side(args.path_b, args.run_b, args)
    result = queries.diff(engine_a, run_a, run_b, args.host_a, args.host_b, engine_b)
    text = markdown.render_comparison(result)
    _write_markdown(args.markdown, text)
    export.export_comparison(args, result, run_a, run_b, engine_a.disk)
    _print(json.dumps(result, indent=1) if args.json else text)
    return EXIT_LEAK if result["regression"] else EXIT_OK


def _write_markdown(path: str | None, text: str) -> None:
    if path:
        try:
            atomic.write_texts([(path, text)])
        except OSError as exc:
            raise LeakfinderError(f"{path}: cannot write the Markdown summary ({exc.strerror})") from exc


def _history(args: argparse.Namespace) -> int:
    engine = engines.Engine.for_path(args.path, disk=_disk(args, args.path))
    tb_run = args.tb_run
    if tb_run is None:
        several = engine_history.several_captures(r.name for r in engine.runs())
        if len(several) != 1:
            found = ", ".join(repr(t) for t in several) or "none"
            raise BadArgumentError(f"{args.path}: choose a TensorBoard run with --tb-run; those of several captures: {found}")
        tb_run = several[0]
    result = queries.history(engine, tb_run)
    _print(json.dumps(result, indent=1) if args.json else "\n".join(text.render_history(result)))
    if _unreadable(result["errors"]):
        return EXIT_BAD_INPUT
    return EXIT_LEAK if result["gate_verdict"] == verdict.LEAK else EXIT_OK


def _unreadable(errors: Sequence[Json]) -> bool:
    """Names each file that could not be read (`wire.error_json`) on stderr: a gate must not pass on a broken
    capture, whatever the others say."""
    for e in errors:
        _error(f"{e['file']}: {e['reason']}")
    return bool(errors)


def _error(message: str) -> None:
    """One line on stderr; a message names files and runs, whose names may hold control characters."""
    print(f"tb-leakfinder: error: {visible(message)}", file=sys.stderr)


def _print(text: str) -> None:
    """Print, without a traceback when the reader goes away (`| head`)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stdout stays open until exit


def _watch(args: argparse.Namespace) -> int:
    """`watch`: captures until --count, --timeout or a signal (see tb_leakfinder/capture/watch.py)."""
    try:
        settings = watch.settings_from_text(args.address, args.logdir, args.every, args.duration, args.count, args.timeout)
        watch.check_client()
        watch.prepare_logdir(settings.logdir)
    except LeakfinderError as exc:
        _error(exc.message)
        return EXIT_BAD_INPUT

    def note(line: str) -> None:
        print(f"tb-leakfinder watch: {visible(line)}", file=sys.stderr, flush=True)

    watcher = watch.Watch(settings, lambda line: _print(visible(line)), note)
    every, duration = watch.describe_seconds(settings.every_s), watch.describe_seconds(settings.duration_s)
    _print(visible(f"watching {settings.address} every {every} ({duration} captures) into {settings.logdir}; Ctrl-C stops"))
    with watch.stop_on_signals(watcher):
        ended = watcher.run()
    for line in watcher.summary(ended):
        _print(visible(line))
    return watcher.exit_status(ended)


def main(argv: list[str] | None = None) -> int:
    """Runs a command. Without `argv` (the `tb-leakfinder` script, `python -m`) the command line is the process's
    own, and so is the process. What makes a cold command fast is here, and only here (docs/performance.md); the
    commands' modules load lazily (`LazyModule`, above)."""
    # A name from a profile or a file name that is not UTF-8 may hold what the terminal's encoding cannot write.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=ENCODING_ERRORS)
    args = _parser().parse_args(argv)
    runs = _read_ahead(args)
    # Cold start: numpy loads with one OpenBLAS thread (views/numpy_start.py), whose idle workers would spin on the
    # other cores; after parsing, so that `--help` loads no numpy.
    import_numpy_single_threaded()
    # Cold start: a command's imports make some 20,000 objects that live till exit and set off ~50 young
    # collections (about 10 ms of a cold report) that free nothing, and an analysis makes arrays, few objects: the
    # young generation is collected after this many new objects instead of 700. Restored for a caller in-process.
    thresholds = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_OBJECTS, *thresholds[1:])
    try:
        status = _command(args, runs)
    finally:
        gc.set_threshold(*thresholds)
    # Cold start: the script's process ends without the interpreter's teardown, whose collections and frees of
    # every module's objects took 30-50 ms of a cold report (benchmarks/RESULTS.md, sixth pass) for memory the
    # system takes back whole; unless another thread runs (a watch's, a framework's), for the normal exit waits.
    if argv is None and threading.active_count() == 1:
        _end_process(status)
    return status


def _command(args: argparse.Namespace, runs: list[discovery.Run] | None) -> int:
    if args.command == "watch":
        return _watch(args)
    try:
        if args.command == "diff":
            return _diff(args)
        if args.command == "precompute":
            return _precompute(args)
        if args.command == "history":
            return _history(args)
        return _report(args, runs)
    except LeakfinderError as exc:
        _error(exc.message)
        return EXIT_BAD_INPUT


def _end_process(status: int) -> NoReturn:
    """Exits with `status` at once, after what a normal exit does that matters to anyone: the `atexit` functions
    (logging's flush, a Ray cluster's shutdown) and the streams' flush."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone away (`| head`), a stream closed
            stream.flush()
    os._exit(status)


def _report(args: argparse.Namespace, runs: list[discovery.Run] | None) -> int:
    """`report` and `check`; `runs`: those of the path, when already discovered (by `_read_ahead`)."""
    try:
        engine = engines.Engine.for_path(args.path, disk=_disk(args, args.path), runs=runs)
        with _progress(engine, args.command) as shown:
            done: engines.HostDone = shown
            run = None if args.run is None else engine.run(args.run)
            result: Json = queries.report(engine, run, getattr(args, "host", None), done, args.allocator)
        if args.command == "report":
            source_lines.fill_where_texts(result)
            export.export_report(args, engine, result)
            if args.markdown:  # rendered only when asked for: its module and the rendering are ~4 ms of a report
                _write_markdown(args.markdown, markdown.render_report(result))
    except LeakfinderError as exc:
        _error(exc.message)
        return EXIT_BAD_INPUT
    if args.command == "report":
        if args.json:
            _print(json.dumps(result, indent=1))
        else:
            _print(text.render_report(result))
        return EXIT_OK
    return _check(result)


def _check(result: Json) -> int:
    """`check`'s lines and exit code: a leak, a no-leak a warning undermines, or a file that could not be read fails."""
    leaking = _check_lines(result)
    # A no-leak a warning undermines (reused addresses, frees paired by size) is no pass: said, and a failure.
    doubted = [h for r in result["runs"] for h in r["hosts"] if h["cannot_tell"]]
    for host in doubted:
        for warning in host["warnings"] + [w for a in host.get("allocators", []) for w in a["warnings"]]:
            _print(visible(f"{'warning':>12}  {host['host']}: {warning}"))
    if doubted and not leaking:
        _print(f"{'cannot tell':>12}  {words.count_of(len(doubted), 'host')}: a warning above undermines their verdict")
    if _unreadable(result["errors"]):
        return EXIT_BAD_INPUT
    return EXIT_LEAK if leaking or doubted else EXIT_OK


def _check_lines(result: Json) -> bool:
    """Print `check`'s verdicts, and whether one fails it. A TensorBoard run of several captures leads with its
    history, its captures' own verdicts below it; the history's `gate_verdict` decides (analyses/history.py, `gate`)."""
    histories = {h["tb_run"]: h for h in result.get("histories", [])}
    leaks = False
    for tb_run, h in histories.items():
        captures = words.count_of(h["num_captures"], "capture")
        _print(visible(f"{h['verdict']:>12}  {tb_run or '(the logdir top)'}: history of {captures}: {h['reason']}"))
        mine = [r for r in result["runs"] if engine_history.tensorboard_run(r["run"]) == tb_run]
        for run in mine:
            _print(visible(f"{run['verdict']:>12}    capture {run['run']}: {_reasons(run)}"))
        leaks |= h["gate_verdict"] == verdict.LEAK
    for run in result["runs"]:
        if engine_history.tensorboard_run(run["run"]) not in histories:
            _print(visible(f"{run['verdict']:>12}  {run['run']}: {_reasons(run)}"))
            leaks |= run["verdict"] == verdict.LEAK
    return leaks


def _reasons(run: Json) -> str:
    return "; ".join(h["reason"] for h in run["hosts"])


if __name__ == "__main__":
    sys.exit(main())
