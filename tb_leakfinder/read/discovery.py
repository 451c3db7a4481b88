"""Finding profile runs, sessions and hosts under a logdir without decoding them."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.read import files

XPLANE_SUFFIX = ".xplane.pb"
HLO_SUFFIX = ".hlo_proto.pb"  # XProf's cache of a session's HLO modules, one per module
MAX_DEPTH = 64


@dataclass
class Run:
    """One profile session: named as the Profile plugin names it."""

    name: str
    session_dir: str
    hosts: dict[str, str] = field(default_factory=dict)  # host -> .xplane.pb path
    hlo_files: tuple[str, ...] = ()  # the session's `.hlo_proto.pb` names, sorted

    def host_path(self, host: str | None) -> tuple[str, str]:
        """(host, path) for `host`, or the only/first host when None."""
        if host is None:
            first = next(iter(self.hosts))
            return first, self.hosts[first]
        if host not in self.hosts:
            raise NotFoundError(f"run {self.name!r} has no host {host!r}; its hosts are {sorted(self.hosts)}")
        return host, self.hosts[host]

    def identity(self, host: str) -> files.FileIdentity:
        """What a host's cached analysis is valid for: its file (one stat, a remote call on gs://) and the
        session's HLO files as discovered."""
        path = self.host_path(host)[1]
        return dataclasses.replace(files.identity(path), companions=self.hlo_files)


def _session(name: str, session_dir: str, host: str | None = None) -> Run:
    """The run of a session folder, from one listing: every host, or only `host`."""
    names = files.listdir(session_dir)
    hosts = {
        n[: -len(XPLANE_SUFFIX)]: files.join(session_dir, n)
        for n in names
        if n.endswith(XPLANE_SUFFIX) and len(n) > len(XPLANE_SUFFIX) and (host is None or n == host + XPLANE_SUFFIX)
    }
    return Run(name, session_dir, hosts, tuple(sorted(n for n in names if n.endswith(HLO_SUFFIX))))


def _walk_dirs(top: str) -> Iterator[tuple[str, list[str]]]:
    """(folder, child names) for every folder below `top`, following symlinks once.

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
        yield folder, children
        if depth >= MAX_DEPTH:
            continue
        for name in reversed(folders):
            if name != "plugins":
                stack.append((files.join(folder, name), depth + 1))


def discover(logdir: str) -> list[Run]:
    """Every `<tb_run>/plugins/profile/<session>/` with `.xplane.pb` hosts, sorted by name."""
    logdir = logdir.rstrip("/") or "/"
    runs: list[Run] = []
    for folder, children in _walk_dirs(logdir):
        if "plugins" not in children:
            continue
        profile_dir = files.join(folder, "plugins", "profile")
        if not files.isdir(profile_dir):
            continue
        rel = _relative(folder, logdir)
        for session in files.listdir(profile_dir):
            session_dir = files.join(profile_dir, session)
            if not files.isdir(session_dir):
                continue
            run = _session(f"{rel}/{session}" if rel else session, session_dir)
            if run.hosts:
                runs.append(run)
    return sorted(runs, key=lambda r: r.name)


def _relative(folder: str, logdir: str) -> str:
    if folder == logdir:
        return ""
    return folder[len(logdir) :].strip("/").replace(os.sep, "/")


def runs_for_path(path: str) -> list[Run]:
    """The runs a CLI or API path means: a logdir, one session folder, or one `.xplane.pb`."""
    if path.endswith(XPLANE_SUFFIX):
        if not files.exists(path) or files.isdir(path):
            raise LeakfinderError(f"{path}: no such profile file", source=path)
        session_dir = files.dirname(path)
        host = files.basename(path)[: -len(XPLANE_SUFFIX)]
        return [_session(files.basename(session_dir) or session_dir, session_dir, host)]
    if not files.isdir(path):
        raise LeakfinderError(f"{path}: no such logdir, session folder or .xplane.pb file", source=path)
    session = _session(files.basename(path), path)
    if session.hosts:
        return [session]
    runs = discover(path)
    if not runs:
        raise LeakfinderError(
            f"{path}: no profiles found (expected <run>/plugins/profile/<session>/<host>{XPLANE_SUFFIX})",
            source=path,
        )
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
