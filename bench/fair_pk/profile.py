#!/usr/bin/env python3
"""Instructions per operation for each fair_pk phase, by callgrind difference.

    python3 bench/fair_pk/profile.py [N]        # N defaults to 20000

For every phase it writes a small wo program (the setup the phase needs, then
the phase's loop as in fair_pk.wo) into bench/fair_pk/out/prof/, runs it and
the same program without the phase under `valgrind --tool=callgrind`, and
prints (instructions with − instructions without) / N, plus the functions
(self cost, `callgrind_annotate`) that account for the difference.
Needs valgrind and a release build of wo (cargo build --release).
"""
import collections
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WO = os.path.join(ROOT, "target", "release", "wo")
OUT = os.path.join(HERE, "out", "prof")

HDR = '''@table class Person {
  name: Text
  age: Int
  score: Float
}
@table(index: [k])
class Item {
  k: Int
  v: Int
}
fn main(args: multi Text) -> Int {
  let n = parse_int(args[0]) ?? 20000
  let names: multi Text = []
  let i = 0
  while i < n {
    push(names, "person${i}")
    i += 1
  }
  let people: multi Person = []
  let keys = max(n / 10, 1)
  let q = n
  let s = 0
  let sf = 0.0
'''
TAIL = '''  print(s)
  print(sf)
  return 0
}
'''
INS = '''  i = 0
  while i < n {
    push(people, insert Person { name: names[i], age: i % 100, score: float(i) * 0.5 })
    i += 1
  }
'''
READ = '''  for p in people {
    s += len(p.name)
    s += p.age
    sf += p.score
  }
'''
READ_FIND = '''  let id = 1
  while id <= n {
    let r = Person.find(id)
    if r != nil {
      s += len(r.name)
      s += r.age
      sf += r.score
    }
    id += 1
  }
'''
UPDATE = '''  i = 0
  for p in people {
    p.age = i % 50 + 1
    i += 1
  }
'''
DELETE = '''  for p in people {
    delete p
  }
'''
EQ_INS = '''  i = 0
  while i < n {
    insert Item { k: i % keys, v: i % 7 }
    i += 1
  }
'''
EQ_QUERY = '''  let j = 0
  while j < q {
    let key = j % keys
    let got = from x in Item where x.k == key select x
    s += len(got)
    if len(got) > 0 {
      s += got[0].id
    }
    j += 1
  }
'''
EQ_COUNT = '''  let j = 0
  while j < q {
    let key = j % keys
    s += count(from x in Item where x.k == key select x)
    j += 1
  }
'''
EQ_UPDATE = '''  let j = 0
  while j < q {
    let key = j % keys
    for x in from x in Item where x.k == key select x {
      x.v += 1
    }
    j += 1
  }
'''
PROGRAMS = {
    "base": "", "ins": INS, "read": INS + READ, "read_find": INS + READ_FIND,
    "update": INS + UPDATE, "delete": INS + DELETE, "eqins": EQ_INS,
    "eq_query": EQ_INS + EQ_QUERY, "eq_count": EQ_INS + EQ_COUNT,
    "eq_update": EQ_INS + EQ_UPDATE,
}
# phase: (program with the phase, program without it)
PHASES = [
    ("insert", "ins", "base"), ("read", "read", "ins"), ("read_find", "read_find", "ins"),
    ("update", "update", "ins"), ("delete", "delete", "ins"), ("eq_insert", "eqins", "base"),
    ("eq_query", "eq_query", "eqins"), ("eq_count", "eq_count", "eqins"),
    ("eq_update", "eq_update", "eqins"),
]


def profile(name, n):
    src = os.path.join(OUT, name + ".wo")
    with open(src, "w") as f:
        f.write(HDR + PROGRAMS[name] + TAIL)
    cg = os.path.join(OUT, name + ".cg")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", WO, "run", src,
                    "--", str(n)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", cg],
                         capture_output=True, text=True, check=True).stdout
    d = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            fn = re.sub(r" \[.*\]$", "", m.group(2))
            fn = re.sub(r"/rustc/[0-9a-f]+/library/", "", fn).replace(ROOT + "/", "")
            d[fn] += int(m.group(1).replace(",", ""))
    return d


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    os.makedirs(OUT, exist_ok=True)
    prof = {name: profile(name, n) for name in PROGRAMS}
    for phase, with_, without in PHASES:
        a, b = prof[without], prof[with_]
        tot = sum(b.values()) - sum(a.values())
        print(f"\n=== {phase}: {tot / n:,.0f} instructions per op")
        rows = sorted(((b[k] - a[k], k) for k in set(a) | set(b)), reverse=True)
        for diff, fn in rows[:12]:
            if diff <= 0:
                break
            print(f"  {diff / n:8.1f}/op {100 * diff / tot:5.1f} %  {fn[-120:]}")


if __name__ == "__main__":
    main()
