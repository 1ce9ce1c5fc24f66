"""The server-drawn charts: scales, marks, tooltips and status spans."""

from __future__ import annotations

import itertools
import re

import pytest

from palaestra.web.charts import (
    MIN_SPAN,
    IntervalScale,
    LatencyPoint,
    StatusSpan,
    duration,
    interval_axis,
    latency_chart,
    nice_ceiling,
    status_spans,
    status_strip,
)

NOW = 1_767_225_600.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 1), (0.3, 0.5), (1, 1), (1.1, 2), (2.2, 2.5), (3, 5), (7, 10), (120, 200), (2600, 5000)],
)
def test_nice_ceiling(value: float, expected: float) -> None:
    assert nice_ceiling(value) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(0, "0 s"), (89, "89 s"), (90, "2 min"), (3600, "60 min"), (7200, "2.0 h"), (259_200, "3 d")],
)
def test_duration(seconds: float, said: str) -> None:
    assert duration(seconds) == said


def test_an_empty_chart_says_so() -> None:
    svg = latency_chart([], now=NOW)
    assert svg.startswith("<svg")
    assert svg.endswith("</svg>")
    assert "no pings or dispatches yet" in svg


def test_each_point_is_one_mark_with_a_tooltip() -> None:
    points = [
        LatencyPoint(NOW - 30, 12.0, True, "ping"),
        LatencyPoint(NOW - 20, 40.0, True, "ping"),
        LatencyPoint(NOW - 15, 900.0, True, "dispatch"),
        LatencyPoint(NOW - 10, 4000.0, False, "ping", "External agent responded with 503: <b>"),
    ]
    svg = latency_chart(points, now=NOW)
    assert svg.count('class="pt-ok"') == 2
    assert svg.count('class="pt-dispatch"') == 1
    assert svg.count('class="pt-fail"') == 1
    assert svg.count("<title>") == 1 + len(points)  # the chart's own, then one per mark
    assert "responded with 503: &lt;b&gt;" in svg  # reasons are escaped
    assert "<b>" not in svg
    assert '<polyline class="trend"' in svg  # pings are joined by a line


def test_marks_stay_inside_the_plot() -> None:
    points = [LatencyPoint(NOW - i, float(i * 37 % 500), i % 3 != 0, "ping") for i in range(50)]
    svg = latency_chart(points, now=NOW, width=720, height=220)
    for x, y in re.findall(r'cx="([\d.]+)" cy="([\d.]+)"', svg):
        assert 56 <= float(x) <= 720 - 8
        assert 12 <= float(y) <= 220 - 28


def test_the_narrow_chart_has_fewer_time_labels() -> None:
    points = [LatencyPoint(NOW - 100, 5.0, True, "ping")]
    wide = latency_chart(points, now=NOW)
    narrow = latency_chart(points, now=NOW, width=360, height=200, narrow=True)
    assert 'class="chart wide"' in wide
    assert 'class="chart narrow"' in narrow
    assert narrow.count('text-anchor="middle"') < wide.count('text-anchor="middle"')


def test_status_spans_cover_the_whole_time_without_gaps() -> None:
    changes = [
        (NOW - 90, "PENDING", "ACTIVE"),
        (NOW - 60, "ACTIVE", "DEGRADED"),
        (NOW - 50, "DEGRADED", "PROBATION"),
        (NOW - 20, "PROBATION", "DEGRADED"),
    ]
    spans = status_spans(changes, since=NOW - 100, now=NOW, initial="PENDING")
    assert [s.status for s in spans] == ["PENDING", "ACTIVE", "DEGRADED", "PROBATION", "DEGRADED"]
    assert spans[0].start == NOW - 100
    assert spans[-1].end == NOW
    for before, after in itertools.pairwise(spans):
        assert before.end == after.start


def test_an_agent_without_changes_has_one_span() -> None:
    assert status_spans([], since=NOW - 10, now=NOW, initial="ACTIVE") == [
        StatusSpan("ACTIVE", NOW - 10, NOW)
    ]


def test_the_strip_draws_one_coloured_rect_per_span() -> None:
    spans = [StatusSpan("ACTIVE", NOW - 60, NOW - 30), StatusSpan("DEGRADED", NOW - 30, NOW)]
    svg = status_strip(spans, now=NOW)
    assert svg.count("<rect") == 2
    assert 'class="st-ACTIVE"' in svg
    assert 'class="st-DEGRADED"' in svg
    widths = [float(w) for w in re.findall(r'width="([\d.]+)"', svg)]
    assert sum(widths) == pytest.approx(720, abs=1)


@pytest.mark.parametrize(
    "bounds",
    [[(0.0, 0.0)], [(0.0, 0.0), (0.0, 0.0), (0.0, 0.0)], [(0.1, 0.1)], [(-0.02, 0.03)]],
)
def test_an_interval_axis_of_equal_estimates_still_reads_as_an_axis(
    bounds: list[tuple[float, float]],
) -> None:
    scale = IntervalScale.over(bounds)
    assert scale.high - scale.low >= MIN_SPAN
    labels = re.findall(r">([^<]+)</text>", interval_axis(scale))
    assert "0" in labels
    assert len(labels) == len(set(labels)) >= 3  # no "−0 0 +0"
    assert all(label == "0" or label.strip("+\u2212") != "0" for label in labels)


def test_an_interval_axis_spans_the_estimates_it_holds() -> None:
    scale = IntervalScale.over([(-2.1, -0.4), (0.3, 3.2)])
    assert scale.low <= -2.1
    assert scale.high >= 3.2
    labels = re.findall(r">([^<]+)</text>", interval_axis(scale))
    assert labels[0].startswith("\u2212")
    assert labels[-1].startswith("+")
