"""Inline SVG plots for the HTML report: dots with confidence whiskers, stacked boot phases."""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from guestbench.report.model import format_value

# A log axis when the largest median is more than this many times the smallest:
# runsc's getpid (~350x native) would otherwise squeeze every other dot against zero.
LOG_SPAN = 20
DOT_COLOUR = "#0072b2"
REFERENCE_COLOUR = "#d55e00"
# Okabe-Ito colours: told apart also by readers with a colour-vision deficiency.
PHASE_COLOURS = ("#e69f00", "#56b4e9", "#009e73", "#cc79a7", "#f0e442", "#d55e00")
ROW_PX = 24
PLOT_PX = 440  # width of the plotting area of a trend (history)
# Plots of one row per environment (dots, boot phases) are narrower: two fit side by side
# on a 1280 px screen.
ROWS_PLOT_PX = 330
ROWS_VALUE_PX = 170
TOP_PX = 10
AXIS_PX = 44  # tick labels and the axis' own label


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _px(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True)
class Dot:
    """One environment's median and interval in the axis' unit; without a median, `missing`
    says why. `text` replaces the median and interval right of the plot when given."""

    name: str
    median: float | None = None
    low: float | None = None
    high: float | None = None
    missing: str = ""  # e.g. "no data: ⊘ unavailable x3"
    text: str = ""


def cell_dot(name: str, cell, divisor: float) -> Dot:
    """A measured cell's median and 95% interval (analysis/cells.py's Cell) as a dot, in the
    axis' unit (divisor: the cell's unit per the axis' unit)."""
    stats = cell.stats
    low = stats.ci_low / divisor if stats and stats.ci_low is not None else None
    high = stats.ci_high / divisor if stats and stats.ci_high is not None else None
    return Dot(name, cell.median / divisor, low, high)


@dataclass(frozen=True)
class Segment:
    phase: str
    value: float | None  # None: this run never reached the phase's points


@dataclass(frozen=True)
class Stack:
    name: str
    segments: list[Segment]
    total_text: str = ""  # shown right of the stack
    missing: str = ""  # shown instead of the stack when it has no segment


class Axis:
    """Maps a value to x pixels on a linear axis from 0, or a log axis between round values
    (1, 2 or 5 times a power of ten)."""

    def __init__(self, values: list[float], log: bool, width_px: float = PLOT_PX) -> None:
        self.log = log
        self.width_px = width_px
        if log:
            positive = [value for value in values if value > 0] or [1.0]
            self.low, self.high = _round_below(min(positive)), _round_above(max(positive))
            if self.high <= self.low:
                self.high = self.low * 10
        else:
            top = max(values, default=0.0)
            self.step = _nice_step(top / 5) if top > 0 else 0.2
            self.low, self.high = 0.0, self.step * max(1, math.ceil(top / self.step - 1e-9))

    def x(self, value: float) -> float:
        """Pixels from the axis' start (clamped to the axis)."""
        if self.log:
            value = min(max(value, self.low), self.high)
            share = math.log10(value / self.low) / math.log10(self.high / self.low)
        else:
            share = (min(max(value, self.low), self.high) - self.low) / (self.high - self.low)
        return share * self.width_px

    def ticks(self) -> list[float]:
        if self.log:
            # within two decades every 1-2-5 value fits; beyond, the powers of ten
            steps = (1, 2, 5) if self.high / self.low <= 100 else (1,)
            first = math.floor(math.log10(self.low))
            candidates = [factor * 10.0 ** power for power in range(
                first, math.ceil(math.log10(self.high)) + 1) for factor in steps]
            inside = [tick for tick in candidates
                      if self.low * (1 - 1e-9) <= tick <= self.high * (1 + 1e-9)]
            return sorted(set([self.low, *inside, self.high]))
        count = round(self.high / self.step)
        return [self.step * index for index in range(count + 1)]


def _round_below(value: float) -> float:
    power = 10.0 ** math.floor(math.log10(value))
    return next(factor * power for factor in (5, 2, 1) if factor * power <= value * (1 + 1e-9))


