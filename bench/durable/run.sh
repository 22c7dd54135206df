#!/usr/bin/env bash
# Durable-write benchmark: raw fdatasync rate, wo durable INSERT/UPDATE/DELETE
# commits/s, SQLite WAL synchronous=FULL on the same workload (interleaved
# repetitions), then recovery speed (1M-record log) and the checkpoint pause.
# Results: docs/performance.md, "Durability".
#
#   bench/durable/run.sh [WORKDIR]        (default: target/bench-durable)
#
# Env: WO (the binary; default target/release/wo, built if missing), N (rows per
# phase, 2000), REPS (5), RECORDS (log records for the recovery figure, 1000000).
# WORKDIR must be on a real disk: tmpfs makes fdatasync free, so it is refused.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-target/bench-durable}
wo=${WO:-target/release/wo}
if [ ! -x "$wo" ]; then
  cargo build --release
fi
mkdir -p "$work"
fs=$(stat -f -c %T "$work")
case "$fs" in
  tmpfs | ramfs)
    echo "run.sh: $work is on $fs, where fdatasync is free; use a directory on a real disk" >&2
    exit 64
    ;;
esac
echo "# $(date -u +%Y-%m-%d) on $(uname -r), $work is $fs, $(nproc) CPUs, wo $("$wo" --version)" >&2
exec python3 bench/durable/bench.py --wo "$wo" --prog bench/durable/pk.wo --dir "$work" \
  -n "${N:-2000}" --reps "${REPS:-5}" --records "${RECORDS:-1000000}"
