//! `verify` beside a running writer reported damage that was not there. It read
//! `DIR/checkpoint`, then `DIR/wal`, then both again for its second pass, each by
//! name: when the writer checkpointed in between (a new checkpoint, then a new log
//! generation, renamed into place), it paired an old checkpoint with a newer log and
//! reported `the log starts at lsn N, but the checkpoint ends at lsn M` (exit 65 in
//! 38 of 70 runs against a writer that checkpoints often). The fix: each attempt
//! opens both files once and reads only those descriptors (one checkpoint, one log,
//! tied by their salts), reads the log only up to its length at that moment, and
//! reports a problem only when a second attempt finds the same problem in the same
//! pair of files. One test replays the race deterministically (a storage that hands
//! verify the old checkpoint once, as if the writer renamed a new one in right after);
//! the other verifies over and over while a writer on the real file system commits
//! and checkpoints every few hundred bytes of log.

mod durable_support;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use durable_support::*;
use wo_db::durable::{self, LockError, LockGuard, Options, SimStorage, Storage, StorageFile};
use wo_db::{Cell, Savepoint};

/// The directory as a writer leaves it (`now`), except that the first `stale_opens`
/// opens of `checkpoint` get the one before (`before`): what a reader sees when the
/// writer renames a new checkpoint and a new log into place between its opens of the
/// two files.
#[derive(Debug, Clone)]
struct Racing {
    now: SimStorage,
    before: SimStorage,
    stale_opens: usize,
    checkpoint_opens: Arc<AtomicUsize>,
}

impl Storage for Racing {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        self.now.open(path, create)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        if path.ends_with("checkpoint") {
            let n = self.checkpoint_opens.fetch_add(1, Ordering::Relaxed);
            if n < self.stale_opens {
                return self.before.open_read(path);
            }
        }
        self.now.open_read(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.now.exists(path)
    }
    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.now.entries(dir)
    }
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        self.now.create_dir(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.now.sync_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.now.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.now.remove(path)
    }
    fn lock(&self, path: &Path, pid: u32) -> Result<Box<dyn LockGuard>, LockError> {
        self.now.lock(path, pid)
    }
    fn lock_holder(&self, path: &Path) -> io::Result<Option<Option<u32>>> {
        self.now.lock_holder(path)
    }
    fn durable_note(&self, path: &Path) -> io::Result<Option<(u32, wo_db::durable::Noted)>> {
        self.now.durable_note(path)
    }
}

#[test]
fn verify_reads_again_when_it_paired_an_old_checkpoint_with_a_new_log() {
    let dir = PathBuf::from("/data");
    let sim = SimStorage::new();
    let options = Options {
        storage: Arc::new(sim.clone()),
        preallocate: 0,
        auto_checkpoint: false,
        ..Options::default()
    };
    let (mut dd, mut db) = durable::open(&dir, one_table_schema("t"), options).unwrap();
    let insert = |dd: &mut durable::DataDir, db: &mut wo_db::Db, n: i64| {
        db.insert(0, vec![Cell::Int(n)]).unwrap();
        dd.commit(db, Savepoint(0)).unwrap();
    };
    for n in 0..5 {
        insert(&mut dd, &mut db, n);
    }
    dd.checkpoint(&db).unwrap();
    insert(&mut dd, &mut db, 5);
    let before = SimStorage::new();
    for f in ["checkpoint", "wal"] {
        before.write_file(&dir.join(f), &read(&sim, &dir.join(f)));
    }
    dd.checkpoint(&db).unwrap();
    insert(&mut dd, &mut db, 6);
    drop((dd, db));
    // Once: the checkpoint before the last one, beside the newest log.
    let racing = Racing {
        now: sim.clone(),
        before: before.clone(),
        stale_opens: 1,
        checkpoint_opens: Arc::new(AtomicUsize::new(0)),
    };
    let rep = durable::verify_with(&racing, &dir).unwrap();
    assert_eq!(rep.problem, None, "{rep}");
    assert_eq!(rep.tables[0].rows, 7);
    assert!(
        racing.checkpoint_opens.load(Ordering::Relaxed) >= 2,
        "verify did not read again"
    );
    // Every time: that pair really is what the directory holds, and it is reported.
    let stuck = Racing {
        stale_opens: usize::MAX,
        checkpoint_opens: Arc::new(AtomicUsize::new(0)),
        ..racing
    };
    let rep = durable::verify_with(&stuck, &dir).unwrap();
    let p = rep.problem.expect("a log that is not the checkpoint's");
    assert!(
        p.what.contains("does not belong to the checkpoint"),
        "{}",
        p.what
    );
}

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
