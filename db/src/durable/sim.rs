//! A simulated disk for tests, in the spirit of SQLite's crash VFS and redb's crash
//! backend: files live in memory, each file remembers what has reached "stable
//! storage" (its content at the last `fdatasync`/`fsync`) separately from what a
//! reader sees, and the directory remembers which creates, renames and removes have
//! been made durable by a directory sync. A test can
//!
//! - fail the k-th operation of chosen kinds with a chosen errno (EIO, ENOSPC, EFBIG)
//!   or a short write (half the buffer, then ENOSPC on the continuation, as the kernel
//!   does when the disk fills),
//! - freeze the disk just before the k-th operation (a crash: every later operation
//!   fails), and
//! - compute [`SimStorage::crash_image`]: the directory a power cut would leave —
//!   synced data kept; each unsynced write kept, dropped or garbled sector by sector
//!   according to a [`Fate`]; namespace changes not yet made durable by a directory
//!   sync kept only as a random prefix.
//!
//! The lock file is a file of the disk like the others, as on a real file system:
//! taking the lock creates it and writes the pid, and the log thread's durable note
//! ([`super::storage::DurableNote`]) goes into it after each sync, as unsynced writes a
//! power cut keeps, drops or garbles. These writes are not counted operations (the
//! real ones are not `pwrite64` or `fdatasync` calls either, which fault tests count),
//! except the one write and sync with which a new holder lowers a note its log does
//! not bear out ([`super::storage::LockGuard::settle_note`]): both are counted here (of
//! the real ones, only the `fdatasync` is a call the strace tests count), so a fault
//! plan may fail either, and the open fails with it. Taking the lock (creating the
//! file, writing the pid) is not counted, and fails only on a frozen disk.
//!
//! Simplification, stated so tests do not rely on more: a directory sync makes every
//! earlier namespace change durable, in order (ext4's journal commits them in order),
//! and `fsync` and `fdatasync` are the same thing here.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::storage::{
    lowered, note_line, parse_note, taken_lock_text, DurableNote, LockError, LockGuard, Noted,
    Storage, StorageFile, LOCK_TEXT_MAX,
};

/// The kinds of operation the simulated disk counts (reads are not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// One `pwrite` call.
    Write,
    /// `fdatasync` or `fsync` of a file.
    Sync,
    /// `fsync` of a directory.
    DirSync,
    Truncate,
    Rename,
    Remove,
    /// Creating a file or a directory.
    Create,
}

impl OpKind {
    pub const ALL: [OpKind; 7] = [
        OpKind::Write,
        OpKind::Sync,
        OpKind::DirSync,
        OpKind::Truncate,
        OpKind::Rename,
        OpKind::Remove,
        OpKind::Create,
    ];
}

/// How an injected fault fails the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The call fails with this errno and does nothing.
    Errno(i32),
    /// A write stores the first half of its buffer and returns the short count; the
    /// next write call (the continuation) fails with `ENOSPC`. On other kinds, `EIO`.
    ShortWrite,
}

/// What happens to the writes that were not synced when the power went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Every write and namespace change reached the disk.
    KeepAll,
    /// Only what was synced survives.
    DropAll,
    /// Each unsynced write is kept, dropped or garbled (per 512-byte sector: new
    /// bytes, old bytes or noise), and a random prefix of the unsynced namespace
    /// changes survives, all decided by this seed.
    Random(u64),
}

/// One counted operation, for tests that check what was (not) done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRecord {
    pub kind: OpKind,
    pub path: PathBuf,
}

#[derive(Debug, Clone)]
enum Pending {
    Write { off: u64, data: Vec<u8> },
    Truncate(u64),
}

#[derive(Debug, Clone, Default)]
struct SimFile {
    /// What a reader sees.
    data: Vec<u8>,
    /// What survives a crash for sure.
    durable: Vec<u8>,
    /// Changes since the last sync, in order.
    pending: Vec<Pending>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    File(usize),
    Dir,
}

#[derive(Debug, Clone)]
enum NsOp {
    Set(PathBuf, Entry),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
}

#[derive(Debug, Clone, Default)]
struct Disk {
    files: Vec<SimFile>,
    names: BTreeMap<PathBuf, Entry>,
    durable_names: BTreeMap<PathBuf, Entry>,
    ns_pending: Vec<NsOp>,
}

