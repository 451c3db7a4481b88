"""Which threads scanned an XSpace file: the read-ahead's tests see where the compiled scan ran."""

from __future__ import annotations

import threading

import pytest

from tb_leakfinder.read.formats.xplane import scan


def record_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that call `scan.scan_file` from now on, in order, appended as they call it."""
    scanned_on: list[str] = []
    real_scan = scan.scan_file

    def recorded(scanner: object, path: str) -> scan.ScannedFile:
        scanned_on.append(threading.current_thread().name)
        return real_scan(scanner, path)  # type: ignore[arg-type]

    monkeypatch.setattr(scan, "scan_file", recorded)
    return scanned_on
