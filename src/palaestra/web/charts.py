"""Charts as inline SVG, drawn on the server: no JavaScript, styled by the page's CSS.

Pure functions: points in, markup out. Colours come from CSS classes
(``.pt-ok``, ``.pt-fail``, ``.st-ACTIVE``...), so the charts follow the
page's light or dark theme.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from markupsafe import Markup, escape

__all__ = [
    "IntervalScale",
    "LatencyPoint",
    "StatusSpan",
    "duration",
    "interval_axis",
    "interval_bar",
    "latency_chart",
    "nice_ceiling",
    "status_spans",
    "status_strip",
]


@dataclass(frozen=True, slots=True)
class LatencyPoint:
    at: float
    latency_ms: float
    ok: bool
    kind: str  # ping, dispatch, verify
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class StatusSpan:
    status: str
    start: float
    end: float


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten that is at least ``value``."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)  # pragma: no cover - the loop always returns


def _clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S UTC")


#: The units a duration is said in below a day's: (below how many seconds, the unit's
#: seconds, its name); longer ones are said in days.
_UNITS: Final = ((90, 1, "s"), (5400, 60, "min"), (172_800, 3600, "h"))


def _in_units(seconds: float) -> tuple[float, str]:
    """``seconds`` in the unit people say it in: s, min, h or d."""
    for below, size, unit in _UNITS:
        if seconds < below:
            return seconds / size, unit
    return seconds / 86400, "d"


def _ago(seconds: float) -> str:
    value, unit = _in_units(max(0.0, seconds))
    return f"-{value:.0f}s" if unit == "s" else f"-{value:.0f} {unit}"


def duration(seconds: float) -> str:
    """A duration as people say it: 45 s, 12 min, 3.5 h, 2 d."""
    value, unit = _in_units(seconds)
    return f"{value:.1f} h" if unit == "h" else f"{value:.0f} {unit}"


def _ms(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.0f} s"
    if value >= 1000:
        return f"{value / 1000:.1f} s".replace(".0 s", " s")
    if value < 10:
        return f"{value:.2f}".rstrip("0").rstrip(".") + " ms"
    return f"{value:.0f} ms"


def latency_chart(
    points: Sequence[LatencyPoint],
    *,
    now: float,
    width: int = 720,
    height: int = 220,
    label: str = "Latency of health pings and dispatches",
    narrow: bool = False,
) -> Markup:
    """A scatter of latencies over time: pings as dots joined by a line, dispatches as
    diamonds, failures as crosses; every mark has a tooltip."""
    left, right, top, bottom = (52 if narrow else 56), 8, 12, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = [
        f'<svg class="chart{" narrow" if narrow else " wide"}" viewBox="0 0 {width} {height}" '
        'role="img" '
        f'aria-label="{escape(label)}" preserveAspectRatio="xMidYMid meet">',
        f"<title>{escape(label)}</title>",
    ]
    if not points:
        parts.append(
            f'<text class="axis" x="{width / 2}" y="{height / 2}" text-anchor="middle">'
            "no pings or dispatches yet</text></svg>"
        )
        return Markup("".join(parts))  # noqa: S704 - built from numbers and escaped text
    start = min(p.at for p in points)
    end = max(now, max(p.at for p in points))
    if end - start < 60:
        start = end - 60
    step_ms = nice_ceiling(max(p.latency_ms for p in points) * 1.1 / 4)
    top_ms = step_ms * 4

    def x(at: float) -> float:
        return left + (at - start) / (end - start) * plot_w

    def y(ms: float) -> float:
        return top + plot_h - min(ms, top_ms) / top_ms * plot_h

    for i in range(5):
        value = step_ms * i
        gy = y(value)
        parts.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}"/>'
            f'<text class="axis" x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">'
            f"{_ms(value)}</text>"
        )
    ticks = 2 if narrow else 4
    for i in range(ticks + 1):
        at = start + (end - start) * i / ticks
        anchor = "start" if i == 0 else "end" if i == ticks else "middle"
        text = "now" if i == ticks else _ago(now - at)
        parts.append(
            f'<text class="axis" x="{x(at):.1f}" y="{height - 8}" text-anchor="{anchor}">'
            f"{text}</text>"
        )
    pings = [p for p in points if p.kind == "ping"]
    if len(pings) > 1:
        line = " ".join(f"{x(p.at):.1f},{y(p.latency_ms):.1f}" for p in pings)
        parts.append(f'<polyline class="trend" points="{line}"/>')
    for p in points:
        cx, cy = x(p.at), y(p.latency_ms)
        tip = f"{p.kind} {'ok' if p.ok else 'failed'} · {_ms(p.latency_ms)} · {_clock(p.at)}"
        if p.reason:
            tip += f" · {p.reason}"
        title = f"<title>{escape(tip)}</title>"
        if not p.ok:
            d = 4.5
            parts.append(
                f'<path class="pt-fail" d="M{cx - d:.1f},{cy - d:.1f}L{cx + d:.1f},{cy + d:.1f}'
                f'M{cx - d:.1f},{cy + d:.1f}L{cx + d:.1f},{cy - d:.1f}">{title}</path>'
            )
        elif p.kind == "ping":
            parts.append(
                f'<circle class="pt-ok" cx="{cx:.1f}" cy="{cy:.1f}" r="3">{title}</circle>'
            )
        else:
            d = 5
            parts.append(
                f'<path class="pt-{escape(p.kind)}" d="M{cx:.1f},{cy - d:.1f}L{cx + d:.1f},{cy:.1f}'
                f'L{cx:.1f},{cy + d:.1f}L{cx - d:.1f},{cy:.1f}Z">{title}</path>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - built from numbers and escaped text


def status_spans(
    changes: Sequence[tuple[float, str, str]], *, since: float, now: float, initial: str
) -> list[StatusSpan]:
    """Spans of time in each status, from (at, from, to) changes in time order."""
    spans: list[StatusSpan] = []
    current, begun = initial, since
    for at, before, after in changes:
        if at > begun:
            spans.append(StatusSpan(before or current, begun, at))
        current, begun = after, max(begun, at)
    # The last span is the status now: kept even when it began this instant.
    last = StatusSpan(current, begun, max(now, begun))
    return [span for span in spans if span.end > span.start] + [last]


def status_strip(spans: Sequence[StatusSpan], *, now: float, width: int = 720) -> Markup:
    """One bar coloured by status over time, with a tooltip per span (labels go beside it)."""
    if not spans:
        return Markup("")
    start, end = spans[0].start, max(now, spans[-1].end)
    total = max(end - start, 1e-9)
    parts = [
        f'<svg class="strip" viewBox="0 0 {width} 24" role="img" '
        'aria-label="Status over time" preserveAspectRatio="none">'
    ]
    for span in spans:
        x0 = (span.start - start) / total * width
        w = max((span.end - span.start) / total * width, 1.0)
        tip = f"{span.status} from {_clock(span.start)} for {duration(span.end - span.start)}"
        parts.append(
            f'<rect class="st-{escape(span.status)}" x="{x0:.1f}" y="0" width="{w:.1f}" '
            f'height="24"><title>{escape(tip)}</title></rect>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - built from numbers and escaped text


#: The narrowest interval axis, in the ratings' own units (log-odds): a board whose
#: estimates are all equal still reads as an axis, not as "−0 0 +0".
MIN_SPAN: Final = 1.0


@dataclass(frozen=True, slots=True)
class IntervalScale:
    """The shared horizontal axis of a column of interval bars; it always shows zero."""

    low: float
    high: float

    @classmethod
    def over(cls, bounds: Sequence[tuple[float, float]], *, pad: float = 0.05) -> IntervalScale:
        """A scale holding every ``(low, high)`` and zero, padded, ending on round numbers."""
        lows = [low for low, _ in bounds if math.isfinite(low)] + [0.0]
        highs = [high for _, high in bounds if math.isfinite(high)] + [0.0]
        low, high = min(lows), max(highs)
        if high - low < MIN_SPAN:  # all estimates (nearly) equal: a readable unit axis
            middle = (low + high) / 2
            low, high = middle - MIN_SPAN / 2, middle + MIN_SPAN / 2
        span = high - low
        low, high = low - span * pad, high + span * pad
        step = nice_ceiling((high - low) / 6)
        return cls(math.floor(low / step) * step, math.ceil(high / step) * step)

    def at(self, value: float, width: float) -> float:
        clamped = min(max(value, self.low), self.high)
        return (clamped - self.low) / (self.high - self.low) * width

    def ticks(self) -> list[float]:
        """At most five round values across the scale, zero among them."""
        step = nice_ceiling((self.high - self.low) / 4)
        first = math.ceil(self.low / step - 1e-9)
        last = math.floor(self.high / step + 1e-9)
        return [i * step for i in range(first, last + 1)]


def _number(value: float, digits: int = 2) -> str:
    text = f"{value:+.{digits}f}" if value else "0"
    return text.replace("-", "\u2212")


def _tick(value: float) -> str:
    return f"{round(value, 6):+g}".replace("-", "\u2212") if value else "0"


_BAR_W: Final = 240
_BAR_H: Final = 18


def interval_bar(
    value: float, low: float, high: float, scale: IntervalScale, *, label: str = ""
) -> Markup:
    """One estimate as a dot on its 95% interval, over a scale shared by its column."""
    x0, x1, x = (scale.at(v, _BAR_W) for v in (low, high, value))
    zero = scale.at(0.0, _BAR_W)
    middle = _BAR_H / 2
    interval = f"95% interval {_number(low)} to {_number(high)}"
    tip = f"{label + ': ' if label else ''}{_number(value)} ({interval})"
    clear = "above" if low > 0 else "below" if high < 0 else "spans"
    return Markup(  # noqa: S704 - built from numbers and escaped text
        f'<svg class="ci ci-{clear}" viewBox="0 0 {_BAR_W} {_BAR_H}" role="img" '
        f'aria-label="{escape(tip)}"><title>{escape(tip)}</title>'
        f'<line class="ci-zero" x1="{zero:.1f}" x2="{zero:.1f}" y1="0" y2="{_BAR_H}"/>'
        f'<line class="ci-range" x1="{x0:.1f}" x2="{max(x1, x0 + 0.5):.1f}" '
        f'y1="{middle}" y2="{middle}"/>'
        f'<circle class="ci-dot" cx="{x:.1f}" cy="{middle}" r="4"/></svg>'
    )


def interval_axis(scale: IntervalScale) -> Markup:
    """The tick labels of a column of interval bars, drawn at the bars' own width."""
    parts = [f'<svg class="ci-axis" viewBox="0 0 {_BAR_W} 14" aria-hidden="true">']
    for tick in scale.ticks():
        x = scale.at(tick, _BAR_W)
        anchor = "start" if x < 12 else "end" if x > _BAR_W - 12 else "middle"
        parts.append(
            f'<text class="axis" x="{x:.1f}" y="11" text-anchor="{anchor}">{_tick(tick)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - built from numbers
