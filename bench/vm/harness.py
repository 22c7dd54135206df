#!/usr/bin/env python3
"""VM benchmark harness (called by run.sh after it has built `wo`).

For each workload: check that the wo, Lua and CPython programs print the same
output, then time them interleaved (every round runs all three, rotating and
reversing the order so no tool always goes first), and report the median wall
time per tool and the median of the per-round time ratios wo/Lua and
wo/CPython (below 1 means wo is faster). Each program is written the way users
of its language write it (Lua numeric `for`, Python `for … in range`, wo
`range` loops and interpolation). With --callgrind, each wo program (and its
Lua twin) also runs once under `valgrind --tool=callgrind` for its instruction
count and the number of bytecode instructions wo executed (the count of the
interpreter's dispatch jump), which give instructions and nanoseconds per
bytecode instruction. Writes results.md and results.svg next to this file.
"""
import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name, description, (peer, the most wo/peer may be), what the loop iterates
WORKLOADS = [
    ("fib", "fib(30), naive recursion", ("lua", 1.0), 2_692_537),
    ("loop", "10M-iteration Int `range` loop", ("lua", 1.0), 10_000_000),
    ("methods", "3M iterations of three small method calls on an object", ("lua", 1.0), 3_000_000),
    ("tree", "build, walk and drop 20 binary trees of depth 16", ("lua", 1.0), 20 * 131_071),
    ("nbody", "n-body, 5 bodies, 200k steps (Float fields, sqrt)", ("lua", 1.0), 200_000 * 10),
    ("particles", "1000 particles x 1000 steps with a Vec class", ("lua", 1.0), 1_000_000),
    ("strings", "1M pieces `text(i % 10)` pushed, then joined", ("py", 0.5), 1_000_000),
    ("interp", "1M pieces by interpolation `\"item${i},\"`, then joined", ("py", 0.5), 1_000_000),
    ("concat", "1M pieces by `..` (`\"k\" .. text(i) .. \";\"`), then joined", ("py", 0.5), 1_000_000),
    ("wordfreq", "word frequency over a 10 MB text (split, map)", ("py", 0.5), 1_361_616),
    ("sort", "sort 1M pseudo-random Ints", ("py", 0.5), 1_000_000),
    ("maps", "1M Text-key map inserts + 1M lookups", ("py", 0.5), 2_000_000),
    ("textwalk", "walk a 1 MB ASCII text by position (`len`, `substr(t, i, 1)`)", ("lua", 1.0), 1_000_000),
    ("textwalk_mixed", "the same with one `é` at the end (not all ASCII)", ("lua", 1.0), 1_000_001),
    ("charwalk", "walk a 10 MB ASCII text by character (`for c in t`)", ("py", 0.5), 10_000_000),
]
TOOLS = ["wo", "lua", "py"]
NAMES = {"wo": "wo", "lua": "Lua 5.4", "py": "CPython"}


def data_file():
    """The wordfreq input, generated once (deterministic bytes) under target/."""
    path = os.path.join(ROOT, "target", "bench-data", "words-10mb.txt")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(HERE, "gen_words.py"), path], check=True)
    return path


def cmd(tool, args, name):
    extra = [data_file()] if name == "wordfreq" else []
    if tool == "wo":
        return [args.wo, "run", os.path.join(HERE, name + ".wo")] + (["--"] + extra if extra else [])
    if tool == "lua":
        return [args.lua, os.path.join(HERE, name + ".lua")] + extra
    return [args.python, os.path.join(HERE, name + ".py")] + extra


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


# --- callgrind: instructions, and bytecode instructions from the dispatch jump ---

def dispatch_addresses(binary):
    """Addresses of the indirect jumps inside `Vm::exec` (the opcode dispatch)."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", binary],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
    out, inside = set(), False
    for line in dis.splitlines():
        if line.endswith(">:"):
            inside = "wo_vm::interp::Vm::exec" in line
            continue
        if inside:
            m = re.match(r"\s*([0-9a-f]+):\s+jmp\s+\*%r", line)
            if m:
                out.add(int(m.group(1), 16))
    return out


def callgrind(argv, jumps=None):
    """(total instructions, executions of the busiest address in `jumps`)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
                        f"--callgrind-out-file={out}"] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        total, counts, addr, skip = 0, {}, 0, False
        with open(out) as f:
            for line in f:
                if line.startswith("summary:"):
                    total = int(line.split()[1])
                if line.startswith("calls="):
                    skip = True
                    continue
                c = line[:1]
                if not (c in "+-*" or line.startswith("0x")):
                    continue
                parts = line.split()
                a = parts[0]
                if a.startswith("0x"):
                    addr = int(a, 16)
                elif a[0] == "+":
                    addr += int(a[1:])
                elif a[0] == "-":
                    addr -= int(a[1:])
                if skip:
                    skip = False
                    continue
                if jumps and addr in jumps and len(parts) >= 3:
                    counts[addr] = counts.get(addr, 0) + int(parts[2])
        return total, max(counts.values()) if counts else 0


