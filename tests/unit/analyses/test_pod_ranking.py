"""The pod overview's order: leaks first, the fastest leak first among them, whatever the heap figure says."""

from __future__ import annotations

from tb_leakfinder.analyses.pod_ranking import Standing, leaking_hosts, ranked, worst_first


def _row(host: str, verdict: str, leak: float | None, heap: float | None, peak: int = 0, capacity: int = 0) -> Standing:
    return Standing(host, verdict, leak, heap, peak, capacity)


def test_the_fastest_leak_comes_first_even_when_another_heap_rises_faster():
    """host_a leaks 64 KiB a step under a cache that fills fast; host_b leaks 256 KiB a step, its heap no faster."""
    rows = [
        _row("host_a", "leak", 64 * 1024, 900 * 1024),
        _row("host_b", "leak", 256 * 1024, 256 * 1024),
        _row("host_c", "no_leak", 0.0, 2048 * 1024),
        _row("host_d", "inconclusive", 0.0, None),
    ]
    assert [r.host for r in sorted(rows, key=worst_first)] == ["host_b", "host_a", "host_d", "host_c"]


def test_without_leaks_the_heap_trend_then_the_fullest_memory_decide():
    rows = [
        _row("host_a", "no_leak", 0.0, 0.0, peak=90, capacity=100),
        _row("host_b", "no_leak", 0.0, 4096.0, peak=10, capacity=100),
        _row("host_c", "no_leak", 0.0, 0.0, peak=50, capacity=100),
        _row("host_d", "inconclusive", None, None),
    ]
    assert [r.host for r in sorted(rows, key=worst_first)] == ["host_d", "host_b", "host_a", "host_c"]


def test_ranked_gives_the_rows_order_and_a_host_leaks_when_one_of_its_allocators_does():
    rows = [
        _row("host_a", "no_leak", 0.0, 0.0, peak=90, capacity=100),
        _row("host_b", "leak", 4096.0, 4096.0),
        _row("host_b", "no_leak", 0.0, 0.0),
        _row("host_c", "inconclusive", None, None),
    ]
    assert ranked(rows) == [1, 3, 0, 2]  # ties (no rate, no peak) keep their order
    assert leaking_hosts([["no_leak"], ["leak", "no_leak"], ["inconclusive"]]) == 1
    assert leaking_hosts([]) == 0
