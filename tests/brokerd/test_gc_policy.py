"""The broker's garbage-collection policy: a slow full collection freezes what it kept at the loop's next step; a
quick one or a young collection does not."""

import asyncio
import gc

import pytest

from brokerd import gc_policy


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()
    gc.unfreeze()


def collections_then_a_step(loop, monkeypatch, freeze_after_ms: float, generation: int) -> tuple[int, int]:
    """(frozen objects before, after) one collection of `generation` and a loop step with the policy installed."""
    monkeypatch.setattr(gc_policy, "FREEZE_AFTER_MS", freeze_after_ms)
    kept = [[n] for n in range(10_000)]  # long-lived objects a full collection walks
    gc.unfreeze()
    frozen = gc.get_freeze_count()
    uninstall = gc_policy.install(loop)
    try:
        gc.collect(generation)
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        uninstall()
    assert kept
    return frozen, gc.get_freeze_count()


def test_a_slow_full_collection_freezes_what_it_kept(loop, monkeypatch):
    before, after = collections_then_a_step(loop, monkeypatch, 0.0, 2)
    assert after >= before + 10_000


@pytest.mark.parametrize(("freeze_after_ms", "generation"), [(60_000.0, 2), (0.0, 0), (0.0, 1)],
                         ids=["a quick full collection", "a young collection", "a middle-aged collection"])
def test_nothing_else_freezes(loop, monkeypatch, freeze_after_ms, generation):
    before, after = collections_then_a_step(loop, monkeypatch, freeze_after_ms, generation)
    assert after == before
