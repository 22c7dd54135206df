#!/usr/bin/env python3
"""The db-bench campaign: samples/db-bench/db_bench.wo side by side with its peers,
SQLite (through rusqlite, bench/dbbench/sqlite) and Tarantool (bench/dbbench/
tarantool.lua), in one run on one disk; then, with --check, the regression gate.

    python3 bench/run.py [--quick] [--dir DIR] [--out STEM] [--check [RESULTS]]

Legs (REFERENCE.md §3: repetitions interleaved, the order of the systems rotated
between them, ratios as medians of the per-repetition paired ratios):
  ram      seed, read, query, write, mix (16 fibers / threads), in memory: wo without
           --data, SQLite `:memory:` (a WAL file on /dev/shm, synchronous=OFF, for the
           threads of mix), Tarantool wal_mode='none'
  durable  wal (one writer, every insert a commit) and wmix (C writers, every op a
           durable update) for C in 1, 2, 4, …, 64 (quick: 1, 16, 64): wo --data, SQLite WAL
           synchronous=FULL, Tarantool wal_mode='fsync'; with the raw fdatasync rate
           of the same directory measured in the same repetition
  crash    `wal` killed with SIGKILL after a random number of acks, then
           `verify-acked` of the last ack printed (each system)
  memory   peak RSS of `seed N` against an empty run: bytes per row in memory, and
           the data directory's bytes per row on disk
  boot     the time to open a data directory (replay) against its log size

Writes STEM.json (default bench/results/dbbench.json; --quick: DIR/dbbench-quick.json)
and, for a full run, the charts STEM-throughput.svg and STEM-latency.svg (RAM leg),
STEM-writers.svg and STEM-writers-latency.svg (durable leg). --check compares the ratios of a results file (by default the
run just made) with bench/baseline.json and exits 1 on a breach.

Env: WO (default target/release/wo, built if missing), SQLITE_PEER, TARANTOOL.
The durable legs refuse a directory on tmpfs (fdatasync is free there).
"""

import argparse
import datetime
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from benchlib import COLOR, raw_sync, refuse_tmpfs, svg_bars, svg_chart  # noqa: E402

SYSTEMS = ("wo", "sqlite", "tarantool")
LABEL = {"wo": "wo", "sqlite": "SQLite (rusqlite)", "tarantool": "Tarantool 2.x"}
RAM_MODES = ("seed", "read", "query", "write", "mix")
PEERS = ("sqlite", "tarantool")
med = statistics.median

# Sizes: (quick, full)
SIZES = {
    "reps": (3, 5),
    "rows": (20_000, 100_000),
    "seed": (20_000, 200_000),
    "read": (200_000, 2_000_000),
    "query": (40_000, 400_000),
    "write": (40_000, 400_000),
    "mix": (200_000, 2_000_000),
    "mix_c": (16, 16),
    "wal": (150, 1_000),
    # wmix runs max(C × per_writer, min) updates: SQLite syncs every commit alone
    # (~150–600/s here), so its time grows with the operations, not with C
    "wmix_per_writer": (30, 50),
    "wmix_min": (30, 1_000),
    "writers": ((1, 16, 64), (1, 2, 4, 8, 16, 32, 64)),
    "memory_rows": (50_000, 1_000_000),
    "boot_rows": ((10_000, 40_000), (50_000, 200_000, 800_000)),
    "crash_acks": ((20, 120), (50, 600)),
}