#[derive(Debug, Default)]
struct Sim {
    disk: Disk,
    /// The held locks, by lock file, with the pid each holder wrote.
    locks: HashMap<PathBuf, u32>,
    ops: Vec<OpRecord>,
    /// (kinds, n, fault): fail the n-th (1-based) operation whose kind is in kinds.
    fault: Option<(Vec<OpKind>, u64, FaultKind)>,
    fault_seen: u64,
    fault_fired: Option<usize>,
    /// The next write fails with ENOSPC (the continuation of a short write).
    short_pending: bool,
    /// Freeze before the operation with this index (0-based count of operations).
    crash_before: Option<usize>,
    frozen: Option<Disk>,
    /// [`SimStorage::set_memory_limit`]; `None`: the default 256 MiB.
    memory_limit: Option<u64>,
    /// [`SimStorage::set_sync_delay`].
    sync_delay: Option<std::time::Duration>,
}

/// The simulated disk. Clones share the same disk.
#[derive(Debug, Clone, Default)]
pub struct SimStorage {
    sim: Arc<Mutex<Sim>>,
}

fn errno(e: i32) -> io::Error {
    io::Error::from_raw_os_error(e)
}

const EIO: i32 = 5;
const ENOENT: i32 = 2;
const ENOTDIR: i32 = 20;
const ENOSPC: i32 = 28;

impl SimStorage {
    /// The memory the simulated machine has ([`Storage::memory_limit`]; 256 MiB by
    /// default): recovery refuses a stored id counter whose row slots would not fit.
    /// The fuzz targets set a small one, so that a counter just under the limit costs
    /// milliseconds, not seconds.
    pub fn set_memory_limit(&self, bytes: u64) {
        self.lock_sim().memory_limit = Some(bytes);
    }

    /// Makes every file sync take `d` (sleeping before it), so that a test or fuzz
    /// target sees what a slow disk allows: a program's thread goes on while the log
    /// thread waits, and records written meanwhile queue behind the sync in flight.
    pub fn set_sync_delay(&self, d: std::time::Duration) {
        self.lock_sim().sync_delay = Some(d);
    }

    /// An empty disk whose root directory `/` exists.
    pub fn new() -> SimStorage {
        let s = SimStorage::default();
        {
            let mut g = s.lock_sim();
            g.disk.names.insert(PathBuf::from("/"), Entry::Dir);
            g.disk.durable_names.insert(PathBuf::from("/"), Entry::Dir);
        }
        s
    }

    fn lock_sim(&self) -> MutexGuard<'_, Sim> {
        // A panic while holding the lock only happens in a failing test.
        self.sim.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails the `n`-th (1-based, counted from now) operation whose kind is in
    /// `kinds` with `fault`.
    pub fn fail_nth(&self, kinds: &[OpKind], n: u64, fault: FaultKind) {
        let mut g = self.lock_sim();
        g.fault = Some((kinds.to_vec(), n, fault));
        g.fault_seen = 0;
        g.fault_fired = None;
    }

    /// The index (in [`SimStorage::ops`]) of the operation the fault failed, once it has.
    pub fn fault_fired(&self) -> Option<usize> {
        self.lock_sim().fault_fired
    }

    /// Crashes just before the operation with index `k` (0-based, counting all
    /// operations ever made on this disk): the disk is frozen as it was, and that and
    /// every later operation fails with `EIO`.
    pub fn crash_before(&self, k: usize) {
        let mut g = self.lock_sim();
        g.crash_before = Some(k);
        if g.ops.len() >= k && g.frozen.is_none() {
            g.frozen = Some(g.disk.clone());
        }
    }

    /// Whether the disk has crashed.
    pub fn crashed(&self) -> bool {
        self.lock_sim().frozen.is_some()
    }

    /// Every counted operation so far.
    pub fn ops(&self) -> Vec<OpRecord> {
        self.lock_sim().ops.clone()
    }

    /// The number of counted operations so far.
    pub fn op_count(&self) -> usize {
        self.lock_sim().ops.len()
    }

    /// What a reader sees in `path` now (None when it does not exist).
    pub fn read_file(&self, path: &Path) -> Option<Vec<u8>> {
        let g = self.lock_sim();
        match g.disk.names.get(path) {
            Some(Entry::File(id)) => Some(g.disk.files[*id].data.clone()),
            _ => None,
        }
    }

