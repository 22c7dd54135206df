#!/usr/bin/env python3
"""Fair primary-key benchmark harness (called by run.sh after it has built
`wo` and the SQLite peer).

1. Runs both programs once and refuses to go on unless their `check …` lines
   (row counts and checksums after every phase) are identical.
2. Runs ROUNDS interleaved rounds. Each round runs wo, SQLite (autocommit, the
   default) and SQLite with each phase in one explicit transaction (the
   documented second variant), rotating and reversing the order between
   rounds so no program always goes first. The `check` lines are verified on
   every run.
3. Per phase: the median ops/s of each program (as timed inside the program)
   and the median of the per-round paired ratios wo/SQLite (min–max).
4. Memory: peak RSS (`/usr/bin/time -f %M`) of each program keeping N_MEM
   Person rows alive, minus the peak RSS of the same program with 0 rows,
   divided by N_MEM; median of MEM_RUNS runs.
Writes a Markdown report (results.md) and prints it.
"""
import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

PHASES = [
    # name, description, what one "op" is
    ("insert", "INSERT one Person row", "row"),
    ("read", "point read by id, 3 columns (wo: kept handle)", "row"),
    ("read_find", "point read by id, 3 columns (wo: `Person.find(id)`)", "row"),
    ("update", "UPDATE one column by id", "row"),
    ("delete", "DELETE by id", "row"),
    ("eq_insert", "INSERT into the indexed `Item` table", "row"),
    ("eq_query", "`from x in Item where x.k == key select x` (10 rows)", "query"),
    ("eq_count", "`count(from x in Item where x.k == key select x)`", "query"),
    ("eq_update", "`for x in <eq query> { x.v += 1 }` (10 rows)", "query"),
]
TARGET = 2.0
TOOLS = ["wo", "sqlite", "sqlite_txn"]


def cmd(tool, args, n, mode=None):
    if tool == "wo":
        argv = [args.wo, "run", os.path.join(HERE, "fair_pk.wo"), "--", str(n)]
    else:
        argv = [args.sqlite, str(n)]
    if tool == "sqlite_txn":
        argv.append("txn")
    elif mode:
        argv.append(mode)
    return argv


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(argv)}\n{p.stderr}")
    ops, checks = {}, []
    for line in p.stdout.splitlines():
        if line.startswith("check "):
            checks.append(line)
        elif line.strip():
            k, v = line.split()
            ops[k] = int(v)
    return ops, checks


def peak_rss_kb(argv):
    p = subprocess.run(["/usr/bin/time", "-f", "RSS_KB %M"] + argv,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(argv)}\n{p.stderr}")
    for line in p.stderr.splitlines():
        if line.startswith("RSS_KB "):
            return int(line.split()[1]), p.stdout.strip()
    sys.exit("no RSS line from /usr/bin/time")


