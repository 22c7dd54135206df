#!/usr/bin/env bash
# VM benchmark suite: wo vs Lua 5.4 vs CPython 3 on the same workloads.
#   bash bench/vm/run.sh           # full run (9 interleaved rounds, ~1-2 min)
#   bash bench/vm/run.sh --quick   # 3 rounds
# Writes bench/vm/results.md and prints it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

ROUNDS=9
for arg in "$@"; do
  case "$arg" in
    --quick) ROUNDS=3 ;;
    --rounds=*) ROUNDS="${arg#--rounds=}" ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument: $arg" >&2; exit 64 ;;
  esac
done

need=()
command -v lua5.4 >/dev/null 2>&1 || need+=(lua5.4)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if ((${#need[@]})); then
  echo "installing: ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}"
fi

# The real CPython binary, not a pyenv shim or other shell wrapper.
PYTHON="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
LUA="$(command -v lua5.4)"

echo "building wo (release)…" >&2
(cd "$ROOT" && cargo build --release --quiet)
WO="$ROOT/target/release/wo"

exec "$PYTHON" "$HERE/harness.py" --wo "$WO" --lua "$LUA" --python "$PYTHON" \
  --rounds "$ROUNDS" --out "$HERE/results.md"
