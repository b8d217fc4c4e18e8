"""The bandwidth curve as inline SVG, for the plan report (vxtrain.render.report).

It draws :func:`vxtrain.planning.curve.curve`'s points as they are: every mark carries
its figure in ``data-*`` attributes (``data-replicas``, ``data-seconds`` with a gradient
size, ``data-of-ring``), written with ``repr`` so a reader gets the float back exactly,
and the axes' ranges are on the ``<svg>`` (``data-x-max``, ``data-y-max``) so a test can
map a point's coordinates back to its figure. No script: the page is read without one.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from html import escape

from vxtrain.diagnostics import plural
from vxtrain.planning.bandwidth import gbps
from vxtrain.planning.curve import Curve, CurvePoint

WIDTH, HEIGHT = 940, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 200, 24, 52
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
#: The y axis reaches this far above the slower of the ring and the plan's point: the
#: curve's steep start (1 replica: many times the ring) leaves the plot at its top.
HEADROOM = 1.6


def value(curve: Curve, point: CurvePoint) -> float:
    """The figure a point is drawn at: seconds with a gradient size, else its share of the ring."""
    return point.seconds if curve.gradient_bytes is not None and point.seconds is not None else point.of_ring


def ring_value(curve: Curve) -> float:
    """The ring's figure in the chart's unit."""
    return curve.ring_seconds if curve.ring_seconds is not None else 1.0


def floor_value(curve: Curve) -> float:
    """The network cap's figure in the chart's unit."""
    return curve.floor_seconds if curve.floor_seconds is not None else curve.floor_of_ring


def label(curve: Curve, figure: float) -> str:
    """A figure in the chart's unit: ``104 ms``, ``1.20 s`` or ``0.62 × ring``."""
    if curve.gradient_bytes is None:
        return f"{figure:.3g} × ring"
    return f"{figure * 1000:.3g} ms" if figure < 1 else f"{figure:.3g} s"


def svg(curve: Curve) -> str:
    """The chart: the curve, the ring's time, the network's cap and the plan's point."""
    x_max = curve.points[-1].replicas
    y_max, y_step = _axis(max(ring_value(curve), value(curve, curve.chosen) if curve.chosen else 0.0) * HEADROOM)
    scale = _Scale(x_max, y_max)
    unit = "seconds" if curve.gradient_bytes is not None else "ring"
    parts = [
        f'<svg class="curve" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-labelledby="curve-title curve-desc" '
        f'data-unit="{unit}" data-x-max="{x_max}" data-y-max="{y_max!r}" data-left="{LEFT}" data-top="{TOP}" '
        f'data-plot-width="{PLOT_W}" data-plot-height="{PLOT_H}">',
        f'<title id="curve-title">All-reduce time against Reduction Server replicas</title>',
        f'<desc id="curve-desc">{escape(summary(curve))}</desc>',
        f'<defs><clipPath id="plot-area"><rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}"/>'
        '</clipPath></defs>',
        f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}"/>',
        *_grid(curve, scale, y_step),
        '<g clip-path="url(#plot-area)">',
        *_lines(curve, scale),
        f'<polyline class="line" points="{" ".join(scale.at(p.replicas, value(curve, p)) for p in curve.points)}"/>',
        '<g class="points">', *(_point(curve, scale, p, "point") for p in curve.points), "</g>",
        "</g>",
        *_chosen(curve, scale),
        *_labels(curve, scale),
        "</svg>",
    ]
    return "\n".join(parts)


def summary(curve: Curve) -> str:
    """Two sentences: the ring, the plan's point, and where the network's cap is."""
    text = f"{curve.training_nodes} training nodes at {gbps(curve.node_gbps)} Gbps each"
    if curve.gradient_bytes is not None:
        text += f", {_bytes(curve.gradient_bytes)} per all-reduce: a ring takes {label(curve, ring_value(curve))}"
        if curve.chosen is not None:
            text += (f"; the plan's {curve.chosen.replicas} × {curve.machine_type} take "
                     f"{label(curve, value(curve, curve.chosen))} ({curve.chosen.of_ring:.3g} × the ring)")
    elif curve.chosen is not None:
        text += (f": the plan's {curve.chosen.replicas} × {curve.machine_type} take {curve.chosen.of_ring:.3g} × "
                 "the time of a ring all-reduce")
    if curve.chosen is None:
        text += f"; the job has no Reduction Server: the curve is for one of {curve.machine_type}"
    text += (f". From {plural(curve.cap_replicas, 'replica')} on, the training nodes' own egress sets the pace "
             f"({label(curve, floor_value(curve))}): more replicas cost without saving time.")
    if curve.floor_of_ring >= 1 - 1e-9:
        text += (f" With {curve.training_nodes} training nodes a Reduction Server cannot beat a ring: "
                 "either way each node sends its gradients once.")
    return text


class _Scale:
    """Figures to SVG coordinates: x from 0 to ``x_max`` replicas, y from 0 to ``y_max``."""

    def __init__(self, x_max: int, y_max: float) -> None:
        self.x_max, self.y_max = x_max, y_max

    def x(self, replicas: float) -> float:
        return LEFT + PLOT_W * replicas / self.x_max

    def y(self, figure: float) -> float:
        return TOP + PLOT_H * (1 - figure / self.y_max)

    def at(self, replicas: float, figure: float) -> str:
        return f"{self.x(replicas):.2f},{self.y(figure):.2f}"


def _axis(top: float) -> tuple[float, float]:
    """A round top for the y axis at or above ``top``, and its tick step (1, 2 or 5 × 10^k)."""
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return math.ceil(top / step - 1e-9) * step, step


