#!/usr/bin/env bash
# RUSTC_WRAPPER for the fuzz build: cargo calls `rustc-wrapper.sh rustc ARGS...`.
# SanitizerCoverage (edge counters and compare tracing for libFuzzer, no sanitizer)
# goes into the wo crates and the fuzz targets only: dependencies, build scripts and
# proc macros are compiled as usual (a build script could not link the counters).
rustc="$1"
shift
cov=0
prev=
for a in "$@"; do
  if [ "$prev" = "--crate-name" ]; then
    case "$a" in
      wo_*) cov=1 ;;
    esac
  fi
  case "$a" in
    */fuzz_targets/*.rs | fuzz_targets/*.rs) cov=1 ;;
  esac
  prev="$a"
done
# WO_FUZZ_TRACE_CMP=0 leaves compare tracing out (edge counters stay): for the
# structure-aware targets, whose bytes steer choices and are never compared as such,
# it only costs time (docs/fuzzing.md, "The recipe").
cmp=(-Cllvm-args=-sanitizer-coverage-trace-compares)
[ "${WO_FUZZ_TRACE_CMP:-1}" = 0 ] && cmp=()
if [ "$cov" = 1 ]; then
  exec "$rustc" "$@" \
    -Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=3 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    "${cmp[@]}" \
    --cfg fuzzing
fi
exec "$rustc" "$@"
