"""The one error type tb_leakfinder raises for bad input."""

from __future__ import annotations


class LeakfinderError(Exception):
    """Bad input: a file, run, host or module that cannot be analysed.

    The message names what is wrong and where. `status` is the HTTP status the
    plugin answers with (404 for an unknown name, 422 for an unreadable
    profile, 400 for a malformed argument).
    """

    def __init__(self, message: str, *, status: int = 422, source: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.source = source

    def __str__(self) -> str:
        return self.message


class NotFoundError(LeakfinderError):
    """A run, host, allocator or module name that discovery did not list."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=404)


class BadArgumentError(LeakfinderError):
    """A malformed query argument or CLI option."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=400)


class CaptureError(LeakfinderError):
    """A capture that cannot be made: no framework imported, a bad window, no step captured."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=400)


class WorkerDiedError(LeakfinderError):
    """The process analysing a host died (killed, out of memory): a re-run tries that host again."""