def _x_ticks(x_max: int) -> range:
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10**9) if x_max / s <= 10)
    return range(0, x_max + 1, step)


def _grid(curve: Curve, scale: _Scale, y_step: float) -> Iterator[str]:
    ticks = round(scale.y_max / y_step)
    for i in range(ticks + 1):
        figure = i * y_step
        y = scale.y(figure)
        yield f'<line class="grid" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y:.2f}" y2="{y:.2f}"/>'
        yield f'<text class="tick" x="{LEFT - 8}" y="{y + 4:.2f}" text-anchor="end">{escape(_tick(curve, figure))}</text>'
    for replicas in _x_ticks(scale.x_max):
        x = scale.x(replicas)
        yield f'<text class="tick" x="{x:.2f}" y="{TOP + PLOT_H + 18}" text-anchor="middle">{replicas}</text>'
    yield (f'<text class="axis" x="{LEFT + PLOT_W / 2:.0f}" y="{HEIGHT - 10}" text-anchor="middle">'
           f'Reduction Server replicas ({escape(curve.machine_type)}, {gbps(curve.gbps_per_replica)} Gbps each)</text>')
    y_title = "all-reduce time" if curve.gradient_bytes is not None else "all-reduce time (ring = 1)"
    yield (f'<text class="axis" transform="translate(16 {TOP + PLOT_H / 2:.0f}) rotate(-90)" '
           f'text-anchor="middle">{y_title}</text>')


def _tick(curve: Curve, figure: float) -> str:
    if curve.gradient_bytes is None:
        return f"{figure:g}"
    return f"{figure * 1000:g} ms" if figure < 1 else f"{figure:g} s"


def _lines(curve: Curve, scale: _Scale) -> Iterator[str]:
    """The ring's time, the network cap's floor, and the replica count where the cap is reached."""
    ring, floor = ring_value(curve), floor_value(curve)
    yield (f'<line class="ring" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{scale.y(ring):.2f}" y2="{scale.y(ring):.2f}" '
           f'{_figures(curve, curve.ring_seconds, 1.0)}/>')
    yield (f'<line class="floor" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{scale.y(floor):.2f}" '
           f'y2="{scale.y(floor):.2f}" {_figures(curve, curve.floor_seconds, curve.floor_of_ring)}/>')
    x = scale.x(curve.cap_replicas)
    yield (f'<line class="cap" x1="{x:.2f}" x2="{x:.2f}" y1="{TOP}" y2="{TOP + PLOT_H}" '
           f'data-replicas="{curve.cap_replicas}"/>')


def _figures(curve: Curve, seconds: float | None, of_ring: float) -> str:
    text = f'data-of-ring="{of_ring!r}"'
    return f'data-seconds="{seconds!r}" {text}' if curve.gradient_bytes is not None else text


def _point(curve: Curve, scale: _Scale, point: CurvePoint, css: str, radius: float = 3.0) -> str:
    figure = value(curve, point)
    return (f'<circle class="{css}" cx="{scale.x(point.replicas):.2f}" cy="{scale.y(figure):.2f}" r="{radius}" '
            f'data-replicas="{point.replicas}" {_figures(curve, point.seconds, point.of_ring)} '
            f'data-keeps-up="{str(point.keeps_up).lower()}"><title>{point.replicas} replicas: '
            f'{escape(label(curve, figure))}</title></circle>')


def _chosen(curve: Curve, scale: _Scale) -> Iterator[str]:
    if curve.chosen is None:
        return
    yield _point(curve, scale, curve.chosen, "chosen", radius=7.0)
    x, y = scale.x(curve.chosen.replicas), scale.y(value(curve, curve.chosen))
    # Below the point: the curve comes down from the upper left, and under the network cap's
    # floor (at least half the ring's time, a third of the plot's height) nothing is drawn.
    anchor = "end" if x > LEFT + PLOT_W * 0.7 else "middle" if x > LEFT + PLOT_W * 0.15 else "start"
    yield (f'<text class="chosen-label" x="{x:.2f}" y="{y + 28:.2f}" text-anchor="{anchor}">plan: '
           f'{curve.chosen.replicas} × {escape(curve.machine_type)}</text>')


def _labels(curve: Curve, scale: _Scale) -> Iterator[str]:
    """Names of the horizontal lines, in the right margin; the cap's above the plot."""
    ring_y, floor_y = scale.y(ring_value(curve)), scale.y(floor_value(curve))
    ring_top, floor_top = ring_y - 2, floor_y - 2  # each name is two lines, 15 px apart
    if floor_y - ring_y < 36:  # 2 nodes: the ring is as fast as the cap; the ring's name above, the cap's below
        ring_top, floor_top = ring_y - 20, floor_y + 14
    right = LEFT + PLOT_W + 8
    yield f'<text class="ring-label" x="{right}" y="{ring_top:.2f}">ring all-reduce</text>'
    yield f'<text class="ring-label" x="{right}" y="{ring_top + 15:.2f}">(no Reduction Server)</text>'
    yield f'<text class="floor-label" x="{right}" y="{floor_top:.2f}">network cap: the nodes\'</text>'
    yield f'<text class="floor-label" x="{right}" y="{floor_top + 15:.2f}">own egress</text>'
    x = scale.x(curve.cap_replicas)
    yield f'<text class="cap-label" x="{x:.2f}" y="{TOP - 8}" text-anchor="middle">cap: {curve.cap_replicas}</text>'


def _bytes(value: float | None) -> str:
    if value is None:
        return "?"
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= factor:
            return f"{value / factor:g} {unit}"
    return f"{value:g} B"
