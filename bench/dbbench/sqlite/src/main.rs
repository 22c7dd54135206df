//! The SQLite peer of `samples/db-bench/db_bench.wo`: the same modes over the same
//! schema, through rusqlite with statements prepared once, printing the same
//! `<op> <count> <ops/s> <p50 µs> <p99 µs>` lines from the same histogram.
//!
//!   dbbench_sqlite [--data DIR] MODE ARGS… [--rows R]
//!
//! Without `--data` (the RAM leg) the database is `:memory:`; the concurrent `mix`
//! needs one connection per thread, so it uses a WAL file on /dev/shm with
//! `synchronous=OFF` instead (as close to memory as SQLite's connections can share).
//! With `--data DIR` (the durable leg) it is `DIR/bench.db` in WAL mode with
//! `synchronous=FULL`, one connection per thread for `wmix`. Foreign keys are
//! enforced, as wo enforces `ref` columns.

use rusqlite::{params, Connection, OptionalExtension, Statement};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BUCKETS: i64 = 64;
const PER_KEY: i64 = 10;
const DEFAULT_ROWS: i64 = 100_000;
const BATCH: i64 = 1_000;
const LATENCY_OPS: i64 = 100_000;
const EXACT: u64 = 64;
const SUB: u64 = 16;

/// The latency histogram of db_bench.wo: exact µs below 64, then 16 slots per
/// power of two.
struct Hist(Vec<u64>);

impl Hist {
    fn new() -> Hist {
        Hist(vec![0; (EXACT + 58 * SUB) as usize])
    }
    fn note(&mut self, d: Duration) {
        let us = d.as_micros() as u64;
        let s = if us < EXACT {
            us
        } else {
            let mut low = EXACT;
            let mut top = 6;
            while us >= 2 * low {
                low *= 2;
                top += 1;
            }
            EXACT + (top - 6) * SUB + (us - low) / (low / SUB)
        };
        self.0[s as usize] += 1;
    }
    fn merge(&mut self, o: &Hist) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a += b;
        }
    }
    fn bound(s: u64) -> u64 {
        if s < EXACT {
            return s;
        }
        let low = EXACT << ((s - EXACT) / SUB);
        low + ((s - EXACT) % SUB + 1) * (low / SUB) - 1
    }
    fn percentile(&self, n: u64, q: u64) -> i64 {
        let want = ((n * q).div_ceil(100)).max(1);
        let mut seen = 0;
        for (s, c) in self.0.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Hist::bound(s as u64) as i64;
            }
        }
        -1
    }
}

fn report(op: &str, n: i64, elapsed: Duration, h: &Hist, timed: i64) {
    let rate = (n as u128 * 1_000_000) / elapsed.as_micros().max(1);
    println!(
        "{op} {n} {rate} {} {}",
        h.percentile(timed as u64, 50),
        h.percentile(timed as u64, 99)
    );
}

/// xorshift64*, seeded per worker: the ids and keys drawn.
struct Rng(u64);

impl Rng {
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        lo + (r % (hi - lo + 1) as u64) as i64
    }
}

struct Place {
    path: String,
    durable: bool,
}

fn connect(place: &Place) -> Connection {
    let db = Connection::open(&place.path).unwrap();
    db.busy_timeout(Duration::from_secs(60)).unwrap();
    if place.path != ":memory:" {
        let jm: String = db
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .unwrap();
        assert_eq!(jm, "wal");
    }
    let sync = if place.durable { "FULL" } else { "OFF" };
    db.execute_batch(&format!(
        "PRAGMA synchronous={sync}; PRAGMA foreign_keys=ON;
         CREATE TABLE IF NOT EXISTS buckets (id INTEGER PRIMARY KEY, tag TEXT NOT NULL UNIQUE);
         CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, k INTEGER NOT NULL,
             v INTEGER NOT NULL, bucket INTEGER NOT NULL REFERENCES buckets(id));
         CREATE INDEX IF NOT EXISTS items_k ON items(k);
         CREATE INDEX IF NOT EXISTS items_bucket ON items(bucket);
         CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY, count INTEGER NOT NULL,
             checksum INTEGER NOT NULL);
         INSERT OR IGNORE INTO meta (id, count, checksum) VALUES (1, 0, 0);"
    ))
    .unwrap();
    db
}

