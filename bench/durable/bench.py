#!/usr/bin/env python3
"""Durable-write benchmark for wo (driven by bench/durable/run.sh; standalone: needs
only Python 3 with its sqlite3 module and a built `wo`).

Measures, in the same run and interleaved (REFERENCE.md §3):
  * the raw fdatasync rate of the disk: append 100 bytes + fdatasync, one writer
    (and, for reference, overwriting a preallocated file, as wo's log does);
  * wo durable single-writer commits/s: INSERT, UPDATE, DELETE, one statement per
    commit (bench/durable/pk.wo);
  * SQLite (WAL, synchronous=FULL, autocommit: one statement per commit) doing the
    same, through Python's sqlite3 (statements are cached, i.e. prepared);
then recovery: a log of R single-insert records (written by this script in the
format of docs/wal-format.md, because a running wo checkpoints long before its log
gets that long) replayed by `wo run` at startup, the pause of `wo db checkpoint` on
those rows, and startup from the checkpoint.

Prints a Markdown table (medians over the repetitions; ratios are medians of
per-repetition ratios).
"""

import argparse
import os
import shutil
import sqlite3
import statistics
import struct
import subprocess
import sys
import time
import zlib


def raw_fdatasync(path, n):
    """Appends 100 bytes + fdatasync, n times; syncs/s."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        buf = b"x" * 100
        t = time.perf_counter()
        for _ in range(n):
            os.write(fd, buf)
            os.fdatasync(fd)
        return n / (time.perf_counter() - t)
    finally:
        os.close(fd)
        os.unlink(path)


def raw_overwrite(path, n):
    """Overwrites 100 bytes at a time of a preallocated, synced, zero-filled file +
    fdatasync, n times (what wo's log does inside its preallocated chunk); syncs/s."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, bytes(100 * n))
        os.fsync(fd)
        buf = b"x" * 100
        t = time.perf_counter()
        for i in range(n):
            os.pwrite(fd, buf, 100 * i)
            os.fdatasync(fd)
        return n / (time.perf_counter() - t)
    finally:
        os.close(fd)
        os.unlink(path)


def wo_pk(wo, prog, data, n):
    shutil.rmtree(data, ignore_errors=True)
    out = subprocess.run(
        [wo, "run", prog, "--data", data, "--", "pk", str(n)],
        check=True, capture_output=True, text=True,
    ).stdout
    rates = dict(line.split() for line in out.splitlines())
    shutil.rmtree(data, ignore_errors=True)
    return {k: float(v) for k, v in rates.items()}


def sqlite_pk(path, n):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT, age INT, score REAL)")
    rates = {}
    t = time.perf_counter()
    ids = []
    for i in range(n):
        cur = db.execute("INSERT INTO people(name, age, score) VALUES (?, ?, ?)",
                         (f"person{i}", i % 100, i * 0.5))
        ids.append(cur.lastrowid)
    rates["insert"] = n / (time.perf_counter() - t)
    t = time.perf_counter()
    for i in ids:
        db.execute("UPDATE people SET age = age + 1 WHERE id = ?", (i,))
    rates["update"] = n / (time.perf_counter() - t)
    t = time.perf_counter()
    for i in ids:
        db.execute("DELETE FROM people WHERE id = ?", (i,))
    rates["delete"] = n / (time.perf_counter() - t)
    db.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    return rates


# --- a long log, written directly (docs/wal-format.md) ---------------------------