def order(r):
    k = r % len(TOOLS)
    o = TOOLS[k:] + TOOLS[:k]
    return o if (r // len(TOOLS)) % 2 == 0 else o[::-1]


def fmt_ops(x):
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    return f"{x / 1e3:.0f}k"


def fmt_ratio(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wo", required=True)
    ap.add_argument("--sqlite", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n-mem", type=int, default=1_000_000)
    ap.add_argument("--mem-runs", type=int, default=3)
    ap.add_argument("--commit", default="?")
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"))
    args = ap.parse_args()
    n = args.n

    # 1. agreement
    _, ref = run(cmd("sqlite", args, n))
    for t in TOOLS:
        _, c = run(cmd(t, args, n))
        if c != ref:
            sys.exit(f"{t} disagrees with sqlite:\n" + "\n".join(c) + "\n--- vs ---\n" + "\n".join(ref))
    print(f"checks agree ({len(ref)} lines):", *ref, sep="\n  ", file=sys.stderr)

    # 2. interleaved rounds
    res = {t: {p: [] for p, _, _ in PHASES} for t in TOOLS}
    for r in range(args.rounds):
        o = order(r)
        for t in o:
            ops, c = run(cmd(t, args, n))
            if c != ref:
                sys.exit(f"{t}: checks changed in round {r}")
            for p, _, _ in PHASES:
                res[t][p].append(ops[p])
        print(f"round {r + 1}/{args.rounds} ({' '.join(o)}): "
              + " ".join(f"{p}={res['wo'][p][-1] / res['sqlite'][p][-1]:.2f}" for p, _, _ in PHASES),
              file=sys.stderr)

    # 3. memory
    mem = {}
    for tool in ["wo", "sqlite"]:
        base, full = [], []
        for _ in range(args.mem_runs):
            b, out0 = peak_rss_kb(cmd(tool, args, 0, "mem"))
            f, out1 = peak_rss_kb(cmd(tool, args, args.n_mem, "mem"))
            if out0 != "rows 0" or out1 != f"rows {args.n_mem}":
                sys.exit(f"{tool} mem mode printed {out0!r} / {out1!r}")
            base.append(b)
            full.append(f)
        b, f = statistics.median(base), statistics.median(full)
        mem[tool] = (b, f, (f - b) * 1024 / args.n_mem)

    # 4. report
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    L = []
    L.append(f"# Fair primary-key benchmark — wo vs SQLite `:memory:`\n")
    L.append(f"Generated by `bash bench/fair_pk/run.sh` on {now}. Machine: "
             f"{os.cpu_count()} vCPU ({cpu}), Linux {platform.release()}. "
             f"wo release build at commit `{args.commit}` (plus uncommitted work in the tree); "
             f"SQLite via rusqlite 0.43 `bundled`, prepared statements. "
             f"N = {n:,} rows; {args.rounds} interleaved rounds.\n")
    L.append("| phase | one op | wo ops/s | SQLite ops/s | wo/SQLite | SQLite txn ops/s | wo/SQLite-txn | target | met? |")
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    met_all = True
    for p, desc, unit in PHASES:
        ratio = [w / s for w, s in zip(res["wo"][p], res["sqlite"][p])]
        ratio_t = [w / s for w, s in zip(res["wo"][p], res["sqlite_txn"][p])]
        m = statistics.median(ratio)
        ok = m >= TARGET
        met_all &= ok
        L.append(f"| `{p}`: {desc} | {unit} | {fmt_ops(statistics.median(res['wo'][p]))} "
                 f"| {fmt_ops(statistics.median(res['sqlite'][p]))} | {fmt_ratio(ratio)} "
                 f"| {fmt_ops(statistics.median(res['sqlite_txn'][p]))} | {fmt_ratio(ratio_t)} "
                 f"| ≥ {TARGET:g}× SQLite | {'**met**' if ok else '**not met**'} ({m:.2f}×) |")
    L.append("")
    L.append("Ratios: median of the per-round paired ratios wo/SQLite (min–max over the rounds); "
             "above 1 means wo is faster. \"SQLite\" runs every statement in autocommit mode "
             "(no explicit transaction, the default); \"SQLite txn\" wraps each phase's loop in "
             "one `BEGIN … COMMIT` (the second variant, for information; the target is judged "
             "against the default).\n")
    L.append(f"Overall: every phase ≥ {TARGET:g}× SQLite — **{'met' if met_all else 'not met'}**.\n")
    L.append(f"### Memory (peak RSS, {args.n_mem:,} `Person` rows kept alive)\n")
    L.append("| program | empty run | with rows | bytes/row |")
    L.append("| --- | ---: | ---: | ---: |")
    for tool, label in [("wo", "wo"), ("sqlite", "SQLite `:memory:`")]:
        b, f, per = mem[tool]
        L.append(f"| {label} | {b / 1024:.1f} MiB | {f / 1024:.1f} MiB | {per:.0f} |")
    L.append("")
    L.append(f"Bytes/row = (peak RSS with rows − peak RSS of the same program with 0 rows) / rows, "
             f"`/usr/bin/time -f %M`, median of {args.mem_runs} runs. Rows are "
             f"`name: \"person<i>\"` (7–12 bytes), `age: Int`, `score: Float`, inserted one by one "
             f"and kept until exit; wo ratio to SQLite: {mem['wo'][2] / mem['sqlite'][2]:.2f}×.\n")
    text = "\n".join(L)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
