//! Recovery benchmark (not a test): logs 1M inserts (one record each, synced in groups
//! so building the log takes seconds, not hours), then times `open` replaying them,
//! then the automatic checkpoint of the 1M rows as a running program takes it (the
//! longest slice is the longest pause a reading fiber sees), then a synchronous one
//! (`wo db checkpoint`: the whole pause), then `open` loading
//! that checkpoint. Run with `cargo run -p wo-db --release --example recovery [N] [DIR]`.
//!
//! For profiling one phase: `WO_BENCH_KEEP=1` keeps `DIR` (holding the checkpoint and
//! an empty log) and a copy of the log-only directory as `DIR-log`; then
//! `WO_BENCH_OPEN_ONLY=1 … recovery N DIR` only times `open` of `DIR` (N is the row
//! count to expect; give the same `WO_BENCH_INDEXES`).

use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use wo_db::durable::{self, Options};
use wo_db::{Cell, ColType, Column, IndexDef, IndexKind, Schema, TableDef};

/// `WO_BENCH_INDEXES`: `all` (default: a hash index on dept and a sorted one on salary),
/// `hash` (the hash index only) or `none`.
fn schema() -> Schema {
    let which = std::env::var("WO_BENCH_INDEXES").unwrap_or_else(|_| "all".into());
    let mut emp_indexes = vec![
        IndexDef {
            columns: vec![3],
            kind: IndexKind::Hash,
        },
        IndexDef {
            columns: vec![1],
            kind: IndexKind::Sorted,
        },
    ];
    emp_indexes.truncate(match which.as_str() {
        "none" => 0,
        "hash" => 1,
        _ => 2,
    });
    let col = |name: &str, ty, nullable| Column {
        name: String::from(name),
        ty,
        nullable,
    };
    Schema {
        tables: vec![
            TableDef {
                name: "depts".into(),
                columns: vec![col("name", ColType::Text, false)],
                indexes: vec![IndexDef {
                    columns: vec![0],
                    kind: IndexKind::Unique,
                }],
                durable: true,
            },
            TableDef {
                name: "emps".into(),
                columns: vec![
                    col("name", ColType::Text, false),
                    col("salary", ColType::Int, false),
                    col("level", ColType::Int, false),
                    col("dept", ColType::Ref(0), false),
                ],
                indexes: emp_indexes,
                durable: true,
            },
        ],
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = args.next().map_or_else(
        || std::env::temp_dir().join(format!("wo-recovery-{}", std::process::id())),
        PathBuf::from,
    );
    let opts = || Options {
        auto_checkpoint: false,
        ..Options::default()
    };
    let keep = std::env::var_os("WO_BENCH_KEEP").is_some();
    if std::env::var_os("WO_BENCH_OPEN_ONLY").is_some() {
        for _ in 0..3 {
            let t = Instant::now();
            let (_dd, db) = durable::open(&dir, schema(), opts()).expect("open");
            let el = t.elapsed();
            assert_eq!(db.len(1), n);
            println!(
                "open: {} rows in {el:.2?}: {:.2}M rows/s",
                n + 100,
                (n + 100) as f64 / el.as_secs_f64() / 1e6
            );
        }
        return;
    }
    let _ = std::fs::remove_dir_all(&dir);

    let t = Instant::now();
    let (mut dd, mut db) = durable::open(&dir, schema(), opts()).expect("open");
    for d in 0..100 {
        let sp = db.savepoint();
        db.insert(0, vec![Cell::Text(Rc::from(format!("dept {d}")))])
            .unwrap();
        dd.commit(&mut db, sp).unwrap();
    }
    for i in 0..n {
        let sp = db.savepoint();
        let cells = vec![
            Cell::Text(Rc::from(format!("employee {i}"))),
            Cell::Int((i as i64 * 7919) % 200_000),
            Cell::Int((i % 5) as i64),
            Cell::Ref(1 + (i % 100) as i64),
        ];
        db.insert(1, cells).unwrap();
        dd.stage(&db, sp).unwrap();
        db.truncate_undo(sp);
        if i % 10_000 == 9_999 {
            dd.sync().unwrap();
        }
    }
    dd.sync().unwrap();
    let log_bytes = dd.log_bytes();
    drop((dd, db));
    if keep {
        let copy = dir.with_file_name(format!(
            "{}-log",
            dir.file_name().unwrap_or_default().to_string_lossy()
        ));
        let _ = std::fs::remove_dir_all(&copy);
        std::fs::create_dir_all(&copy).expect("mkdir");
        std::fs::copy(dir.join("wal"), copy.join("wal")).expect("copy the log");
    }
    eprintln!(
        "built a log of {n} inserts ({:.1} MB) in {:.2?}",
        log_bytes as f64 / 1e6,
        t.elapsed()
    );

    let t = Instant::now();
    let rep = durable::verify(&dir).expect("verify");
    assert!(rep.problem.is_none());
    println!(
        "verify (read, check and decode, no database): {:.2?}",
        t.elapsed()
    );

    let t = Instant::now();
    let progress = Box::new(|p: &durable::Progress| {
        if p.records.is_multiple_of(500_000) {
            eprintln!(
                "  replayed {} records ({} of {} bytes)",
                p.records, p.bytes, p.total_bytes
            );
        }
    });
    let (mut dd, db) = durable::open(
        &dir,
        schema(),
        Options {
            progress: Some(progress),
            auto_checkpoint: true,
            ..opts()
        },
    )
    .expect("reopen");
    let el = t.elapsed();
    assert_eq!(db.len(1), n);
    let records = n + 101;
    println!(
        "replay: {records} records ({:.1} MB) in {el:.2?}: {:.2}M records/s",
        log_bytes as f64 / 1e6,
        records as f64 / el.as_secs_f64() / 1e6
    );

    // The automatic checkpoint as a running program takes it: slices of rows written
    // between fiber turns (the longest slice is the longest a reading fiber waits;
    // the VM's slice is 8,192 rows), then the syncs, the rename and the new log on
    // the log thread while the program goes on reading.
    let t = Instant::now();
    dd.begin_checkpoint(&db)
        .expect("a checkpoint is due after the replay")
        .expect("it begins");
    let (mut longest, mut slices) = (std::time::Duration::ZERO, 0);
    while dd.checkpoint_encoding() {
        let s = Instant::now();
        dd.checkpoint_step(&db, 8_192)
            .expect("a slice")
            .expect("written");
        longest = longest.max(s.elapsed());
        slices += 1;
    }
    let encoded = t.elapsed();
    let stats = loop {
        if let Some(durable::LogEvent::Checkpoint(res)) = dd.poll(None) {
            break res.expect("the log thread put it in charge");
        }
    };
    println!(
        "automatic checkpoint of {} rows: {slices} slices, the longest {longest:.2?} (all slices {encoded:.2?}); syncs, rename and new log on the log thread, {:.2?} in all",
        stats.rows,
        t.elapsed()
    );

    let ck = dd.checkpoint(&db).expect("checkpoint");
    println!(
        "checkpoint of {} rows: {:.1} MB, pause {:.2?} (write {:.2?}, syncs and new log {:.2?})",
        ck.rows,
        ck.bytes as f64 / 1e6,
        ck.total,
        ck.write,
        ck.sync
    );
    drop((dd, db));

    let t = Instant::now();
    let (_dd, db) = durable::open(&dir, schema(), opts()).expect("open from checkpoint");
    let el = t.elapsed();
    assert_eq!(db.len(1), n);
    println!(
        "open from the checkpoint: {} rows in {el:.2?}: {:.2}M rows/s",
        n + 100,
        (n + 100) as f64 / el.as_secs_f64() / 1e6
    );
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