    /// Replaces the content of `path` (creating it and its directories), durably,
    /// without counting an operation: for tests that damage files.
    pub fn write_file(&self, path: &Path, data: &[u8]) {
        let mut g = self.lock_sim();
        let disk = &mut g.disk;
        for a in path
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
        {
            disk.names.entry(a.to_path_buf()).or_insert(Entry::Dir);
            disk.durable_names
                .entry(a.to_path_buf())
                .or_insert(Entry::Dir);
        }
        let id = match disk.names.get(path) {
            Some(Entry::File(id)) => *id,
            _ => {
                disk.files.push(SimFile::default());
                let id = disk.files.len() - 1;
                disk.names.insert(path.to_path_buf(), Entry::File(id));
                disk.durable_names
                    .insert(path.to_path_buf(), Entry::File(id));
                id
            }
        };
        let f = &mut disk.files[id];
        f.data = data.to_vec();
        f.durable = data.to_vec();
        f.pending.clear();
    }

    /// The files under `dir` a reader sees now, sorted.
    pub fn list(&self, dir: &Path) -> Vec<PathBuf> {
        let g = self.lock_sim();
        g.disk
            .names
            .iter()
            .filter(|(p, e)| p.parent() == Some(dir) && matches!(e, Entry::File(_)))
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// The disk a power cut would leave (at the crash point if the disk crashed,
    /// otherwise now): a fresh simulated disk whose every byte and name is durable.
    pub fn crash_image(&self, fate: Fate) -> SimStorage {
        let g = self.lock_sim();
        let disk = g.frozen.as_ref().unwrap_or(&g.disk);
        let mut rng = Rng(match fate {
            Fate::Random(seed) => seed ^ 0x9e37_79b9_7f4a_7c15,
            _ => 1,
        });
        let mut files = Vec::with_capacity(disk.files.len());
        for f in &disk.files {
            let mut img = f.durable.clone();
            for p in &f.pending {
                match (fate, p) {
                    (Fate::DropAll, _) => {}
                    (Fate::KeepAll, p) => apply(&mut img, p),
                    (Fate::Random(_), Pending::Truncate(_)) => {
                        if rng.below(2) == 0 {
                            apply(&mut img, p);
                        }
                    }
                    (Fate::Random(_), Pending::Write { off, data }) => match rng.below(3) {
                        0 => apply(&mut img, p),
                        1 => {
                            // Dropped; the size change may or may not have persisted.
                            if rng.below(2) == 0 {
                                let end = *off as usize + data.len();
                                if img.len() < end {
                                    img.resize(end, 0);
                                }
                            }
                        }
                        _ => garble(&mut img, *off, data, &mut rng),
                    },
                }
            }
            files.push(SimFile {
                data: img.clone(),
                durable: img,
                pending: Vec::new(),
            });
        }
        let mut names = disk.durable_names.clone();
        let keep = match fate {
            Fate::KeepAll => disk.ns_pending.len(),
            Fate::DropAll => 0,
            Fate::Random(_) => rng.below(disk.ns_pending.len() as u64 + 1) as usize,
        };
        for op in &disk.ns_pending[..keep] {
            apply_ns(&mut names, op);
        }
        let img = SimStorage::default();
        {
            let mut s = img.lock_sim();
            // The same machine, restarted.
            s.memory_limit = g.memory_limit;
            s.disk = Disk {
                files,
                durable_names: names.clone(),
                names,
                ns_pending: Vec::new(),
            };
        }
        img
    }

    /// Counts an operation and decides whether it fails.
    fn op(&self, g: &mut Sim, kind: OpKind, path: &Path) -> io::Result<Option<FaultKind>> {
        let idx = g.ops.len();
        if g.crash_before.is_some_and(|k| idx >= k) && g.frozen.is_none() {
            g.frozen = Some(g.disk.clone());
        }
        g.ops.push(OpRecord {
            kind,
            path: path.to_path_buf(),
        });
        if g.frozen.is_some() {
            return Err(errno(EIO));
        }
        if kind == OpKind::Write && g.short_pending {
            g.short_pending = false;
            return Err(errno(ENOSPC));
        }
        if let Some((kinds, n, fault)) = &g.fault {
            if kinds.contains(&kind) {
                g.fault_seen += 1;
                if g.fault_seen == *n {
                    let fault = *fault;
                    g.fault_fired = Some(idx);
                    return match fault {
                        FaultKind::Errno(e) => Err(errno(e)),
                        FaultKind::ShortWrite if kind == OpKind::Write => Ok(Some(fault)),
                        FaultKind::ShortWrite => Err(errno(EIO)),
                    };
                }
            }
        }
        Ok(None)
    }
}

fn apply(img: &mut Vec<u8>, p: &Pending) {
    match p {
        Pending::Write { off, data } => {
            let off = *off as usize;
            if img.len() < off + data.len() {
                img.resize(off + data.len(), 0);
            }
            img[off..off + data.len()].copy_from_slice(data);
        }
        Pending::Truncate(len) => img.resize(*len as usize, 0),
    }
}

fn garble(img: &mut Vec<u8>, off: u64, data: &[u8], rng: &mut Rng) {
    let off = off as usize;
    let end = off + data.len();
    if img.len() < end {
        img.resize(end, 0);
    }
    let mut pos = off;
    while pos < end {
        let sector_end = ((pos / 512) + 1) * 512;
        let piece = pos..sector_end.min(end);
        match rng.below(3) {
            0 => img[piece.clone()].copy_from_slice(&data[piece.start - off..piece.end - off]),
            1 => {}
            _ => {
                for b in &mut img[piece.clone()] {
                    *b = rng.next() as u8;
                }
            }
        }
        pos = piece.end;
    }
}

fn apply_ns(names: &mut BTreeMap<PathBuf, Entry>, op: &NsOp) {
    match op {
        NsOp::Set(p, e) => {
            names.insert(p.clone(), *e);
        }
        NsOp::Rename(from, to) => {
            if let Some(e) = names.remove(from) {
                names.insert(to.clone(), e);
            }
        }
        NsOp::Remove(p) => {
            names.remove(p);
        }
    }
}

/// A small deterministic generator (splitmix64).
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

#[derive(Debug)]
struct SimFileHandle {
    sim: SimStorage,
    id: usize,
    path: PathBuf,
    writable: bool,
}

impl StorageFile for SimFileHandle {
    fn pwrite(&mut self, buf: &[u8], off: u64) -> io::Result<usize> {
        let sim = self.sim.clone();
        let mut g = sim.lock_sim();
        let fault = self.sim.op(&mut g, OpKind::Write, &self.path)?;
        if !self.writable {
            return Err(errno(9));
        }
        let n = match fault {
            Some(FaultKind::ShortWrite) if buf.len() > 1 => {
                g.short_pending = true;
                buf.len() / 2
            }
            _ => buf.len(),
        };
        let p = Pending::Write {
            off,
            data: buf[..n].to_vec(),
        };
        let f = &mut g.disk.files[self.id];
        apply(&mut f.data, &p);
        f.pending.push(p);
        Ok(n)
    }
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let g = self.sim.lock_sim();
        let data = &g.disk.files[self.id].data;
        let off = usize::try_from(off).unwrap_or(usize::MAX);
        if off >= data.len() {
            return Ok(0);
        }
        let n = buf.len().min(data.len() - off);
        buf[..n].copy_from_slice(&data[off..off + n]);
        Ok(n)
    }
    fn fdatasync(&mut self) -> io::Result<()> {
        self.fsync()
    }
    fn try_clone(&self) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(SimFileHandle {
            sim: self.sim.clone(),
            id: self.id,
            path: self.path.clone(),
            writable: self.writable,
        }))
    }
    fn fsync(&mut self) -> io::Result<()> {
        let sim = self.sim.clone();
        let delay = sim.lock_sim().sync_delay;
        if let Some(d) = delay {
            // The disk is not held meanwhile: other writes go on, as beside a real
            // `fdatasync` in flight.
            std::thread::sleep(d);
        }
        let mut g = sim.lock_sim();
        self.sim.op(&mut g, OpKind::Sync, &self.path)?;
        let f = &mut g.disk.files[self.id];
        f.durable = f.data.clone();
        f.pending.clear();
        Ok(())
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        let sim = self.sim.clone();
        let mut g = sim.lock_sim();
        self.sim.op(&mut g, OpKind::Truncate, &self.path)?;
        let p = Pending::Truncate(len);
        let f = &mut g.disk.files[self.id];
        apply(&mut f.data, &p);
        f.pending.push(p);
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.sim.lock_sim().disk.files[self.id].data.len() as u64)
    }
}