# --- the chart ---

def svg_chart(rows, path):
    """Horizontal bars: wo's time as a fraction of each peer's, target marked."""
    bar_h, gap, left, width = 13, 10, 300, 440
    xmax = max(2.0, max(max(statistics.median(r["ratios"][p]) for p in ("lua", "py")) for r in rows))
    xmax = min(xmax, 4.0)
    h = 60 + len(rows) * (2 * bar_h + gap) + 40
    scale = width / xmax
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{h}" '
         f'font-family="sans-serif" font-size="12">',
         f'<text x="10" y="20" font-size="14" font-weight="bold">wo time / peer time '
         f'(median of paired ratios; left of 1.0 = wo faster)</text>']
    y = 45
    for i in range(int(xmax / 0.5) + 1):
        x = left + i * 0.5 * scale
        o.append(f'<line x1="{x:.1f}" y1="{y - 8}" x2="{x:.1f}" y2="{h - 35}" stroke="#ddd"/>')
        o.append(f'<text x="{x:.1f}" y="{h - 20}" text-anchor="middle">{i * 0.5:g}</text>')
    x1 = left + scale
    o.append(f'<line x1="{x1:.1f}" y1="{y - 8}" x2="{x1:.1f}" y2="{h - 35}" stroke="#444"/>')
    for r in rows:
        peer, want = r["target"]
        o.append(f'<text x="{left - 8}" y="{y + bar_h + 4}" text-anchor="end">{r["name"]}</text>')
        for k, (p, color) in enumerate((("lua", "#1f77b4"), ("py", "#ff7f0e"))):
            v = statistics.median(r["ratios"][p])
            w = min(v, xmax) * scale
            yy = y + k * bar_h
            o.append(f'<rect x="{left}" y="{yy}" width="{w:.1f}" height="{bar_h - 2}" fill="{color}"/>')
            o.append(f'<text x="{left + w + 4:.1f}" y="{yy + bar_h - 3}" font-size="10">'
                     f'{v:.2f}{" ›" if v > xmax else ""}</text>')
            if p == peer:
                xt = left + want * scale
                o.append(f'<line x1="{xt:.1f}" y1="{yy - 1}" x2="{xt:.1f}" y2="{yy + bar_h - 1}" '
                         f'stroke="#d62728" stroke-width="3"/>')
        y += 2 * bar_h + gap
    o.append(f'<rect x="10" y="{h - 14}" width="10" height="10" fill="#1f77b4"/>'
             f'<text x="24" y="{h - 5}">vs Lua 5.4</text>'
             f'<rect x="110" y="{h - 14}" width="10" height="10" fill="#ff7f0e"/>'
             f'<text x="124" y="{h - 5}">vs CPython (Debian)</text>'
             f'<rect x="270" y="{h - 12}" width="3" height="10" fill="#d62728"/>'
             f'<text x="278" y="{h - 5}">target</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wo", required=True)
    ap.add_argument("--lua", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"))
    args = ap.parse_args()
    workloads = [w for w in WORKLOADS if not args.only or w[0] in args.only.split(",")]

    # 1. every workload prints the same output in every language
    expected = {}
    for name, *_ in workloads + [("empty",)]:
        outs = {t: run_once(cmd(t, args, name))[1] for t in TOOLS}
        if len(set(outs.values())) != 1:
            msg = "\n".join(f"  {t}: {outs[t]!r}" for t in TOOLS)
            sys.exit(f"OUTPUT MISMATCH in workload {name}:\n{msg}")
        expected[name] = outs["wo"]
        print(f"ok  {name:9} all print {outs['wo'].strip() or '(nothing)'}", file=sys.stderr)

    # 2. interleaved timing
    rows = []
    for name, desc, target, iters in workloads:
        times = {t: [] for t in TOOLS}
        for r in range(args.rounds):
            for t in order(r):
                dt, out = run_once(cmd(t, args, name))
                if out != expected[name]:
                    sys.exit(f"OUTPUT CHANGED in {name}/{t}: {out!r}")
                times[t].append(dt)
        ratios = {p: [a / b for a, b in zip(times["wo"], times[p])] for p in ("lua", "py")}
        rows.append(dict(name=name, desc=desc, target=target, iters=iters, times=times,
                         ratios=ratios))
        print(f"... {name}: wo {fmt_ms(statistics.median(times['wo']))} ms, "
              f"wo/lua {fmt_ratio(ratios['lua'])}, wo/py {fmt_ratio(ratios['py'])}",
              file=sys.stderr)

    # 3. empty program, plus the process-spawn floor
    n_empty = max(21, 3 * args.rounds)
    et = {t: [] for t in TOOLS + ["true"]}
    for r in range(n_empty):
        for t in order(r) + ["true"]:
            argv = ["/bin/true"] if t == "true" else cmd(t, args, "empty")
            et[t].append(run_once(argv)[0])
    empty_ms = statistics.median(et["wo"]) * 1000

    # 4. instruction counts
    if args.callgrind:
        jumps = dispatch_addresses(args.wo)
        # The Lua-class workloads only: their cost is the interpreter's, and the text
        # workloads' peers would take many minutes under valgrind.
        for row in (r for r in rows if r["target"][0] == "lua"):
            ir, ops = callgrind(cmd("wo", args, row["name"]), jumps)
            lua_ir, _ = callgrind(cmd("lua", args, row["name"]))
            row.update(ir=ir, ops=ops, lua_ir=lua_ir)
            print(f"... callgrind {row['name']}: {ir:,} instructions, {ops:,} bytecodes, "
                  f"Lua {lua_ir:,}", file=sys.stderr)

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
             f"`bash bench/vm/run.sh{' --callgrind' if args.callgrind else ''}` "
             f"({args.rounds} interleaved rounds per workload).")
    L.append("")
    L.append(f"- machine: {os.cpu_count()} vCPU (`nproc` = {len(os.sched_getaffinity(0))}), "
             f"{cpu}, {platform.system()} {platform.release()}; load average at the end "
             f"{os.getloadavg()[0]:.1f}")
    L.append(f"- wo: {ver([args.wo, '--version'])}, release build, commit {rev}")
    L.append(f"- Lua: {ver([args.lua, '-v']).split('  ')[0]} (`{args.lua}`)")
    L.append(f"- Python: {ver([args.python, '--version'])} (`{args.python}`, Debian's package)")
    L.append("")
    L.append("Times are medians of wall time per process (startup included). Ratios are "
             "the median of the per-round time ratios wo/peer, with min–max over the rounds; "
             "below 1 means wo is faster. Targets: Lua-class workloads (calls, loops, "
             "arithmetic, objects) at most 1.0× Lua 5.4's time; text, list and map "
             "workloads at most 0.5× CPython's time.")
    L.append("")
    L.append("| workload | wo ms | Lua 5.4 ms | CPython ms | wo/Lua | wo/CPython | target | met? |")
    L.append("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        med_t = {t: fmt_ms(statistics.median(r["times"][t])) for t in TOOLS}
        peer, want = r["target"]
        med = statistics.median(r["ratios"][peer])
        tgt = f"wo/{'Lua' if peer == 'lua' else 'CPython'} ≤ {want:g}"
        ok = "**met**" if med <= want else "**not met**"
        L.append(f"| {r['name']}: {r['desc']} | {med_t['wo']} | {med_t['lua']} | {med_t['py']} | "
                 f"{fmt_ratio(r['ratios']['lua'])} | {fmt_ratio(r['ratios']['py'])} | {tgt} | "
                 f"{ok} ({med:.2f}) |")
    e_ratio = {p: [a / b for a, b in zip(et["wo"], et[p])] for p in ("lua", "py")}
    L.append(f"| empty: `wo run` of an empty `main` | {empty_ms:.1f} | "
             f"{fmt_ms(statistics.median(et['lua']))} | {fmt_ms(statistics.median(et['py']))} | "
             f"{fmt_ratio(e_ratio['lua'])} | {fmt_ratio(e_ratio['py'])} | < 5 ms | "
             f"{'**met**' if empty_ms < 5 else '**not met**'} ({empty_ms:.1f} ms) |")
    L.append("")
    L.append(f"- process-spawn floor (`/bin/true` from the same harness): "
             f"{statistics.median(et['true']) * 1000:.2f} ms median ({n_empty} runs).")
    if args.callgrind:
        L.append("")
        L.append("Instruction counts of the Lua-class workloads (callgrind, whole process). "
                 "*Bytecodes* is the number of "
                 "wo instructions executed (the count of the dispatch jump), per iteration of "
                 "the workload's loop; ns per bytecode divides wo's median time by it.")
        L.append("")
        L.append("| workload | wo instructions | Lua instructions | wo/Lua | bytecodes | "
                 "bytecodes/iteration | instructions/bytecode | ns/bytecode |")
        L.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in (r for r in rows if "ir" in r):
            ops = max(r["ops"], 1)
            L.append(f"| {r['name']} | {r['ir'] / 1e6:,.0f}M | {r['lua_ir'] / 1e6:,.0f}M | "
                     f"{r['ir'] / r['lua_ir']:.2f} | {ops / 1e6:,.1f}M | "
                     f"{ops / r['iters']:.1f} | {r['ir'] / ops:.0f} | "
                     f"{statistics.median(r['times']['wo']) * 1e9 / ops:.1f} |")
    text = "\n".join(L) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    svg_chart(rows, os.path.splitext(args.out)[0] + ".svg")
    print(text)


if __name__ == "__main__":
    main()
