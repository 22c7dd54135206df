#!/usr/bin/env bash
# VM benchmark suite: wo vs Lua 5.4 vs Debian's CPython 3, each workload written the
# way users of each language write it.
#   bash bench/vm/run.sh               # full run (9 interleaved rounds, ~5 min)
#   bash bench/vm/run.sh --quick       # 3 rounds
#   bash bench/vm/run.sh --callgrind   # also instruction counts (valgrind; +~10 min)
#   bash bench/vm/run.sh --only=nbody,loop
# Writes bench/vm/results.md and results.svg and prints the table.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

ROUNDS=9
EXTRA=()
for arg in "$@"; do
  case "$arg" in
    --quick) ROUNDS=3 ;;
    --callgrind) EXTRA+=(--callgrind) ;;
    --only=*) EXTRA+=(--only "${arg#--only=}") ;;
    --rounds=*) ROUNDS="${arg#--rounds=}" ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument: $arg" >&2; exit 64 ;;
  esac
done

# Peers: Lua 5.4 and Debian's system CPython (/usr/bin/python3, the interpreter users of
# this system have: a PGO/LTO build, ~1.7x faster on string work than a pyenv build).
# Not whatever `python3` comes first on PATH.
PYTHON=/usr/bin/python3
need=()
command -v lua5.4 >/dev/null 2>&1 || need+=(lua5.4)
if [[ " ${EXTRA[*]-} " == *" --callgrind "* ]]; then command -v valgrind >/dev/null 2>&1 || need+=(valgrind); fi
if [ ! -x "$PYTHON" ]; then
  echo "run.sh: $PYTHON is missing; it comes from Debian's package python3" >&2
  need+=(python3)
fi
if ((${#need[@]})); then
  echo "installing: ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}"
fi
LUA="$(command -v lua5.4)"
echo "peers: $("$LUA" -v 2>&1 | head -1); $("$PYTHON" --version 2>&1) ($PYTHON)" >&2

echo "building wo (release)…" >&2
(cd "$ROOT" && cargo build --release --quiet)
WO="$ROOT/target/release/wo"

exec "$PYTHON" "$HERE/harness.py" --wo "$WO" --lua "$LUA" --python "$PYTHON" \
  --rounds "$ROUNDS" --out "$HERE/results.md" "${EXTRA[@]}"