#[derive(Debug)]
struct SimLock {
    sim: SimStorage,
    path: PathBuf,
    /// The lock file, as the real lock keeps its descriptor (whatever its name
    /// becomes).
    file: usize,
    pid: u32,
    /// Where the note goes: after the pid's line.
    note_at: u64,
    /// The former holder's whole note, carried over when the lock was taken.
    carried: Option<Noted>,
}

impl LockGuard for SimLock {
    fn durable_note(&self) -> Option<Box<dyn DurableNote>> {
        Some(Box::new(SimNote {
            sim: self.sim.clone(),
            file: self.file,
            pid: self.pid,
            at: self.note_at,
        }))
    }
    fn carried_note(&self) -> Option<Noted> {
        self.carried
    }
    fn settle_note(&self, recovered: u64) -> Result<(), (&'static str, io::Error)> {
        if let Some(noted) = lowered(self.carried, recovered) {
            // As the real lock does: one write and one sync, here counted.
            let mut f = SimFileHandle {
                sim: self.sim.clone(),
                id: self.file,
                path: self.path.clone(),
                writable: true,
            };
            let line = note_line(self.pid, noted);
            let short = || io::Error::new(io::ErrorKind::WriteZero, "short write of the note");
            match f.pwrite(line.as_bytes(), self.note_at) {
                Ok(n) if n == line.len() => {}
                Ok(_) => return Err(("pwritev", short())),
                Err(e) => return Err(("pwritev", e)),
            }
            f.fdatasync().map_err(|e| ("fdatasync", e))?;
        }
        Ok(())
    }
}

