"""More charts as inline SVG: a candidate's score as bars, a fighter's ratings over time, an
agent's tasks and latency by hour.

Pure functions, data in and markup out, coloured by CSS classes so that they follow the
page's light or dark theme. Each has a ``<title>`` and an ``aria-label`` saying what it
shows; the pages put the same numbers beside it as text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from markupsafe import Markup, escape

from palaestra.web.charts import nice_ceiling

__all__ = [
    "SCORE_PARTS",
    "HourBucket",
    "RatingPoint",
    "hourly_chart",
    "rating_chart",
    "score_bars",
]

#: A candidate's score components: (key, label, weight in the score; penalties subtract).
SCORE_PARTS: Final = (
    ("scout_quality", "scout quality", 0.4),
    ("verification", "verification", 0.6),
    ("adjustments", "critics' adjustments", 1.0),
    ("penalties", "critics' penalties", -1.0),
)


def _svg(css: str, width: int, height: int, label: str) -> list[str]:
    return [
        f'<svg class="{css}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}" preserveAspectRatio="xMidYMid meet">',
        f"<title>{escape(label)}</title>",
    ]


def _done(parts: list[str]) -> Markup:
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - built from numbers and escaped text


def _empty(parts: list[str], width: int, height: int, words: str) -> Markup:
    """A chart with nothing to draw, saying so in its middle."""
    parts.append(
        f'<text class="axis" x="{width / 2}" y="{height / 2}" text-anchor="middle">'
        f"{escape(words)}</text>"
    )
    return _done(parts)


def _num(value: float) -> str:
    return f"{round(value, 1) + 0.0:.1f}".replace("-", "\u2212")  # + 0.0: no "−0.0"


def score_bars(components: Mapping[str, float], score: float, *, width: int = 320) -> Markup:
    """What a score of 0 to 100 is made of: one bar per component, its weighted share of
    the score (penalties to the left of zero), and the final score as a marked bar."""
    rows = [(label, weight * float(components.get(key, 0.0))) for key, label, weight in SCORE_PARTS]
    label = f"Score {_num(score)} of 100: " + ", ".join(
        f"{name} {'+' if share >= 0 else ''}{_num(share)}" for name, share in rows
    )
    left, right, row_h = 140, 44, 18
    height = row_h * (len(rows) + 1) + 6
    low = min(0.0, *(share for _, share in rows))
    span = 100.0 - low
    plot = width - left - right

    def x(value: float) -> float:
        return left + (max(low, min(100.0, value)) - low) / span * plot

    parts = _svg("scorebars", width, height, label)
    zero = x(0.0)
    parts.append(f'<line class="grid" x1="{zero:.1f}" x2="{zero:.1f}" y1="0" y2="{height}"/>')
    for i, (name, share) in enumerate([*rows, ("score", score)]):
        y = i * row_h + 3
        x0, x1 = sorted((zero, x(share)))
        css = "sb-total" if name == "score" else "sb-plus" if share >= 0 else "sb-minus"
        parts.append(
            f'<text class="axis" x="{left - 6}" y="{y + 12}" text-anchor="end">'
            f"{escape(name)}</text>"
            f'<rect class="{css}" x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1.0):.1f}" '
            f'height="{row_h - 5}"><title>{escape(name)}: {_num(share)}</title></rect>'
            f'<text class="axis" x="{width - 4}" y="{y + 12}" text-anchor="end">'
            f"{'+' if share > 0 and name != 'score' else ''}{_num(share)}</text>"
        )
    return _done(parts)


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A fighter's rating on one side after a rated match."""

    at: float
    side: str  # attack | defence
    mu: float
    sigma: float


def _day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%d %b %H:%M")


