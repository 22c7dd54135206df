//! A log that is not the checkpoint's was merged silently. Nothing tied `DIR/wal` to
//! `DIR/checkpoint`: a log copied in from another directory (or an older backup) whose
//! LSNs happened to continue the checkpoint's was replayed on top of it, mixing two
//! histories without a word. The fix: a checkpoint (format version 2) records the salt
//! of the log generation it was taken from and of the one that starts after it, and
//! `open` and `verify` refuse a log with any other salt, naming both.

mod durable_support;

use std::path::{Path, PathBuf};

use durable_support::*;
use wo_db::durable::{self, DataDir, OpenError, SimStorage};
use wo_db::{Cell, Db, Savepoint};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn open(sim: &SimStorage, d: &Path) -> Result<(DataDir, Db), OpenError> {
    durable::open(d, one_table_schema("t"), sim_options(sim))
}

fn insert(dd: &mut DataDir, db: &mut Db, n: i64) {
    db.insert(0, vec![Cell::Int(n)]).unwrap();
    dd.commit(db, Savepoint(0)).unwrap();
}

/// A directory with five inserts, a checkpoint after them, and a sixth insert.
fn checkpointed_after_five() -> (SimStorage, DataDir, Db) {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open(&sim, &dir()).unwrap();
    for n in 1..=5 {
        insert(&mut dd, &mut db, n);
    }
    dd.checkpoint(&db).unwrap();
    insert(&mut dd, &mut db, 6);
    (sim, dd, db)
}

#[test]
fn a_log_from_another_directory_is_refused_naming_both_generations() {
    let sim = SimStorage::new();
    let (a, b) = (PathBuf::from("/a"), PathBuf::from("/b"));
    // Two directories with the same first ten inserts; `a` checkpoints after them.
    let (mut da, mut dba) = open(&sim, &a).unwrap();
    let (mut db_, mut dbb) = open(&sim, &b).unwrap();
    for n in 1..=10 {
        insert(&mut da, &mut dba, n);
        insert(&mut db_, &mut dbb, n);
    }
    da.checkpoint(&dba).unwrap();
    for n in 100..105 {
        insert(&mut db_, &mut dbb, n);
    }
    drop((da, dba, db_, dbb));
    // `b`'s log continues `a`'s checkpoint LSN for LSN, insert id for insert id.
    sim.write_file(&a.join("wal"), &read(&sim, &b.join("wal")));
    let what = match open(&sim, &a) {
        Err(OpenError::Damaged { file, offset, what }) => {
            assert_eq!((file, offset), (a.join("wal"), 16));
            what
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok((_, db)) => panic!("merged another directory's log: {} rows", db.len(0)),
    };
    assert!(what.contains("does not belong to the checkpoint"), "{what}");
    let rep = durable::verify_with(&sim, &a).unwrap();
    let p = rep.problem.expect("verify reports the foreign log");
    assert!(
        p.what.contains("does not belong to the checkpoint"),
        "{}",
        p.what
    );
}

#[test]
fn an_older_generation_put_back_is_refused_and_the_right_pair_still_opens() {
    let (sim, mut dd, mut db) = checkpointed_after_five();
    // The generation after the first checkpoint, and that checkpoint.
    let (old_wal, old_ckpt) = (
        read(&sim, &dir().join("wal")),
        read(&sim, &dir().join("checkpoint")),
    );
    dd.checkpoint(&db).unwrap();
    insert(&mut dd, &mut db, 7);
    drop((dd, db));
    let (new_wal, new_ckpt) = (
        read(&sim, &dir().join("wal")),
        read(&sim, &dir().join("checkpoint")),
    );

    // The old log beside the new checkpoint: it is the generation the new checkpoint
    // was taken from (a crash between the two renames leaves exactly this), so it opens.
    sim.write_file(&dir().join("wal"), &old_wal);
    let (_, db) = open(&sim, &dir()).expect("the generation the checkpoint was taken from");
    assert_eq!(db.len(0), 6);
    drop(db);
    // The new log beside the old checkpoint: not that checkpoint's.
    sim.write_file(&dir().join("wal"), &new_wal);
    sim.write_file(&dir().join("checkpoint"), &old_ckpt);
    match open(&sim, &dir()) {
        Err(OpenError::Damaged { what, .. }) => assert!(what.contains("does not belong"), "{what}"),
        other => panic!(
            "expected a refusal, got {:?}",
            other.map(|(_, db)| db.len(0))
        ),
    }
    // Put right, the directory opens with every row.
    sim.write_file(&dir().join("checkpoint"), &new_ckpt);
    let (_, db) = open(&sim, &dir()).unwrap();
    assert_eq!(db.len(0), 7);
}

/// A checkpoint written before the tie (format version 1: a 36-byte header without
/// salts) is still read, with any log whose LSNs continue it.
#[test]
fn a_version_1_checkpoint_is_still_read() {
    let sim = SimStorage::new();
    let body = one_table_body("t", 4, &[(1, 10), (3, 30)]);
    let mut f = Vec::new();
    f.extend_from_slice(b"\x89wockp\r\n");
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&5u64.to_le_bytes());
    f.extend_from_slice(&(body.len() as u64).to_le_bytes());
    let crc = crc32fast::hash(&f).to_le_bytes();
    f.extend_from_slice(&crc);
    f.extend_from_slice(&body);
    f.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    sim.write_file(&dir().join("checkpoint"), &f);
    let mut schema = schema_item("t", 4);
    schema.extend(insert_item(4, 40));
    sim.write_file(&dir().join("wal"), &wal_file(0x1234, 6, &[schema]));
    let rep = durable::verify_with(&sim, &dir()).unwrap();
    assert_eq!(rep.problem, None, "{rep}");
    let (_, db) = open(&sim, &dir()).unwrap();
    assert_eq!(db.len(0), 3);
    assert_eq!(db.next_id(0), 5);
}

/// A directory whose checkpoint is missing (deleted, or never copied): recovery
/// refuses it, and so must the readers, where `wo db export` handed out the rows of
/// the log alone (a part, with references to rows it did not hand out) and exited 0
/// (helper-88).
#[test]
fn a_log_without_its_checkpoint_is_refused_by_the_readers_too() {
    let (sim, dd, db) = checkpointed_after_five();
    drop((dd, db));
    durable::Storage::remove(&sim, &dir().join("checkpoint")).unwrap();
    let want = "the log starts at lsn 7 and there is no checkpoint";
    match open(&sim, &dir()) {
        Err(OpenError::Damaged { what, .. }) => assert_eq!(what, want),
        Err(e) => panic!("refused for another reason: {e}"),
        Ok((_, db)) => panic!("opened: {} rows", db.len(0)),
    }
    let res =
        durable::read::snapshot_in::<OpenError>(std::sync::Arc::new(sim.clone()), &dir(), |_| {
            Ok(())
        });
    match res {
        Err(OpenError::Damaged { file, offset, what }) => {
            assert_eq!((file, offset, what.as_str()), (dir().join("wal"), 24, want));
        }
        Err(e) => panic!("the reader refused for another reason: {e}"),
        Ok(_) => panic!("the reader read a log without its checkpoint"),
    }
}
