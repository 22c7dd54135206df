//! `verify` beside a running writer reported damage that was not there. It read
//! `DIR/checkpoint`, then `DIR/wal`, then both again for its second pass, each by
//! name: when the writer checkpointed in between (a new checkpoint, then a new log
//! generation, renamed into place), it paired an old checkpoint with a newer log and
//! reported `the log starts at lsn N, but the checkpoint ends at lsn M` (exit 65 in
//! 38 of 70 runs against a writer that checkpoints often). The fix: each attempt
//! opens both files once and reads only those descriptors (one checkpoint, one log,
//! tied by their salts), reads the log only up to its length at that moment, and
//! reports a problem only when a second attempt finds the same problem in the same
//! pair of files. This test verifies over and over while a writer on the real file
//! system commits and checkpoints every few kilobytes of log.

mod durable_support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use durable_support::*;
use wo_db::durable::{self, Options};
use wo_db::{Cell, Savepoint};

#[test]
fn verify_beside_a_writer_that_checkpoints_often_finds_no_damage() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("durable_live_verify");
    let _ = std::fs::remove_dir_all(&dir);
    let options = Options {
        checkpoint_min: 256,
        ..Options::default()
    };
    let (mut dd, mut db) = durable::open(&dir, one_table_schema("t"), options).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let verified = Arc::new(AtomicUsize::new(0));
    let verifier = {
        let (dir, stop, verified) = (dir.clone(), stop.clone(), verified.clone());
        std::thread::spawn(move || {
            let mut problems = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match durable::verify(&dir) {
                    Ok(rep) => {
                        if let Some(p) = rep.problem {
                            problems.push(format!(
                                "{}: {}: {}",
                                p.file.display(),
                                p.offset,
                                p.what
                            ));
                        }
                    }
                    Err(e) => problems.push(e.to_string()),
                }
                verified.fetch_add(1, Ordering::Relaxed);
            }
            problems
        })
    };
    let mut checkpoints = 0;
    let mut n = 0i64;
    // Until the verifier has read the directory 1000 times (and at least 500 commits).
    while verified.load(Ordering::Relaxed) < 1000 || n < 500 {
        n += 1;
        db.insert(0, vec![Cell::Int(n)]).unwrap();
        let out = dd.commit(&mut db, Savepoint(0)).unwrap();
        checkpoints += usize::from(out.checkpoint.is_some());
    }
    stop.store(true, Ordering::Relaxed);
    let problems = verifier.join().unwrap();
    assert!(
        checkpoints > 10,
        "only {checkpoints} checkpoints in {n} commits"
    );
    assert!(
        problems.is_empty(),
        "verify reported {} problems in {} runs, e.g. {}",
        problems.len(),
        verified.load(Ordering::Relaxed),
        problems[0]
    );
    drop((dd, db));
    let rep = durable::verify(&dir).unwrap();
    assert_eq!(rep.problem, None);
    assert_eq!(rep.tables[0].rows, n as u64);
}