def rating_chart(
    points: Sequence[RatingPoint], *, start: tuple[float, float], width: int = 720
) -> Markup:
    """Attack and defence ratings after each rated match, ``points`` in the order they
    were rated (a step each):
    μ as a line, μ ± σ as a band, from ``start`` (the rating every fighter begins with)."""
    height, left, right, top, bottom = 220, 44, 12, 12, 28
    sides = [side for side in ("attack", "defence") if any(p.side == side for p in points)]
    label = "Ratings over time: " + (
        "; ".join(_rating_words(side, [p for p in points if p.side == side]) for side in sides)
        or "no rated match yet"
    )
    parts = _svg("chart ratings-chart", width, height, label)
    if not points:
        return _empty(parts, width, height, "no rated match yet")
    # One step per rated match, in the order given: a burst of matches (rated together,
    # at one time) reads as clearly as matches a day apart. Step 0: where every fighter
    # starts.
    steps = len(points)
    lows = [p.mu - p.sigma for p in points] + [start[0] - start[1]]
    highs = [p.mu + p.sigma for p in points] + [start[0] + start[1]]
    step = nice_ceiling((max(highs) - min(lows)) / 4)
    y_low = (min(lows) // step) * step
    y_high = y_low + step * (int((max(highs) - y_low) // step) + 1)
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(step: int) -> float:
        return left + step / steps * plot_w

    def y(value: float) -> float:
        return top + plot_h - (value - y_low) / (y_high - y_low) * plot_h

    value = y_low
    while value <= y_high + 1e-9:
        parts.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y(value):.1f}" '
            f'y2="{y(value):.1f}"/><text class="axis" x="{left - 6}" y="{y(value) + 4:.1f}" '
            f'text-anchor="end">{value:g}</text>'
        )
        value += step
    latest = "latest " + _day(points[-1].at)
    for step, anchor, words in ((0, "start", "start"), (steps, "end", latest)):
        parts.append(
            f'<text class="axis" x="{x(step):.1f}" y="{height - 8}" text-anchor="{anchor}">'
            f"{words}</text>"
        )
    for side in sides:
        first = (0, RatingPoint(points[0].at, side, *start))
        line = [first, *((i + 1, p) for i, p in enumerate(points) if p.side == side)]
        upper = " ".join(f"{x(i):.1f},{y(p.mu + p.sigma):.1f}" for i, p in line)
        lower = " ".join(f"{x(i):.1f},{y(p.mu - p.sigma):.1f}" for i, p in reversed(line))
        parts.append(f'<polygon class="band rt-{side}" points="{upper} {lower}"/>')
        path = " ".join(f"{x(i):.1f},{y(p.mu):.1f}" for i, p in line)
        parts.append(f'<polyline class="rt-line rt-{side}" points="{path}"/>')
        for i, p in line[1:]:
            tip = f"{side} μ {p.mu:.1f} ± {p.sigma:.1f} after the match rated {_day(p.at)} UTC"
            parts.append(
                f'<circle class="rt-dot rt-{side}" cx="{x(i):.1f}" cy="{y(p.mu):.1f}" '
                f'r="3"><title>{escape(tip)}</title></circle>'
            )
    return _done(parts)


def _rating_words(side: str, points: Sequence[RatingPoint]) -> str:
    last = points[-1]
    return f"{side} μ {last.mu:.1f} ± {last.sigma:.1f} after {len(points)} rated matches"


@dataclass(frozen=True, slots=True)
class HourBucket:
    """An agent's tasks that began in one hour."""

    start: float  # the hour's start, seconds since the epoch
    succeeded: int
    failed: int  # failed or timed out: the agent's fault
    median_latency_ms: float | None

    @property
    def tasks(self) -> int:
        return self.succeeded + self.failed


def hourly_chart(buckets: Sequence[HourBucket], *, width: int = 720) -> Markup:
    """Tasks per hour as bars (succeeded below, failed on top) and the median latency of
    each hour as a dot on its own axis, on the right."""
    height, left, right, top, bottom = 200, 40, 52, 12, 28
    total = sum(b.tasks for b in buckets)
    failed = sum(b.failed for b in buckets)
    label = (
        f"Tasks by hour over the last {len(buckets)} hours: {total} tasks, {failed} failed"
        if buckets
        else "No task in the last hours"
    )
    parts = _svg("chart hourly", width, height, label)
    if not total:
        return _empty(parts, width, height, "no task in these hours")
    plot_w, plot_h = width - left - right, height - top - bottom
    count_top = nice_ceiling(max(b.tasks for b in buckets))
    latencies = [b.median_latency_ms for b in buckets if b.median_latency_ms is not None]
    ms_top = nice_ceiling(max(latencies)) if latencies else 1.0
    slot = plot_w / len(buckets)

    def y(value: float, top_value: float) -> float:
        return top + plot_h - value / top_value * plot_h

    for value, text in ((0, "0"), (count_top, f"{count_top:g}")):
        parts.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y(value, count_top):.1f}" '
            f'y2="{y(value, count_top):.1f}"/><text class="axis" x="{left - 6}" '
            f'y="{y(value, count_top) + 4:.1f}" text-anchor="end">{text}</text>'
        )
    if latencies:
        parts.append(
            f'<text class="axis" x="{left + plot_w + 6}" y="{top + 8}" text-anchor="start">'
            f"{ms_top:g} ms</text>"
        )
    for i, b in enumerate(buckets):
        x0 = left + i * slot + 1
        hour = datetime.fromtimestamp(b.start, UTC).strftime("%H:00")
        for css, low, high in (("hr-ok", 0, b.succeeded), ("hr-fail", b.succeeded, b.tasks)):
            if high > low:
                tip = f"{hour} UTC: {b.succeeded} succeeded, {b.failed} failed"
                parts.append(
                    f'<rect class="{css}" x="{x0:.1f}" y="{y(high, count_top):.1f}" '
                    f'width="{max(slot - 2, 1):.1f}" '
                    f'height="{y(low, count_top) - y(high, count_top):.1f}">'
                    f"<title>{tip}</title></rect>"
                )
        if b.median_latency_ms is not None:
            tip = f"{hour} UTC: median latency {b.median_latency_ms:.0f} ms"
            parts.append(
                f'<circle class="hr-latency" cx="{x0 + slot / 2 - 1:.1f}" '
                f'cy="{y(b.median_latency_ms, ms_top):.1f}" r="3"><title>{tip}</title></circle>'
            )
    for i, anchor in ((0, "start"), (len(buckets) - 1, "end")):
        hour = datetime.fromtimestamp(buckets[i].start, UTC).strftime("%H:00")
        x_at = left + (i + (1 if anchor == "end" else 0)) * slot
        parts.append(
            f'<text class="axis" x="{x_at:.1f}" y="{height - 8}" text-anchor="{anchor}">'
            f"{hour}</text>"
        )
    return _done(parts)
