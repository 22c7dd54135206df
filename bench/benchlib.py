"""What the benchmark drivers share (bench/run.py, bench/groupcommit/bench.py): the
raw fdatasync measurement, the refusal of tmpfs for durable figures, and SVG charts
written by hand (no plotting package is needed to run a benchmark)."""

import math
import os
import subprocess
import time


def refuse_tmpfs(path, who):
    """Exits (64) when `path` is on tmpfs or ramfs, where fdatasync is free, so a
    durable figure measured there would be a lie."""
    fs = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True,
                        text=True).stdout.strip()
    if fs in ("tmpfs", "ramfs"):
        raise SystemExit(f"{who}: {path} is on {fs}, where fdatasync is free; "
                         "use a directory on a real disk")


def raw_sync(path, n, overwrite):
    """bench/durable's raw measurement (bench.py: raw_fdatasync, raw_overwrite), the
    same I/O, with each call timed: one writer appending 100 bytes + fdatasync, or
    overwriting 100 bytes at a time of a preallocated, synced, zero-filled file +
    fdatasync (what wo's log does inside its preallocated chunk). Returns syncs/s and
    the latencies (µs)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (0 if overwrite else os.O_APPEND)
    fd = os.open(path, flags, 0o644)
    try:
        if overwrite:
            os.write(fd, bytes(100 * n))
            os.fsync(fd)
        buf = b"x" * 100
        lat = []
        clock = time.perf_counter
        t = clock()
        for i in range(n):
            t0 = clock()
            if overwrite:
                os.pwrite(fd, buf, 100 * i)
            else:
                os.write(fd, buf)
            os.fdatasync(fd)
            lat.append((clock() - t0) * 1e6)
        return n / (clock() - t), lat
    finally:
        os.close(fd)
        os.unlink(path)


COLOR = {"wo": "#1f77b4", "sqlite": "#d62728", "tarantool": "#2ca02c"}


def _num(v):
    """A tick label: 2000 → 2k, 1500000 → 1.5M."""
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if v >= div:
            return f"{v / div:g}{unit}"
    return f"{v:g}"


def _log_y(ys, top, ph):
    """A log10 y axis over the positive ys: (lo, hi, py), the decades 10**lo ‥
    10**hi and the pixel row of a value (values below 10**lo drawn at the floor)."""
    lo = math.floor(math.log10(min(ys)))
    hi = math.ceil(math.log10(max(ys)))
    hi += hi == lo

    def py(y):
        return top + ph - (math.log10(max(y, 10 ** lo)) - lo) / (hi - lo) * ph
    return lo, hi, py


class _Plot:
    """The parts every chart shares: the canvas and title, the horizontal grid with
    its tick labels, the frame, the y label, the legend at the right and a note
    under it; then the file."""

    def __init__(self, title, w, h, left, right, top, bottom):
        self.w, self.h, self.left, self.top = w, h, left, top
        self.pw, self.ph = w - left - right, h - top - bottom
        self.e = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
                  f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
                  f'<rect width="{w}" height="{h}" fill="white"/>',
                  f'<text x="{left + self.pw / 2}" y="22" text-anchor="middle" '
                  f'font-size="15">{title}</text>']
        self.ly = top + 8

    def hline(self, y, stroke):
        self.e.append(f'<line x1="{self.left}" y1="{y:.1f}" x2="{self.left + self.pw}" '
                      f'y2="{y:.1f}" stroke="{stroke}"/>')

    def ytick(self, y, v):
        """A grid line at pixel row y, labelled with the value v."""
        self.hline(y, "#ddd")
        self.e.append(f'<text x="{self.left - 6}" y="{y + 4:.1f}" '
                      f'text-anchor="end">{_num(v)}</text>')

    def frame(self, ylabel):
        self.e.append(f'<rect x="{self.left}" y="{self.top}" width="{self.pw}" '
                      f'height="{self.ph}" fill="none" stroke="#888"/>')
        self.ylabel(ylabel)

    def ylabel(self, ylabel):
        top, ph = self.top, self.ph
        self.e.append(f'<text transform="translate(18 {top + ph / 2}) rotate(-90)" '
                      f'text-anchor="middle">{ylabel}</text>')

    def legend(self, label, swatch, dx, dy):
        """One legend line: swatch(x, y) gives the SVG of its key at (x, y), the
        label follows at (x + dx, y + dy)."""
        lx = self.left + self.pw + 12
        self.e.append(swatch(lx, self.ly))
        self.e.append(f'<text x="{lx + dx}" y="{self.ly + dy}">{label}</text>')
        self.ly += 20

    def save(self, path, note=""):
        for i, part in enumerate(note.split("\n") if note else []):
            self.e.append(f'<text x="{self.left + self.pw + 12}" y="{self.ly + 10 + 15 * i}" '
                          f'font-size="10" fill="#555">{part}</text>')
        self.e.append("</svg>")
        with open(path, "w") as f:
            f.write("\n".join(self.e) + "\n")


def svg_chart(title, ylabel, xs, series, hlines, path, note=""):
    """A log-log line chart: xs the writer counts, series [(label, color, dashed,
    ys)], hlines [(label, y)]."""
    p = _Plot(title, 720, 440, 80, 220, 40, 50)
    left, top, pw, ph, e = p.left, p.top, p.pw, p.ph, p.e
    lo, hi, py = _log_y([y for *_, ys in series for y in ys if y > 0]
                        + [y for _, y in hlines], top, ph)
    lx0, lx1 = math.log2(xs[0]), math.log2(xs[-1])

    def px(x):
        return left + (math.log2(x) - lx0) / (lx1 - lx0) * pw

    for k in range(lo, hi + 1):
        p.ytick(py(10 ** k), 10 ** k)
        if k < hi:
            for m in range(2, 10):
                p.hline(py(m * 10 ** k), "#f3f3f3")
    for x in xs:
        X = px(x)
        e.append(f'<line x1="{X:.1f}" y1="{top}" x2="{X:.1f}" y2="{top + ph}" stroke="#eee"/>')
        e.append(f'<text x="{X:.1f}" y="{top + ph + 18}" text-anchor="middle">{x}</text>')
    e.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
    e.append(f'<text x="{left + pw / 2}" y="{p.h - 10}" text-anchor="middle">'
             'writers (fibers; threads for SQLite)</text>')
    p.ylabel(ylabel)
    for label, y in hlines:
        Y = py(y)
        e.append(f'<line x1="{left}" y1="{Y:.1f}" x2="{left + pw}" y2="{Y:.1f}" '
                 'stroke="#888" stroke-dasharray="2 3"/>')
        e.append(f'<text x="{left + 4}" y="{Y - 4:.1f}" fill="#555">{label}</text>')
    for label, color, dashed, ys in series:
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys))
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        e.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for x, y in zip(xs, ys):
            e.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
        p.legend(label, lambda x, y, c=color, d=dash:
                 f'<line x1="{x}" y1="{y}" x2="{x + 24}" y2="{y}" stroke="{c}" '
                 f'stroke-width="2"{d}/>', 30, 4)
    p.save(path, note)


def svg_bars(title, ylabel, groups, series, path, log=True, note=""):
    """A grouped bar chart: groups the x labels, series [(label, color, ys)] with one
    y per group (None: no bar); a log10 y axis unless log=False."""
    p = _Plot(title, 760, 420, 80, 200, 40, 50)
    left, top, pw, ph, e = p.left, p.top, p.pw, p.ph, p.e
    ys_all = [y for _, _, ys in series for y in ys if y]
    if log:
        lo, hi, py = _log_y(ys_all, top, ph)
        ticks = [10 ** k for k in range(lo, hi + 1)]
        base = 10 ** lo
    else:
        top_y = max(ys_all) * 1.1
        step = 10 ** math.floor(math.log10(top_y))
        ticks = [k * step for k in range(0, int(top_y / step) + 2)]

        def py(y):
            return top + ph - y / ticks[-1] * ph
        base = 0
    for t in ticks:
        p.ytick(py(t), t)
    gw = pw / len(groups)
    bw = gw * 0.8 / len(series)
    for g, name in enumerate(groups):
        x0 = left + g * gw + gw * 0.1
        # a two-word label ("query p99") on two lines, so neighbours never overlap
        for i, word in enumerate(name.split(" ", 1)):
            e.append(f'<text x="{left + g * gw + gw / 2:.1f}" y="{top + ph + 18 + 14 * i}" '
                     f'text-anchor="middle">{word}</text>')
        for s, (_, color, ys) in enumerate(series):
            y = ys[g]
            if not y:
                continue
            Y = py(y)
            e.append(f'<rect x="{x0 + s * bw:.1f}" y="{Y:.1f}" width="{bw * 0.92:.1f}" '
                     f'height="{py(base) - Y:.1f}" fill="{color}"><title>{_num(y)}</title></rect>')
    p.frame(ylabel)
    for label, color, _ in series:
        p.legend(label, lambda x, y, c=color:
                 f'<rect x="{x}" y="{y - 8}" width="16" height="12" fill="{c}"/>', 22, 2)
    p.save(path, note)
