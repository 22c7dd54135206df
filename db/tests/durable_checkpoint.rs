//! Checkpoint crash points: a power cut before each step of the checkpoint protocol
//! (create `checkpoint.tmp`, write it, fsync, rename to `checkpoint`, fsync the
//! directory, create `wal.tmp` with the new generation's header and schema record,
//! fsync, rename to `wal`, fsync the directory), with unsynced writes and renames
//! kept, dropped or garbled, must leave a directory that opens with every
//! acknowledged change — and keeps working: later commits survive the next restart.

mod durable_support;

use std::path::PathBuf;

use durable_support::*;
use wo_db::durable::{self, Fate, OpKind, SimStorage};
use wo_db::{Cell, Savepoint};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

/// A directory with a first checkpoint and more log after it, then a second
/// checkpoint crashing before operation `crash` (absolute index). Returns the disk,
/// the acknowledged state and the operations of the second checkpoint.
fn scenario(crash: Option<usize>) -> (SimStorage, State, std::ops::Range<usize>) {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    let mut rng = Rng(99);
    let mut cand = state(&db);
    for i in 0..160 {
        step(&mut dd, &mut db, &mut rng, &mut cand);
        if i == 80 {
            dd.checkpoint(&db).unwrap();
        }
    }
    let acked = state(&db);
    let start = sim.op_count();
    if let Some(k) = crash {
        sim.crash_before(k);
    }
    let res = dd.checkpoint(&db);
    assert_eq!(
        res.is_err(),
        crash.is_some_and(|k| k < sim.op_count()),
        "{res:?}"
    );
    let end = sim.op_count();
    (sim, acked, start..end)
}

#[test]
fn a_crash_at_any_step_of_a_checkpoint_loses_nothing() {
    let (full, _, range) = scenario(None);
    let ops = full.ops();
    let steps: Vec<String> = ops[range.clone()]
        .iter()
        .filter(|o| o.kind != OpKind::Write)
        .map(|o| {
            format!(
                "{:?} {}",
                o.kind,
                o.path.file_name().unwrap().to_string_lossy()
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            "Create checkpoint.tmp",
            "Truncate checkpoint.tmp",
            "Sync checkpoint.tmp",
            "Rename checkpoint",
            "DirSync data",
            "Create wal.tmp",
            "Truncate wal.tmp",
            "Sync wal.tmp",
            "Rename wal",
            "DirSync data",
        ],
        "the protocol"
    );
    let mut cases = 0;
    for k in range.start..=range.end {
        let (sim, acked, _) = scenario(Some(k));
        for fate in [
            Fate::KeepAll,
            Fate::DropAll,
            Fate::Random(k as u64),
            Fate::Random(k as u64 * 31 + 7),
        ] {
            let img = sim.crash_image(fate);
            let (mut dd, mut db) = match open_sim(&img, &dir()) {
                Ok(x) => x,
                Err(e) => panic!(
                    "crash before op {k} {:?}, {fate:?}: {e}",
                    ops.get(k).map(|o| o.kind)
                ),
            };
            assert_eq!(state(&db), acked, "crash before op {k}, {fate:?}");
            // The directory keeps working after recovery.
            let sp = db.savepoint();
            let id = db
                .insert(DEPTS, vec![Cell::Text(format!("after {k}").into())])
                .unwrap();
            dd.commit(&mut db, sp).unwrap();
            let want = state(&db);
            drop(dd);
            let (_dd, db) = open_sim(&img.crash_image(Fate::DropAll), &dir()).unwrap();
            assert_eq!(state(&db), want);
            assert!(db.is_live(DEPTS, id));
            cases += 1;
        }
    }
    eprintln!(
        "checkpoint crash points: {} operations, {cases} recoveries",
        range.len() + 1
    );
}

#[test]
fn a_failed_checkpoint_before_the_rename_leaves_the_log_in_charge() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    db.insert(DEPTS, vec![Cell::Text("a".into())]).unwrap();
    dd.commit(&mut db, Savepoint(0)).unwrap();
    sim.fail_nth(&[OpKind::Sync], 1, wo_db::durable::FaultKind::Errno(5));
    let f = dd.checkpoint(&db).unwrap_err();
    assert_eq!(
        f.to_string(),
        "fsync failed on /data/checkpoint.tmp: Input/output error (os error 5)"
    );
    assert!(dd.fence().is_none(), "the log itself did not fail");
    assert!(
        sim.read_file(&dir().join("checkpoint.tmp")).is_none(),
        "the partial checkpoint is removed"
    );
    db.insert(DEPTS, vec![Cell::Text("b".into())]).unwrap();
    dd.commit(&mut db, Savepoint(0)).unwrap();
    let want = state(&db);
    drop(dd);
    let (_dd, db) = open_sim(&sim.crash_image(Fate::DropAll), &dir()).unwrap();
    assert_eq!(state(&db), want);
}

#[test]
fn a_checkpoint_with_uncommitted_changes_is_refused() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open_sim(&sim, &dir()).unwrap();
    db.insert(DEPTS, vec![Cell::Text("a".into())]).unwrap();
    let before = sim.op_count();
    let f = dd.checkpoint(&db).unwrap_err();
    assert_eq!(f.op, "checkpoint");
    assert_eq!(sim.op_count(), before);
    assert!(durable::verify_with(&sim, &dir())
        .unwrap()
        .problem
        .is_none());
}
