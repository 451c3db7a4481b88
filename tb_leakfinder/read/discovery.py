"""Finding profile runs, sessions and hosts under a logdir without decoding them, through the format registry.

Three layouts are found, each format saying which of its files it is (base.py's protocols):
- session folders, `<tb_run>/plugins/profile/<session>/`, a session `<tb_run>/<session>` whose hosts are the files
  a session format names (`host_name`: XProf's `<host>.xplane.pb`), with the companions some formats add;
- a folder format's files (`FolderSessions`: PyTorch traces) in a folder outside `plugins`: one session, `<folder>`
  (the logdir's own name at its top), whose hosts are its files; when a host has several (the cycles of a profiler
  schedule), each cycle is a session `<folder>/<session>`, a capture of that run;
- a snapshot format's files (`FileSessions`: JAX device memory profiles, PyTorch memory snapshots) in a folder outside
  `plugins`: each a session of its own, `<folder>/<name>` (`<name>` at the logdir's top), with one host, listed in
  the order they were taken.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.read import files
from tb_leakfinder.read.formats import registry
from tb_leakfinder.read.formats.registry import FileSessionFormat

MAX_DEPTH = 64


@dataclass
class Run:
    """One profile session: named as the Profile plugin names it."""

    name: str
    session_dir: str
    hosts: dict[str, str] = field(default_factory=dict)  # host -> its file's path
    companions: tuple[str, ...] = ()  # the session's files its hosts' analyses depend on (formats say which)
    # host -> the path of the file recorded beside its profile (registry.RECORDINGS), for the hosts that have one
    recordings: dict[str, str] = field(default_factory=dict)

    def host_path(self, host: str | None) -> tuple[str, str]:
        """(host, path) for `host`, or the only/first host when None."""
        if host is None:
            first = next(iter(self.hosts))
            return first, self.hosts[first]
        if host not in self.hosts:
            raise NotFoundError(f"run {self.name!r} has no host {host!r}; its hosts are {sorted(self.hosts)}")
        return host, self.hosts[host]

    def identity(self, host: str) -> files.FileIdentity:
        """What a host's cached analysis is valid for: its file (one stat, a remote call on gs://), the session's
        companion files as discovered, and the file recorded beside it (a second stat, only when discovery found one;
        gone since, the host is analysed without it)."""
        path = self.host_path(host)[1]
        found = files.identity(path)
        recorded = self.recordings.get(host)
        stamp = None
        if recorded is not None:
            try:
                beside = files.identity(recorded)
                stamp = (recorded, beside.size, beside.mtime_ns)
            except LeakfinderError:
                # Still there but no stat (a looping link, no permission): read, it is the warning that names it.
                stamp = (recorded, -1, -1) if _still_there(recorded) else None
        return dataclasses.replace(found, companions=self.companions, recordings=stamp)


def _still_there(path: str) -> bool:
    """Whether a name is still in its folder, even as a link to nothing."""
    return os.path.lexists(path) if files.is_local(path) else files.exists(path)


def _session(name: str, session_dir: str, host: str | None = None) -> Run:
    """The run of a session folder, from one listing: every host, or only `host`."""
    names = files.listdir(session_dir)
    hosts: dict[str, str] = {}
    formats = registry.session_formats()
    for n in names:
        found = next((h for h in (f.host_name(n) for f in formats) if h is not None), None)
        if found is not None and (host is None or found == host):
            hosts[found] = files.join(session_dir, n)
    return _recorded(Run(name, session_dir, hosts, registry.companions(names)), names)


def _recorded(run: Run, names: list[str]) -> Run:
    """The run with the files recorded beside its hosts' profiles, among its folder's `names`."""
    present = set(names)
    for host, path in run.hosts.items():
        found = registry.recordings_name(files.basename(path), present)
        if found is not None:
            run.recordings[host] = files.join(files.dirname(path), found)
    return run


def _snapshot(name: str, path: str, snapshots: FileSessionFormat, names: list[str]) -> Run:
    """The run of one snapshot file: a session of its own, with one host; `names` its folder's files."""
    host = snapshots.host_name(files.basename(path))
    assert host is not None  # the format sniffed it
    return _recorded(Run(name, files.dirname(path), {host: path}), names)


def _snapshot_runs(folder: str, names: list[str], rel: str) -> list[tuple[tuple[str, int], Run]]:
    """(sort key, run) of every snapshot file among a folder's `names` (its files), in the order taken."""
    found = []
    for snapshots in registry.file_session_formats():
        mine = [p for p in (files.join(folder, n) for n in names) if snapshots.sniff(p)]
        for rank, path in enumerate(snapshots.session_order(mine), start=1):
            stem = _stem(files.basename(path))
            found.append(((f"{rel}/" if rel else "", rank), _snapshot(f"{rel}/{stem}" if rel else stem, path, snapshots, names)))
    return found


