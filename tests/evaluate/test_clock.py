"""The judge's clock bound (egg.evaluate.clock.clock_reason): what an honest call can show on the
judge's wall clock, and what a lying one shows. Pure arithmetic on per-call figures."""

from __future__ import annotations

from egg.evaluate import clock, timing

FLUSH_MS = 0.08
NULL_MS = 0.3 + FLUSH_MS + timing.SPIN_US / 1e3  # a null call waits for the flush and the spin


def _calls(event: float, beyond: float, n: int = 20) -> tuple[list[float], list[float], list[float]]:
    return [event] * n, [NULL_MS + beyond] * n, [NULL_MS] * n


def test_an_honest_gpu_bound_call_agrees_with_the_clock() -> None:
    events, walls, nulls = _calls(event=1.0, beyond=1.02)
    judged, reason = clock.clock_reason(events, walls, nulls, FLUSH_MS, on_gpu=True)
    assert reason is None and abs(judged - 1.02) < 1e-9


def test_a_candidate_reporting_a_tenth_of_its_time_is_caught() -> None:
    # A 2 ms kernel that reports 0.2 ms: the spin before the start event lies in the null call
    # too, so it buys the lie no room.
    events, walls, nulls = _calls(event=0.2, beyond=2.0)
    judged, reason = clock.clock_reason(events, walls, nulls, FLUSH_MS, on_gpu=True)
    assert reason is not None and "disagree with the judge's clock" in reason and abs(judged - 2.0) < 1e-9


def test_a_lie_just_past_the_margin_is_caught_and_one_inside_it_is_not() -> None:
    allowed = 0.4 * 1.25 + 2 * FLUSH_MS + 0.1
    assert clock.clock_reason(*_calls(event=0.4, beyond=allowed - 0.01), FLUSH_MS, on_gpu=True)[1] is None
    assert clock.clock_reason(*_calls(event=0.4, beyond=allowed + 0.01), FLUSH_MS, on_gpu=True)[1] is not None


def test_the_cpu_margin_is_wide() -> None:
    events, walls, nulls = _calls(event=1.0, beyond=1.0 * 2 + 2 * FLUSH_MS + 20.0 - 0.1)
    assert clock.clock_reason(events, walls, nulls, FLUSH_MS, on_gpu=False)[1] is None


def test_the_default_spin_is_a_short_head_start() -> None:
    # Long enough to cover Dynamo's guards and a Python launcher (tenths of a millisecond in the
    # judge's process), short enough to add little to a run: 100 timed calls cost 0.1 s more.
    assert 0.0 < timing.SPIN_US / 1e3 <= 2.0


def _noisy(event: float, beyond: float, noise: float = 5.0, n: int = 20) -> tuple[list[float], list[float], list[float]]:
    """Pairs on a loaded host: half the null calls and the other half of the timed calls delayed."""
    walls = [NULL_MS + beyond + (noise if i % 2 else 0.0) for i in range(n)]
    nulls = [NULL_MS + (0.0 if i % 2 else noise) for i in range(n)]
    return [event] * n, walls, nulls


def test_noise_in_the_null_calls_does_not_hide_a_lie() -> None:
    # A 2 ms kernel reporting 0.2 ms: the delayed null calls make half the pairs' differences
    # negative (-3 ms), which alone would put their 25th percentile far under the allowance.
    events, walls, nulls = _noisy(event=0.2, beyond=2.0)
    judged, reason = clock.clock_reason(events, walls, nulls, FLUSH_MS, on_gpu=True)
    assert reason is not None and abs(judged - 2.0) < 1e-9


def test_an_honest_call_on_a_noisy_host_agrees_with_the_clock() -> None:
    events, walls, nulls = _noisy(event=1.0, beyond=1.02)
    judged, reason = clock.clock_reason(events, walls, nulls, FLUSH_MS, on_gpu=True)
    assert reason is None and abs(judged - 1.02) < 1e-9
