#!/usr/bin/env bash
# Builds the fuzz targets with SanitizerCoverage on stable Rust and runs each one for
# a bounded time, one process each, on its checked-in corpus (docs/fuzzing.md).
# Fails (exit 1) on any crash, timeout or out-of-memory; the input is saved under
# $FUZZ_WORK/artifacts/.
#
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     default: 30 s, every target
#   fuzz/run.sh --merge TARGET DIR...                 minimize DIR... into fuzz/corpus/TARGET
#
# FUZZ_WORK (default: a fresh temporary directory) holds what the run learns: new
# corpus entries (work/<target>/) and crash inputs (artifacts/). Keep it between runs
# of a long campaign: FUZZ_WORK=/var/tmp/wo-fuzz fuzz/run.sh 36000
# FUZZ_KEEP_GOING=1: a campaign that records crashes and goes on (libFuzzer's -fork=1,
# one child at a time, restarted after each crash); the run still fails at the end if
# it found any. FUZZ_SEED: libFuzzer's -seed (default 1, so the short CI pass covers
# the same ground each time and a crash it finds reproduces; 0 means random).
# One process per target: libFuzzer's -jobs/-workers would fork children that log to
# fuzz-N.log in the working directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
TARGETS=(compile image datadir engine gen durable fmt repl)
# WO_FUZZ_TRACE_CMP=0 (rustc-wrapper.sh: no compare tracing, for long runs of `gen`
# and `durable`) builds into a directory of its own: cargo does not know the flag.
tdir=target
[ "${WO_FUZZ_TRACE_CMP:-1}" = 0 ] && tdir=target-nocmp

echo "fuzz: building (cargo build --release, SanitizerCoverage on the wo crates)"
build_start=$(date +%s)
RUSTC_WRAPPER="$here/rustc-wrapper.sh" CARGO_TARGET_DIR="$here/$tdir" \
  cargo build --release --locked --bins
echo "fuzz: build took $(($(date +%s) - build_start)) s"

# Per-target options: the dictionary of the language's words for the compiler and the
# formatter, longer inputs for the generator (each byte steers one choice), shorter for
# the REPL's splitter (an input typed at the prompt; each is parsed once per line).
opts() {
  case "$1" in
    compile | fmt) echo "-dict=$here/dict/wo.dict" ;;
    repl) echo "-dict=$here/dict/wo.dict -max_len=1024" ;;
    gen | durable) echo "-max_len=2048" ;;
    engine) echo "-max_len=4096" ;;
    *) echo "" ;;
  esac
}

if [ "${1:-}" = "--merge" ]; then
  t="$2"
  shift 2
  mkdir -p "corpus/$t"
  # shellcheck disable=SC2046
  "$tdir/release/$t" -merge=1 -timeout=10 $(opts "$t") "corpus/$t" "$@"
  exit 0
fi

secs="${1:-30}"
shift || true
[ $# -gt 0 ] && TARGETS=("$@")
work="${FUZZ_WORK:-$(mktemp -d)}"
seed="${FUZZ_SEED:-1}"
mode=()
if [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
  mode=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
fi
mkdir -p "$work/artifacts"
failed=()
# Every crash found so far (fuzz/regressions/<target>/) must stay fixed: each target
# runs its reproducers once before it fuzzes. Those of `gen` and `durable` carry their
# program as text (WO_FUZZ_LITERAL; see docs/fuzzing.md), so they keep it when the
# generator changes.
for t in "${TARGETS[@]}"; do
  [ -d "regressions/$t" ] || continue
  if ! WO_FUZZ_LITERAL=1 "$tdir/release/$t" -rss_limit_mb=2048 -timeout=10 regressions/"$t"/* \
    >"$work/$t-regressions.log" 2>&1; then
    echo "fuzz: $t: a reproducer under regressions/$t crashes again"
    grep -E 'Running:|panicked at|ERROR: libFuzzer|SUMMARY' "$work/$t-regressions.log" | head -10 || true
    failed+=("$t-regressions")
  fi
done
for t in "${TARGETS[@]}"; do
  mkdir -p "$work/work/$t" "corpus/$t"
  log="$work/$t.log"
  echo "fuzz: $t for $secs s"
  set +e
  # New inputs go to the work directory; the checked-in corpus is only read.
  # shellcheck disable=SC2046
  "$tdir/release/$t" "$work/work/$t" "corpus/$t" \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -seed="$seed" ${mode[@]+"${mode[@]}"} \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" $(opts "$t") \
    >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" || true)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" || true)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  if [ ${#mode[@]} -gt 0 ]; then
    # -fork prints "#RUNS: cov: … exec/s N oom/timeout/crash: A/B/C time: …".
    last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1 || true)
    runs=$(echo "$last" | sed -nE 's/^#([0-9]+):.*/\1/p')
    rate=$(echo "$last" | sed -nE 's/.*exec\/s: ?([0-9]+).*/\1/p')
    found=$(echo "$last" | sed -nE 's/.*oom\/timeout\/crash: ([0-9\/]+).*/\1/p')
    echo "fuzz: $t: oom/timeout/crash ${found:-?}"
    [ "${found:-0/0/0}" = 0/0/0 ] || rc=1
  fi
  echo "fuzz: $t: exit $rc, ${runs:-?} runs, ${rate:-?} exec/s, ${cov:-no coverage line}"
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written|^Base64' "$log" | head -20 || true
    # The panic message (for a generated program, the program) follows "panicked at".
    sed -n '/panicked at/,/^stack backtrace/p' "$log" | head -60
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $work/artifacts/, logs in $work/)"
  exit 1
fi
echo "fuzz: ${#TARGETS[@]} passed, 0 failed"
