"""Retrieval: for a problem, the directions and strategies that paid off on problems like it.

Which observations count: those made on the *same kind* of problem (same op classes, heavy-op
kinds, bottleneck, pattern families and dtypes, on the same device) weigh 1; those on a *similar*
one (op classes overlapping by at least half, the same heavy-op kinds, same bottleneck, any device)
weigh 0.5; the rest are not used. The heavy-op kinds (:func:`egg.memory.store.anchor_of`: conv2d,
conv_transpose3d, matmul, bmm, ...) keep a 2-D convolution's lesson off a transposed 3-D one;
observations recorded before EGG kept them match on the other fields alone.

Gains: a move from a parent gains its parent's time over its own. A *starting* move (a stage-1
structure, made from the module itself) is scored against the run's other starting moves on the
same problem: its speedup over eager divided by their geometric mean. Speedups over eager say as
much about the problem as about the move (a structure tried on easy problems would look best);
relative to its siblings, a structure scores what choosing it over the alternatives was worth.

Ordering: the expected log-gain per attempt, ``sum(w * log(gain)) / (sum(w) + PRIOR)`` over the
attempts whose outcome is known (accepted with comparable timings, or rejected: a rejected move
gains nothing and keeps its parent). ``PRIOR`` shrinks what a single lucky attempt can claim.
A move's *score* is that expectation only where it is clear of the spread of what was recorded:
more than one standard error (the weighted spread of the log-gains, at least ``NOISE``, over the
root of the weight) above zero, or below it; otherwise 0, and the packs' order stands. Problems
that share every field can still disagree: a channels-last layout won 1.8x on one transposed 2-D
convolution and lost 30x on another (H200, 2026-12-04); averaged, the memory overrode the packs'
choice on a third and lost 2.6x. Ties go to the lower failure rate, then the cheaper move. CPU runs (timings not comparable) add
to failure rates and costs, never to gains.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, Field

from egg.context.tokens import fit_tokens
from egg.memory.directions import DIRECTIONS, START
from egg.memory.store import Context, Observation

PRIOR = 1.0
NOISE = 0.1  # the least spread assumed of a log-gain: ~10% between timings of one kernel on a busy GPU
SAME, SIMILAR = 1.0, 0.5


def weight(context: Context, seen: Context) -> float:
    """How much an observation made on ``seen`` tells about ``context`` (0: nothing)."""
    if seen.anchors is not None and context.anchors is not None and set(seen.anchors) != set(context.anchors):
        return 0.0
    if (seen.op_classes, seen.bottleneck, seen.patterns, seen.dtypes, seen.device, seen.anchors) == (
            context.op_classes, context.bottleneck, context.patterns, context.dtypes, context.device, context.anchors):
        return SAME
    a, b = set(context.op_classes), set(seen.op_classes)
    if a and b and len(a & b) / len(a | b) >= 0.5 and seen.bottleneck == context.bottleneck:
        return SIMILAR
    return 0.0


def relative_starts(observations: Iterable[Observation]) -> list[Observation]:
    """The observations with each starting move's gain over eager replaced by its gain over the
    geometric mean of its run's starting moves on that problem (see the module docstring)."""
    observations = list(observations)
    logs: dict[tuple[str, str, str], list[float]] = defaultdict(list)

    def key(o: Observation) -> tuple[str, str, str]:
        return (o.run_id, o.problem_sha or o.problem, o.stage)

    for o in observations:
        if o.from_direction == START and o.accepted and o.gain is not None and o.gain > 0:
            logs[key(o)].append(math.log(o.gain))
    out = []
    for o in observations:
        siblings = logs.get(key(o))
        if o.from_direction == START and siblings and o.gain is not None and o.gain > 0:
            o = o.model_copy(update={"gain": math.exp(math.log(o.gain) - sum(siblings) / len(siblings))})
        out.append(o)
    return out


class Stats(BaseModel):
    """Attempts of one direction, strategy or transition, weighted by similarity."""

    attempts: int = 0
    same_kind: int = 0  # of the attempts, on the same kind of problem
    weight: float = 0.0
    failures: float = 0.0  # weighted
    known: float = 0.0  # weighted attempts with a known gain (accepted and comparable, or rejected)
    log_gain: float = 0.0  # weighted sum over accepted comparable attempts
    log_gain_sq: float = 0.0  # weighted sum of squares over the known attempts (a rejection: log 1 = 0)
    gained: float = 0.0  # weighted accepted comparable attempts
    seconds: float = 0.0  # weighted sum
    timed: float = 0.0

    def add(self, obs: Observation, w: float) -> None:
        self.attempts += 1
        self.same_kind += int(w == SAME)
        self.weight += w
        if not obs.accepted:
            self.failures += w
            self.known += w
        elif obs.gain is not None and obs.gain > 0:
            self.known += w
            self.gained += w
            self.log_gain += w * math.log(obs.gain)
            self.log_gain_sq += w * math.log(obs.gain) ** 2
        if obs.seconds is not None:
            self.seconds += w * obs.seconds
            self.timed += w

    @property
    def expected(self) -> float:
        """The shrunk expected log-gain per attempt."""
        return self.log_gain / (self.known + PRIOR)

    @property
    def score(self) -> float:
        """``expected`` where it is more than one standard error from zero, else 0 (module docstring)."""
        if not self.known:
            return 0.0
        mean = self.log_gain / self.known
        spread = max(math.sqrt(max(self.log_gain_sq / self.known - mean * mean, 0.0)), NOISE)
        error = spread / math.sqrt(self.known)
        return self.expected if abs(self.expected) > error else 0.0

    @property
    def failure_rate(self) -> float:
        return self.failures / self.weight if self.weight else 0.0

    @property
    def gain(self) -> float | None:
        """Geometric-mean gain of the accepted attempts with comparable timings."""
        return math.exp(self.log_gain / self.gained) if self.gained else None

    @property
    def mean_seconds(self) -> float | None:
        return self.seconds / self.timed if self.timed else None

    def key(self) -> tuple[float, float, float, float]:
        return (-self.score, -self.expected, self.failure_rate, self.mean_seconds or 0.0)

    def text(self) -> str:
        parts = [f"{self.attempts} {'try' if self.attempts == 1 else 'tries'} ({self.same_kind} on this kind of problem)",
                 f"{self.failure_rate:.0%} rejected"]
        parts.append(f"{self.gain:.2f}x gain when accepted" if self.gain is not None else "gain not measured")
        if self.mean_seconds is not None:
            parts.append(f"{self.mean_seconds:.1f} s each")
        return ", ".join(parts)


