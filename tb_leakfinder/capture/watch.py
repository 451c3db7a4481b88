"""`tb-leakfinder watch ADDR --logdir DIR`: captures of a running job's profiler server, one session each, every so often.

The job serves its profiler (TensorFlow: `tf.profiler.experimental.server.start(port)`; JAX:
`jax.profiler.start_server(port)`). Every `every` seconds, from the start, the watch asks it through XProf's own
client (remote_trace, in a process of its own) for a session of `duration` seconds with the memory events and the
Python function events on (server_session.server_options), and publishes it whole as
`<logdir>/plugins/profile/<session>/<host>_<port>.xplane.pb` (XProf names the file by the address; the session by
the time the capture began, as its Capture button does, made unique: see sessions.py). A capture that fails
(no server, a session already running there) is one logged line and is tried again at the next tick; one that
has not ended `duration` plus CONNECT_TIMEOUT_S after it began (a server that accepts and never answers) is
abandoned. `--count N` ends the watch after N attempts, failed or not; `--timeout` ends it then, abandoning the
capture in flight. A signal (SIGINT, SIGTERM) stops the watch once the capture in flight is written; a second one
abandons that capture.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

from tb_leakfinder.analyses.words import count_of, format_bytes
from tb_leakfinder.capture.framework_profiler import recorded_allocators
from tb_leakfinder.capture.server_session import XPROF_CLIENT, server_options
from tb_leakfinder.capture.sessions import Staging, new_session_id
from tb_leakfinder.errors import BadArgumentError, LeakfinderError

DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|s|m|h)")
DURATION_HELP = "a number and a unit: 500ms, 30s, 10m, 1h"
CLIENT_MODULE = "tb_leakfinder.capture.remote_trace"
# A capture in flight that has not ended this long after its duration is abandoned (its process killed): time to
# connect, and to receive and write what the server recorded.
CONNECT_TIMEOUT_S = 30.0
POLL_S = 0.05
# The watch's exit status when it ended before --count captures were made (--timeout, or failed attempts).
EXIT_SHORT = 1
# The line the native client logs for each address it got no trace from: "<address> returned <status>: <why>".
_CLIENT_REASON = re.compile(r"\]\s+(\S+ returned .+?)\s*$")
NO_MEMORY_EVENTS = (
    "this capture holds no memory events: TensorFlow on CPU records them only when the job runs with"
    " TF_CPU_ALLOCATOR_USE_BFC=true set before it imports TensorFlow; JAX on CPU records none (GPUs do)"
)


def parse_duration(text: str, option: str) -> float:
    """Seconds of a duration such as 500ms, 30s, 10m, 1h (a BadArgumentError naming `option` otherwise)."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise BadArgumentError(f"{option}: {text!r} is not a duration ({DURATION_HELP})")
    seconds = float(match[1]) * DURATION_UNITS[match[2]]
    if seconds <= 0:
        raise BadArgumentError(f"{option}: {text!r} is no time at all ({DURATION_HELP})")
    return seconds


def parse_address(text: str) -> str:
    """A profiler server's `host:port` (`[v6 address]:port`; XProf's `grpc://` prefix allowed), as the client takes it."""
    address = text.strip().removeprefix("grpc://")
    host, colon, port = address.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]") and len(host) > 2 and not any(c in host[1:-1] for c in "[]")
    if (
        not colon
        or not host
        or not (port.isascii() and port.isdigit() and 0 < int(port) < 65536)
        or (any(c in host for c in ":[]") and not bracketed)
        or any(c.isspace() or c in "/,@?#" for c in host)
    ):
        raise BadArgumentError(
            f"{text!r} is not a profiler server's address: give host:port (e.g. localhost:6009), the port the job"
            " passed to tf.profiler.experimental.server.start or jax.profiler.start_server"
        )
    return f"{host}:{int(port)}"


def parse_count(text: str | None, option: str) -> int | None:
    if text is None:
        return None
    if not (text.strip().isascii() and text.strip().isdigit()) or int(text) < 1:
        raise BadArgumentError(f"{option}: {text!r} is not a number of captures (1 or more)")
    return int(text)


def describe_seconds(seconds: float) -> str:
    for unit in ("h", "m", "s"):
        if seconds >= DURATION_UNITS[unit] and (seconds / DURATION_UNITS[unit]).is_integer():
            return f"{seconds / DURATION_UNITS[unit]:.0f}{unit}"
    return f"{seconds:.3g}s" if seconds >= 1 else f"{seconds * 1000:.0f}ms"


@dataclasses.dataclass(frozen=True)
class WatchSettings:
    address: str
    logdir: pathlib.Path
    every_s: float
    duration_s: float
    count: int | None = None  # stop after this many attempts, failed or not
    timeout_s: float | None = None  # stop this long after the start, whatever was captured