def _folder_runs(name: str, tb_run: str, folder: str, names: list[str]) -> list[tuple[tuple[str, int], Run]]:
    """(sort key, run) of the sessions of a folder's own traces (`registry.folder_formats`): one named `name`, or, when a host
    has several (a profiler's cycles), each a capture `<tb_run>/<session>` of TensorBoard run `tb_run`, in the order
    recorded."""
    sessions = [found for folder_format in registry.folder_formats() for found in folder_format.folder_sessions(folder, names)]
    if len(sessions) == 1:
        return [((name, 0), _recorded(Run(name, folder, sessions[0][1]), names))]
    prefix = f"{tb_run}/" if tb_run else ""
    return [
        ((prefix, k), _recorded(Run(prefix + session, folder, hosts), names))
        for k, (session, hosts) in enumerate(sessions, start=1)
    ]


def _stem(file_name: str) -> str:
    """A snapshot file's name without its suffix, and without `.gz` before it (`step_5.pb.gz`: `step_5`)."""
    return file_name.removesuffix(".gz").rpartition(".")[0] or file_name


def _walk_dirs(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """(folder, child names, the children that are folders) for every folder below `top`, following symlinks once.

    Local symlink cycles end the walk of that branch: each real folder is visited once.
    """
    seen: set[str] = set()
    stack = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        if files.is_local(folder):
            real = os.path.realpath(folder)
            if real in seen:
                continue
            seen.add(real)
        children, folders = files.listdir_and_subdirs(folder)
        yield folder, children, folders
        if depth >= MAX_DEPTH:
            continue
        for name in reversed(folders):
            if name != "plugins":
                stack.append((files.join(folder, name), depth + 1))


def discover(logdir: str) -> list[Run]:
    """Every `<tb_run>/plugins/profile/<session>/` with `.xplane.pb` hosts, sorted by name, and every snapshot
    file of a folder outside `plugins`: a folder's snapshots in the order taken, before its XProf sessions."""
    logdir = logdir.rstrip("/") or "/"
    runs: list[tuple[tuple[str, int], Run]] = []
    for folder, children, folders in _walk_dirs(logdir):
        rel = _relative(folder, logdir)
        subfolders = set(folders)
        names = [n for n in children if n not in subfolders]
        runs.extend(_snapshot_runs(folder, names, rel))
        runs.extend(_folder_runs(rel or files.basename(logdir) or logdir, rel, folder, names))
        if "plugins" not in subfolders:
            continue
        profile_dir = files.join(folder, "plugins", "profile")
        if not files.isdir(profile_dir):
            continue
        for session in files.listdir(profile_dir):
            session_dir = files.join(profile_dir, session)
            if not files.isdir(session_dir):
                continue
            run = _session(f"{rel}/{session}" if rel else session, session_dir)
            if run.hosts:
                runs.append(((run.name, 0), run))
    return [run for _, run in sorted(runs, key=lambda keyed: keyed[0])]


def _relative(folder: str, logdir: str) -> str:
    if folder == logdir:
        return ""
    return folder[len(logdir) :].strip("/").replace(os.sep, "/")


def runs_for_path(path: str) -> list[Run]:
    """The runs a CLI or API path means: a logdir, one session folder, one `.xplane.pb`, `.prof`, trace or
    memory snapshot."""
    in_folder = next((f for f in registry.folder_formats() if not files.isdir(path) and f.sniff(path)), None)
    if in_folder is not None:
        session_dir = files.dirname(path)
        found = in_folder.folder_sessions(session_dir, [files.basename(path)])
        if not found:
            raise LeakfinderError(f"{path}: no such profile file", source=path)
        run = Run(files.basename(session_dir) or session_dir, session_dir, found[0][1])
        return [_recorded(run, files.listdir(session_dir or "."))]
    snapshots = next((f for f in registry.file_session_formats() if f.sniff(path)), None)
    host = next((f.host_name(files.basename(path)) for f in registry.session_formats() if f.sniff(path)), None)
    if host is not None or snapshots is not None:
        if not files.exists(path) or files.isdir(path):
            raise LeakfinderError(f"{path}: no such profile file", source=path)
        if snapshots is not None:
            return [_snapshot(_stem(files.basename(path)), path, snapshots, files.listdir(files.dirname(path) or "."))]
        session_dir = files.dirname(path)
        return [_session(files.basename(session_dir) or session_dir, session_dir, host)]
    if not files.isdir(path):
        raise LeakfinderError(f"{path}: no such logdir, session folder, {registry.suffixes()} file", source=path)
    session = _session(files.basename(path), path)
    if session.hosts:
        children, folders = files.listdir_and_subdirs(path)
        cycles = _folder_runs(session.name, session.name, path, [n for n in children if n not in set(folders)])
        return [run for _, run in cycles] if len(cycles) > 1 else [session]
    runs = discover(path)
    if not runs:
        raise LeakfinderError(f"{path}: no profiles found (expected {registry.expected_layouts()})", source=path)
    return runs


def find_run(runs: list[Run], name: str) -> Run:
    """The discovered run called `name`, or the only session of TensorBoard run `name`.

    Names are only ever matched against discovered ones, never joined into paths.
    """
    for run in runs:
        if run.name == name:
            return run
    sessions = [run for run in runs if run.name.rpartition("/")[0] == name]
    if len(sessions) == 1:
        return sessions[0]
    listed = ", ".join(r.name for r in runs[:20]) or "none"
    raise NotFoundError(f"no run named {name!r}; discovered runs: {listed}")