fn ensure_buckets(db: &Connection) {
    let n: i64 = db
        .query_row("SELECT count(*) FROM buckets", [], |r| r.get(0))
        .unwrap();
    if n == 0 {
        db.execute_batch("BEGIN").unwrap();
        for i in 0..BUCKETS {
            db.execute(
                "INSERT INTO buckets (id, tag) VALUES (?1, ?2)",
                params![i + 1, format!("bucket-{i}")],
            )
            .unwrap();
        }
        db.execute_batch("COMMIT").unwrap();
    }
}

fn count(db: &Connection) -> i64 {
    db.query_row("SELECT count FROM meta WHERE id = 1", [], |r| r.get(0))
        .unwrap()
}

fn key_of(i: i64, rows: i64) -> i64 {
    i % (rows / PER_KEY).max(1)
}

/// Items start…start+n-1, BATCH to a transaction with the meta row kept.
fn load(db: &Connection, start: i64, n: i64, rows: i64, mut h: Option<&mut Hist>) {
    ensure_buckets(db);
    let mut ins = db
        .prepare("INSERT INTO items (k, v, bucket) VALUES (?1, ?2, ?3)")
        .unwrap();
    let mut meta = db
        .prepare("UPDATE meta SET count = count + ?1, checksum = checksum + ?2 WHERE id = 1")
        .unwrap();
    let mut i = start;
    while i < start + n {
        db.execute_batch("BEGIN").unwrap();
        let end = (i + BATCH).min(start + n);
        let (mut added, mut sum) = (0, 0);
        while i < end {
            let a = Instant::now();
            ins.execute(params![key_of(i, rows), i, i % BUCKETS + 1])
                .unwrap();
            if let Some(h) = h.as_deref_mut() {
                h.note(a.elapsed());
            }
            added += 1;
            sum += i;
            i += 1;
        }
        meta.execute(params![added, sum]).unwrap();
        db.execute_batch("COMMIT").unwrap();
    }
}

fn ensure_rows(db: &Connection, rows: i64) -> i64 {
    let have = count(db);
    if have == 0 {
        load(db, 1, rows, rows, None);
        return rows;
    }
    have
}

/// One connection's prepared statements.
struct Stmts<'c> {
    find: Statement<'c>,
    probe: Statement<'c>,
    first: Statement<'c>,
    insert: Statement<'c>,
    bump: Statement<'c>,
    meta_add: Statement<'c>,
    meta_sum: Statement<'c>,
    begin: Statement<'c>,
    commit: Statement<'c>,
}

