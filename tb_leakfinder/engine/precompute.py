"""Fill the disk cache for every host of a logdir, on local processes or a Ray cluster.

Each host is one task: read its profile (through TensorBoard's gfile, so
gs:// works), analyse it and store the entry. A corrupt profile stores its
error entry; a worker that dies (killed, out of memory) leaves an error
entry that the next run retries, and the other hosts are kept. Hosts whose
entry is already there are skipped, so a re-run resumes where one stopped.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tb_leakfinder.engine.engine import HostResult, analyze_into, analyze_result, overview_rows, recorded_path
from tb_leakfinder.errors import LeakfinderError, WorkerDiedError
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.read.files import FileIdentity
from tb_leakfinder.store.disk_cache import DiskCache, encode_entry
from tb_leakfinder.store.version import analysis_version

ENGINES = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'tb_leakfinder[ray]'"


@dataclass(frozen=True)
class HostTask:
    run: str
    host: str
    session_dir: str
    identity: FileIdentity


@dataclass
class Outcome:
    task: HostTask
    status: str  # "analysed" now, or "cached" (its entry was already there)
    error: str | None = None  # the host's profile could not be analysed: its error entry is stored


# A task's work: analyse into the cache folder and return the error message, or None.
LocalAnalyze = Callable[[str, int, HostTask], "str | None"]
Done = Callable[[Outcome], None]


def tasks_for(runs: Iterable[Run]) -> list[HostTask]:
    """Every host of these runs whose file can be stat'ed, largest file first (the long ones start early)."""
    return host_tasks(runs)[0]


def host_tasks(runs: Iterable[Run]) -> tuple[list[HostTask], list[str]]:
    """`tasks_for`, and the error of each host whose file cannot even be stat'ed (a dangling or looping link):
    that host's, not its run's, whose other hosts are still tasks."""
    tasks, unreadable = [], []
    for run in runs:
        for host in run.hosts:
            try:
                tasks.append(HostTask(run.name, host, run.session_dir, run.identity(host)))
            except LeakfinderError as exc:
                unreadable.append(f"{run.name} host {host}: {exc.message}")
    return sorted(tasks, key=lambda t: -t.identity.size), unreadable


def analyze_task(folder: str, max_bytes: int, task: HostTask) -> str | None:
    """One host into the cache folder (runs in a worker process)."""
    result = analyze_into(DiskCache(folder, max_bytes), task.identity, task.host, task.session_dir)
    return None if result.error is None else result.error.message


