"""Inline SVG charts for the HTML reports, drawn in Python (no JavaScript, no network).

Speedups are drawn on a log scale (2x and 0.5x are the same distance from 1x). Every text that
comes from a run (candidate ids, problem names, reasons) is escaped; hover text uses SVG
``<title>`` elements, which browsers show as tooltips without scripts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

STAGE_COLORS = {"algorithm_design": "#2563eb", "hardware_tuning": "#d97706"}
STAGE_NAMES = {"algorithm_design": "stage 1: algorithm design", "hardware_tuning": "stage 2: hardware tuning"}
_NICE = (1.0, 2.0, 5.0)
_FINE = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)


@dataclass(frozen=True)
class ChartPoint:
    """One evaluated candidate, in evaluation order."""

    id: str
    stage: str
    accepted: bool
    speedup: float | None  # vs eager; None when rejected or untimed
    note: str = ""  # tooltip text (verdict, reason)


@dataclass(frozen=True)
class Bar:
    """One problem of a suite: its speedups (None when it failed) and whether it was correct."""

    label: str
    eager: float | None
    compile: float | None
    correct: bool
    note: str = ""


class LogScale:
    """Maps a positive value to a pixel coordinate between ``lo`` and ``hi`` (log10)."""

    def __init__(self, values: list[float], p0: float, p1: float) -> None:
        finite = [v for v in values if v > 0 and math.isfinite(v)] + [1.0]
        self.lo = min(finite) / 1.4
        self.hi = max(finite) * 1.4
        self.p0, self.p1 = p0, p1

    def __call__(self, value: float) -> float:
        value = min(max(value, self.lo), self.hi)
        frac = (math.log10(value) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        return self.p0 + frac * (self.p1 - self.p0)

    def ticks(self, most: int = 7) -> list[float]:
        out: list[float] = []
        for mantissas in (_NICE, _FINE):
            out = []
            for exp in range(math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi)) + 1):
                out += [m * 10.0**exp for m in mantissas if self.lo <= m * 10.0**exp <= self.hi]
            if len(out) >= 4:
                break
        while len(out) > most:
            keep = [t for t in out if abs(math.log10(t) - round(math.log10(t))) < 1e-9 or t == 1.0]
            out = keep if len(keep) < len(out) and len(keep) >= 2 else out[::2]
        return out


def fmt_x(value: float) -> str:
    """Compact speedup label: 0.001x, 0.25x, 1x, 2.5x, 120x."""
    if value >= 10:
        return f"{value:.0f}x"
    return f"{value:.3g}x"


def _text(x: float, y: float, body: str, cls: str = "", anchor: str = "start", extra: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}{extra}>{escape(body)}</text>'


def progress_chart(points: list[ChartPoint], *, comparable: bool, best_id: str | None = None,
                   width: int = 1100, height: int = 320) -> str:
    """Speedup vs eager of each evaluated candidate and the best so far, stages shaded.

    With comparable (GPU) timings a step line follows the best speedup so far. On CPU the
    interpreter's numbers are drawn (labelled as not comparable) but no "best so far" line: the
    best candidate was chosen by rule (records.CPU_TIE_BREAK), and it is ringed instead.
    """
    left, right, top, bottom = 64, 16, 30, 44
    x0, x1, y0, y1 = left, width - right, height - bottom, top
    n = max(len(points), 1)
    step = (x1 - x0) / n
    xs = [x0 + step * (i + 0.5) for i in range(len(points))]
    values = [p.speedup for p in points if p.accepted and p.speedup]
    lane = 20  # rejected candidates sit in a lane of their own, below the lowest speedup
    scale = LogScale([v for v in values if v is not None], y0 - lane, y1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="best speedup over evaluated candidates">']
    # stage bands
    i = 0
    while i < len(points):
        j = i
        while j < len(points) and points[j].stage == points[i].stage:
            j += 1
        color = STAGE_COLORS.get(points[i].stage, "#6b7280")
        parts.append(f'<rect x="{x0 + step * i:.1f}" y="{y1}" width="{step * (j - i):.1f}" height="{y0 - y1}" '
                     f'fill="{color}" fill-opacity="0.06"/>')
        parts.append(_text(x0 + step * i + 4, y1 - 8, STAGE_NAMES.get(points[i].stage, points[i].stage), "band"))
        if i:
            parts.append(f'<line x1="{x0 + step * i:.1f}" x2="{x0 + step * i:.1f}" y1="{y1}" y2="{y0}" class="sep"/>')
        i = j
    # axes and grid
    for tick in scale.ticks():
        y = scale(tick)
        kind = "unit" if tick == 1.0 else "grid"
        parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" class="{kind}"/>')
        parts.append(_text(x0 - 6, y + 4, fmt_x(tick), "tick", "end"))
    parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}" class="axis"/>')
    every = max(1, math.ceil(len(points) / 20))
    for k, x in enumerate(xs):
        if k % every == 0 or k == len(xs) - 1:
            parts.append(_text(x, y0 + 16, str(k + 1), "tick", "middle"))
    parts.append(_text((x0 + x1) / 2, height - 6, "evaluated candidates, in order", "label", "middle"))
    parts.append(_text(14, (y0 + y1) / 2, "speedup vs eager (log)", "label", "middle",
                       f' transform="rotate(-90 14 {(y0 + y1) / 2:.1f})"'))
    # running best
    best: float | None = None
    path: list[str] = []
    for x, p in zip(xs, points, strict=True):
        if p.accepted and p.speedup and (best is None or p.speedup > best):
            if best is not None:
                path.append(f"L{x:.1f},{scale(best):.1f}")
            best = p.speedup
            path.append(f"{'M' if not path else 'L'}{x:.1f},{scale(best):.1f}")
    if best is not None and path and comparable:
        path.append(f"L{xs[-1] + step / 2:.1f},{scale(best):.1f}")
        parts.append(f'<path d="{" ".join(path)}" class="best"/>')
    # candidates
    for x, p in zip(xs, points, strict=True):
        tip = escape(f"{p.id}: {p.note}" if p.note else p.id)
        if p.accepted and p.speedup:
            color = STAGE_COLORS.get(p.stage, "#6b7280")
            if p.id == best_id:
                parts.append(f'<circle cx="{x:.1f}" cy="{scale(p.speedup):.1f}" r="9" class="chosen"/>')
            parts.append(f'<circle cx="{x:.1f}" cy="{scale(p.speedup):.1f}" r="5" fill="{color}" class="pt">'
                         f"<title>{tip}</title></circle>")
        else:
            mark = "ok" if p.accepted else "rej"
            parts.append(f'<g class="{mark}"><title>{tip}</title>'
                         f'<path d="M{x - 4:.1f},{y0 - lane / 2 - 4:.1f} l8,8 m0,-8 l-8,8"/></g>')
    if not values:
        parts.append(_text((x0 + x1) / 2, (y0 + y1) / 2, "no accepted candidate has a timing", "empty", "middle"))
    elif not comparable:
        parts.append(_text(x1, height - 6, "CPU interpreter: timings not comparable", "warn", "end"))
    parts.append("</svg>")
    return "".join(parts)


def speedup_bars(bars: list[Bar], *, width: int = 900, row: int = 22) -> str:
    """Per-problem speedups as horizontal bars from 1x (log scale); failed problems in grey."""
    left, right, top, bottom = 240, 70, 34, 36
    height = top + bottom + row * max(len(bars), 1)
    x0, x1 = left, width - right
    vals = [v for b in bars for v in (b.eager, b.compile) if v]
    scale = LogScale(vals, x0, x1)
    one = scale(1.0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="per-problem speedup">']
    for tick in scale.ticks(9):
        x = scale(tick)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 6}" y2="{height - bottom}" '
                     f'class="{"unit" if tick == 1.0 else "grid"}"/>')
        parts.append(_text(x, height - bottom + 16, fmt_x(tick), "tick", "middle"))
    parts.append(f'<rect x="{x0}" y="6" width="10" height="10" fill="#16a34a"/>')
    parts.append(_text(x0 + 14, 15, "vs eager", "tick"))
    parts.append(f'<rect x="{x0 + 90}" y="6" width="10" height="10" fill="#7c3aed"/>')
    parts.append(_text(x0 + 104, 15, "vs torch.compile", "tick"))
    for k, b in enumerate(bars):
        y = top + row * k
        label = b.label if len(b.label) <= 32 else b.label[:30] + "…"
        parts.append(f'<g><title>{escape(b.label + (": " + b.note if b.note else ""))}</title>'
                     + _text(x0 - 8, y + row * 0.65, label, "tick", "end") + "</g>")
        if not b.correct or not (b.eager or b.compile):
            parts.append(_text(x0 + 6, y + row * 0.65, b.note or ("incorrect" if not b.correct else "no timing"),
                               "fail"))
            continue
        series = [(b.eager, "#16a34a", 0.15), (b.compile, "#7c3aed", 0.52)]
        for value, color, offset in series:
            if not value:
                continue
            xv = scale(value)
            parts.append(f'<rect x="{min(one, xv):.1f}" y="{y + row * offset:.1f}" width="{max(abs(xv - one), 1):.1f}" '
                         f'height="{row * 0.33:.1f}" fill="{color}"><title>{escape(fmt_x(value))}</title></rect>')
        shown = b.eager or b.compile or 1.0
        xv = scale(shown)
        if shown < 1 and xv - x0 > 60:
            parts.append(_text(xv - 4, y + row * 0.45, fmt_x(shown), "val", "end"))
        else:
            parts.append(_text(max(one, xv) + 4, y + row * 0.45, fmt_x(shown), "val"))
    parts.append(f'<line x1="{one:.1f}" x2="{one:.1f}" y1="{top - 6}" y2="{height - bottom}" class="unit"/>')
    parts.append("</svg>")
    return "".join(parts)
