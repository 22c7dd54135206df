#!/usr/bin/env python3
"""VM benchmark harness (called by run.sh after it has built `wo`).

For each workload: check that the wo, Lua and CPython programs print the same
checksum, then time them interleaved (every round runs all three, rotating and
reversing the order so no tool always goes first), and report the median wall
time per tool and the median of the per-round ratios Lua/wo and CPython/wo.
Wall time is measured around subprocess.run with time.perf_counter; the fixed
cost of spawning a process from Python is reported as a floor (/bin/true).
"""
import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

WORKLOADS = [
    # name, description, target: (peer, min ratio peer/wo)
    ("fib", "fib(30), naive recursion", ("lua", 1.0)),
    ("loop", "10M-iteration Int `while` loop", ("lua", 1.0)),
    ("strings", "build a 1M-piece string (list + join)", ("py", 2.0)),
    ("maps", "1M Text-key map inserts + 1M lookups", ("py", 2.0)),
]
TOOLS = ["wo", "lua", "py"]
NAMES = {"wo": "wo", "lua": "Lua 5.4", "py": "CPython"}


def cmd(tool, args, name):
    if tool == "wo":
        return [args.wo, "run", os.path.join(HERE, name + ".wo")]
    if tool == "lua":
        return [args.lua, os.path.join(HERE, name + ".lua")]
    return [args.python, os.path.join(HERE, name + ".py")]


def run_once(argv):
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(argv)}\n{p.stderr.decode()}")
    return dt, p.stdout.decode()