def _round_above(value: float) -> float:
    power = 10.0 ** math.floor(math.log10(value))
    return next(factor * power for factor in (1, 2, 5, 10) if factor * power >= value * (1 - 1e-9))


def _nice_step(raw: float) -> float:
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(factor * magnitude for factor in (1, 2, 2.5, 5, 10) if factor * magnitude >= raw)


def wants_log(medians: list[float]) -> bool:
    positive = [value for value in medians if value > 0]
    return (len(positive) == len(medians) and len(positive) > 1
            and max(positive) > LOG_SPAN * min(positive))


def _label_px(names: list[str]) -> int:
    """Room for the environment names left of the bars (about 7 px per character)."""
    return min(320, max(90, 16 + 7 * max((len(name) for name in names), default=0)))


def _frame(title: str, width: float, height: float, body: list[str]) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{_px(width)}" '
        f'height="{_px(height)}" viewBox="0 0 {_px(width)} {_px(height)}" font-size="12">',
        f"<title>{_e(title)}</title>", *body, "</svg>"])


def _axis(axis: Axis, left: float, top: float, bottom: float, label: str) -> list[str]:
    """Grid lines with tick labels under the plot, and the axis' label below them."""
    out = []
    for tick in axis.ticks():
        x = left + axis.x(tick)
        out.append(f'<line class="grid" x1="{_px(x)}" y1="{_px(top)}" x2="{_px(x)}" '
                   f'y2="{_px(bottom)}" stroke="#ddd"/>')
        out.append(f'<text class="tick" x="{_px(x)}" y="{_px(bottom + 14)}" '
                   f'text-anchor="middle" fill="#444">{_e(format_value(tick))}</text>')
    out.append(f'<line x1="{left}" y1="{_px(bottom)}" x2="{_px(left + axis.width_px)}" '
               f'y2="{_px(bottom)}" stroke="#888"/>')
    out.append(f'<text class="axis-label" x="{_px(left + axis.width_px / 2)}" '
               f'y="{_px(bottom + 32)}" text-anchor="middle">{_e(label)}</text>')
    return out


def dots(title: str, unit: str, rows: list[Dot], axis_note: str = "", log: bool | None = None,
         reference: tuple[float, str] | None = None) -> str:
    """A dot at each median with a whisker over its confidence interval, one row per
    environment: positions, never lengths, so no axis floor can mislead. log: None chooses a
    log axis when the medians span more than LOG_SPAN; reference: (value, label) of a dashed
    line, e.g. (1, "= native") on a ratio axis."""
    medians = [row.median for row in rows if row.median is not None]
    log = wants_log(medians) if log is None else log
    values = [value for row in rows for value in (row.median, row.low, row.high)
              if value is not None and (value > 0 or not log)]
    if reference is not None:
        values.append(reference[0])
    axis = Axis(values, log, ROWS_PLOT_PX)
    left = _label_px([row.name for row in rows])
    top = TOP_PX + (14 if reference else 0)
    bottom = top + ROW_PX * len(rows)
    scale = "log scale" if log else "linear scale"
    body = _axis(axis, left, top, bottom, f"{unit} ({scale}{axis_note})")
    if reference is not None:
        x = left + axis.x(reference[0])
        body.append(f'<g class="reference"><line x1="{_px(x)}" y1="{_px(top - 4)}" '
                    f'x2="{_px(x)}" y2="{_px(bottom)}" stroke="{REFERENCE_COLOUR}" '
                    f'stroke-dasharray="4 3"/><text x="{_px(x + 4)}" y="{_px(top - 4)}" '
                    f'fill="{REFERENCE_COLOUR}">{_e(reference[1])}</text></g>')
    for index, row in enumerate(rows):
        middle = top + ROW_PX * index + ROW_PX / 2
        body.append(f'<text class="env" x="{left - 8}" y="{_px(middle + 4)}" '
                    f'text-anchor="end">{_e(row.name)}</text>')
        body += _dot(row, axis, left, middle, unit)
    return _frame(title, left + ROWS_PLOT_PX + ROWS_VALUE_PX, bottom + AXIS_PX, body)


