"""Profile sessions in a logdir: their names, and publishing a session a profiler wrote elsewhere into the logdir whole.

TensorFlow and JAX name a session by the second their profile is written, so two sessions of one second would be
one folder, the second file over the first. Each capture therefore has the profiler (or XProf's client) write into a
staging folder of its own, `<logdir>/plugins/.tb_leakfinder-staging-*` (TensorBoard and tb_leakfinder's discovery
look for sessions only in `plugins/profile/`), and moves the finished session to `<logdir>/plugins/profile/<name>`
with one rename: a reader never sees a half-written session, and an abandoned capture leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import tempfile
import time

STAGING_PREFIX = ".tb_leakfinder-staging-"
# A session folder's name as TensorFlow's profiler and XProf's Capture button make it: local time to the second.
SESSION_TIME_FORMAT = "%Y_%m_%d_%H_%M_%S"


def profile_dir(logdir: pathlib.Path) -> pathlib.Path:
    return logdir / "plugins" / "profile"


def session_dirs(logdir: pathlib.Path) -> set[pathlib.Path]:
    """The session folders of `logdir/plugins/profile`."""
    root = profile_dir(logdir)
    return {p for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()


def new_session_id(logdir: pathlib.Path, stamp: str | None = None) -> str:
    """`stamp` (by default the time now, to the second), made unique within `logdir` as `<stamp>_2`, `<stamp>_3`…

    Names sort in time order (a suffixed name after its stamp, before the next second's).
    """
    stamp = stamp or time.strftime(SESSION_TIME_FORMAT)
    taken = {p.name for p in session_dirs(logdir)}
    name, n = stamp, 1
    while name in taken:
        n += 1
        name = f"{stamp}_{n}"
    return name


class Staging:
    """One capture's staging folder under `<logdir>/plugins/`, where a profiler writes `plugins/profile/<session>/`."""

    def __init__(self, logdir: pathlib.Path) -> None:
        self.logdir = logdir
        plugins = logdir / "plugins"
        # A PyTorch trace is published into the logdir itself: the plugins folder made for its staging goes too.
        self._made_plugins = not plugins.exists()
        plugins.mkdir(parents=True, exist_ok=True)
        self.path = pathlib.Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=plugins))

    def publish(self, name: str | None = None) -> pathlib.Path | None:
        """Moves the session written here (the latest, if several) to `<logdir>/plugins/profile/`, named `name`
        (by default its own name) made unique there; None when nothing was written."""
        staged = sorted(session_dirs(self.path), key=lambda p: p.stat().st_mtime)
        if not staged:
            return None
        root = profile_dir(self.logdir)
        root.mkdir(parents=True, exist_ok=True)
        while True:
            target = root / new_session_id(self.logdir, name or staged[-1].name)
            try:
                os.rename(staged[-1], target)
            except OSError:
                if not target.exists():
                    raise
                continue  # another writer took that name in between: the next one
            return target

    def publish_file(self, suffix: str) -> pathlib.Path | None:
        """Moves the profile written here (a PyTorch trace: the last file whose name ends with `suffix`) into the
        logdir itself, keeping its name, its companion files first; None when nothing was written. Its name holds
        the time in ns, so it does not meet another's."""
        written = sorted(p for p in self.path.iterdir() if p.is_file())
        profiles = [p for p in written if p.name.endswith(suffix)]
        if not profiles:
            return None
        # A reader takes a companion without its profile for nothing: the profile is moved last.
        for path in [p for p in written if p not in profiles] + profiles:
            os.rename(path, self.logdir / path.name)
        return self.logdir / profiles[-1].name

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._made_plugins:
            with contextlib.suppress(OSError):  # not empty: a profiler wrote a session there since
                self.path.parent.rmdir()
