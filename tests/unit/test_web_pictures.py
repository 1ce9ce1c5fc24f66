"""The score bars, the ratings over time and the tasks by hour: the SVG holds one mark per
datum, on its scale, says what it shows, and draws something readable with no data."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from palaestra.web.pictures import (
    SCORE_PARTS,
    HourBucket,
    RatingPoint,
    hourly_chart,
    rating_chart,
    score_bars,
)

SVG = "{http://www.w3.org/2000/svg}"


def parsed(markup: str) -> ET.Element:
    namespaced = str(markup).replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
    root = ET.fromstring(namespaced)  # noqa: S314 - markup our own code drew
    assert root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title is not None
    assert title.text == root.get("aria-label")
    return root


def marks(root: ET.Element, tag: str, css: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{SVG}{tag}") if css in (e.get("class") or "").split()]


def test_score_bars_draw_each_weighted_component_and_the_score() -> None:
    components = {"scout_quality": 80, "verification": 60, "adjustments": -4, "penalties": 10}
    root = parsed(score_bars(components, 54.0, width=320))
    bars = list(root.iter(f"{SVG}rect"))
    assert len(bars) == len(SCORE_PARTS) + 1
    widths = [float(bar.get("width") or 0) for bar in bars]
    # 0.4 x 80 = 32 and 0.6 x 60 = 36: lengths in proportion to the shares
    assert widths[1] / widths[0] == pytest.approx(36 / 32, rel=0.02)
    assert [bar.get("class") for bar in bars] == [
        "sb-plus",
        "sb-plus",
        "sb-minus",
        "sb-minus",
        "sb-total",
    ]
    # penalties subtract: drawn left of zero, as long as 10 points
    assert widths[3] / widths[0] == pytest.approx(10 / 32, rel=0.02)
    label = root.get("aria-label") or ""
    assert label.startswith("Score 54.0 of 100")
    assert "scout quality +32.0" in label
    assert "critics' penalties \u221210.0" in label


def test_score_bars_of_a_zero_score_still_draw() -> None:
    root = parsed(score_bars({}, 0.0))
    assert len(list(root.iter(f"{SVG}rect"))) == len(SCORE_PARTS) + 1


def test_the_rating_chart_has_one_dot_per_rated_match_and_starts_at_the_first_rating() -> None:
    points = [
        RatingPoint(1000.0 + i * 60, side, 25 + i * (1 if side == "attack" else -1), 8 - i * 0.5)
        for i in range(5)
        for side in ("attack", "defence")
    ][:-1]  # 5 attack, 4 defence
    root = parsed(rating_chart(points, start=(25.0, 25 / 3)))
    assert len(marks(root, "circle", "rt-attack")) == 5
    assert len(marks(root, "circle", "rt-defence")) == 4
    lines = marks(root, "polyline", "rt-line")
    assert [len((line.get("points") or "").split()) for line in lines] == [6, 5]  # with the start
    # μ rises for attack: its last point is drawn higher (smaller y) than its first
    first, *_, last = (lines[0].get("points") or "").split()
    assert float(last.split(",")[1]) < float(first.split(",")[1])
    assert "attack μ 29.0 ± 6.0 after 5 rated matches" in (root.get("aria-label") or "")


def test_the_rating_chart_without_matches_says_so() -> None:
    root = parsed(rating_chart([], start=(25.0, 8.3)))
    assert not list(root.iter(f"{SVG}circle"))
    assert "no rated match yet" in ET.tostring(root, encoding="unicode")


def test_hourly_bars_stack_failures_on_successes_on_one_scale() -> None:
    buckets = [
        HourBucket(
            3600.0 * h, succeeded=h, failed=1 if h % 2 else 0, median_latency_ms=100.0 * h or None
        )
        for h in range(24)
    ]
    root = parsed(hourly_chart(buckets))
    ok, bad = marks(root, "rect", "hr-ok"), marks(root, "rect", "hr-fail")
    assert len(ok) == 23  # hour 0 had none
    assert len(bad) == 12
    assert len(marks(root, "circle", "hr-latency")) == 23
    heights = {float(r.get("x") or 0): float(r.get("height") or 0) for r in ok}
    xs = sorted(heights)
    assert heights[xs[-1]] / heights[xs[0]] == pytest.approx(23 / 1, rel=0.01)
    label = root.get("aria-label") or ""
    assert re.search(rf"{sum(range(24)) + 12} tasks, 12 failed", label), label


def test_hours_without_tasks_draw_no_bar() -> None:
    root = parsed(hourly_chart([HourBucket(0.0, 0, 0, None)] * 24))
    assert not list(root.iter(f"{SVG}rect"))
    assert "no task in these hours" in ET.tostring(root, encoding="unicode")