def uvar(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ivar(n):
    return uvar(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def make_log(wo, prog, data, records):
    """A data directory whose log holds `records` single-insert records: wo creates it
    (header + schema record), this appends the rest, framed and checksummed."""
    shutil.rmtree(data, ignore_errors=True)
    subprocess.run([wo, "run", prog, "--data", data, "--", "init"], check=True)
    wal = os.path.join(data, "wal")
    with open(wal, "rb") as f:
        head = f.read(36)
        (first_len,) = struct.unpack_from("<I", f.read(4))
        f.seek(36)
        first = f.read(24 + first_len)
    salt = head[16:24]
    (first_lsn,) = struct.unpack_from("<Q", head, 24)
    out = bytearray(head + first)
    lsn = first_lsn
    for i in range(1, records + 1):
        name = f"person{i}".encode()
        payload = (bytes([2]) + uvar(0) + ivar(i) + uvar(3)
                   + bytes([5]) + uvar(len(name)) + name
                   + bytes([1]) + ivar(i % 100)
                   + bytes([2]) + struct.pack("<d", i * 0.5))
        lsn += 1
        frame = struct.pack("<I", len(payload))
        tail = struct.pack("<QQ", lsn, lsn - 1)
        crc = zlib.crc32(salt + frame + tail + payload)
        out += frame + struct.pack("<I", crc) + tail + payload
    with open(wal, "wb") as f:
        f.write(out)
        os.fsync(f.fileno())
    return len(out)


def timed(cmd, reps):
    times = []
    out = ""
    for _ in range(reps):
        t = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wo", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("-n", type=int, default=2000, help="rows per phase")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--raw", type=int, default=2000, help="syncs per raw measurement")
    ap.add_argument("--records", type=int, default=1_000_000)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    raw_path = os.path.join(a.dir, "raw.bin")
    data = os.path.join(a.dir, "wo-data")
    lite = os.path.join(a.dir, "sqlite.db")
    phases = ("insert", "update", "delete")
    rows = []
    for rep in range(a.reps):
        r = {"raw": raw_fdatasync(raw_path, a.raw), "over": raw_overwrite(raw_path, a.raw)}
        if rep % 2 == 0:
            r["wo"] = wo_pk(a.wo, a.prog, data, a.n)
            r["sqlite"] = sqlite_pk(lite, a.n)
        else:
            r["sqlite"] = sqlite_pk(lite, a.n)
            r["wo"] = wo_pk(a.wo, a.prog, data, a.n)
        r["raw"] = (r["raw"] + raw_fdatasync(raw_path, a.raw)) / 2
        r["over"] = (r["over"] + raw_overwrite(raw_path, a.raw)) / 2
        rows.append(r)
        print(f"rep {rep + 1}: raw {r['raw']:.0f}/s overwrite {r['over']:.0f}/s  "
              + "  ".join(f"{p} wo {r['wo'][p]:.0f} sqlite {r['sqlite'][p]:.0f}" for p in phases),
              file=sys.stderr)
    med = statistics.median
    raw = med(r["raw"] for r in rows)
    print("| metric | wo | SQLite WAL FULL | wo / SQLite | wo / raw append | wo / raw overwrite |")
    print("| --- | --- | --- | --- | --- | --- |")
    over = med(r["over"] for r in rows)
    print(f"| raw fdatasync, append 100 B | {raw:,.0f}/s | | | | |")
    print(f"| raw fdatasync, overwrite 100 B (preallocated) | {over:,.0f}/s | | | | |")
    for p in phases:
        wo = med(r["wo"][p] for r in rows)
        sq = med(r["sqlite"][p] for r in rows)
        ratio = med(r["wo"][p] / r["sqlite"][p] for r in rows)
        frac = med(r["wo"][p] / r["raw"] for r in rows)
        ofrac = med(r["wo"][p] / r["over"] for r in rows)
        sfrac = med(r["sqlite"][p] / r["raw"] for r in rows)
        print(f"| durable {p.upper()}, commits/s | {wo:,.0f} | {sq:,.0f} ({sfrac:.2f} of raw append) "
              f"| {ratio:.2f}× | {frac:.2f} | {ofrac:.2f} |")

    if a.records > 0:
        rec_dir = os.path.join(a.dir, "recovery")
        size = make_log(a.wo, a.prog, rec_dir, a.records)
        empty = os.path.join(a.dir, "empty")
        shutil.rmtree(empty, ignore_errors=True)
        base, _ = timed([a.wo, "run", a.prog, "--data", empty, "--", "count"], 3)
        start, out = timed([a.wo, "run", a.prog, "--data", rec_dir, "--", "count"], 3)
        assert out.strip() == f"rows {a.records}", out
        replay = start - base
        print(f"| startup replaying {a.records:,} log records ({size / 1e6:.0f} MB) "
              f"| {start * 1000:.0f} ms ({base * 1000:.0f} ms without data) "
              f"→ {a.records / replay / 1e6:.2f}M records/s | | | | |")
        pauses, walls = [], []
        for _ in range(3):
            copy = rec_dir + ".copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(rec_dir, copy)
            t = time.perf_counter()
            out = subprocess.run([a.wo, "db", "checkpoint", copy], check=True,
                                 capture_output=True, text=True).stdout
            walls.append(time.perf_counter() - t)
            pauses.append(float(out.rsplit(" in ", 1)[1].split()[0]))
        print(f"| `wo db checkpoint` of {a.records:,} rows | pause {med(pauses):.0f} ms "
              f"(whole command, with replay: {med(walls) * 1000:.0f} ms) | | | | |")
        start, out = timed([a.wo, "run", a.prog, "--data", copy, "--", "count"], 3)
        assert out.strip() == f"rows {a.records}", out
        print(f"| startup loading a {a.records:,}-row checkpoint | {start * 1000:.0f} ms "
              f"→ {a.records / (start - base) / 1e6:.2f}M rows/s | | | | |")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(rec_dir, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)


if __name__ == "__main__":
    main()
