//! Commit benchmark (not a test): N single-insert durable commits (one `fdatasync`
//! each) with log preallocation on and off, printing commits/s and the latency
//! median and p99. Run with `cargo run -p wo-db --release --example commits [N] [DIR]`;
//! DIR must be on a real disk (not tmpfs, where `fdatasync` is free).

use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use wo_db::durable::{self, Options, DEFAULT_PREALLOCATE};
use wo_db::{Cell, ColType, Column, Schema, TableDef};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3000);
    let base = args.next().map_or_else(std::env::temp_dir, PathBuf::from);
    let schema = Schema {
        tables: vec![TableDef {
            name: "events".into(),
            columns: vec![
                Column {
                    name: "what".into(),
                    ty: ColType::Text,
                    nullable: false,
                },
                Column {
                    name: "n".into(),
                    ty: ColType::Int,
                    nullable: false,
                },
            ],
            indexes: vec![],
            durable: true,
        }],
    };
    for round in 0..2 {
        for prealloc in [0, DEFAULT_PREALLOCATE] {
            let dir = base.join(format!("wo-commits-{}-{prealloc}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let opts = Options {
                preallocate: prealloc,
                auto_checkpoint: false,
                ..Options::default()
            };
            let (mut dd, mut db) = durable::open(&dir, schema.clone(), opts).expect("open");
            let mut lat = Vec::with_capacity(n);
            let t = Instant::now();
            for i in 0..n {
                let t0 = Instant::now();
                let sp = db.savepoint();
                db.insert(
                    0,
                    vec![
                        Cell::Text(Rc::from(format!("event number {i}"))),
                        Cell::Int(i as i64),
                    ],
                )
                .unwrap();
                dd.commit(&mut db, sp).expect("commit");
                lat.push(t0.elapsed());
            }
            let el = t.elapsed();
            lat.sort();
            println!(
                "round {round} preallocate {prealloc:>7}: {n} commits in {el:.2?}: {:.0} commits/s, p50 {:.0?}, p99 {:.0?}",
                n as f64 / el.as_secs_f64(),
                lat[n / 2],
                lat[n * 99 / 100]
            );
            drop((dd, db));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