def settings_from_text(
    address: str, logdir: str, every: str, duration: str, count: str | None = None, timeout: str | None = None
) -> WatchSettings:
    """The command line's settings, checked: a BadArgumentError with a one-line message for each bad one."""
    if "://" in logdir:
        raise BadArgumentError(f"--logdir: {logdir!r} is a URL; the watch writes to a local folder")
    settings = WatchSettings(
        address=parse_address(address),
        logdir=pathlib.Path(logdir),
        every_s=parse_duration(every, "--every"),
        duration_s=parse_duration(duration, "--duration"),
        count=parse_count(count, "--count"),
        timeout_s=None if timeout is None else parse_duration(timeout, "--timeout"),
    )
    if settings.every_s < settings.duration_s:
        raise BadArgumentError(f"--every ({every}) is shorter than --duration ({duration}): the captures would overlap")
    return settings


def check_client() -> None:
    """XProf's profiler client can be loaded, or a LeakfinderError that says what to install."""
    try:
        importlib.import_module(XPROF_CLIENT)
    except (ImportError, OSError) as exc:  # OSError: its native library
        raise LeakfinderError(
            f"watch needs XProf's profiler client ({XPROF_CLIENT}), which cannot be loaded ({exc}): pip install xprof"
            " (tensorboard-plugin-profile installs it)",
            status=400,
        ) from None


