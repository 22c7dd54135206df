#!/usr/bin/env bash
# Fair primary-key benchmark: wo tables vs SQLite :memory: (rusqlite, prepared).
#   bash bench/fair_pk/run.sh              # N=100000, 7 interleaved rounds
#   bash bench/fair_pk/run.sh --quick      # 5 rounds, memory at 200k rows
#   bash bench/fair_pk/run.sh --n=20000 --rounds=9
# Builds both in release, checks they agree, runs them interleaved, measures
# peak RSS per row, writes bench/fair_pk/results.md and prints it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

N=100000
ROUNDS=7
N_MEM=1000000
for arg in "$@"; do
  case "$arg" in
    --quick) ROUNDS=5; N_MEM=200000 ;;
    --rounds=*) ROUNDS="${arg#--rounds=}" ;;
    --n=*) N="${arg#--n=}" ;;
    --n-mem=*) N_MEM="${arg#--n-mem=}" ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument: $arg" >&2; exit 64 ;;
  esac
done
if [ "$ROUNDS" -lt 5 ]; then echo "run.sh: at least 5 rounds" >&2; exit 64; fi
[ -x /usr/bin/time ] || { echo "run.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 69; }

echo "building wo (release)…" >&2
(cd "$ROOT" && cargo build --release --quiet)
echo "building the SQLite peer (release; first build ~1 min)…" >&2
(cd "$HERE/sqlite" && cargo build --release --quiet)

# The real CPython binary, not a pyenv shim.
PYTHON="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
COMMIT="$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')"

exec "$PYTHON" "$HERE/harness.py" \
  --wo "$ROOT/target/release/wo" \
  --sqlite "$HERE/sqlite/target/release/fair_pk_sqlite" \
  --n "$N" --rounds "$ROUNDS" --n-mem "$N_MEM" --commit "$COMMIT" \
  --out "$HERE/results.md"