def _dot(row: Dot, axis: Axis, left: float, middle: float, unit: str) -> list[str]:
    if row.median is None:
        return [f'<text class="missing" x="{left + 4}" y="{_px(middle + 4)}" fill="#666" '
                f'font-style="italic">{_e(row.missing or "no data")}</text>']
    text = format_value(row.median)  # the unit is the axis'
    out = []
    if row.low is not None and row.high is not None:
        low, high = left + axis.x(row.low), left + axis.x(row.high)
        interval = f"[{format_value(row.low)}-{format_value(row.high)}]"
        text += f" {interval}"
        out.append(f'<g class="whisker" stroke="#000" stroke-width="1.5"><title>'
                   f'{_e(f"{row.name}: 95% CI {interval} {unit}")}</title>'
                   f'<line x1="{_px(low)}" y1="{_px(middle)}" x2="{_px(high)}" y2="{_px(middle)}"/>'
                   f'<line x1="{_px(low)}" y1="{_px(middle - 5)}" x2="{_px(low)}" '
                   f'y2="{_px(middle + 5)}"/><line x1="{_px(high)}" y1="{_px(middle - 5)}" '
                   f'x2="{_px(high)}" y2="{_px(middle + 5)}"/></g>')
    shown = row.text or text
    out.append(f'<circle class="dot" cx="{_px(left + axis.x(row.median))}" cy="{_px(middle)}" '
               f'r="4.5" fill="{DOT_COLOUR}" stroke="#fff"><title>'
               f'{_e(f"{row.name}: {shown}" + ("" if row.text else f" {unit}"))}</title></circle>')
    out.append(f'<text class="value" x="{left + axis.width_px + 8}" y="{_px(middle + 4)}">'
               f"{_e(shown)}</text>")
    return out


def stacked(title: str, unit: str, phases: list[str], rows: list[Stack]) -> str:
    """Horizontal stacked bars, one segment per phase in order, with a legend below."""
    totals = [sum(segment.value or 0.0 for segment in row.segments) for row in rows]
    axis = Axis(totals, log=False, width_px=ROWS_PLOT_PX)
    left = _label_px([row.name for row in rows])
    bottom = TOP_PX + ROW_PX * len(rows)
    colour = dict(zip(phases, PHASE_COLOURS))
    body = _axis(axis, left, TOP_PX, bottom, f"{unit} (linear scale)")
    for index, row in enumerate(rows):
        middle = TOP_PX + ROW_PX * index + ROW_PX / 2
        body.append(f'<text class="env" x="{left - 8}" y="{_px(middle + 4)}" '
                    f'text-anchor="end">{_e(row.name)}</text>')
        body += _stack(row, axis, left, middle, colour, unit)
    legend_top = bottom + AXIS_PX + 4
    for index, phase in enumerate(phases):
        y = legend_top + 18 * index
        body.append(f'<g class="legend"><rect x="{left}" y="{y}" width="12" height="12" '
                    f'fill="{colour[phase]}"/><text x="{left + 18}" y="{y + 10}">{_e(phase)}'
                    "</text></g>")
    height = legend_top + 18 * len(phases) + 4
    return _frame(title, left + ROWS_PLOT_PX + ROWS_VALUE_PX, height, body)


def _stack(row: Stack, axis: Axis, left: float, middle: float, colour: dict[str, str],
           unit: str) -> list[str]:
    present = [segment for segment in row.segments if segment.value is not None]
    if not present:
        return [f'<text class="missing" x="{left + 4}" y="{_px(middle + 4)}" fill="#666" '
                f'font-style="italic">{_e(row.missing or "no data")}</text>']
    out, start = [], 0.0
    for segment in present:
        x, width = left + axis.x(start), axis.x(start + segment.value) - axis.x(start)
        tooltip = f"{row.name}: {segment.phase}: {format_value(segment.value)} {unit}"
        out.append(f'<rect class="phase" x="{_px(x)}" y="{_px(middle - 8)}" '
                   f'width="{_px(max(width, 0.5))}" height="16" fill="{colour[segment.phase]}">'
                   f"<title>{_e(tooltip)}</title></rect>")
        if width > 36:
            out.append(f'<text class="in-bar" x="{_px(x + width / 2)}" y="{_px(middle + 4)}" '
                       f'text-anchor="middle" font-size="10">{_e(format_value(segment.value))}'
                       "</text>")
        start += segment.value
    out.append(f'<text class="value" x="{left + axis.width_px + 8}" y="{_px(middle + 4)}">'
               f"{_e(row.total_text)}</text>")
    return out


