"""Chunks read ahead in a thread (release.tables.prefetched): order, errors, early stops."""

import threading
import time

import pytest

from redactopt.release.tables import prefetched


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name == "redactopt-read-ahead"}


def test_items_arrive_in_order_and_all_of_them():
    assert list(prefetched(iter(range(1000)), depth=2)) == list(range(1000))
    assert list(prefetched([], depth=3)) == []
    assert not _threads()


def test_a_producer_error_is_raised_in_the_consumer_after_the_items_before_it():
    def gen():
        yield 1
        yield 2
        raise ValueError("row 7: not 0/1")

    got = []
    with pytest.raises(ValueError, match="row 7"):
        for x in prefetched(gen(), depth=4):
            got.append(x)
    assert got == [1, 2]
    assert not _threads()


def test_an_early_stop_closes_the_source_and_ends_the_thread():
    state = {"closed": False, "made": 0}

    def gen():
        try:
            for i in range(10**6):
                state["made"] += 1
                yield i
        finally:
            state["closed"] = True

    it = prefetched(gen(), depth=2)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()
    assert state["closed"]
    assert state["made"] <= 3 + 2 + 2  # read at most depth (+ the one in hand) ahead
    assert not _threads()


def test_the_consumer_error_stops_the_producer():
    def slow():
        for i in range(100):
            time.sleep(0.001)
            yield i

    with pytest.raises(RuntimeError):
        for x in prefetched(slow(), depth=2):
            if x == 5:
                raise RuntimeError("disk full")
    assert not _threads()
