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


def svg_chart(title, ylabel, xs, series, hlines, path, note=""):
    """A log-log line chart: xs the writer counts, series [(label, color, dashed,
    ys)], hlines [(label, y)]."""
    w, h, left, right, top, bottom = 720, 440, 80, 220, 40, 50
    pw, ph = w - left - right, h - top - bottom
    ys_all = [y for *_, ys in series for y in ys if y > 0] + [y for _, y in hlines]
    lo = math.floor(math.log10(min(ys_all)))
    hi = math.ceil(math.log10(max(ys_all)))
    if hi == lo:
        hi += 1
    lx0, lx1 = math.log2(xs[0]), math.log2(xs[-1])

    def px(x):
        return left + (math.log2(x) - lx0) / (lx1 - lx0) * pw

    def py(y):
        y = max(y, 10 ** lo)
        return top + ph - (math.log10(y) - lo) / (hi - lo) * ph

    def num(v):
        for unit, div in (("M", 1e6), ("k", 1e3)):
            if v >= div:
                return f"{v / div:g}{unit}"
        return f"{v:g}"

    e = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
         f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{left + pw / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    for k in range(lo, hi + 1):
        y = py(10 ** k)
        e.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        e.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{num(10 ** k)}</text>')
        if k < hi:
            for m in range(2, 10):
                y = py(m * 10 ** k)
                e.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                         'stroke="#f3f3f3"/>')
    for x in xs:
        X = px(x)
        e.append(f'<line x1="{X:.1f}" y1="{top}" x2="{X:.1f}" y2="{top + ph}" stroke="#eee"/>')
        e.append(f'<text x="{X:.1f}" y="{top + ph + 18}" text-anchor="middle">{x}</text>')
    e.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
    e.append(f'<text x="{left + pw / 2}" y="{h - 10}" text-anchor="middle">'
             'writers (fibers; threads for SQLite)</text>')
    e.append(f'<text transform="translate(18 {top + ph / 2}) rotate(-90)" '
             f'text-anchor="middle">{ylabel}</text>')
    ly = top + 8
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
        lx = left + pw + 12
        e.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 24}" y2="{ly}" stroke="{color}" '
                 f'stroke-width="2"{dash}/>')
        e.append(f'<text x="{lx + 30}" y="{ly + 4}">{label}</text>')
        ly += 20
    for i, part in enumerate(note.split("\n") if note else []):
        e.append(f'<text x="{left + pw + 12}" y="{ly + 10 + 15 * i}" font-size="10" '
                 f'fill="#555">{part}</text>')
    e.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(e) + "\n")



def svg_bars(title, ylabel, groups, series, path, log=True, note=""):
    """A grouped bar chart: groups the x labels, series [(label, color, ys)] with one
    y per group (None: no bar); a log10 y axis unless log=False."""
    w, h, left, right, top, bottom = 760, 420, 80, 200, 40, 50
    pw, ph = w - left - right, h - top - bottom
    ys_all = [y for _, _, ys in series for y in ys if y]
    if log:
        lo = math.floor(math.log10(min(ys_all)))
        hi = math.ceil(math.log10(max(ys_all)))
        hi += hi == lo
        ticks = [10 ** k for k in range(lo, hi + 1)]

        def py(y):
            return top + ph - (math.log10(max(y, 10 ** lo)) - lo) / (hi - lo) * ph
        base = 10 ** lo
    else:
        top_y = max(ys_all) * 1.1
        step = 10 ** math.floor(math.log10(top_y))
        ticks = [k * step for k in range(0, int(top_y / step) + 2)]
        hi_y = ticks[-1]

        def py(y):
            return top + ph - y / hi_y * ph
        base = 0

    def num(v):
        for unit, div in (("M", 1e6), ("k", 1e3)):
            if v >= div:
                return f"{v / div:g}{unit}"
        return f"{v:g}"

    e = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
         f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{left + pw / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    for t in ticks:
        y = py(t)
        e.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        e.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{num(t)}</text>')
    gw = pw / len(groups)
    bw = gw * 0.8 / len(series)
    for g, name in enumerate(groups):
        x0 = left + g * gw + gw * 0.1
        e.append(f'<text x="{left + g * gw + gw / 2:.1f}" y="{top + ph + 18}" '
                 f'text-anchor="middle">{name}</text>')
        for s, (_, color, ys) in enumerate(series):
            y = ys[g]
            if not y:
                continue
            Y = py(y)
            e.append(f'<rect x="{x0 + s * bw:.1f}" y="{Y:.1f}" width="{bw * 0.92:.1f}" '
                     f'height="{py(base) - Y:.1f}" fill="{color}"><title>{num(y)}</title></rect>')
    e.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
    e.append(f'<text transform="translate(18 {top + ph / 2}) rotate(-90)" '
             f'text-anchor="middle">{ylabel}</text>')
    ly = top + 8
    for label, color, _ in series:
        lx = left + pw + 12
        e.append(f'<rect x="{lx}" y="{ly - 8}" width="16" height="12" fill="{color}"/>')
        e.append(f'<text x="{lx + 22}" y="{ly + 2}">{label}</text>')
        ly += 20
    for i, part in enumerate(note.split("\n") if note else []):
        e.append(f'<text x="{left + pw + 12}" y="{ly + 10 + 15 * i}" font-size="10" '
                 f'fill="#555">{part}</text>')
    e.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(e) + "\n")
