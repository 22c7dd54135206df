#!/usr/bin/env bash
# Rebuilds the raw seed corpora of the fuzz targets from the repository's own inputs
# (docs/fuzzing.md): tests/programs, tests/compile_fail, tests/durability and samples.
# Usage: fuzz/seeds.sh WO_BINARY OUT_DIR  -- writes OUT_DIR/{compile,image,datadir,fmt,repl}/.
# The checked-in fuzz/corpus/<target>/ is this, minimized by `run.sh --merge`.
set -euo pipefail
wo="$(realpath "$1")"
out="$(realpath -m "$2")"
cd "$(dirname "$0")/.."
mkdir -p "$out/compile" "$out/image" "$out/datadir" "$out/fmt" "$out/repl"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
progs=(tests/programs/*.wo tests/compile_fail/*.wo tests/durability/*.wo samples/*.wo samples/ledger/*.wo)
for f in "${progs[@]}"; do
  name="$(basename "$(dirname "$f")")_$(basename "$f" .wo)"
  cp "$f" "$out/compile/$name.wo"
  cp "$f" "$out/fmt/$name.wo"
  cp "$f" "$out/repl/$name.wo"
  if "$wo" build "$f" -o "$tmp/$name.wob" >/dev/null 2>&1; then
    cp "$tmp/$name.wob" "$out/image/$name.wob"
  fi
done
# A data directory per program with tables: its log (preallocated zeros cut off) and,
# after `wo db checkpoint` and a second run, a checkpoint with a new log generation.
strip_zeros() { python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); sys.stdout.buffer.write(d.rstrip(b"\0"))' "$1"; }
join() { # wal checkpoint -> [u32 LE len][wal][checkpoint]
  python3 -c 'import sys,struct
w=open(sys.argv[1],"rb").read() if sys.argv[1]!="-" else b""
c=open(sys.argv[2],"rb").read() if sys.argv[2]!="-" else b""
sys.stdout.buffer.write(struct.pack("<I",len(w))+w+c)' "$1" "$2"
}
for f in "${progs[@]}"; do
  grep -q '@table' "$f" || continue
  name="$(basename "$(dirname "$f")")_$(basename "$f" .wo)"
  d="$tmp/d_$name"
  timeout 10 "$wo" run "$f" --data "$d" -- fill 3 >/dev/null 2>&1 || true
  [ -f "$d/wal" ] || continue
  strip_zeros "$d/wal" >"$tmp/wal"
  join "$tmp/wal" - >"$out/datadir/$name.log"
  if timeout 10 "$wo" db checkpoint "$d" >/dev/null 2>&1; then
    timeout 10 "$wo" run "$f" --data "$d" -- fill 2 >/dev/null 2>&1 || true
    strip_zeros "$d/wal" >"$tmp/wal"
    join "$tmp/wal" "$d/checkpoint" >"$out/datadir/$name.ckpt"
  fi
done
ls "$out"/* | wc -l