class Bench:
    def __init__(self, a):
        self.a = a
        self.q = 0 if a.quick else 1
        self.wo = os.environ.get("WO", os.path.join(ROOT, "target/release/wo"))
        self.sqlite = os.environ.get(
            "SQLITE_PEER", os.path.join(HERE, "dbbench/sqlite/target/release/dbbench_sqlite"))
        self.tarantool = os.environ.get("TARANTOOL", "tarantool")
        self.sample = os.path.join(ROOT, "samples/db-bench/db_bench.wo")
        self.lua = os.path.join(HERE, "dbbench/tarantool.lua")

    def size(self, k):
        return SIZES[k][self.q]

    def cmd(self, system, data, args):
        """The command line of `system` running db-bench `args` (on `data`, or in RAM)."""
        d = ["--data", data] if data else []
        if system == "wo":
            return [self.wo, "run", self.sample, *d, "--", *args]
        if system == "sqlite":
            return [self.sqlite, *d, *args]
        return [self.tarantool, self.lua, *d, *args]

    def run(self, system, data, args, timeout=600):
        """Runs one mode; returns its parsed result line and the wall time."""
        t0 = time.perf_counter()
        p = subprocess.run(self.cmd(system, data, args), capture_output=True, text=True,
                           timeout=timeout, cwd=self.a.dir)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"run.py: {' '.join(self.cmd(system, data, args))} exited "
                             f"{p.returncode}:\n{p.stderr[-2000:]}")
        return parse_line(p.stdout, args[0]), wall

    def fresh(self, name):
        path = os.path.join(self.a.dir, name)
        shutil.rmtree(path, ignore_errors=True)
        return path


def parse_line(out, op):
    """The `<op> <count> <ops/s> <p50> <p99>` line of a mode's output, if any."""
    for line in out.splitlines():
        f = line.split()
        if len(f) == 5 and f[0] == op:
            return {"count": int(f[1]), "rate": int(f[2]), "p50_us": int(f[3]),
                    "p99_us": int(f[4])}
    return {"out": out.strip().splitlines()[-1:] if out.strip() else []}


def peak_rss_kb(cmd, cwd=None):
    """Runs cmd under GNU time; returns (exit status, stdout, peak RSS in kB of that
    process). Not from this interpreter's wait4: a child forked from Python starts
    with Python's pages, and its peak with them."""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name, *cmd], cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        rss = int(t.read().split()[-1])
    return p.returncode, p.stdout, rss


def rotated(rep):
    k = rep % len(SYSTEMS)
    return SYSTEMS[k:] + SYSTEMS[:k]


def ram_leg(b, log):
    """RAM modes, every repetition every system, interleaved."""
    res = {}
    rows = str(b.size("rows"))
    for rep in range(b.size("reps")):
        for mode in RAM_MODES:
            args = [mode, str(b.size(mode))]
            if mode == "mix":
                args.append(str(b.size("mix_c")))
            if mode != "seed":
                args += ["--rows", rows]
            for sy in rotated(rep):
                r, _ = b.run(sy, None, args)
                res.setdefault(f"{sy}/{mode}", []).append(r)
                log(f"ram rep {rep} {sy:9} {mode:6} {r['rate']:>10} ops/s "
                    f"p50 {r['p50_us']} µs p99 {r['p99_us']} µs")
    return res


def durable_leg(b, log):
    """wal and wmix on disk, with the raw fdatasync rate of the same directory."""
    res = {}
    raw = []
    rows = "2000"
    for rep in range(b.size("reps")):
        r0, _ = raw_sync(os.path.join(b.a.dir, "raw.bin"), 100, True)
        for sy in rotated(rep):
            d = b.fresh(f"wal-{sy}")
            r, _ = b.run(sy, d, ["wal", str(b.size("wal"))])
            res.setdefault(f"{sy}/wal", []).append(r)
            log(f"durable rep {rep} {sy:9} wal     {r['rate']:>8} commits/s p99 {r['p99_us']} µs")
        for c in b.size("writers"):
            n = str(max(c * b.size("wmix_per_writer"), b.size("wmix_min")))
            for sy in rotated(rep):
                # wmix loads its rows itself, in the same process: a Tarantool
                # restarted on an existing directory does not sync (tarantool.lua)
                d = b.fresh(f"wmix-{sy}")
                r, _ = b.run(sy, d, ["wmix", n, str(c), "--rows", rows])
                res.setdefault(f"{sy}/wmix/{c}", []).append(r)
                log(f"durable rep {rep} {sy:9} wmix {c:>3} {r['rate']:>8} commits/s "
                    f"p99 {r['p99_us']} µs")
        r1, _ = raw_sync(os.path.join(b.a.dir, "raw.bin"), 100, True)
        raw.append((r0 + r1) / 2)
        log(f"durable rep {rep} raw fdatasync {raw[-1]:.0f}/s")
    res["raw_sync"] = raw
    return res


