"""Charts for the static report as inline SVG, drawn at build time: the report needs no script,
no chart library and no network to show them. Every text is escaped."""

from __future__ import annotations

from html import escape

from core.names import visible

from .fmt import pct as fmt_pct
from .fmt import score as fmt_score
from .fmt import signed_pct as fmt_signed

RED = (214, 39, 40)
RGB_RED = f"rgb{RED}"
BLUE = "#1f77b4"
FONT = 'font-family="system-ui,sans-serif" font-size="12"'
ROUND_SPANS = (0.1, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0)


def _t(v) -> str:
    return escape(visible(str(v)), quote=True)


def _short(label: str, limit: int = 38) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f'<svg class="chart" role="img" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" {FONT}><title>{_t(title)}</title>'
            + "".join(body) + "</svg>")


def pct(v: float) -> str:
    """A share as a percentage with one decimal; a non-zero share never reads 0%."""
    return fmt_pct(v)


def heatmap(rows: list[str], cols: list[str], cells: dict[tuple[str, str], tuple[float, int]],
            title: str) -> str:
    """rows × cols; cell = (share 0–1, count): colour by share, text "share (count)"."""
    left, top, cw, ch = 230, 150, 96, 30
    width, height = left + cw * len(cols) + 20, top + ch * len(rows) + 50
    body = []
    for j, c in enumerate(cols):
        x = left + j * cw + cw / 2
        body.append(f'<text transform="translate({x:.0f},{top - 8}) rotate(-40)">{_t(_short(c, 26))}</text>')
    for i, r in enumerate(rows):
        y = top + i * ch
        body.append(f'<text x="{left - 8}" y="{y + ch / 2 + 4:.0f}" text-anchor="end">{_t(_short(r, 34))}</text>')
        for j, c in enumerate(cols):
            x = left + j * cw
            share, count = cells.get((r, c), (0.0, 0))
            fill = f"rgba({RED[0]},{RED[1]},{RED[2]},{0.08 + 0.92 * share:.2f})" if count else "#f4f4f4"
            ink = "#fff" if share > 0.45 else "#222"
            body.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="{fill}">'
                        f'<title>{_t(r)} · {_t(c)}: {count} ({pct(share)})</title></rect>')
            if count:
                body.append(f'<text x="{x + cw / 2 - 1:.0f}" y="{y + ch / 2 + 4:.0f}" text-anchor="middle" '
                            f'fill="{ink}">{pct(share)} ({count})</text>')
    body.append(f'<text x="{left}" y="{height - 18}" fill="#555">colour and text: share of the '
                'row\'s labelled failures (count in brackets)</text>')
    return _svg(width, height, body, title)


def intervals(rows: list[tuple[str, float, float, float]], title: str, axis: str,
              signed: bool = False, scale: tuple[float, float] | None = None,
              marker: float | None = None) -> str:
    """One row per (label, value, low, high): a dot with its interval, on 0–1 as percentages
    (or around 0, signed), or on a metric's own `scale` (LOW, HIGH) in its units, with an
    optional dashed `marker` line (the analysis threshold). Tooltips print with stats/fmt.py,
    like every table; an interval end that is missing draws no line."""
    left, top, plot, rh = 300, 24, 420, 24
    width, height = left + plot + 40, top + rh * len(rows) + 46
    bottom = top + rh * len(rows)
    if signed:
        # the smallest round span that holds every interval: ticks at ±span and ±span/2 are round
        widest = max([abs(x) for _, *vals in rows for x in vals if x is not None and x == x] + [0.0])
        span = next((s for s in ROUND_SPANS if s >= widest), 1.0)
        lo_end, hi_end = -span, span

        def tick(v: float) -> str:
            return f"{v:+.0%}" if v else "0%"
        label = fmt_signed
    elif scale is not None:
        lo_end, hi_end = scale

        def tick(v: float) -> str:
            return f"{v:g}"

        def label(v: float) -> str:
            return fmt_score(v, lo_end, hi_end)
    else:
        lo_end, hi_end = 0.0, 1.0

        def tick(v: float) -> str:
            return f"{v:.0%}"
        label = fmt_pct

    def sx(v: float) -> float:
        return left + (min(max(v, lo_end), hi_end) - lo_end) / (hi_end - lo_end) * plot

    def missing(v) -> bool:
        return v is None or v != v

    body = []
    for k in range(5):
        v = lo_end + (hi_end - lo_end) * k / 4
        body.append(f'<line x1="{sx(v):.1f}" x2="{sx(v):.1f}" y1="{top - 6}" y2="{bottom}" '
                    f'stroke="{"#888" if signed and k == 2 else "#ddd"}"/>'
                    f'<text x="{sx(v):.1f}" y="{bottom + 16}" text-anchor="middle">{_t(tick(v))}</text>')
    if marker is not None:
        body.append(f'<line x1="{sx(marker):.1f}" x2="{sx(marker):.1f}" y1="{top - 6}" y2="{bottom}" '
                    f'stroke="{RGB_RED}" stroke-dasharray="4 3"><title>analysis threshold {_t(label(marker))}'
                    '</title></line>')
    for i, (name, v, lo, hi) in enumerate(rows):
        y = top + i * rh + rh / 2
        colour = RGB_RED if signed and v > 0 else BLUE
        body.append(f'<text x="{left - 8}" y="{y + 4:.0f}" text-anchor="end">{_t(_short(name, 44))}</text>')
        if not (missing(lo) or missing(hi)):
            body.append(f'<line x1="{sx(lo):.1f}" x2="{sx(hi):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                        f'stroke="{colour}" stroke-width="2"/>')
        if missing(v):
            continue
        around = "" if missing(lo) or missing(hi) else f" ({_t(label(lo))} to {_t(label(hi))})"
        body.append(f'<circle cx="{sx(v):.1f}" cy="{y:.1f}" r="5" fill="{colour}"><title>{_t(name)}: '
                    f'{_t(label(v))}{around}</title></circle>')
    body.append(f'<text x="{left + plot / 2:.0f}" y="{height - 6}" text-anchor="middle" fill="#555">{_t(axis)}</text>')
    return _svg(width, height, body, title)
