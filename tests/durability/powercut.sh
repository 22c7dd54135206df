#!/bin/sh
# One power-cut run for tests/durability.rs (power_cut_* tests); run it inside a
# private mount namespace, as root:
#
#   unshare -m --propagation private sh powercut.sh WO LEDGER WORK DELAY...
#
# Makes a 64 MiB ext4 image in WORK, loop-mounts it, creates a ledger data directory
# on it, then for each DELAY (seconds): starts `ledger stress` on the image, lets it
# run DELAY seconds, freezes it (SIGSTOP), copies the acks it printed so far
# (frozen.R) and the image as it is on the "disk" (`cp --sparse=always`: what a power
# cut at that instant would leave — data the writer did not fdatasync is still in the
# mounted file system's page cache, not in the image file), lets the writer go on
# (SIGCONT), kills it, mounts the copy (ext4 replays its journal as after a power
# cut) and runs `ledger verify` (verify.R, its status in status.R) and `wo db verify`
# (dbverify.R) on it. STRESS (default `stress 1000000000`) is the ledger command the
# writer runs (`stress-fibers N C` for C writer fibers). A writer that ended before its freeze leaves early.R (its exit
# status) instead of a copy. The accounts are opened (`stress 0`) before the first round. The caller checks that every ack in frozen.R is in verify.R.
# Leaving the namespace unmounts everything (and frees the loop devices).
set -eu
wo=$1
ledger=$2
work=$3
shift 3
cd "$work"
rm -f img copy.img
truncate -s 64M img
mkfs.ext4 -q -F img
mkdir -p mnt mnt2
mount -o loop img mnt
"$wo" run "$ledger" --data mnt/d -- stress 0 >/dev/null
r=0
for delay in "$@"; do
  r=$((r + 1))
  # shellcheck disable=SC2086 # STRESS is the ledger command and its arguments
  "$wo" run "$ledger" --data mnt/d -- ${STRESS:-stress 1000000000} >"acks.$r" 2>"err.$r" &
  pid=$!
  # Freeze a writer that is writing: the delay counts from its first ack (waiting at
  # most 60 s for it), so a slow start on a loaded machine does not leave nothing to
  # lose.
  n=0
  while [ ! -s "acks.$r" ] && kill -0 "$pid" 2>/dev/null && [ "$n" -lt 6000 ]; do
    sleep 0.01
    n=$((n + 1))
  done
  sleep "$delay"
  # The shell may already have reaped a writer that ended on its own: then there is
  # nothing to freeze. Say so (early.R: its exit status, err.R: what it printed) and
  # let the caller decide; never carry on as if the round had happened.
  if ! kill -STOP "$pid" 2>/dev/null; then
    status=0
    wait "$pid" || status=$?
    echo "$status" >"early.$r"
    continue
  fi
  cp "acks.$r" "frozen.$r"
  cp --sparse=always img copy.img
  kill -CONT "$pid" 2>/dev/null || true
  sleep 0.05
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" || true
  # What the killed (not cut) writer left on the original disk: the next round's
  # starting point (with writer fibers, more than its acks say).
  "$wo" run "$ledger" --data mnt/d -- verify >"orig.$r" 2>&1 || true
  mount -o loop copy.img mnt2
  status=0
  "$wo" run "$ledger" --data mnt2/d -- verify >"verify.$r" 2>"verify-err.$r" || status=$?
  echo "$status" >"status.$r"
  "$wo" db verify mnt2/d >"dbverify.$r" 2>&1 || true
  umount mnt2
  rm -f copy.img
done
umount mnt
rm -f img
echo "rounds $r"
