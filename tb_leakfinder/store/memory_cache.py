"""A bounded LRU cache that computes each missing value once, however many ask at once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class _Pending(Generic[V]):
    """One computation in progress: its callers wait for its value or its error."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.waiters = 0
        self.result: tuple[V] | None = None  # (value,) once computed
        self.error: BaseException | None = None


class ComputeCache(Generic[V]):
    """Values keyed by e.g. file identity, evicted least-recently-used past `max_weight`.

    Concurrent callers of `get` with the same missing key wait for one
    computation; an error is raised to every waiter and not cached.
    """

    def __init__(self, max_weight: int) -> None:
        self.max_weight = max_weight
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        self._pending: dict[Hashable, _Pending[V]] = {}
        self.computations = 0  # counted under the lock

    def get(self, key: Hashable, compute: Callable[[], V], weight: Callable[[V], int]) -> V:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
            pending = self._pending.get(key)
            computing = pending is None
            if pending is None:
                pending = self._pending[key] = _Pending()
                self.computations += 1
            else:
                pending.waiters += 1
        if not computing:
            return self._wait(pending)
        try:
            value = compute()
            w = weight(value)
            with self._lock:
                self._items[key] = (value, w)
                self._weight += w
                while self._weight > self.max_weight and len(self._items) > 1:
                    _, (_, old) = self._items.popitem(last=False)
                    self._weight -= old
            pending.result = (value,)
            return value
        except BaseException as exc:
            pending.error = exc
            raise
        finally:
            with self._lock:
                del self._pending[key]
            pending.done.set()

    @staticmethod
    def _wait(pending: _Pending[V]) -> V:
        """The value (or the error) of the computation another caller runs."""
        pending.done.wait()
        if pending.result is None:
            assert pending.error is not None
            raise pending.error
        return pending.result[0]

    def peek(self, key: Hashable) -> V | None:
        """The value if cached, without computing it or refreshing its place."""
        with self._lock:
            item = self._items.get(key)
            return None if item is None else item[0]

    def __len__(self) -> int:
        return len(self._items)
