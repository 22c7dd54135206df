#!/usr/bin/env python3
"""Group-commit benchmark for wo (driven by bench/groupcommit/run.sh; standalone:
needs Python 3, a built `wo`, the SQLite peer in bench/groupcommit/sqlite and
`tarantool`).

In one run, on one directory of a real disk, each repetition measures (REFERENCE.md
§3: interleaved, the order rotated between repetitions):
  * the raw fdatasync rate of a file in that directory, one writer, in
    bench/durable's two ways (append 100 B + fdatasync; overwrite 100 B of a
    preallocated file + fdatasync, which is what wo's log does), at the start and at
    the end of the repetition (averaged);
  * for each number of writers C and each workload (update of the writer's own row;
    insert), back to back: wo (C fibers, gc.wo), SQLite WAL synchronous=FULL (C
    threads, one connection each) and Tarantool memtx wal_mode='fsync' (C fibers);
  * reads during load: wo with 16 writer fibers plus a reader fiber (and, as a
    baseline, the reader alone);
  * apart, with --free-dir on tmpfs: what a wo commit costs when the sync is free
    (CPU and the hand-off to the log thread; not a durability figure).
Then, with --syscalls, every configuration once more under `perf stat` (syscall
tracepoints) for the commits each sync covers.
Reports medians over the repetitions and medians of the per-repetition paired
ratios (min-max), prints a Markdown table, writes JSON and two SVG charts.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from benchlib import COLOR, raw_sync, svg_chart  # noqa: E402

SYSTEMS = ("wo", "sqlite", "tarantool")
LABEL = {"wo": "wo", "sqlite": "SQLite WAL FULL", "tarantool": "Tarantool 2.6 fsync"}
WORKLOADS = ("update", "insert")
med = statistics.median


def parse(out):
    r = {}
    for line in out.splitlines():
        k, _, v = line.partition(" ")
        try:
            r[k] = int(v)
        except ValueError:
            r[k] = v
    return r


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.isfile(path + suffix):
            os.unlink(path + suffix)


def run(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"bench.py: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
    return parse(p.stdout)


SYSCALLS = ("fdatasync", "fsync", "pwrite64", "write", "writev", "pwritev")


def one(a, system, mode, c, ms, count_syscalls=False, base=None):
    """One measurement: a fresh database, C writers for `ms` ms. Returns the parsed
    output plus `rate` (commits acknowledged before the deadline per second). With
    `count_syscalls`, the run is counted by `perf stat` (syscall tracepoints, every
    thread) and the counts are returned as `sys_<name>`."""
    d = os.path.join(base or a.dir, f"{system}-db")
    fresh(d)
    limit = 60 + 3 * ms / 1000
    if system == "wo":
        cmd = [a.wo, "run", a.prog, "--data", d, "--", mode, str(c), str(ms)]
    elif system == "sqlite":
        cmd = [a.sqlite, mode, str(c), str(ms), d]
    else:
        os.makedirs(d)
        cmd = [a.tarantool, a.lua, mode, str(c), str(ms), d]
    perf_out = os.path.join(a.dir, "perf.txt")
    if count_syscalls:
        events = ",".join(f"syscalls:sys_enter_{n}" for n in SYSCALLS)
        cmd = ["perf", "stat", "-x,", "-o", perf_out, "-e", events, "--"] + cmd
    r = run(cmd, limit)
    fresh(d)
    r["rate"] = r["commits"] * 1000 / ms
    if count_syscalls:
        with open(perf_out) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) > 2 and parts[2].startswith("syscalls:sys_enter_"):
                    n = parts[2].removeprefix("syscalls:sys_enter_")
                    r["sys_" + n] = int(parts[0]) if parts[0].isdigit() else 0
        os.unlink(perf_out)
    return r


def perf_works():
    try:
        return subprocess.run(["perf", "stat", "-e", "syscalls:sys_enter_fdatasync", "true"],
                              capture_output=True).returncode == 0
    except OSError:
        return False


def syscall_pass(a, log):
    """Once, after the timed repetitions: every configuration again under `perf stat`,
    for the number of commits each sync covers."""
    out = {}
    for wl in WORKLOADS:
        for c in a.writers:
            line = []
            for sy in SYSTEMS:
                x = one(a, sy, wl, c, a.ms, count_syscalls=True)
                commits = x["commits"] + x["after"]
                syncs = x.get("sys_fdatasync", 0) + x.get("sys_fsync", 0)
                if sy == "tarantool":
                    # wal_mode='fsync' opens the xlog O_SYNC: every writev is a sync
                    syncs += x.get("sys_writev", 0)
                writes = sum(x.get("sys_" + n, 0) for n in ("pwrite64", "write", "writev",
                                                             "pwritev"))
                out[f"{sy}/{wl}/{c}"] = {
                    "commits": commits, "rate": x["rate"],
                    **{n: x.get("sys_" + n, 0) for n in SYSCALLS},
                    "commits_per_sync": commits / max(syncs, 1),
                    "writes_per_commit": writes / max(commits, 1),
                }
                line.append(f"{sy} {commits / max(syncs, 1):.1f} commits/sync")
            log(f"  syscalls {wl:6} {c:3}: " + "  ".join(line))
    return out


def raw_rates(a, secs, pool):
    """Raw fdatasync rates, append and overwrite, about `secs` seconds each; the
    overwrite latencies go to `pool`."""
    path = os.path.join(a.dir, "raw.bin")
    probe, _ = raw_sync(path, 20, True)
    n = int(min(max(probe * secs, 50), 20000))
    app, _ = raw_sync(path, n, False)
    over, lat = raw_sync(path, n, True)
    pool.extend(lat)
    return {"append": app, "overwrite": over}


def pct(xs, q):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, -(-len(xs) * q // 1000) - 1))]


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def repetition(a, rep, log):
    pool = []
    r = {"raw_start": raw_rates(a, a.raw_s, pool), "runs": {}, "raw_around_wo1": {}}
    log(f"rep {rep + 1}: raw append {r['raw_start']['append']:.0f}/s "
        f"overwrite {r['raw_start']['overwrite']:.0f}/s (load {loadavg()})")
    order = list(SYSTEMS[rep % 3:] + SYSTEMS[:rep % 3])
    if rep % 2:
        order.reverse()
    writers = a.writers if rep % 2 == 0 else list(reversed(a.writers))
    for wl in WORKLOADS:
        for c in writers:
            line = []
            for s in order:
                if s == "wo" and c == 1:
                    # the single writer against the disk: raw rate just before and after
                    before = raw_rates(a, a.raw_s / 2, pool)
                x = one(a, s, wl, c, a.ms)
                if s == "wo" and c == 1:
                    after = raw_rates(a, a.raw_s / 2, pool)
                    r["raw_around_wo1"][wl] = {k: (before[k] + after[k]) / 2 for k in before}
                r["runs"][f"{s}/{wl}/{c}"] = x
                line.append(f"{s} {x['rate']:.0f}/s p99 {x['lat_p99'] / 1000:.1f}ms")
            log(f"  {wl:6} {c:3}: " + "  ".join(line))
            order = order[1:] + order[:1]
        ra = r["raw_around_wo1"][wl]
        log(f"  {wl:6} raw around wo×1: append {ra['append']:.0f}/s "
            f"overwrite {ra['overwrite']:.0f}/s")
    for c in (16, 0):
        x = one(a, "wo", "read", c, a.ms)
        r["runs"][f"wo/read/{c}"] = x
        log(f"  read with {c:2} writers: read p50/p99 {x['read_p50']}/{x['read_p99']} µs, "
            f"turn {x['turn_p50']}/{x['turn_p99']} µs, sleep lateness "
            f"{x['late_p50']}/{x['late_p99']} µs, writers {x['rate']:.0f}/s")
    if a.free_dir:
        # Not a durability figure: with the data directory on tmpfs the sync is free,
        # so this is what a commit costs besides the disk (CPU, log-thread hand-off).
        r["free_sync"] = {}
        for c in (1, 16):
            x = one(a, "wo", "update", c, max(a.ms // 2, 100), base=a.free_dir)
            r["free_sync"][str(c)] = x["rate"]
        log(f"  sync-free (tmpfs) wo update: 1 writer {r['free_sync']['1']:.0f}/s, "
            f"16 writers {r['free_sync']['16']:.0f}/s")
    r["raw_end"] = raw_rates(a, a.raw_s, pool)
    r["raw"] = {k: (r["raw_start"][k] + r["raw_end"][k]) / 2 for k in ("append", "overwrite")}
    # one raw overwrite + fdatasync in this repetition: mean, p50, p99 (µs)
    r["sync"] = {"n": len(pool), "mean": statistics.fmean(pool), "p50": pct(pool, 500),
                 "p99": pct(pool, 990)}
    log(f"  raw at the end: append {r['raw_end']['append']:.0f}/s "
        f"overwrite {r['raw_end']['overwrite']:.0f}/s; one sync this rep: mean "
        f"{r['sync']['mean']:.0f} µs, p50 {r['sync']['p50']:.0f}, p99 {r['sync']['p99']:.0f} "
        f"(load {loadavg()})")
    return r


def summary(a, reps):
    """Medians and paired ratios from the repetitions."""
    def stat(xs):
        xs = list(xs)
        return {"median": med(xs), "min": min(xs), "max": max(xs)}

    s = {"raw": {k: stat(r["raw"][k] for r in reps) for k in ("append", "overwrite")},
         "raw_around_wo1": {wl: {k: stat(r["raw_around_wo1"][wl][k] for r in reps)
                                 for k in ("append", "overwrite")} for wl in WORKLOADS},
         "sync_us": {k: stat(r["sync"][k] for r in reps) for k in ("mean", "p50", "p99")},
         "commits": {}, "ratios": {}, "reader": {}}
    for wl in WORKLOADS:
        for c in a.writers:
            for sy in SYSTEMS:
                key = f"{sy}/{wl}/{c}"
                runs = [r["runs"][key] for r in reps]
                s["commits"][key] = {
                    "rate": stat(x["rate"] for x in runs),
                    "p50_us": stat(x["lat_p50"] for x in runs),
                    "p99_us": stat(x["lat_p99"] for x in runs),
                    "max_us": stat(x["lat_max"] for x in runs),
                    # p99 against one raw overwrite + fdatasync of the same
                    # repetition: its mean, and its own p99
                    "p99_syncs": stat(x["lat_p99"] / r["sync"]["mean"]
                                      for x, r in zip(runs, reps)),
                    "p99_vs_sync_p99": stat(x["lat_p99"] / r["sync"]["p99"]
                                            for x, r in zip(runs, reps)),
                }
                if sy == "sqlite":
                    s["commits"][key]["cut"] = stat(x.get("cut", 0) for x in runs)

            def ratio(num, den):
                return stat(r["runs"][num]["rate"] / max(r["runs"][den]["rate"], 1e-9)
                            for r in reps)
            s["ratios"][f"wo/sqlite/{wl}/{c}"] = ratio(f"wo/{wl}/{c}", f"sqlite/{wl}/{c}")
            s["ratios"][f"wo/tarantool/{wl}/{c}"] = ratio(f"wo/{wl}/{c}", f"tarantool/{wl}/{c}")
            s["ratios"][f"wo/wo1/{wl}/{c}"] = ratio(f"wo/{wl}/{c}", f"wo/{wl}/1")
        for k in ("append", "overwrite"):
            s["ratios"][f"wo1/raw_{k}/{wl}"] = stat(
                r["runs"][f"wo/{wl}/1"]["rate"] / r["raw_around_wo1"][wl][k] for r in reps)
    for c in (16, 0):
        runs = [r["runs"][f"wo/read/{c}"] for r in reps]
        s["reader"][str(c)] = {k: stat(x[k] for x in runs) for k in (
            "read_p50", "read_p99", "read_max", "turn_p50", "turn_p99", "late_p50",
            "late_p99", "read_n", "rate", "lat_p99")}
    if all("free_sync" in r for r in reps):
        s["free_sync"] = {c: stat(r["free_sync"][c] for r in reps) for c in ("1", "16")}
    return s


def fmt_rate(x):
    return f"{x / 1000:,.1f}k" if x >= 10000 else f"{x:,.0f}"


def fmt_r(st):
    return f"{st['median']:.2f} ({st['min']:.2f}–{st['max']:.2f})"


def table(a, s, sc):
    out = []
    raw = s["raw"]
    sy = {k: v["median"] for k, v in s["sync_us"].items()}
    out.append(f"raw fdatasync, one writer: append 100 B {raw['append']['median']:,.0f}/s, "
               f"overwrite 100 B (preallocated) {raw['overwrite']['median']:,.0f}/s; one "
               f"overwrite + fdatasync: mean {sy['mean']:,.0f} µs, p50 {sy['p50']:,.0f} µs, "
               f"p99 {sy['p99']:,.0f} µs")
    out.append("")
    for wl in WORKLOADS:
        out.append(f"| {wl}: writers | wo commits/s | SQLite commits/s | Tarantool commits/s "
                   "| wo / wo×1 | wo / SQLite | wo / Tarantool "
                   "| wo p50 / p99 ms (p99 ÷ mean sync, ÷ sync p99) | SQLite p50 / p99 ms | Tarantool p50 / p99 ms |")
        out.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for c in a.writers:
            cm = {sy: s["commits"][f"{sy}/{wl}/{c}"] for sy in SYSTEMS}

            def lat(sy):
                return (f"{cm[sy]['p50_us']['median'] / 1000:.2f} / "
                        f"{cm[sy]['p99_us']['median'] / 1000:.2f}")
            out.append(
                f"| {c} | {fmt_rate(cm['wo']['rate']['median'])} "
                f"| {fmt_rate(cm['sqlite']['rate']['median'])} "
                f"| {fmt_rate(cm['tarantool']['rate']['median'])} "
                f"| {fmt_r(s['ratios'][f'wo/wo1/{wl}/{c}'])} "
                f"| {fmt_r(s['ratios'][f'wo/sqlite/{wl}/{c}'])} "
                f"| {fmt_r(s['ratios'][f'wo/tarantool/{wl}/{c}'])} "
                f"| {lat('wo')} ({cm['wo']['p99_syncs']['median']:.1f}, "
                f"{cm['wo']['p99_vs_sync_p99']['median']:.1f}) "
                f"| {lat('sqlite')} | {lat('tarantool')} |")
        out.append("")
    if sc:
        out.append("Commits per sync (`perf stat` syscall counts, one extra run each, not "
                   "timed; a sync is an fdatasync or fsync, and for Tarantool, whose xlog is "
                   "opened O_SYNC, also a writev): wo / SQLite / Tarantool; and wo's log "
                   "writes (`pwrite64`) per commit")
        out.append("")
        out.append("| writers | " + " | ".join(f"{wl}: wo | SQLite | Tarantool | wo writes/commit"
                                               for wl in WORKLOADS) + " |")
        out.append("| ---: |" + " ---: | ---: | ---: | ---: |" * len(WORKLOADS))
        for c in a.writers:
            cells = []
            for wl in WORKLOADS:
                cells += [f"{sc[f'{sy}/{wl}/{c}']['commits_per_sync']:.1f}" for sy in SYSTEMS]
                cells.append(f"{sc[f'wo/{wl}/{c}']['writes_per_commit']:.2f}")
            out.append(f"| {c} | " + " | ".join(cells) + " |")
        out.append("")
    if "free_sync" in s:
        f1, f16 = s["free_sync"]["1"]["median"], s["free_sync"]["16"]["median"]
        out.append(f"Sync-free cost (wo update with the data directory on tmpfs, where "
                   f"fdatasync costs nothing; not a durability figure): 1 writer "
                   f"{fmt_rate(f1)} commits/s = {1e6 / f1:.1f} µs a commit; 16 writers "
                   f"{fmt_rate(f16)} commits/s = {1e6 / f16:.1f} µs a commit.")
        out.append("")
    out.append("| reads (wo) | read alone p50 / p99 / max µs | yield → value p50 / p99 µs "
               "| sleep(1) lateness p50 / p99 µs | reads | writers' commits/s |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for c in ("16", "0"):
        x = {k: v["median"] for k, v in s["reader"][c].items()}
        out.append(f"| reader + {c} writers | {x['read_p50']:.0f} / {x['read_p99']:.0f} / "
                   f"{x['read_max']:,.0f} | {x['turn_p50']:.0f} / {x['turn_p99']:.0f} "
                   f"| {x['late_p50']:,.0f} / {x['late_p99']:,.0f} | {x['read_n']:,.0f} "
                   f"| {fmt_rate(x['rate'])} |")
    return "\n".join(out)


def targets(a, s):
    rows = []

    def add(name, ok, evidence):
        rows.append((name, "met" if ok else "NOT met", evidence))

    for wl in WORKLOADS:
        if 16 in a.writers:
            r = s["ratios"][f"wo/wo1/{wl}/16"]
            add(f"{wl}: 16 writers ≥ 8× wo's single writer", r["median"] >= 8, fmt_r(r))
        if 64 in a.writers:
            r = s["ratios"][f"wo/tarantool/{wl}/64"]
            add(f"{wl}: 64 writers ≥ Tarantool at 64", r["median"] >= 1, fmt_r(r))
            r = s["ratios"][f"wo/sqlite/{wl}/64"]
            add(f"{wl}: 64 writers ≥ 20× SQLite", r["median"] >= 20, fmt_r(r))
        worst = max(s["commits"][f"wo/{wl}/{c}"]["p99_vs_sync_p99"]["median"]
                    for c in a.writers)
        worst_mean = max(s["commits"][f"wo/{wl}/{c}"]["p99_syncs"]["median"]
                         for c in a.writers)
        add(f"{wl}: p99 commit latency ≤ 2 syncs (every C)", worst <= 2,
            f"worst p99 = {worst:.1f}× a raw sync's p99 ({worst_mean:.1f}× its mean)")
        r = s["ratios"][f"wo1/raw_overwrite/{wl}"]
        ra = s["ratios"][f"wo1/raw_append/{wl}"]
        add(f"{wl}: single writer ≥ 0.95 of raw fdatasync", r["median"] >= 0.95,
            f"{fmt_r(r)} of overwrite, {fmt_r(ra)} of append")
    rd = s["reader"]["16"]["read_p99"]["median"]
    add("reader p99 ≤ 50 µs with 16 writers", rd <= 50,
        f"read {rd:.0f} µs; yield→value {s['reader']['16']['turn_p99']['median']:.0f} µs")
    out = ["| target | status | evidence (median, min–max of the paired ratios) |",
           "| --- | --- | --- |"]
    out += [f"| {n} | {'**' + ok + '**'} | {e} |" for n, ok, e in rows]
    return "\n".join(out), rows


# --- SVG charts (written by hand: no plotting library needed) --------------------

def charts(a, s, stem):
    xs = a.writers
    if len(xs) < 2:
        return []
    series = []
    for sy in SYSTEMS:
        for wl in WORKLOADS:
            series.append((f"{LABEL[sy]} {wl}", COLOR[sy], wl == "insert",
                           [s["commits"][f"{sy}/{wl}/{c}"]["rate"]["median"] for c in xs]))
    raw = s["raw"]["overwrite"]["median"]
    p1 = stem + "-throughput.svg"
    svg_chart("Durable commits/s vs writers (medians)", "commits/s", xs, series,
              [("raw fdatasync rate (one writer)", raw)], p1)
    series = []
    for sy in SYSTEMS:
        for wl in WORKLOADS:
            series.append((f"{LABEL[sy]} {wl}", COLOR[sy], wl == "insert",
                           [s["commits"][f"{sy}/{wl}/{c}"]["p99_us"]["median"] / 1000
                            for c in xs]))
    p2 = stem + "-latency.svg"
    sync_p99 = s["sync_us"]["p99"]["median"] / 1000
    svg_chart("p99 commit latency vs writers (medians)", "p99 latency, ms", xs, series,
              [("2 × p99 of a raw sync", 2 * sync_p99)], p2,
              note=f"SQLite: statements still waiting\n{a.ms + max(a.ms, 1000)} ms after the "
                   "start are cut,\nso its p99 is a lower bound")
    return [p1, p2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wo", required=True)
    ap.add_argument("--prog", default=os.path.join(HERE, "gc.wo"))
    ap.add_argument("--sqlite", required=True)
    ap.add_argument("--tarantool", default="tarantool")
    ap.add_argument("--lua", default=os.path.join(HERE, "tarantool.lua"))
    ap.add_argument("--dir", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ms", type=int, default=1000, help="duration of one measurement")
    ap.add_argument("--raw-s", type=float, default=0.5, help="seconds per raw measurement")
    ap.add_argument("--writers", default="1,4,16,64,256")
    ap.add_argument("--free-dir", default="",
                    help="a tmpfs directory for the sync-free cost of a commit (optional)")
    ap.add_argument("--syscalls", action="store_true",
                    help="afterwards, count syncs per commit once per configuration (perf)")
    ap.add_argument("--out", required=True, help="results stem: STEM.json, STEM-*.svg")
    a = ap.parse_args()
    a.writers = [int(x) for x in a.writers.split(",")]
    assert a.writers[0] == 1, "the writer counts must start with 1 (the ratios need it)"
    os.makedirs(a.dir, exist_ok=True)
    t_start = time.time()

    def log(msg):
        print(f"[{time.time() - t_start:5.0f}s] {msg}", file=sys.stderr, flush=True)

    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(),
        "nproc": os.cpu_count(),
        "fs": subprocess.run(["stat", "-f", "-c", "%T", a.dir], capture_output=True,
                             text=True).stdout.strip(),
        "wo": subprocess.run([a.wo, "--version"], capture_output=True, text=True).stdout.strip(),
        "wo_commit": subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"],
                                    capture_output=True, text=True).stdout.strip(),
        "tarantool": subprocess.run([a.tarantool, "--version"], capture_output=True,
                                    text=True).stdout.splitlines()[0],
        "reps": a.reps, "ms": a.ms, "writers": a.writers, "load_start": loadavg(),
    }
    log(f"{env['date']}, {env['fs']} at {a.dir}, {env['nproc']} CPUs, {env['wo']} "
        f"({env['wo_commit']}), {env['tarantool']}, {a.reps} reps of {a.ms} ms")
    reps = [repetition(a, i, log) for i in range(a.reps)]
    sc = None
    if a.syscalls and perf_works():
        sc = syscall_pass(a, log)
    elif a.syscalls:
        log("perf stat with syscall tracepoints does not work here: no syscall counts")
    env["sqlite"] = reps[0]["runs"]["sqlite/update/1"].get("sqlite_version", "?")
    env["load_end"] = loadavg()
    env["seconds"] = round(time.time() - t_start)
    s = summary(a, reps)
    tgt, rows = targets(a, s)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"env": env, "summary": s, "targets": rows, "syscalls": sc,
                   "repetitions": reps}, f, indent=1)
    svgs = charts(a, s, a.out)
    print(f"# group commit, {env['date']}: {env['reps']} repetitions of {env['ms']} ms, "
          f"{env['fs']}, load {env['load_start']} → {env['load_end']}, {env['seconds']} s; "
          f"{env['wo']} ({env['wo_commit']}), SQLite {env['sqlite']}, {env['tarantool']}")
    print()
    print(table(a, s, sc))
    print()
    print(tgt)
    print()
    print(f"results: {a.out}.json " + " ".join(svgs))


if __name__ == "__main__":
    main()