def precompute(
    tasks: list[HostTask],
    disk: DiskCache,
    engine: str = "local",
    workers: int | None = None,
    address: str | None = None,
    done: Done | None = None,
    task_fn: Callable[..., Any] | None = None,
) -> list[Outcome]:
    """Analyse every task not yet cached; `done` is told of each host as it finishes.

    `task_fn` replaces a worker's function (`analyze_task` locally, `ray_task` on Ray).
    """
    if engine not in ENGINES:
        raise LeakfinderError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", status=400)
    workers = max(1, workers or os.cpu_count() or 1)
    outcomes: list[Outcome] = []

    def finish(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if done is not None:
            done(outcome)

    todo = []
    for task in tasks:
        entry = disk.load_report(task.identity)
        if entry is None or isinstance(entry.error, WorkerDiedError):  # a dead worker's host is tried again
            todo.append(task)
        else:
            finish(Outcome(task, "cached", entry.error.message if entry.error else None))
    if engine == "ray":
        _run_ray(todo, disk, workers, address, finish, task_fn or ray_task)
    else:
        _run_local(todo, disk, workers, finish, task_fn or analyze_task)
    return outcomes


def _outcome(task: HostTask, error: str | None) -> Outcome:
    return Outcome(task, "analysed", error)


def _internal_error(task: HostTask, exc: BaseException) -> Outcome:
    """Not stored: it says nothing about the profile, and the next run tries the host again."""
    return Outcome(task, "analysed", f"{task.identity.path}: internal error analysing host {task.host!r}: {exc!r}")


def _died(disk: DiskCache, task: HostTask, why: str) -> Outcome:
    message = f"{task.identity.path}: the worker analysing host {task.host!r} died ({why}); a re-run tries it again"
    disk.store(task.identity, HostResult(None, WorkerDiedError(message)), None)
    return Outcome(task, "analysed", message)


def _run_local(todo: list[HostTask], disk: DiskCache, workers: int, finish: Done, analyze: LocalAnalyze) -> None:
    """Worker processes (spawned: the parent's threads are not copied), at most `workers` hosts in flight.

    When a worker dies, the pool breaks; the hosts that were in flight are then
    tried one by one in a pool of their own, so only the one that kills its
    worker gets the error entry.
    """
    context = multiprocessing.get_context("spawn")
    queue = list(reversed(todo))
    while queue:
        suspects: list[HostTask] = []
        with ProcessPoolExecutor(min(workers, len(queue)), mp_context=context) as pool:
            running: dict[Future[Any], HostTask] = {}
            while queue or running:
                while queue and len(running) < workers:
                    task = queue.pop()
                    running[pool.submit(analyze, disk.folder, disk.max_bytes, task)] = task
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    task = running.pop(future)
                    try:
                        finish(_outcome(task, future.result()))
                    except BrokenProcessPool:
                        suspects.append(task)
                    except Exception as exc:  # noqa: BLE001 - a bug on one host must not stop the others
                        finish(_internal_error(task, exc))
                if suspects:
                    suspects.extend(running.values())
                    break
        for task in suspects:
            finish(_alone(task, disk, analyze, context))


def _alone(task: HostTask, disk: DiskCache, analyze: LocalAnalyze, context: Any) -> Outcome:
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        try:
            return _outcome(task, pool.submit(analyze, disk.folder, disk.max_bytes, task).result())
        except BrokenProcessPool as exc:
            return _died(disk, task, str(exc) or "killed")
        except Exception as exc:  # noqa: BLE001
            return _internal_error(task, exc)


# Ray -----------------------------------------------------------------------------------------


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise LeakfinderError(f"--engine ray needs Ray, which is not installed ({exc}); {RAY_INSTALL_HINT}", status=400) from exc
    return ray


def ray_task(task: HostTask, version: str) -> tuple[str, bytes | None, str | None]:
    """On a Ray worker: (its analysis version, the entry's bytes, the error message or None).

    The entry goes back to the driver, which owns the cache folder: the cluster needs no shared disk.
    """
    mine = analysis_version()
    if mine != version:
        return mine, None, None
    result, body = analyze_result(task.identity.path, task.host, task.session_dir, recorded_path(task.identity))
    error = None if result.error is None else result.error.message
    rows = overview_rows(task.host, task.identity.path, body, result.error)
    return mine, encode_entry(task.identity, result, body, rows, result.points()), error


def _package_root() -> str:
    return str(Path(__file__).resolve().parent.parent)


def _run_ray(todo: list[HostTask], disk: DiskCache, workers: int, address: str | None, finish: Done, task_fn: Any) -> None:
    """Tasks on a Ray cluster (at `address`, else a local one of `workers` CPUs); entries come back to this process.

    At most two tasks per worker are in flight, so the entries waiting in the
    object store stay bounded.
    """
    ray = import_ray()
    if not todo:  # everything is cached: no cluster to start
        return
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            # The workers import this same tb_leakfinder (a source tree as well as an installed one).
            path = os.pathsep.join(p for p in (_package_root(), os.environ.get("PYTHONPATH", "")) if p)
            ray.init(
                num_cpus=workers,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": path}},
            )
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(task_fn)
        queue = list(reversed(todo))
        running: dict[Any, HostTask] = {}
        while queue or running:
            while queue and len(running) < 2 * workers:
                task = queue.pop()
                running[remote.remote(task, disk.version)] = task
            ready, _ = ray.wait(list(running), num_returns=1)
            task = running.pop(ready[0])
            try:
                version, data, error = ray.get(ready[0])
            except ray.exceptions.RayTaskError as exc:  # the task raised: a bug, not a dead worker
                finish(_internal_error(task, exc.cause if exc.cause is not None else exc))
                continue
            except ray.exceptions.RayError as exc:
                finish(_died(disk, task, type(exc).__name__))
                continue
            if data is None:
                raise LeakfinderError(
                    f"the Ray workers run another tb_leakfinder (analysis version {version}, here {disk.version});"
                    " install the same version on the cluster"
                )
            disk.store_bytes(task.identity, data)
            finish(_outcome(task, error))
    finally:
        if started:
            ray.shutdown()