def crash_leg(b, log):
    """Kill `wal` with SIGKILL after a random number of acks; every ack must survive."""
    rng = random.Random(os.environ.get("SEED", "7"))
    lo, hi = b.size("crash_acks")
    out = {}
    for sy in SYSTEMS:
        d = b.fresh(f"crash-{sy}")
        if sy == "wo":
            os.makedirs(d)
        want = rng.randint(lo, hi)
        p = subprocess.Popen(b.cmd(sy, d, ["wal", "1000000"]), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, cwd=b.a.dir)
        last = 0
        for line in p.stdout:
            if line.startswith("acked "):
                last = int(line.split()[1])
                if last >= want:
                    break
        p.send_signal(signal.SIGKILL)
        p.wait()
        code, text, _ = peak_rss_kb(b.cmd(sy, d, ["verify-acked", str(last)]), cwd=b.a.dir)
        ok = code == 0
        out[sy] = {"acked": last, "ok": ok, "verify": text.strip().splitlines()[-1:]}
        log(f"crash {sy:9} killed after ack {last}: {'ok' if ok else 'LOST DATA'} {text.strip()}")
    return out


def memory_leg(b, log):
    """Peak RSS per row in memory (seed N against seed 0) and bytes per row on disk."""
    n = b.size("memory_rows")
    out = {}
    for sy in SYSTEMS:
        _, _, empty = peak_rss_kb(b.cmd(sy, None, ["seed", "0"]))
        _, _, full = peak_rss_kb(b.cmd(sy, None, ["seed", str(n)]))
        d = b.fresh(f"disk-{sy}")
        if sy == "wo":
            os.makedirs(d)
        peak_rss_kb(b.cmd(sy, d, ["seed", str(n)]), cwd=b.a.dir)
        disk = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
        out[sy] = {"rows": n, "rss_empty_kb": empty, "rss_full_kb": full,
                   "ram_bytes_per_row": (full - empty) * 1024 / n,
                   "disk_bytes_per_row": disk / n}
        log(f"memory {sy:9} {(full - empty) * 1024 / n:6.0f} B/row in RAM, "
            f"{disk / n:6.0f} B/row on disk ({n} rows)")
    return out


def boot_leg(b, log):
    """Open time (replay of the log) against the log's size, for each system."""
    out = {}
    for sy in SYSTEMS:
        pts = []
        for n in b.size("boot_rows"):
            d = b.fresh(f"boot-{sy}")
            if sy == "wo":
                os.makedirs(d)
            b.run(sy, d, ["seed", str(n)])
            size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
            b.run(sy, d, ["boot"])
            _, wall = b.run(sy, d, ["boot"])
            _, empty = b.run(sy, None, ["boot"])
            pts.append({"rows": n, "bytes": size, "open_s": wall, "empty_s": empty,
                        "replay_s": max(wall - empty, 0.0)})
            log(f"boot {sy:9} {n:>8} rows {size / 1e6:7.1f} MB: {wall * 1000:7.1f} ms "
                f"(an empty start {empty * 1000:.1f} ms)")
        out[sy] = pts
    return out


def summarize(raw):
    """Medians per system and mode, and the paired ratios wo / peer."""
    s = {"modes": {}, "ratios": {}}
    for key, rs in raw.items():
        if key == "raw_sync" or not isinstance(rs, list):
            continue
        s["modes"][key] = {f: med(r[f] for r in rs) for f in ("rate", "p50_us", "p99_us")}
    keys = {k.split("/", 1)[1] for k in s["modes"] if k.startswith("wo/")}
    for mode in sorted(keys):
        for peer in PEERS:
            wo, other = raw.get(f"wo/{mode}"), raw.get(f"{peer}/{mode}")
            if wo and other:
                rs = [x["rate"] / max(y["rate"], 1) for x, y in zip(wo, other)]
                s["ratios"][f"{mode.replace('/', '_')}.vs_{peer}"] = {
                    "median": med(rs), "min": min(rs), "max": max(rs)}
    if raw.get("raw_sync"):
        s["raw_sync"] = med(raw["raw_sync"])
        for c_key, m in s["modes"].items():
            if "/wal" in c_key or "/wmix/" in c_key:
                m["of_raw_sync"] = m["rate"] / s["raw_sync"]
    return s


