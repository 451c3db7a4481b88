"""The progress of a long analysis on the terminal: hosts done of the total, bytes per second, time left."""

from __future__ import annotations

import sys
import threading
from typing import Any

DELAY_S = 1.0  # a run that finishes sooner draws nothing


class HostProgress:
    """A tqdm bar over the profiles' bytes, drawn on stderr only when it is a terminal.

    Call it with (host, file bytes) as each host is done; thread-safe. Without
    tqdm (the `progress` extra) it says once how to get the bar.
    """

    def __init__(self, total_hosts: int, total_bytes: int, what: str) -> None:
        self.what = what
        self.total_hosts = total_hosts
        self.hosts_done = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        if not sys.stderr.isatty():  # no bar to draw: tqdm is not even imported (tens of ms of a cold command)
            return
        try:
            from tqdm import tqdm
        except ImportError:  # an optional extra: say once how to get the bar, then run without it
            if total_hosts > 1:
                print(f"{what}: {total_hosts} hosts (pip install 'tb_leakfinder[progress]' for a progress bar)", file=sys.stderr)
            return
        self._bar = tqdm(
            total=total_bytes,
            desc=self._description(),
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            file=sys.stderr,
            delay=DELAY_S,
            leave=False,
            bar_format="{desc} |{bar}| {n_fmt}B/{total_fmt}B [{elapsed}<{remaining}, {rate_fmt}]",
        )

    def _description(self) -> str:
        return f"{self.what}: {self.hosts_done}/{self.total_hosts} hosts"

    def __call__(self, host: str, nbytes: int) -> None:
        with self._lock:
            self.hosts_done += 1
            if self._bar is not None:
                self._bar.set_description_str(self._description(), refresh=False)
                self._bar.update(nbytes)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> HostProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
