#!/usr/bin/env bash
# Group-commit benchmark: durable commits/s and commit latency of wo with 1..256
# writer fibers against SQLite (WAL, synchronous=FULL, one thread per writer) and
# Tarantool 2.x (memtx, wal_mode='fsync', one fiber per writer), the raw fdatasync
# rate of the same disk, and a reader's latency while 16 fibers commit; all in one
# run, interleaved. Results: docs/performance.md, "Group commit".
#
#   bench/groupcommit/run.sh [--quick] [WORKDIR]     (default: target/bench-groupcommit)
#
# Full: 5 repetitions of 1 s per measurement, then one pass counting syscalls with
# `perf stat` (~5 min). --quick: 1 repetition of 300 ms (~1 min). Env: WO (the
# binary; default target/release/wo, built if missing), REPS, MS (override either
# mode), WRITERS (default 1,4,16,64,256). Also, apart (not a durable figure): a
# commit's cost when the sync is free (the data directory on tmpfs, /dev/shm).
# Writes bench/results/groupcommit.json (--quick: groupcommit-quick.json) and the
# charts beside it (-throughput.svg, -latency.svg).
# WORKDIR must be on a real disk: tmpfs makes fdatasync free, so it is refused.
set -euo pipefail
cd "$(dirname "$0")/../.."
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
work=${1:-target/bench-groupcommit}
wo=${WO:-target/release/wo}
if [ ! -x "$wo" ]; then
  cargo build --release
fi
(cd bench/groupcommit/sqlite && cargo build --release --quiet)
if ! command -v tarantool >/dev/null; then
  echo "run.sh: installing tarantool (apt-get install -y tarantool)" >&2
  apt-get install -y tarantool >/dev/null || { apt-get update >/dev/null && apt-get install -y tarantool >/dev/null; }
fi
mkdir -p "$work"
fs=$(stat -f -c %T "$work")
case "$fs" in
  tmpfs | ramfs)
    echo "run.sh: $work is on $fs, where fdatasync is free; use a directory on a real disk" >&2
    exit 64
    ;;
esac
# The sync-free cost of a commit (CPU and log-thread hand-off only) is measured on
# tmpfs, /dev/shm, when there is one; it is reported apart, never as a durable rate.
free=""
if [ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
  free=/dev/shm/wo-bench-groupcommit
  mkdir -p "$free"
fi
if [ $quick = 1 ]; then
  reps=${REPS:-1} ms=${MS:-300} raw_s=0.2 out=bench/results/groupcommit-quick
else
  reps=${REPS:-5} ms=${MS:-1000} raw_s=0.5 out=bench/results/groupcommit
fi
status=0
python3 bench/groupcommit/bench.py --wo "$wo" \
  --sqlite bench/groupcommit/sqlite/target/release/groupcommit_sqlite \
  --dir "$work" --reps "$reps" --ms "$ms" --raw-s "$raw_s" \
  --writers "${WRITERS:-1,4,16,64,256}" --syscalls --free-dir "$free" --out "$out" || status=$?
[ -n "$free" ] && rm -rf "$free"
exit $status