def order(round_no):
    r = round_no % len(TOOLS)
    o = TOOLS[r:] + TOOLS[:r]
    return o if (round_no // len(TOOLS)) % 2 == 0 else o[::-1]


def fmt_ms(s):
    ms = s * 1000
    return f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def fmt_ratio(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wo", required=True)
    ap.add_argument("--lua", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"))
    args = ap.parse_args()

    # 1. every workload prints the same checksum in every language
    expected = {}
    for name, _, _ in WORKLOADS + [("empty", "", None)]:
        outs = {t: run_once(cmd(t, args, name))[1] for t in TOOLS}
        if len(set(outs.values())) != 1:
            msg = "\n".join(f"  {t}: {outs[t]!r}" for t in TOOLS)
            sys.exit(f"OUTPUT MISMATCH in workload {name}:\n{msg}")
        expected[name] = outs["wo"]
        print(f"ok  {name:8} all print {outs['wo'].strip() or '(nothing)'}", file=sys.stderr)

    # 2. interleaved timing
    rows = []
    for name, desc, (peer, want) in WORKLOADS:
        times = {t: [] for t in TOOLS}
        for r in range(args.rounds):
            for t in order(r):
                dt, out = run_once(cmd(t, args, name))
                if out != expected[name]:
                    sys.exit(f"OUTPUT CHANGED in {name}/{t}: {out!r}")
                times[t].append(dt)
        ratios = {p: [a / b for a, b in zip(times[p], times["wo"])] for p in ("lua", "py")}
        med_ratio = statistics.median(ratios[peer])
        rows.append((name, desc, times, ratios, peer, want, med_ratio))
        print(f"... {name}: wo {fmt_ms(statistics.median(times['wo']))} ms, "
              f"lua/wo {fmt_ratio(ratios['lua'])}, py/wo {fmt_ratio(ratios['py'])}", file=sys.stderr)

    # 3. empty program: wo vs lua vs python, plus the process-spawn floor
    n_empty = max(21, 3 * args.rounds)
    et = {t: [] for t in TOOLS + ["true"]}
    for r in range(n_empty):
        for t in order(r) + ["true"]:
            argv = ["/bin/true"] if t == "true" else cmd(t, args, "empty")
            et[t].append(run_once(argv)[0])
    empty_ms = statistics.median(et["wo"]) * 1000

    # 4. compile speed: `wo check` on a generated 50k-line program
    gen_dir = os.path.join(HERE, "out")
    os.makedirs(gen_dir, exist_ok=True)
    big = os.path.join(gen_dir, "big.wo")
    subprocess.run([args.python, os.path.join(HERE, "gen_big.py"), big, "50000"], check=True)
    with open(big) as f:
        src = f.read().splitlines()
    n_lines = len(src)
    n_funcs = sum(1 for line in src if line.startswith("fn "))
    ct = []
    for _ in range(max(7, args.rounds)):
        dt, _ = run_once([args.wo, "check", big])
        ct.append(dt)
    check_s = statistics.median(ct)
    lines_per_s = n_lines / check_s
    # a second run of the big program (compile + run) shows it is a real program
    run_big = run_once([args.wo, "run", big])[1].strip()

    # 5. report
    def ver(argv):
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return p.stdout.decode().strip().splitlines()[0]

    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode().strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.strip()
        rev += " + uncommitted changes" if dirty else ""
    except OSError:
        rev = "?"

    L = []
    L.append(f"Measured {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} with "
             f"`bash bench/vm/run.sh` ({args.rounds} interleaved rounds per workload).")
    L.append("")
    L.append(f"- machine: {os.cpu_count()} vCPU (`nproc` = {len(os.sched_getaffinity(0))}), "
             f"{cpu}, {platform.system()} {platform.release()}")
    L.append(f"- wo: {ver([args.wo, '--version'])}, release build, commit {rev}")
    L.append(f"- peers: {ver([args.lua, '-v']).split('  ')[0]}; CPython {ver([args.python, '--version']).split()[-1]} "
             f"(`{args.python}`)")
    L.append("")
    L.append("Times are medians of wall time per process (startup included). Ratios are "
             "the median of the per-round ratios peer/wo, with min–max over the rounds; "
             "above 1 means wo is faster.")
    L.append("")
    L.append("| workload | wo ms | Lua 5.4 ms | CPython ms | Lua/wo | CPython/wo | target | met? |")
    L.append("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for name, desc, times, ratios, peer, want, med in rows:
        med_t = {t: fmt_ms(statistics.median(times[t])) for t in TOOLS}
        tgt = (f"no slower than Lua (Lua/wo ≥ {want:g})" if peer == "lua"
               else f"≥ {want:g}× faster than CPython")
        ok = "**met**" if med >= want else "**not met**"
        L.append(f"| {name}: {desc} | {med_t['wo']} | {med_t['lua']} | {med_t['py']} | "
                 f"{fmt_ratio(ratios['lua'])} | {fmt_ratio(ratios['py'])} | {tgt} | {ok} ({med:.2f}) |")
    e_ratio = {p: [a / b for a, b in zip(et[p], et["wo"])] for p in ("lua", "py")}
    L.append(f"| empty: `wo run` of an empty `main` | {empty_ms:.1f} | "
             f"{fmt_ms(statistics.median(et['lua']))} | {fmt_ms(statistics.median(et['py']))} | "
             f"{fmt_ratio(e_ratio['lua'])} | {fmt_ratio(e_ratio['py'])} | < 5 ms | "
             f"{'**met**' if empty_ms < 5 else '**not met**'} ({empty_ms:.1f} ms) |")
    L.append("")
    L.append(f"- process-spawn floor (`/bin/true` from the same harness): "
             f"{statistics.median(et['true']) * 1000:.2f} ms median ({n_empty} runs); "
             f"the empty-program times include it.")
    L.append(f"- compile speed: `wo check` on a generated {n_lines}-line program "
             f"(`bench/vm/gen_big.py`: {n_funcs} small functions with arithmetic, ifs, loops, "
             f"lists, maps, a class, calls): median {check_s * 1000:.0f} ms "
             f"(min {min(ct) * 1000:.0f}, max {max(ct) * 1000:.0f}) → "
             f"**{lines_per_s / 1000:.0f}k lines/s** (process startup included). "
             f"`wo run` of it prints {run_big}.")
    text = "\n".join(L) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