@dataclass(frozen=True)
class TrendPoint:
    """One campaign on a trend: its x label, median and interval."""

    name: str  # under the x axis: the campaign's id
    median: float
    low: float | None = None
    high: float | None = None
    tooltip: str = ""


TREND_HEIGHT_PX = 200
TREND_LEFT_PX = 70
CHANGE_COLOUR = "#d55e00"


def trend(title: str, unit: str, points: list[TrendPoint],
          changes: list[tuple[int, str]]) -> str:
    """Medians over campaigns, left to right, with whiskers over their intervals; a dashed
    line before each change point (index of the first point after it), labelled."""
    values = [v for p in points for v in (p.median, p.low, p.high) if v is not None]
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
    low, high = low - pad, high + pad
    step = PLOT_PX / max(len(points), 1)
    top, bottom = TOP_PX + 16, TOP_PX + 16 + TREND_HEIGHT_PX

    def y(value: float) -> float:
        return bottom - (value - low) / (high - low) * TREND_HEIGHT_PX

    def x(index: float) -> float:
        return TREND_LEFT_PX + step * (index + 0.5)

    body = []
    for tick in (low + (high - low) * share for share in (0.1, 0.5, 0.9)):
        body.append(f'<line class="grid" x1="{TREND_LEFT_PX}" y1="{_px(y(tick))}" '
                    f'x2="{TREND_LEFT_PX + PLOT_PX}" y2="{_px(y(tick))}" stroke="#ddd"/>')
        body.append(f'<text class="tick" x="{TREND_LEFT_PX - 6}" y="{_px(y(tick) + 4)}" '
                    f'text-anchor="end" fill="#444">{_e(format_value(tick))}</text>')
    body.append(f'<text class="axis-label" x="12" y="{_px((top + bottom) / 2)}" '
                f'transform="rotate(-90 12 {_px((top + bottom) / 2)})" text-anchor="middle">'
                f"{_e(unit)}</text>")
    for index, text in changes:
        at = x(index - 0.5)
        body.append(f'<g class="change"><line x1="{_px(at)}" y1="{top - 12}" x2="{_px(at)}" '
                    f'y2="{bottom}" stroke="{CHANGE_COLOUR}" stroke-dasharray="4 3" '
                    f'stroke-width="1.5"/><text x="{_px(at + 4)}" y="{top - 4}" '
                    f'fill="{CHANGE_COLOUR}">{_e(text)}</text></g>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{_px(x(i))},{_px(y(p.median))}"
                    for i, p in enumerate(points))
    body.append(f'<path d="{path}" fill="none" stroke="{DOT_COLOUR}" stroke-width="1"/>')
    for index, point in enumerate(points):
        cx = x(index)
        if point.low is not None and point.high is not None:
            body.append(f'<line class="whisker" x1="{_px(cx)}" y1="{_px(y(point.low))}" '
                        f'x2="{_px(cx)}" y2="{_px(y(point.high))}" stroke="#000"/>')
        body.append(f'<circle class="median" cx="{_px(cx)}" cy="{_px(y(point.median))}" r="3" '
                    f'fill="{DOT_COLOUR}"><title>{_e(point.tooltip or point.name)}</title>'
                    "</circle>")
        if len(points) <= 30 or index % max(1, len(points) // 15) == 0:
            body.append(f'<text class="tick" x="{_px(cx)}" y="{bottom + 14}" '
                        f'text-anchor="middle" fill="#444">{_e(point.name)}</text>')
    body.append(f'<text class="axis-label" x="{_px(TREND_LEFT_PX + PLOT_PX / 2)}" '
                f'y="{bottom + 32}" text-anchor="middle">campaign</text>')
    return _frame(title, TREND_LEFT_PX + PLOT_PX + 20, bottom + AXIS_PX, body)
