"""Plots over time (issue 34): step lines on a time axis, server-rendered SVG like charts.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from markupsafe import Markup, escape

from api.http.dashboard.charts import FONT, TITLE_H, _color, _empty, _fmt, _legend, _nice_max, _open, _y_axis


def _label(t: datetime, span_s: float) -> str:
    return t.strftime("%m-%d %H:%M") if span_s > 86400 else t.strftime("%H:%M")


def step_lines(
    title: str,
    times: Sequence[datetime],
    series: Mapping[str, Sequence[float | None]],
    *,
    width: int = 560,
    height: int = 260,
    empty: str = "no data yet",
) -> Markup:
    """One step line per series over ``times`` (a value holds until the next point: the levels
    are hourly buckets, not samples to interpolate between), a time axis, and a legend."""
    values = [v for s in series.values() for v in s if v is not None]
    if len(times) < 1 or not values:
        return _empty(title, width, height, empty)
    names = list(series)
    cols = 2
    legend_rows = (len(names) + cols - 1) // cols
    left, right, top, bottom = 48, 12, 12 + TITLE_H, 34 + 16 * legend_rows
    plot_w, plot_h = width - left - right, height - top - bottom
    vmax = _nice_max(max(values))
    t0, t1 = times[0], times[-1]
    span = max((t1 - t0).total_seconds(), 1.0)
    # the last bucket is drawn to its end (one step past the last point)
    step = (times[1] - times[0]).total_seconds() if len(times) > 1 else 3600.0
    full = span + step

    def x(t: datetime) -> float:
        return left + plot_w * (t - t0).total_seconds() / full

    parts = _open(title, width, height)
    _y_axis(parts, left, top, plot_h, plot_w, vmax)
    for k, n in enumerate(names):
        pts: list[str] = []
        for i, t in enumerate(times):
            v = series[n][i]
            if v is None:
                continue
            y = top + plot_h - plot_h * v / vmax
            x_end = x(times[i + 1]) if i + 1 < len(times) else left + plot_w
            pts.append(f"{x(t):.1f},{y:.1f} {x_end:.1f},{y:.1f}")
        parts.append(
            f'<polyline class="series" data-series="{escape(n)}" points="{" ".join(pts)}" fill="none" '
            f'stroke="{_color(n, k)}" stroke-width="2"><title>{escape(n)}</title></polyline>'
        )
        for i, t in enumerate(times):  # hover values
            v = series[n][i]
            if v is not None:
                y = top + plot_h - plot_h * v / vmax
                parts.append(
                    f'<circle class="point" cx="{x(t):.1f}" cy="{y:.1f}" r="2" fill="{_color(n, k)}">'
                    f"<title>{escape(_label(t, span))} · {escape(n)}: {_fmt(round(v, 2))}</title></circle>"
                )
    ticks = [t0, times[len(times) // 2], t1] if len(times) > 2 else list(times)
    for i, t in enumerate(ticks):
        anchor = "start" if i == 0 else "end" if i == len(ticks) - 1 and len(ticks) > 1 else "middle"
        parts.append(
            f'<text class="tick" x="{x(t):.1f}" y="{top + plot_h + 14}" text-anchor="{anchor}" fill="#444" '
            f"{FONT}>{escape(_label(t, span))}</text>"
        )
    _legend(parts, names, left, top + plot_h, plot_w, cols)
    parts.append("</svg>")
    return Markup("".join(parts))
