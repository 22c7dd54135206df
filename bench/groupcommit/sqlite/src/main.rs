//! The SQLite peer of `bench/groupcommit/gc.wo`: durable commits from T writer
//! threads, SQLite in WAL mode with `synchronous=FULL`, one connection per thread
//! (with a busy timeout), one autocommit statement per commit, prepared once.
//!
//!   groupcommit_sqlite update|insert T MS FILE
//!
//! `update`: T rows are inserted first (one transaction, not timed), then each
//! thread updates its own row (`UPDATE people SET age = age + 1 WHERE id = ?`) in a
//! loop for MS milliseconds. `insert`: each thread inserts rows. Output: the same
//! `key value` lines as gc.wo (`commits` acknowledged before the deadline, `after`
//! those after it, latencies in µs over every commit), plus `busy` (statements that
//! failed with SQLITE_BUSY despite the timeout; they are not counted as commits) and
//! `cut`: statements still waiting (SQLite's busy handler sleeps up to 100 ms at a
//! time and can stall a writer for seconds) when the run ends, MS + max(MS, 1000) ms
//! after the start; their wait so far is counted in the latencies as a lower bound.

use rusqlite::{params, Connection};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

fn open(path: &str) -> Connection {
    let db = Connection::open(path).unwrap();
    db.busy_timeout(Duration::from_secs(60)).unwrap();
    db.execute_batch("PRAGMA synchronous=FULL;").unwrap();
    db
}

fn pct(xs: &[u64], q: usize) -> i64 {
    if xs.is_empty() {
        return -1;
    }
    let n = xs.len();
    let k = ((n * q).div_ceil(1000)).clamp(1, n) - 1;
    xs[k] as i64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 4 {
        eprintln!("usage: groupcommit_sqlite update|insert T MS FILE");
        std::process::exit(64);
    }
    let mode = args[0].clone();
    let t: usize = args[1].parse().expect("T must be an integer");
    let ms: u64 = args[2].parse().expect("MS must be an integer");
    let path = args[3].clone();
    assert!(
        mode == "update" || mode == "insert",
        "mode must be update or insert"
    );

    let db = Connection::open(&path).unwrap();
    let jm: String = db
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(jm, "wal");
    db.execute_batch(
        "PRAGMA synchronous=FULL;
         CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, age INT, score REAL);",
    )
    .unwrap();
    if mode == "update" {
        db.execute_batch("BEGIN").unwrap();
        for w in 0..t {
            db.execute(
                "INSERT INTO people (id, name, age, score) VALUES (?1, ?2, 0, 0.0)",
                params![(w + 1) as i64, format!("row{w}")],
            )
            .unwrap();
        }
        db.execute_batch("COMMIT").unwrap();
    }

    let barrier = Arc::new(Barrier::new(t + 1));
    let shared = Arc::new(Shared {
        stats: Mutex::new(Stats::default()),
        inflight: (0..t).map(|_| AtomicU64::new(IDLE)).collect(),
        done: AtomicUsize::new(0),
        start: OnceLock::new(),
    });
    for w in 0..t {
        let (path, mode, barrier, shared) =
            (path.clone(), mode.clone(), barrier.clone(), shared.clone());
        std::thread::spawn(move || {
            let conn = open(&path);
            let sql = if mode == "update" {
                "UPDATE people SET age = age + 1 WHERE id = ?1"
            } else {
                "INSERT INTO people (name, age, score) VALUES (?1, ?2, ?3)"
            };
            let mut stmt = conn.prepare(sql).unwrap();
            barrier.wait();
            let t_start = *shared.start.get().unwrap();
            let deadline = t_start + Duration::from_millis(ms);
            let mut i: i64 = 0;
            let mut t0 = Instant::now();
            while t0 < deadline {
                shared.inflight[w].store((t0 - t_start).as_micros() as u64, Ordering::SeqCst);
                let r = if mode == "update" {
                    stmt.execute(params![(w + 1) as i64])
                } else {
                    let name = format!("w{w}-{i}");
                    stmt.execute(params![name, i % 100, i as f64 * 0.5])
                };
                let t1 = Instant::now();
                let mut s = shared.stats.lock().unwrap();
                shared.inflight[w].store(IDLE, Ordering::SeqCst);
                match r {
                    Ok(_) => {
                        s.lat.push((t1 - t0).as_micros() as u64);
                        if t1 <= deadline {
                            s.before += 1;
                        } else {
                            s.after += 1;
                        }
                    }
                    Err(rusqlite::Error::SqliteFailure(e, _))
                        if e.code == rusqlite::ErrorCode::DatabaseBusy =>
                    {
                        s.busy += 1
                    }
                    Err(e) => panic!("{e}"),
                }
                drop(s);
                i += 1;
                t0 = t1;
            }
            shared.done.fetch_add(1, Ordering::SeqCst);
        });
    }
    // Every thread has opened its connection and prepared its statement: start.
    let t0 = Instant::now();
    shared.start.set(t0).unwrap();
    barrier.wait();
    // Wait for the threads, but not for ever: SQLite's busy handler can stall a
    // writer for seconds. At the deadline + `grace` the statements still waiting are
    // cut (counted, their wait so far kept as a lower bound of their latency) and the
    // process exits without waiting for them.
    let grace = Duration::from_millis(ms.max(1000));
    let end = t0 + Duration::from_millis(ms) + grace;
    while shared.done.load(Ordering::SeqCst) < t && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut s = shared.stats.lock().unwrap();
    let now_us = t0.elapsed().as_micros() as u64;
    let mut cut = 0;
    for f in &shared.inflight {
        let since = f.load(Ordering::SeqCst);
        if since != IDLE {
            cut += 1;
            s.lat.push(now_us - since);
        }
    }
    let wall = t0.elapsed();
    let mut lat = std::mem::take(&mut s.lat);
    lat.sort_unstable();
    println!("sqlite_version {}", rusqlite::version());
    println!("writers {t}");
    println!("ms {ms}");
    println!("commits {}", s.before);
    println!("after {}", s.after);
    println!("busy {}", s.busy);
    println!("cut {cut}");
    println!("wall_us {}", wall.as_micros());
    println!("lat_n {}", lat.len());
    for (k, q) in [
        ("p50", 500),
        ("p90", 900),
        ("p99", 990),
        ("p999", 999),
        ("max", 1000),
    ] {
        println!("lat_{k} {}", pct(&lat, q));
    }
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}

const IDLE: u64 = u64::MAX;

#[derive(Default)]
struct Stats {
    lat: Vec<u64>,
    before: u64,
    after: u64,
    busy: u64,
}

struct Shared {
    stats: Mutex<Stats>,
    /// Per thread: when its statement in flight began (µs after the start), or IDLE.
    inflight: Vec<AtomicU64>,
    done: AtomicUsize,
    start: OnceLock<Instant>,
}