impl Drop for SimLock {
    fn drop(&mut self) {
        self.sim.lock_sim().locks.remove(&self.path);
    }
}

/// The log thread's note in the simulated lock file: unsynced, uncounted writes.
#[derive(Debug)]
struct SimNote {
    sim: SimStorage,
    file: usize,
    pid: u32,
    at: u64,
}

impl DurableNote for SimNote {
    fn publish(&mut self, lsn: u64, salt: u64) {
        let mut g = self.sim.lock_sim();
        // A frozen disk takes nothing more (best effort, as the real note).
        if g.frozen.is_none() {
            let noted = Noted {
                lsn,
                salt: Some(salt),
            };
            let line = note_line(self.pid, noted).into_bytes();
            write_uncounted(&mut g.disk, self.file, self.at, line);
        }
    }
}

/// A write the fault plan does not count (the lock file's), kept unsynced.
fn write_uncounted(disk: &mut Disk, file: usize, off: u64, data: Vec<u8>) {
    let p = Pending::Write { off, data };
    let f = &mut disk.files[file];
    apply(&mut f.data, &p);
    f.pending.push(p);
}

/// A new empty file named `path` (the name not durable until a directory sync).
fn new_file(disk: &mut Disk, path: &Path) -> usize {
    disk.files.push(SimFile::default());
    let id = disk.files.len() - 1;
    disk.names.insert(path.to_path_buf(), Entry::File(id));
    disk.ns_pending
        .push(NsOp::Set(path.to_path_buf(), Entry::File(id)));
    id
}

fn parent_exists(disk: &Disk, path: &Path) -> bool {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => matches!(disk.names.get(p), Some(Entry::Dir)),
        _ => true,
    }
}