impl<'c> Stmts<'c> {
    fn new(db: &'c Connection) -> Stmts<'c> {
        Stmts {
            find: db.prepare("SELECT v FROM items WHERE id = ?1").unwrap(),
            probe: db.prepare("SELECT id, v FROM items WHERE k = ?1").unwrap(),
            first: db
                .prepare("SELECT id FROM items WHERE k = ?1 ORDER BY id LIMIT 1")
                .unwrap(),
            insert: db
                .prepare("INSERT INTO items (k, v, bucket) VALUES (?1, ?2, ?3)")
                .unwrap(),
            bump: db.prepare("UPDATE items SET v = v + 1 WHERE id = ?1").unwrap(),
            meta_add: db
                .prepare("UPDATE meta SET count = count + 1, checksum = checksum + ?1 WHERE id = 1")
                .unwrap(),
            meta_sum: db
                .prepare("UPDATE meta SET checksum = checksum + 1 WHERE id = 1")
                .unwrap(),
            // IMMEDIATE: a writer takes the write lock up front, so concurrent
            // writers wait in the busy handler instead of failing to upgrade.
            begin: db.prepare("BEGIN IMMEDIATE").unwrap(),
            commit: db.prepare("COMMIT").unwrap(),
        }
    }
    fn read(&mut self, id: i64) -> i64 {
        self.find.query_row([id], |r| r.get(0)).unwrap()
    }
    fn bump(&mut self, id: i64) {
        self.begin.execute([]).unwrap();
        self.bump.execute([id]).unwrap();
        self.meta_sum.execute([]).unwrap();
        self.commit.execute([]).unwrap();
    }
}

fn ops(st: &mut Stmts, rng: &mut Rng, op: &str, n: i64, have: i64, mut h: Option<&mut Hist>) -> i64 {
    let keys = (have / PER_KEY).max(1);
    let mut next = have;
    let mut sum = 0;
    for i in 0..n {
        let a = Instant::now();
        match op {
            "read" => sum += st.read(rng.int(1, have)),
            "query" => {
                let mut rows = st.probe.query([rng.int(0, keys - 1)]).unwrap();
                while let Some(r) = rows.next().unwrap() {
                    sum += r.get::<_, i64>(1).unwrap();
                }
            }
            _ => {
                if i % 2 == 0 {
                    next += 1;
                    st.begin.execute([]).unwrap();
                    st.insert
                        .execute(params![key_of(next, have), next, next % BUCKETS + 1])
                        .unwrap();
                    st.meta_add.execute([next]).unwrap();
                    st.commit.execute([]).unwrap();
                } else {
                    let id: Option<i64> = st
                        .first
                        .query_row([rng.int(0, keys - 1)], |r| r.get(0))
                        .optional()
                        .unwrap();
                    if let Some(id) = id {
                        st.bump(id);
                    }
                }
            }
        }
        if let Some(h) = h.as_deref_mut() {
            h.note(a.elapsed());
        }
    }
    sum
}

/// The RAM modes: an untimed pass for the rate, then a timed one for percentiles.
fn measure(db: &Connection, op: &str, n: i64, have: i64) {
    let mut st = Stmts::new(db);
    let mut rng = Rng(42);
    let t0 = Instant::now();
    let mut sum = ops(&mut st, &mut rng, op, n, have, None);
    let elapsed = t0.elapsed();
    let mut h = Hist::new();
    let m = n.min(LATENCY_OPS);
    sum += ops(&mut st, &mut rng, op, m, count(db).max(have), Some(&mut h));
    report(op, n, elapsed, &h, m);
    eprintln!("{op} checksum {sum}");
}

fn wal(db: &Connection, n: i64) {
    ensure_buckets(db);
    let mut st = Stmts::new(db);
    let mut h = Hist::new();
    let start = count(db) + 1;
    let t0 = Instant::now();
    for i in start..start + n {
        let a = Instant::now();
        st.begin.execute([]).unwrap();
        st.insert.execute(params![i, i, i % BUCKETS + 1]).unwrap();
        st.meta_add.execute([i]).unwrap();
        st.commit.execute([]).unwrap();
        h.note(a.elapsed());
        println!("acked {i}");
    }
    report("wal", n, t0.elapsed(), &h, n);
}

fn verify(db: &Connection) -> i32 {
    let (n, sum): (i64, i64) = db
        .query_row("SELECT count(*), coalesce(sum(v), 0) FROM items", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let (mc, ms): (i64, i64) = db
        .query_row("SELECT count, checksum FROM meta WHERE id = 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    if n != mc || sum != ms {
        println!("PROBLEM: {n} items summing to {sum}; the meta row says {mc} and {ms}");
        return 1;
    }
    println!("ok {n} items");
    0
}

fn verify_acked(db: &Connection, acked: i64) -> i32 {
    let mut q = db.prepare("SELECT v FROM items WHERE k = ?1 LIMIT 1").unwrap();
    for i in 1..=acked {
        let v: Option<i64> = q.query_row([i], |r| r.get(0)).optional().unwrap();
        if v != Some(i) {
            println!("PROBLEM: acknowledged item {i}: {v:?}");
            return 1;
        }
    }
    verify(db)
}

/// mix / wmix: C threads, one connection each, n operations in all.
fn concurrent(place: &Arc<Place>, op: &str, n: i64, c: i64, have: i64, write_every: i64) {
    let run = |n: i64, timed: bool| -> (Duration, Hist, i64) {
        let start = Arc::new(std::sync::Barrier::new(c as usize + 1));
        let workers: Vec<_> = (0..c)
            .map(|w| {
                let place = Arc::clone(place);
                let start = Arc::clone(&start);
                let share = n / c + i64::from(w < n % c);
                std::thread::spawn(move || {
                    let db = connect(&place);
                    let mut st = Stmts::new(&db);
                    let mut rng = Rng(42 + w as u64);
                    let mut h = Hist::new();
                    let mut sum = 0;
                    start.wait();
                    for i in 0..share {
                        let a = Instant::now();
                        let id = rng.int(1, have);
                        if i % write_every == 0 {
                            st.bump(id);
                        } else {
                            sum += st.read(id);
                        }
                        if timed {
                            h.note(a.elapsed());
                        }
                    }
                    (h, sum)
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let mut h = Hist::new();
        let mut sum = 0;
        for w in workers {
            let (wh, s) = w.join().unwrap();
            h.merge(&wh);
            sum += s;
        }
        (t0.elapsed(), h, sum)
    };
    let durable = place.durable;
    let (elapsed, mut h, mut sum) = run(n, durable);
    let mut timed = n;
    if !durable {
        timed = n.min(LATENCY_OPS);
        let (_, h2, s2) = run(timed, true);
        h = h2;
        sum += s2;
    }
    report(op, n, elapsed, &h, timed);
    eprintln!("{op} checksum {sum}");
}

fn usage() -> ! {
    eprintln!("usage: dbbench_sqlite [--data DIR] seed N | read N | query N | write N | wal N | verify | verify-acked M | mix N C | wmix N C | boot  [--rows R]");
    std::process::exit(64)
}

fn num(t: &str) -> i64 {
    t.parse().unwrap_or_else(|_| usage())
}

fn main() {
    let mut rows = DEFAULT_ROWS;
    let mut data = None;
    let mut rest = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => rows = num(&args.next().unwrap_or_else(|| usage())).max(PER_KEY),
            "--data" => data = Some(args.next().unwrap_or_else(|| usage())),
            _ => rest.push(a),
        }
    }
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let concurrent_ram = data.is_none() && rest.first() == Some(&"mix");
    let place = Arc::new(match &data {
        Some(dir) => {
            std::fs::create_dir_all(dir).unwrap();
            Place { path: format!("{dir}/bench.db"), durable: true }
        }
        None if concurrent_ram => {
            let path = format!("/dev/shm/dbbench-sqlite-{}.db", std::process::id());
            Place { path, durable: false }
        }
        None => Place { path: ":memory:".into(), durable: false },
    });
    let db = connect(&place);
    let code = match rest.as_slice() {
        ["seed", n] => {
            let n = num(n);
            let mut h = Hist::new();
            let start = count(&db) + 1;
            let t0 = Instant::now();
            load(&db, start, n, n, Some(&mut h));
            report("seed", n, t0.elapsed(), &h, n);
            0
        }
        [op @ ("read" | "query" | "write"), n] => {
            let have = ensure_rows(&db, rows);
            measure(&db, op, num(n), have);
            0
        }
        ["wal", n] => {
            wal(&db, num(n));
            0
        }
        ["verify"] => verify(&db),
        ["verify-acked", m] => verify_acked(&db, num(m)),
        [op @ ("mix" | "wmix"), n, c] => {
            let have = ensure_rows(&db, rows);
            let every = if *op == "mix" { 10 } else { 1 };
            concurrent(&place, op, num(n), num(c).max(1), have, every);
            0
        }
        ["boot"] => {
            println!("boot {} rows", count(&db));
            0
        }
        _ => usage(),
    };
    drop(db);
    if concurrent_ram {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", place.path));
        }
    }
    std::process::exit(code);
}
