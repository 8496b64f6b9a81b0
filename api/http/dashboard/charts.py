"""Server-rendered SVG charts: no JavaScript, no CDN, so the dashboard works offline.

Every function returns markup safe to embed (labels are escaped) with a ``<title>`` and an
``aria-label`` so a chart is readable without seeing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

PALETTE = (
    "#4269d0",
    "#efb118",
    "#ff725c",
    "#6cc5b0",
    "#3ca951",
    "#ff8ab7",
    "#a463f2",
    "#97bbf5",
    "#9c6b4e",
    "#9498a0",
)
FONT = 'font-family="system-ui, sans-serif" font-size="11"'
TITLE_H = 24
# Series whose meaning has a colour everywhere (the rest take the palette in order).
SERIES_COLORS = {
    "scheduled": "#3ca951",
    "still waiting": "#efb118",
    "unschedulable": "#d62728",
    "Unschedulable": "#d62728",
    "error": "#7f3c8d",
}


def _color(name: str, k: int) -> str:
    return SERIES_COLORS.get(name) or PALETTE[k % len(PALETTE)]


def _fmt(v: float) -> str:
    if v == int(v):
        return f"{int(v)}"
    return f"{v:.1f}"


def _empty(title: str, width: int, height: int, message: str) -> Markup:
    t = escape(title)
    return Markup(
        f'<svg class="chart" role="img" aria-label="{t}" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{t}</title>'
        f'<text class="chart-title" x="0" y="15" fill="#1d2330" font-family="system-ui, sans-serif" '
        f'font-size="13" font-weight="600">{t}</text>'
        f'<rect x="0.5" y="{TITLE_H + 0.5}" width="{width - 1}" height="{height - TITLE_H - 1}" fill="#fafafa" stroke="#ddd"/>'
        f'<text x="{width / 2}" y="{(height + TITLE_H) / 2}" text-anchor="middle" fill="#888" {FONT}>{escape(message)}</text></svg>'
    )


def _open(title: str, width: int, height: int) -> list[str]:
    t = escape(title)
    return [
        f'<svg class="chart" role="img" aria-label="{t}" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{t}</title>'
        f'<text class="chart-title" x="0" y="15" fill="#1d2330" font-family="system-ui, sans-serif" '
        f'font-size="13" font-weight="600">{t}</text>'
    ]


def _y_axis(parts: list[str], left: int, top: int, plot_h: int, plot_w: int, vmax: float) -> None:
    for i in range(5):
        v = vmax * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" fill="#666" {FONT}>{_fmt(round(v, 1))}</text>'
        )


def _legend(parts: list[str], names: Sequence[str], left: int, bottom: float, plot_w: int, cols: int) -> None:
    """One colour swatch and name per series, ``cols`` to a row, under the plot ending at ``bottom``."""
    for k, n in enumerate(names):
        col, row = k % cols, k // cols
        lx = left + col * (plot_w / cols)
        ly = bottom + 30 + row * 16
        parts.append(f'<rect x="{lx:.1f}" y="{ly - 9}" width="10" height="10" fill="{_color(n, k)}"/>')
        parts.append(f'<text x="{lx + 14:.1f}" y="{ly}" fill="#333" {FONT}>{escape(n)}</text>')


def _nice_max(v: float) -> float:
    """A round axis maximum divisible by 4, so the five ticks are whole numbers."""
    if v <= 0:
        return 4.0
    for top in (4, 8, 12, 16, 20, 40, 60, 80, 100, 200, 400, 600, 800, 1000, 2000, 4000, 8000, 10000):
        if v <= top:
            return float(top)
    return float(-(-v // 4) * 4)


def bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    width: int = 560,
    height: int = 240,
    color: str = PALETTE[0],
    empty: str = "no data yet",
) -> Markup:
    """Vertical bars, one per label."""
    if not labels or not any(values):
        return _empty(title, width, height, empty)
    left, right, top, bottom = 40, 10, 12 + TITLE_H, 46
    plot_w, plot_h = width - left - right, height - top - bottom
    vmax = _nice_max(max(values))
    parts = _open(title, width, height)
    _y_axis(parts, left, top, plot_h, plot_w, vmax)
    slot = plot_w / len(labels)
    bw = max(2.0, slot * 0.7)
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        h = plot_h * v / vmax
        x = left + i * slot + (slot - bw) / 2
        y = top + plot_h - h
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bw:.1f}" height="{h:.1f}" fill="{color}">'
            f"<title>{escape(label)}: {_fmt(v)}</title></rect>"
        )
        if v:
            parts.append(
                f'<text x="{x + bw / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" fill="#333" {FONT}>{_fmt(v)}</text>'
            )
        parts.append(
            f'<text x="{left + i * slot + slot / 2:.1f}" y="{top + plot_h + 14}" text-anchor="middle" '
            f'fill="#444" {FONT}>{escape(label)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def stacked_bars(
    title: str,
    buckets: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    width: int = 560,
    height: int = 260,
    empty: str = "no data yet",
) -> Markup:
    """Stacked vertical bars over time buckets; one colour per series, with a legend."""
    if not buckets or not series or not any(any(v) for v in series.values()):
        return _empty(title, width, height, empty)
    names = list(series)
    # legend labels are whole (issue 21: no truncation): one per row when any is long
    cols = 3 if all(len(n) <= 34 for n in names) else 1
    legend_rows = (len(names) + cols - 1) // cols
    left, right, top, bottom = 40, 10, 12 + TITLE_H, 34 + 16 * legend_rows
    height = max(height, top + bottom + 120)  # a long legend makes the chart taller, not the plot flat
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(series[n][i] for n in names) for i in range(len(buckets))]
    vmax = _nice_max(max(totals))
    parts = _open(title, width, height)
    _y_axis(parts, left, top, plot_h, plot_w, vmax)
    slot = plot_w / len(buckets)
    bw = max(2.0, slot * 0.75)
    for i, bucket in enumerate(buckets):
        y: float = top + plot_h
        x = left + i * slot + (slot - bw) / 2
        for k, n in enumerate(names):
            v = series[n][i]
            if not v:
                continue
            h = plot_h * v / vmax
            y -= h
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bw:.1f}" height="{h:.1f}" '
                f'fill="{_color(n, k)}"><title>{escape(bucket)} · {escape(n)}: {_fmt(v)}</title></rect>'
            )
        if i == 0 or i == len(buckets) - 1 or len(buckets) <= 6:
            anchor = (
                "start"
                if i == 0 and len(buckets) > 6
                else "end"
                if i == len(buckets) - 1 and len(buckets) > 6
                else "middle"
            )
            parts.append(
                f'<text x="{left + i * slot + slot / 2:.1f}" y="{top + plot_h + 14}" text-anchor="{anchor}" '
                f'fill="#444" {FONT}>{escape(bucket)}</text>'
            )
    _legend(parts, names, left, top + plot_h, plot_w, cols)
    parts.append("</svg>")
    return Markup("".join(parts))


def utilization(
    title: str,
    rows: Sequence[tuple[str, Sequence[tuple[str, float, str]]]],
    *,
    width: int = 1160,
    marker: Mapping[tuple[str, str], float] | None = None,
    empty: str = "no data yet",
) -> Markup:
    """Horizontal bars: per row (e.g. a node) one thin bar per resource, ``fraction`` in 0..1,
    labelled with a text such as ``12/32``. ``marker[(row, resource)]`` draws a tick (quota min)."""
    if not rows:
        return _empty(title, width, 120, empty)
    resources = [
        r for r in ("cpu", "memory", "nvidia.com/gpu") if any(r == x for _, res in rows for x, _, _ in res)
    ]
    resources += sorted({x for _, res in rows for x, _, _ in res} - set(resources))
    bar_h, gap = 10, 10
    row_h = bar_h + gap
    left, value_w = 130, 150
    top = TITLE_H + 6
    plot_w = (
        (width - left - 20) // len(resources) - value_w if len(resources) > 1 else width - left - value_w - 20
    )
    col_w = plot_w + value_w
    height = top + len(rows) * row_h + 26
    parts = _open(title, width, height)
    for i, (label, res) in enumerate(rows):
        y0 = top + i * row_h
        cy = y0 + (row_h - gap) / 2 + 4
        parts.append(
            f'<text x="{left - 8}" y="{cy:.1f}" text-anchor="end" fill="#333" {FONT}>{escape(label)}</text>'
        )
        by_res = {r: (frac, text) for r, frac, text in res}
        for k, r in enumerate(resources):
            x0 = left + k * col_w
            y = y0 + (row_h - gap - bar_h) / 2
            parts.append(f'<rect x="{x0}" y="{y:.1f}" width="{plot_w}" height="{bar_h}" fill="#eef0f3"/>')
            if r not in by_res:
                continue
            frac, text = by_res[r]
            w = plot_w * max(0.0, min(frac, 1.0))
            color = _color(r, k) if frac <= 1.0 else "#d62728"
            parts.append(
                f'<rect class="bar" x="{x0}" y="{y:.1f}" width="{w:.1f}" height="{bar_h}" fill="{color}">'
                f"<title>{escape(label)} {escape(r)}: {escape(text)} ({frac * 100:.0f}%)</title></rect>"
            )
            if marker and (label, r) in marker:
                mx = x0 + plot_w * max(0.0, min(marker[(label, r)], 1.0))
                parts.append(
                    f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{y - 2:.1f}" y2="{y + bar_h + 2:.1f}" stroke="#111" stroke-width="2"/>'
                )
            parts.append(
                f'<text x="{x0 + plot_w + 6}" y="{y + bar_h - 1:.1f}" fill="#555" {FONT}>{escape(text)} · {frac * 100:.0f}%</text>'
            )
    ly = top + len(rows) * row_h + 12
    for k, r in enumerate(resources):
        lx = left + k * col_w
        parts.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{_color(r, k)}"/>')
        parts.append(f'<text x="{lx + 14}" y="{ly}" fill="#333" {FONT}>{escape(r)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


CATEGORY_COLORS = {
    "input": PALETTE[0],
    "scheduled": PALETTE[4],
    "unschedulable": "#d62728",
    "preemption": PALETTE[1],
    "other": PALETTE[9],
}


def timeline(
    title: str, points: Sequence[tuple[int, str, str, str]], *, width: int = 560, empty: str = "no events yet"
) -> Markup:
    """Events in log order on one lane: ``(position, type, category, when)``; one marker each."""
    if not points:
        return _empty(title, width, 90, empty)
    height = 96 + TITLE_H
    left, right, y = 20, 20, 36 + TITLE_H
    plot_w = width - left - right
    n = len(points)
    parts = _open(title, width, height)
    parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y}" y2="{y}" stroke="#bbb" stroke-width="2"/>')
    for i, (pos, typ, cat, when) in enumerate(points):
        x = left + (plot_w * (i + 0.5) / n)
        color = CATEGORY_COLORS.get(cat, CATEGORY_COLORS["other"])
        parts.append(
            f'<circle class="point" cx="{x:.1f}" cy="{y}" r="6" fill="{color}" stroke="#fff" stroke-width="1.5">'
            f"<title>#{pos} {escape(typ)} {escape(when)}</title></circle>"
        )
        if n <= 12:
            parts.append(
                f'<text x="{x:.1f}" y="{y - 11}" text-anchor="middle" fill="#555" {FONT}>#{pos}</text>'
            )
    used = [c for c in CATEGORY_COLORS if any(p[2] == c for p in points)]
    for k, cat in enumerate(used):
        lx = left + k * 110
        parts.append(f'<circle cx="{lx + 5}" cy="{height - 18}" r="5" fill="{CATEGORY_COLORS[cat]}"/>')
        parts.append(f'<text x="{lx + 14}" y="{height - 14}" fill="#333" {FONT}>{escape(cat)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