def table(s):
    lines = ["| mode | wo ops/s | SQLite ops/s | Tarantool ops/s | wo / SQLite | wo / Tarantool "
             "| wo p50 / p99 µs |", "|---|---|---|---|---|---|---|"]
    for mode in [m.split("/", 1)[1] for m in s["modes"] if m.startswith("wo/")]:
        row = [mode]
        for sy in SYSTEMS:
            m = s["modes"].get(f"{sy}/{mode}")
            row.append(f"{m['rate']:,.0f}" if m else "")
        for peer in PEERS:
            r = s["ratios"].get(f"{mode.replace('/', '_')}.vs_{peer}")
            row.append(f"{r['median']:.2f} ({r['min']:.2f}–{r['max']:.2f})" if r else "")
        m = s["modes"][f"wo/{mode}"]
        row.append(f"{m['p50_us']:.0f} / {m['p99_us']:.0f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def charts(res, stem):
    s = res["summary"]
    modes = [m for m in RAM_MODES if f"wo/{m}" in s["modes"]]
    paths = []
    if modes:
        p = stem + "-throughput.svg"
        svg_bars("db-bench in memory: operations/s (medians)", "ops/s", modes,
                 [(LABEL[sy], COLOR[sy], [s["modes"][f"{sy}/{m}"]["rate"] for m in modes])
                  for sy in SYSTEMS], p)
        paths.append(p)
        p = stem + "-latency.svg"
        groups = [f"{m} p50" for m in modes] + [f"{m} p99" for m in modes]
        svg_bars("db-bench in memory: latency percentiles (µs, medians)", "µs", groups,
                 [(LABEL[sy], COLOR[sy],
                   [max(s["modes"][f"{sy}/{m}"]["p50_us"], 0.5) for m in modes]
                   + [max(s["modes"][f"{sy}/{m}"]["p99_us"], 0.5) for m in modes])
                  for sy in SYSTEMS], p, note="0 µs drawn as 0.5")
        paths.append(p)
    writers = sorted({int(k.rsplit("/", 1)[1]) for k in s["modes"] if "/wmix/" in k})
    if len(writers) > 1:
        p = stem + "-writers.svg"
        svg_chart("Durable updates/s vs writers (wmix, medians)", "commits/s", writers,
                  [(LABEL[sy], COLOR[sy], False,
                    [s["modes"][f"{sy}/wmix/{c}"]["rate"] for c in writers]) for sy in SYSTEMS],
                  [("raw fdatasync rate (one writer)", s["raw_sync"])], p)
        paths.append(p)
        p = stem + "-writers-latency.svg"
        svg_chart("Durable update latency vs writers (wmix, medians)", "µs", writers,
                  [(f"{LABEL[sy]} {pc}", COLOR[sy], pc == "p99",
                    [max(s["modes"][f"{sy}/wmix/{c}"][f"{pc}_us"], 1) for c in writers])
                   for sy in SYSTEMS for pc in ("p50", "p99")],
                  [], p)
        paths.append(p)
    return paths


def check(results_path, baseline_path):
    """The gate: every ratio of the baseline must be ≥ baseline × (1 − tolerance) and
    ≥ its floor; the crash leg must have lost nothing. Returns the breaches."""
    with open(results_path) as f:
        res = json.load(f)
    with open(baseline_path) as f:
        base = json.load(f)
    bad = []
    ratios = res["summary"]["ratios"]
    for name, b in base["ratios"].items():
        got = ratios.get(name)
        if got is None:
            bad.append(f"{name}: missing from {results_path}")
            continue
        need = max(b["baseline"] * (1 - b["tolerance"]), b.get("floor", 0))
        verdict = "ok" if got["median"] >= need else "BREACH"
        print(f"gate {name:28} {got['median']:8.2f} (baseline {b['baseline']:.2f}, "
              f"needs ≥ {need:.2f}) {verdict}")
        if verdict != "ok":
            bad.append(f"{name}: {got['median']:.2f} < {need:.2f} (baseline "
                       f"{b['baseline']:.2f}, tolerance {b['tolerance']:.0%})")
    for sy, c in res.get("crash", {}).items():
        if not c["ok"]:
            bad.append(f"crash leg: {sy} lost acknowledged data ({c})")
    return bad


def build(b):
    if not os.path.exists(b.wo):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    if "SQLITE_PEER" not in os.environ:
        subprocess.run(["cargo", "build", "--release", "--quiet"],
                       cwd=os.path.join(HERE, "dbbench/sqlite"), check=True)
    if not os.path.exists("/usr/bin/time"):
        print("run.py: installing GNU time (apt-get install -y time)", file=sys.stderr)
        apt_install("time")
    if shutil.which(b.tarantool) is None:
        print("run.py: installing tarantool (apt-get install -y tarantool)", file=sys.stderr)
        apt_install("tarantool")


def apt_install(package):
    """apt-get install, then update and install, waiting up to 2 minutes for the lock
    another apt-get holds (a second CI run on the machine), as .ci/run does."""
    apt = "apt-get -o DPkg::Lock::Timeout=120"
    subprocess.run(f"{apt} install -y {package} >/dev/null || ({apt} update >/dev/null"
                   f" && {apt} install -y {package} >/dev/null)", shell=True, check=True)


def version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, 3 repetitions")
    ap.add_argument("--dir", default=os.path.join(ROOT, "target/bench-db"),
                    help="work directory, on a real disk")
    ap.add_argument("--out", help="results stem (default bench/results/dbbench[-quick])")
    ap.add_argument("--legs", default="ram,durable,crash,memory,boot")
    ap.add_argument("--check", nargs="?", const="", metavar="RESULTS",
                    help="gate RESULTS (or this run's results) against bench/baseline.json")
    ap.add_argument("--baseline", default=os.path.join(HERE, "baseline.json"))
    a = ap.parse_args()
    if a.check:
        bad = check(a.check, a.baseline)
        for x in bad:
            print(f"run.py: regression: {x}", file=sys.stderr)
        sys.exit(1 if bad else 0)
    b = Bench(a)
    os.makedirs(a.dir, exist_ok=True)
    refuse_tmpfs(a.dir, "run.py")
    build(b)
    # a quick run (CI's gate) leaves the tree clean; a full one is published
    stem = a.out or (os.path.join(a.dir, "dbbench-quick") if a.quick
                     else os.path.join(HERE, "results", "dbbench"))
    t_start = time.time()

    def log(msg):
        print(f"[{time.time() - t_start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    legs = a.legs.split(",")
    raw = {}
    res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "quick": a.quick, "machine": platform.node(), "cpus": os.cpu_count(),
           "versions": {"wo": version([b.wo, "--version"]),
                        "sqlite": "rusqlite 0.43 (bundled SQLite)",
                        "tarantool": version([b.tarantool, "--version"])},
           "command": "python3 bench/run.py" + (" --quick" if a.quick else "")}
    if "ram" in legs:
        raw.update(ram_leg(b, log))
    if "durable" in legs:
        raw.update(durable_leg(b, log))
    if "crash" in legs:
        res["crash"] = crash_leg(b, log)
    if "memory" in legs:
        res["memory"] = memory_leg(b, log)
    if "boot" in legs:
        res["boot"] = boot_leg(b, log)
    res["raw"] = raw
    res["summary"] = summarize(raw)
    res["seconds"] = round(time.time() - t_start, 1)
    os.makedirs(os.path.dirname(stem), exist_ok=True)
    with open(stem + ".json", "w") as f:
        json.dump(res, f, indent=1)
    print(table(res["summary"]))
    if "raw_sync" in res["summary"]:
        print(f"\nraw fdatasync rate of {a.dir}: {res['summary']['raw_sync']:.0f}/s")
    svgs = [] if a.quick else charts(res, stem)
    print(f"\nresults: {stem}.json {' '.join(svgs)} ({res['seconds']} s)")
    if a.check is not None:
        bad = check(stem + ".json", a.baseline)
        for x in bad:
            print(f"run.py: regression: {x}", file=sys.stderr)
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