class StrategyStats(BaseModel):
    strategy: str
    stats: Stats
    principle_ids: list[str] = Field(default_factory=list)


class DirectionStats(BaseModel):
    stage: str
    focus: str
    direction: str
    meaning: str = ""
    stats: Stats
    strategies: list[StrategyStats] = Field(default_factory=list)


class TransitionStats(BaseModel):
    from_direction: str
    to_direction: str
    stats: Stats


def _weighted(observations: Iterable[Observation], context: Context | None) -> list[tuple[Observation, float]]:
    return [(o, w) for o in relative_starts(observations)
            if (w := SAME if context is None else weight(context, o.context)) > 0]


def directions(observations: Iterable[Observation], context: Context | None = None, *, stage: str | None = None,
               focus: str | None = None) -> list[DirectionStats]:
    """Directions (best first), each with its strategies (best first). ``context=None``: every
    observation counts fully (what ``egg memory show`` prints without a problem)."""
    by_direction: dict[tuple[str, str, str], Stats] = defaultdict(Stats)
    by_strategy: dict[tuple[str, str, str], dict[str, Stats]] = defaultdict(lambda: defaultdict(Stats))
    cited: dict[tuple[str, str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for obs, w in _weighted(observations, context):
        if (stage and obs.stage != stage) or (focus and obs.focus != focus):
            continue
        key = (obs.stage, obs.focus, obs.direction)
        by_direction[key].add(obs, w)
        by_strategy[key][obs.strategy].add(obs, w)
        for pid in obs.principle_ids:
            cited[(*key, obs.strategy)][pid] += 1
    out = []
    for key, stats in by_direction.items():
        strategies = [StrategyStats(strategy=s, stats=st,
                                    principle_ids=sorted(cited[(*key, s)], key=lambda p: -cited[(*key, s)][p])[:3])
                      for s, st in by_strategy[key].items()]
        strategies.sort(key=lambda s: (*s.stats.key(), s.strategy))
        out.append(DirectionStats(stage=key[0], focus=key[1], direction=key[2], meaning=DIRECTIONS.get(key, ""),
                                  stats=stats, strategies=strategies))
    out.sort(key=lambda d: (*d.stats.key(), d.direction))
    return out


def transitions(observations: Iterable[Observation], context: Context | None = None,
                from_direction: str | None = None) -> list[TransitionStats]:
    """Moves from one direction to the next (a stage-1 structure to a tuning direction, ...), best first."""
    stats: dict[tuple[str, str], Stats] = defaultdict(Stats)
    for obs, w in _weighted(observations, context):
        if from_direction is None or obs.from_direction == from_direction:
            stats[(obs.from_direction, obs.direction)].add(obs, w)
    out = [TransitionStats(from_direction=a, to_direction=b, stats=s) for (a, b), s in stats.items()]
    out.sort(key=lambda t: (*t.stats.key(), t.from_direction, t.to_direction))
    return out


def render_experience(observations: Iterable[Observation], context: Context, *, stage: str, focus: str,
                      budget_tokens: int = 400, strategies_per_direction: int = 3) -> str | None:
    """The prompt section's text: what ``observations`` (the earlier runs' the caller reads: a run
    reads other runs' recorded before it first started, :func:`egg.graph.experience.strategies_for`)
    found for this stage and focus on problems like this one, best first, within the budget; None
    when they know nothing relevant."""
    earlier = [o for o in observations if o.stage == stage]
    found = directions(earlier, context, stage=stage, focus=focus)
    if not found:
        return None
    total = sum(d.stats.attempts for d in found)
    lines = [f"From {total} candidates evaluated in earlier runs on problems like this one "
             f"({context.line()}), best expected gain first"
             + (" (a structure's gain is over the other structures tried on the same problem):"
                if any(o.from_direction == START and o.focus == focus for o in earlier) else ":")]
    for d in found:
        lines.append(f"- {d.direction}: {d.stats.text()}")
        for s in d.strategies[:strategies_per_direction]:
            cites = f" [{', '.join(s.principle_ids)}]" if s.principle_ids else ""
            lines.append(f"  - {s.strategy}: {s.stats.text()}{cites}")
    return fit_tokens(lines, budget_tokens)
