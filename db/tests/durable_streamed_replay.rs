//! Recovery read the whole log into memory: `open` and `verify` did one `pread` of the
//! log's full length into one buffer, so a 1 GB log needed 2 GB of memory (the buffer
//! plus the data) and under `ulimit -v` the process aborted. The fix streams the log
//! through a window of one megabyte or one record, whichever is larger: memory for
//! the largest record, not for the log. This test counts the bytes of every read
//! recovery makes through the storage seam.

mod durable_support;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use wo_db::durable::{self, LockError, LockGuard, Options, SimStorage, Storage, StorageFile};
use wo_db::{Cell, ColType, Column, Savepoint, Schema, TableDef};

/// A storage that records the largest single read.
#[derive(Debug, Clone)]
struct Counting {
    sim: SimStorage,
    largest: Arc<AtomicUsize>,
}

struct CountingFile {
    inner: Box<dyn StorageFile>,
    largest: Arc<AtomicUsize>,
}

impl fmt::Debug for CountingFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl StorageFile for CountingFile {
    fn pwrite(&mut self, buf: &[u8], off: u64) -> io::Result<usize> {
        self.inner.pwrite(buf, off)
    }
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.largest.fetch_max(buf.len(), Ordering::Relaxed);
        self.inner.read_at(buf, off)
    }
    fn fdatasync(&mut self) -> io::Result<()> {
        self.inner.fdatasync()
    }
    fn try_clone(&self) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(CountingFile {
            inner: self.inner.try_clone()?,
            largest: self.largest.clone(),
        }))
    }
    fn fsync(&mut self) -> io::Result<()> {
        self.inner.fsync()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.inner.truncate(len)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl Storage for Counting {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        let inner = self.sim.open(path, create)?;
        Ok(Box::new(CountingFile {
            inner,
            largest: self.largest.clone(),
        }))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let inner = self.sim.open_read(path)?;
        Ok(Box::new(CountingFile {
            inner,
            largest: self.largest.clone(),
        }))
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.sim.exists(path)
    }
    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.sim.entries(dir)
    }
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        self.sim.create_dir(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.sim.sync_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.sim.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.sim.remove(path)
    }
    fn lock(&self, path: &Path, pid: u32) -> Result<Box<dyn LockGuard>, LockError> {
        self.sim.lock(path, pid)
    }
    fn lock_holder(&self, path: &Path) -> io::Result<Option<Option<u32>>> {
        self.sim.lock_holder(path)
    }
    fn durable_note(&self, path: &Path) -> io::Result<Option<(u32, wo_db::durable::Noted)>> {
        self.sim.durable_note(path)
    }
}

fn schema() -> Schema {
    Schema {
        tables: vec![TableDef {
            name: "docs".into(),
            columns: vec![Column {
                name: "body".into(),
                ty: ColType::Text,
                nullable: false,
            }],
            indexes: vec![],
            durable: true,
        }],
    }
}

#[test]
fn replay_of_an_8_mib_log_reads_at_most_a_megabyte_at_a_time() {
    let dir = PathBuf::from("/data");
    let store = Counting {
        sim: SimStorage::new(),
        largest: Arc::new(AtomicUsize::new(0)),
    };
    let options = || Options {
        storage: Arc::new(store.clone()),
        preallocate: 0,
        auto_checkpoint: false,
        ..Options::default()
    };
    let (mut dd, mut db) = durable::open(&dir, schema(), options()).unwrap();
    let text: Rc<str> = Rc::from("x".repeat(2000));
    for _ in 0..64 {
        for _ in 0..64 {
            db.insert(0, vec![Cell::Text(text.clone())]).unwrap();
        }
        dd.commit(&mut db, Savepoint(0)).unwrap();
    }
    // One large record too: the window grows to hold it.
    for _ in 0..1000 {
        db.insert(0, vec![Cell::Text(text.clone())]).unwrap();
    }
    dd.commit(&mut db, Savepoint(0)).unwrap();
    let log = dd.log_bytes();
    drop((dd, db));
    assert!(log > 8 << 20, "log is only {log} bytes");

    store.largest.store(0, Ordering::Relaxed);
    let (_, db) = durable::open(&dir, schema(), options()).unwrap();
    assert_eq!(db.len(0), 5096);
    let largest = store.largest.load(Ordering::Relaxed);
    assert!(
        largest <= 2_100_000,
        "open read {largest} bytes at once from a {log}-byte log"
    );

    store.largest.store(0, Ordering::Relaxed);
    drop(db);
    let rep = durable::verify_with(&store, &dir).unwrap();
    assert_eq!(rep.problem, None);
    assert_eq!(rep.tables[0].rows, 5096);
    let largest = store.largest.load(Ordering::Relaxed);
    assert!(
        largest <= 2_100_000,
        "verify read {largest} bytes at once from a {log}-byte log"
    );
}