impl Storage for SimStorage {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        let mut g = self.lock_sim();
        let id = match g.disk.names.get(path) {
            Some(Entry::File(id)) => *id,
            Some(Entry::Dir) => return Err(errno(21)),
            None if !create => return Err(errno(ENOENT)),
            None => {
                if !parent_exists(&g.disk, path) {
                    return Err(errno(ENOENT));
                }
                self.op(&mut g, OpKind::Create, path)?;
                new_file(&mut g.disk, path)
            }
        };
        Ok(Box::new(SimFileHandle {
            sim: self.clone(),
            id,
            path: path.to_path_buf(),
            writable: true,
        }))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let g = self.lock_sim();
        match g.disk.names.get(path) {
            Some(Entry::File(id)) => Ok(Box::new(SimFileHandle {
                sim: self.clone(),
                id: *id,
                path: path.to_path_buf(),
                writable: false,
            })),
            Some(Entry::Dir) => Err(errno(21)),
            None => Err(errno(ENOENT)),
        }
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        Ok(self.lock_sim().disk.names.contains_key(path))
    }
    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        let g = self.lock_sim();
        match g.disk.names.get(dir) {
            Some(Entry::Dir) => {}
            Some(Entry::File(_)) => return Err(errno(ENOTDIR)),
            None => return Err(errno(ENOENT)),
        }
        Ok(g.disk
            .names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
            .collect())
    }
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        let mut g = self.lock_sim();
        match g.disk.names.get(path) {
            Some(Entry::Dir) => return Ok(false),
            Some(Entry::File(_)) => return Err(errno(ENOTDIR)),
            None => {}
        }
        if !parent_exists(&g.disk, path) {
            return Err(errno(ENOENT));
        }
        self.op(&mut g, OpKind::Create, path)?;
        g.disk.names.insert(path.to_path_buf(), Entry::Dir);
        g.disk
            .ns_pending
            .push(NsOp::Set(path.to_path_buf(), Entry::Dir));
        Ok(true)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut g = self.lock_sim();
        if !g.disk.names.contains_key(dir) {
            return Err(errno(ENOENT));
        }
        self.op(&mut g, OpKind::DirSync, dir)?;
        let ops = std::mem::take(&mut g.disk.ns_pending);
        for op in &ops {
            apply_ns(&mut g.disk.durable_names, op);
        }
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut g = self.lock_sim();
        if !g.disk.names.contains_key(from) {
            return Err(errno(ENOENT));
        }
        self.op(&mut g, OpKind::Rename, to)?;
        let op = NsOp::Rename(from.to_path_buf(), to.to_path_buf());
        apply_ns(&mut g.disk.names, &op);
        g.disk.ns_pending.push(op);
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut g = self.lock_sim();
        if !g.disk.names.contains_key(path) {
            return Err(errno(ENOENT));
        }
        self.op(&mut g, OpKind::Remove, path)?;
        let op = NsOp::Remove(path.to_path_buf());
        apply_ns(&mut g.disk.names, &op);
        g.disk.ns_pending.push(op);
        Ok(())
    }
    fn lock(&self, path: &Path, pid: u32) -> Result<Box<dyn LockGuard>, LockError> {
        let mut g = self.lock_sim();
        if let Some(&holder) = g.locks.get(path) {
            return Err(LockError::Held(Some(holder)));
        }
        if g.frozen.is_some() {
            return Err(LockError::Io("open", errno(EIO)));
        }
        // Created and written as the real lock is (`RealStorage::lock`), outside the
        // counted operations: the pid's line, then the former holder's whole note
        // carried over under this pid.
        let file = match g.disk.names.get(path) {
            Some(Entry::File(id)) => *id,
            Some(Entry::Dir) => return Err(LockError::Io("open", errno(21))),
            None if !parent_exists(&g.disk, path) => {
                return Err(LockError::Io("open", errno(ENOENT)))
            }
            None => new_file(&mut g.disk, path),
        };
        let (text, note_at, carried) = taken_lock_text(pid, &g.disk.files[file].data);
        let cut = Pending::Truncate(0);
        let f = &mut g.disk.files[file];
        apply(&mut f.data, &cut);
        f.pending.push(cut);
        write_uncounted(&mut g.disk, file, 0, text.into_bytes());
        g.locks.insert(path.to_path_buf(), pid);
        Ok(Box::new(SimLock {
            sim: self.clone(),
            path: path.to_path_buf(),
            file,
            pid,
            note_at,
            carried,
        }))
    }
    fn durable_note(&self, path: &Path) -> io::Result<Option<(u32, Noted)>> {
        let g = self.lock_sim();
        Ok(match g.disk.names.get(path) {
            Some(Entry::File(id)) => {
                let data = &g.disk.files[*id].data;
                parse_note(&data[..data.len().min(LOCK_TEXT_MAX)])
            }
            _ => None,
        })
    }
    /// The simulated machine has 256 MiB unless set otherwise: a hostile id counter is
    /// refused long before a test (or a fuzz target under libFuzzer's memory limit)
    /// allocates gigabytes.
    fn memory_limit(&self) -> Option<u64> {
        Some(self.lock_sim().memory_limit.unwrap_or(256 << 20))
    }
    fn lock_holder(&self, path: &Path) -> io::Result<Option<Option<u32>>> {
        // The holder's pid, as the kernel's table of locks names it.
        Ok(self.lock_sim().locks.get(path).map(|&pid| Some(pid)))
    }
}