def prepare_logdir(logdir: pathlib.Path) -> None:
    """Makes `logdir` and checks that captures can be written there (a BadArgumentError otherwise)."""
    try:
        logdir.mkdir(parents=True, exist_ok=True)
        Staging(logdir).remove()
    except OSError as exc:
        raise BadArgumentError(f"--logdir: {logdir}: captures cannot be written there ({exc.strerror or exc})") from None


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One capture: the session it published, or why there is none."""

    session_dir: pathlib.Path | None
    error: str | None = None
    abandoned: bool = False  # at a second signal: no failure, nothing to retry


def _child_env() -> dict[str, str]:
    """This process's environment, with the tb_leakfinder it runs first on the capture process's path and the
    native client's warnings on (they go to the capture's log, whose "returned" line is a failure's reason)."""
    root = str(pathlib.Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    return env


def client_reason(log: str, error: str) -> str:
    """The native client's own reason for a capture with no trace ("<address> returned UNAVAILABLE: …"), else `error`."""
    reasons = [m[1] for m in map(_CLIENT_REASON.search, log.splitlines()) if m is not None]
    return "; ".join(dict.fromkeys(reasons)) or error.rstrip(".")


class Watch:
    """The watch loop of `settings`: `out` gets each capture's line, `err` each failure's and each note."""

    def __init__(self, settings: WatchSettings, out: Callable[[str], None], err: Callable[[str], None]) -> None:
        self.settings = settings
        self.out, self.err = out, err
        self.sessions: list[pathlib.Path] = []
        self.failures = 0
        self.abandoned = 0
        self.stopped_by: str | None = None  # the signal that asked the watch to stop
        self.abandon = False  # a second signal: abandon the capture in flight
        self.warned_no_memory = False
        self._wake = threading.Event()

    def request_stop(self, reason: str) -> None:
        """Stop after the capture in flight (from a signal handler: it only sets flags); a second call abandons it."""
        if self.stopped_by is None:
            self.stopped_by = reason
        else:
            self.abandon = True
        self._wake.set()

    def run(self) -> str:
        """Captures until --count, --timeout or a signal; says which ("count", "timeout", or the signal's name)."""
        s = self.settings
        begun = time.monotonic()
        deadline = None if s.timeout_s is None else begun + s.timeout_s
        tick = 0
        while True:
            if self.stopped_by is not None:
                return self.stopped_by
            if s.count is not None and self.attempts >= s.count:
                return "count"
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return "timeout"
            due = begun + tick * s.every_s
            if now < due:
                self._wake.wait(min(due, deadline if deadline is not None else due) - now)
                continue
            attempt = self.capture(deadline)
            tick = int((time.monotonic() - begun) // s.every_s) + 1
            self._log(attempt, begun + tick * s.every_s, deadline)

    @property
    def attempts(self) -> int:
        return len(self.sessions) + self.failures + self.abandoned

    def capture(self, deadline: float | None = None) -> Attempt:
        """One capture through XProf's client, published into the logdir when it succeeds; abandoned at `deadline`
        (the watch's --timeout, on the monotonic clock)."""
        s = self.settings
        try:
            staging = Staging(s.logdir)
        except OSError as exc:
            return Attempt(None, f"{s.logdir}: cannot write there ({exc.strerror or exc})")
        try:
            session_id = new_session_id(s.logdir)
            result = staging.path / "result.json"
            log_path = staging.path / "client.log"
            request = {
                "address": s.address,
                "logdir": str(staging.path),
                "duration_ms": max(1, round(s.duration_s * 1000)),
                "options": server_options(session_id),
                "result": str(result),
            }
            with open(log_path, "wb") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", CLIENT_MODULE, json.dumps(request)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=_child_env(),
                    start_new_session=True,  # a Ctrl-C in the terminal is the watch's to handle, not the capture's
                )
                abandoned = self._wait(process, s.duration_s + CONNECT_TIMEOUT_S, deadline)
            if abandoned is not None:
                at_timeout = deadline is not None and time.monotonic() >= deadline
                return Attempt(None, abandoned, abandoned=self.abandon or at_timeout)
            error = self._outcome(result, log_path, process.returncode)
            if error is not None:
                return Attempt(None, error)
            session_dir = staging.publish(session_id)
            if session_dir is None:
                return Attempt(None, "XProf's client reported success but wrote no session")
            return Attempt(session_dir)
        except OSError as exc:
            return Attempt(None, f"{s.logdir}: {exc.strerror or exc}")
        finally:
            staging.remove()

    def _wait(self, process: subprocess.Popen[bytes], limit_s: float, timeout_at: float | None) -> str | None:
        """Waits for the capture's process; why it was abandoned (then killed), or None once it ended by itself."""
        deadline = time.monotonic() + limit_s
        told = False
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(POLL_S)
                return None
            if self.stopped_by is not None and not told:
                told = True
                self.err(f"{_clock()} {self.stopped_by}: stopping once the capture in flight is written (again: abandon it)")
            if self.abandon:
                reason = "abandoned at a second signal"
            elif timeout_at is not None and time.monotonic() >= timeout_at:
                reason = f"abandoned at --timeout {describe_seconds(self.settings.timeout_s or 0)}"
            elif time.monotonic() > deadline:
                reason = f"no answer from {self.settings.address} in {describe_seconds(limit_s)}: abandoned"
            else:
                continue
            process.kill()
            process.wait()
            return reason

    def _outcome(self, result: pathlib.Path, log_path: pathlib.Path, returncode: int) -> str | None:
        log = log_path.read_text(errors="replace")
        try:
            error = json.loads(result.read_text())["error"]
        except (OSError, ValueError, KeyError, TypeError):
            last = next((line.strip() for line in reversed(log.splitlines()) if line.strip()), "")
            return f"the capture process ended with status {returncode}" + (f": {last}" if last else "")
        return None if error is None else client_reason(log, str(error))

    def _log(self, attempt: Attempt, next_at: float, deadline: float | None) -> None:
        s = self.settings
        if attempt.abandoned:
            self.abandoned += 1
            self.err(f"{_clock()} the capture in flight was {attempt.error}")
            return
        if attempt.session_dir is None:
            self.failures += 1
            if self.stopped_by is not None:
                then = "stopping"
            elif s.count is not None and self.attempts >= s.count:
                then = f"--count {s.count} attempts made"
            elif deadline is not None and next_at >= deadline:
                then = "no time left before --timeout"
            else:
                then = f"next try at {_clock(time.time() + next_at - time.monotonic())}"
            self.err(f"{_clock()} capture failed: {attempt.error}; {then}")
            return
        self.sessions.append(attempt.session_dir)
        of = "" if s.count is None else f" of {s.count}"
        files = sorted(p for p in attempt.session_dir.iterdir() if p.is_file())
        sizes = ", ".join(f"{p.name} {format_bytes(p.stat().st_size)}" for p in files)
        try:
            allocators: set[str] | None = recorded_allocators(attempt.session_dir)
        except Exception as exc:  # noqa: BLE001 - the capture stands: its report says what is wrong with the file
            allocators, memory = None, f"not read here: {str(exc).strip() or type(exc).__name__}"
        if allocators is not None:
            memory = f"memory events of {', '.join(sorted(allocators))}" if allocators else "no memory events"
        self.out(f"{_clock()} capture {len(self.sessions)}{of}: {attempt.session_dir} ({sizes}; {memory})")
        if allocators == set() and not self.warned_no_memory:
            self.warned_no_memory = True
            self.err(f"{_clock()} {NO_MEMORY_EVENTS}")

    def summary(self, ended: str) -> list[str]:
        """What the watch captured, and why it stopped: a line, then each session's folder."""
        s = self.settings
        why = {
            "count": f"--count {s.count} reached",
            "timeout": f"--timeout {describe_seconds(s.timeout_s or 0)} reached",
        }.get(ended, f"stopped by {ended}")
        n = len(self.sessions)
        failed = f", {self.failures} failed" if self.failures else ""
        failed += f", {self.abandoned} abandoned" if self.abandoned else ""
        lines = [f"{count_of(n, 'capture')} of {s.address} in {s.logdir}{failed} ({why})"]
        return lines + [str(p) for p in self.sessions]

    def exit_status(self, ended: str) -> int:
        """0, or EXIT_SHORT when --timeout or failed attempts left fewer than --count captures."""
        short = ended in ("timeout", "count") and self.settings.count is not None and len(self.sessions) < self.settings.count
        return EXIT_SHORT if short else 0


@contextlib.contextmanager
def stop_on_signals(watch: Watch) -> Iterator[None]:
    """SIGINT and SIGTERM ask `watch` to stop (a second one abandons the capture in flight) while in the block."""

    def handle(signum: int, frame: FrameType | None) -> None:
        watch.request_stop(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _clock(at: float | None = None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))
