//! The storage seam: every byte the durable database reads or writes, every sync,
//! rename and directory operation goes through [`Storage`] and [`StorageFile`]. The
//! real implementation, [`RealStorage`], makes raw system calls through rustix (no
//! `std::fs` on the write and sync paths, so `strace -e inject=fdatasync,pwrite64`
//! hits exactly the calls the log makes); the simulated disk in `sim.rs` implements
//! the same traits for fault-injection and crash tests. Keeping the seam this small
//! (positional writes, positional reads, two kinds of sync, truncate, length,
//! directory sync, rename, remove, an advisory lock) is what lets a test fail the k-th
//! operation or compute the directory a power cut would leave.

use std::fmt::Debug;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{FlockOperation, Mode, OFlags};

/// An open file of the data directory.
pub trait StorageFile: Send + Debug {
    /// One `pwrite` call: writes a prefix of `buf` at `off` and returns its length
    /// (possibly short, never more than `buf.len()`).
    fn pwrite(&mut self, buf: &[u8], off: u64) -> io::Result<usize>;

    /// Writes all of `buf` at `off`, looping on short writes and `EINTR`. A write that
    /// makes no progress is an error (`WriteZero`); the first error ends the loop (the
    /// bytes written before it may or may not be in the file).
    fn pwrite_all(&mut self, mut buf: &[u8], mut off: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.pwrite(buf, off) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("short write: {} bytes could not be written", buf.len()),
                    ))
                }
                Ok(n) => {
                    let n = n.min(buf.len());
                    buf = &buf[n..];
                    off += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One `pread` call: reads at most `buf.len()` bytes at `off`; 0 at the end.
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize>;

    /// Reads `len` bytes at `off`, fewer only when the file ends first.
    fn read_vec(&self, off: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        let mut got = 0;
        while got < len {
            match self.read_at(&mut out[got..], off + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        out.truncate(got);
        Ok(out)
    }

    /// `fdatasync`: the file's data (and the size needed to read it back) is stable.
    fn fdatasync(&mut self) -> io::Result<()>;
    /// Another handle of the same open file (the log thread syncs through one while
    /// the program's thread writes through the other).
    fn try_clone(&self) -> io::Result<Box<dyn StorageFile>>;
    /// `fsync`: data and all metadata are stable.
    fn fsync(&mut self) -> io::Result<()>;
    /// `ftruncate` to `len` bytes (not synced).
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// The file's current length.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A held advisory lock; dropping it releases the lock.
pub trait LockGuard: Send + Debug {
    /// Where the log thread tells readers how far the log is durable ([`DurableNote`]);
    /// `None` where the storage keeps no note.
    fn durable_note(&self) -> Option<Box<dyn DurableNote>> {
        None
    }
    /// After recovery, before anything is appended: the note carried over from the
    /// former holder is lowered to `recovered`, the last record recovery found, when
    /// it says more. The log may hold fewer records than the former holder synced (it
    /// was removed to start again, or replaced by an older copy), and a record this
    /// holder writes under such a number must not pass for durable before its sync.
    /// The lowered note names no log generation: the recovered log may not be synced
    /// yet (put back with `cp`), so it must not say this log's records are
    /// (helper-103); the log thread's first sync says so. An error (the note could
    /// not be rewritten), with the call that failed, fails the open: the note would go
    /// on naming records that are not durable.
    fn settle_note(&self, recovered: u64) -> Result<(), (&'static str, io::Error)> {
        let _ = recovered;
        Ok(())
    }
    /// The locked directory's identity (device and inode, from its locked descriptor,
    /// whatever its path names now): what [`Storage::dir_id`] of the path is compared
    /// with. `None` where the storage does not know (the simulated disk).
    fn dir_id(&self) -> Option<(u64, u64)> {
        None
    }
    /// The former holder's whole note, carried over when the lock was taken: what
    /// recovery takes as evidence that the records it covers were synced
    /// (`wal::check_unproven`, `wal::check_noted_end`). `None` when there was none.
    fn carried_note(&self) -> Option<Noted> {
        None
    }
}

/// The durable-LSN note in the lock file: after each successful sync the log thread
/// writes the LSN that sync covers, so that a reader (`wo db export`, the mirror)
/// beside a live writer includes the records acknowledged last, which nothing in the
/// log itself proves durable until the writer writes again (`read.rs`, `settle`).
///
/// The note is the lock file's second line, `durable <LSN, 20 digits> <CRC32, 8 hex
/// digits>\n`, rewritten in place; the CRC covers the holder's pid and the LSN, so a
/// read torn by a concurrent rewrite, or a note a former holder left (under its pid),
/// is ignored. A new holder carries a former holder's whole note over under its own
/// pid when it takes the lock (`RealStorage::lock`), so that readers beside it keep
/// the former holder's last acknowledged records while it starts; after recovery,
/// before it appends anything, it lowers that note to the last record it recovered
/// ([`LockGuard::settle_note`]): the log may have been reset or replaced since.
/// It is not synced (a reader trusts it only while its writer holds the lock; the one
/// exception is a note lowered by `settle_note`) and
/// written with `pwritev`, not `pwrite64`, so that fault tests counting the log's
/// writes count only those.
pub trait DurableNote: Send + Debug {
    /// Every record up to `lsn` of the log generation whose header has `salt` is
    /// durable. Best effort: a failure is ignored (readers then fall back to what the
    /// log proves).
    fn publish(&mut self, lsn: u64, salt: u64);
}

/// What a whole note states: every record up to `lsn` was synced, of the log
/// generation whose salt is `salt` (`None` in a note of an earlier version, which
/// did not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Noted {
    pub lsn: u64,
    pub salt: Option<u64>,
}

/// The note's line for `noted` written by process `pid`: `durable <LSN> <salt> <CRC>`
/// (without the salt in a note carried over from an earlier version's holder). Public
/// for tests and the fuzz targets, which write lock files.
pub fn note_line(pid: u32, noted: Noted) -> String {
    let lsn = noted.lsn;
    match noted.salt {
        Some(salt) => {
            let crc = crc32fast::hash(format!("{pid} {lsn} {salt:016x}").as_bytes());
            format!("durable {lsn:020} {salt:016x} {crc:08x}\n")
        }
        None => {
            let crc = crc32fast::hash(format!("{pid} {lsn}").as_bytes());
            format!("durable {lsn:020} {crc:08x}\n")
        }
    }
}

/// The durable LSN the note in `dir`'s lock file states, whoever wrote it: the
/// evidence `verify` and the readers take, as recovery takes the note its lock
/// carried over (`wal::check_unproven`). 0 when there is no whole note, or the lock
/// file cannot be read.
pub(crate) fn stated_durable(storage: &dyn Storage, dir: &Path) -> Noted {
    storage
        .durable_note(&dir.join("lock"))
        .ok()
        .flatten()
        .map_or(Noted::default(), |(_, noted)| noted)
}

/// A lock file's pid line and note fit in this many bytes; what lies past them is
/// not read (a longer file holds no note).
pub(crate) const LOCK_TEXT_MAX: usize = 128;

/// The pid and the note a lock file's text states, when its note is whole.
pub(crate) fn parse_note(text: &[u8]) -> Option<(u32, Noted)> {
    let text = std::str::from_utf8(text).ok()?;
    let mut lines = text.split('\n');
    let pid: u32 = lines.next()?.trim().parse().ok()?;
    let note = lines.next()?;
    let words: Vec<&str> = note.strip_prefix("durable ")?.split(' ').collect();
    let (lsn, salt) = match words[..] {
        [lsn, _crc] => (lsn, None),
        [lsn, salt, _crc] => (lsn, Some(u64::from_str_radix(salt, 16).ok()?)),
        _ => return None,
    };
    let noted = Noted {
        lsn: lsn.parse().ok()?,
        salt,
    };
    // Whole when it is the line this pid writes for this note, digit for digit: the
    // widths, the case and the CRC.
    (note_line(pid, noted) == format!("{note}\n")).then_some((pid, noted))
}

/// What a new holder of the lock writes in the lock file, given the file's former
/// text: its pid's line, then the former holder's whole note carried over under its
/// own pid (what a sync made durable stays durable; until this holder's first sync,
/// which may never come, readers beside it would otherwise take the former holder's
/// last acknowledged records for in doubt). Also where the note goes (after the pid's
/// line) and the note carried. Both storages write it, so it is written one way.
pub(crate) fn taken_lock_text(pid: u32, former: &[u8]) -> (String, u64, Option<Noted>) {
    let carried = parse_note(&former[..former.len().min(LOCK_TEXT_MAX)]).map(|(_, n)| n);
    let pid_line = format!("{pid}\n");
    let note_at = pid_line.len() as u64;
    let text = match carried {
        Some(noted) => pid_line + &note_line(pid, noted),
        None => pid_line,
    };
    (text, note_at, carried)
}

/// The note [`LockGuard::settle_note`] writes: the carried note lowered to
/// `recovered` when it says more, naming no log generation; `None` when it stays.
pub(crate) fn lowered(carried: Option<Noted>, recovered: u64) -> Option<Noted> {
    carried.filter(|n| n.lsn > recovered).map(|_| Noted {
        lsn: recovered,
        salt: None,
    })
}

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Another holder has it; the pid it wrote in the lock file, when readable.
    Held(Option<u32>),
    /// The system call that failed (`open`, `flock`, `ftruncate`, `write`) and why.
    Io(&'static str, io::Error),
}

/// The file-system operations of the durable database.
pub trait Storage: Send + Sync + Debug {
    /// Opens `path` for reading and writing; with `create`, creates it when missing
    /// (the new name is durable only after [`Storage::sync_dir`]).
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>>;
    /// Opens an existing file read-only (for `verify`). Like [`Storage::open`], refuses
    /// (without blocking) anything but a regular file, such as a FIFO.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Whether `path` names an existing file or directory.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// The names of the entries of directory `dir` (without `.` and `..`), in no
    /// particular order.
    fn entries(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Creates directory `path`; `false` when it already exists. Something else in
    /// its place (a file) is `ENOTDIR`, named as such rather than found later.
    fn create_dir(&self, path: &Path) -> io::Result<bool>;
    /// `fsync` of a directory: its entries (creates, renames, removes) are stable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Takes the exclusive advisory lock of the data directory whose lock file is
    /// `path` (created when missing) without blocking and writes `pid` in the file
    /// (not synced). The real file system locks the directory itself and the file.
    fn lock(&self, path: &Path, pid: u32) -> Result<Box<dyn LockGuard>, LockError>;
    /// Whether someone holds the lock taken by [`Storage::lock`] on `path`, and the
    /// holder's pid when known. Takes no lock (not even for a moment: a program
    /// starting then would find the directory locked), writes nothing, creates nothing.
    fn lock_holder(&self, path: &Path) -> io::Result<Option<Option<u32>>>;
    /// The note ([`DurableNote`]) in the lock file `path`: the pid that wrote it and
    /// the LSN it says is durable; `None` when there is none or it is not whole.
    /// Writes nothing, creates nothing.
    fn durable_note(&self, path: &Path) -> io::Result<Option<(u32, Noted)>> {
        let _ = path;
        Ok(None)
    }
    /// The pids the process `pid` has in each pid namespace it is in (the kernel's
    /// `NSpid`), to match the pid a holder wrote in its lock file with the one the
    /// kernel's table of locks names.
    fn namespace_pids(&self, pid: u32) -> Vec<u32> {
        vec![pid]
    }
    /// The memory this process may use, in bytes, when known: what recovery checks a
    /// stored id counter against before it allocates the counter's row slots.
    fn memory_limit(&self) -> Option<u64> {
        memory_total()
    }
    /// What the directory `dir` names now (its device and inode), when the storage
    /// knows: a holder compares it with what it locked before it writes a file into
    /// the directory by name, so a directory moved away and replaced under a running
    /// program does not get that program's checkpoint (`None`: not known, not
    /// compared).
    fn dir_id(&self, dir: &Path) -> io::Result<Option<(u64, u64)>> {
        let _ = dir;
        Ok(None)
    }
}

/// The real file system through rustix system calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealStorage;

#[derive(Debug)]
struct RealFile {
    fd: OwnedFd,
}

impl StorageFile for RealFile {
    fn pwrite(&mut self, buf: &[u8], off: u64) -> io::Result<usize> {
        Ok(rustix::io::pwrite(&self.fd, buf, off)?)
    }
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        Ok(rustix::io::pread(&self.fd, buf, off)?)
    }
    fn fdatasync(&mut self) -> io::Result<()> {
        Ok(rustix::fs::fdatasync(&self.fd)?)
    }
    fn fsync(&mut self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.fd)?)
    }
    fn try_clone(&self) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(RealFile {
            fd: self.fd.try_clone()?,
        }))
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        Ok(rustix::fs::ftruncate(&self.fd, len)?)
    }
    fn len(&self) -> io::Result<u64> {
        let st = rustix::fs::fstat(&self.fd)?;
        Ok(u64::try_from(st.st_size).unwrap_or(0))
    }
}

#[derive(Debug)]
struct RealLock {
    // Held for their drop: closing the descriptors releases the flocks and the
    // marker (`RealStorage::lock`). The lock file's descriptor is shared with the
    // note rather than duplicated, so the last of the two to go releases them.
    _dir: OwnedFd,
    fd: Arc<OwnedFd>,
    pid: u32,
    /// Where the note goes: after the pid's line.
    note_at: u64,
    /// The former holder's note, carried over when the lock was taken.
    carried: Option<Noted>,
}

impl LockGuard for RealLock {
    fn dir_id(&self) -> Option<(u64, u64)> {
        let st = rustix::fs::fstat(&self._dir).ok()?;
        Some((st.st_dev as u64, st.st_ino as u64))
    }
    fn durable_note(&self) -> Option<Box<dyn DurableNote>> {
        Some(Box::new(RealNote {
            fd: Arc::clone(&self.fd),
            pid: self.pid,
            at: self.note_at,
        }))
    }
    fn carried_note(&self) -> Option<Noted> {
        self.carried
    }
    fn settle_note(&self, recovered: u64) -> Result<(), (&'static str, io::Error)> {
        if let Some(noted) = lowered(self.carried, recovered) {
            write_note(&self.fd, self.pid, self.note_at, noted).map_err(|e| ("pwritev", e))?;
            // Synced, this once: a higher note left on the disk would pass a torn
            // write of this log's first batches for damage after a power cut
            // (helper-99). (Rare: the log was removed, or replaced by an older copy.)
            rustix::fs::fdatasync(&*self.fd).map_err(|e| ("fdatasync", e.into()))?;
        }
        Ok(())
    }
}

#[derive(Debug)]
struct RealNote {
    fd: Arc<OwnedFd>,
    pid: u32,
    at: u64,
}

impl DurableNote for RealNote {
    fn publish(&mut self, lsn: u64, salt: u64) {
        // (A note that could not be written stays lower: readers wait for more.)
        let noted = Noted {
            lsn,
            salt: Some(salt),
        };
        let _ = write_note(&self.fd, self.pid, self.at, noted);
    }
}

/// Writes the note for `lsn` by process `pid` at offset `at` of the lock file. One
/// call, all or nothing to a reader that checks the CRC; a short write leaves a note
/// that does not check, which readers ignore, and is an error here.
fn write_note(fd: &OwnedFd, pid: u32, at: u64, noted: Noted) -> io::Result<()> {
    let line = note_line(pid, noted);
    let n = retry(|| rustix::io::pwritev(fd, &[io::IoSlice::new(line.as_bytes())], at))?;
    if n != line.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "short write of the note",
        ));
    }
    Ok(())
}

/// Retries a system call interrupted by a signal.
fn retry<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(rustix::io::Errno::INTR) => {}
            r => return Ok(r?),
        }
    }
}

/// The pid on the lock file's first line.
fn read_pid(fd: &OwnedFd) -> Option<u32> {
    let mut buf = [0u8; 32];
    let n = rustix::io::pread(fd, &mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    text.split('\n').next()?.trim().parse().ok()
}

/// The directory a lock file is in (its lock is the directory's).
fn lock_dir(lock_file: &Path) -> &Path {
    match lock_file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// How long an open waits for a holder that is exiting ([`exiting`]) to let go of the
/// lock before it reports the directory locked.
const EXITING_HOLDER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether process `pid` is exiting: its main thread has ended (a zombie, `Z`, or
/// dead, `X`, in `/proc/PID/stat`) while another thread of it still runs.
fn exiting(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `1234 (name) Z …`: the name may hold spaces and parentheses; the state follows
    // the last `)`.
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    matches!(state, Some("Z" | "X"))
}

/// Who holds an exclusive `flock` on the file open as `fd`, from the kernel's table
/// of locks (`/proc/locks`), without touching the lock: `None` when nobody does,
/// `Some(None)` when someone does but the table names no pid, `Some(Some(pid))`.
/// When the table cannot be read, `None`.
fn flock_holder(fd: &OwnedFd) -> Option<Option<u32>> {
    let st = rustix::fs::fstat(fd).ok()?;
    let dev = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(st.st_dev),
        rustix::fs::minor(st.st_dev),
        st.st_ino
    );
    let table = std::fs::read_to_string("/proc/locks").ok()?;
    table.lines().find_map(|line| {
        // `1: FLOCK  ADVISORY  WRITE 1234 fe:00:5767204 0 EOF`
        let f: Vec<&str> = line.split_whitespace().collect();
        let is_it = f.len() >= 6 && f[1] == "FLOCK" && f[3] == "WRITE" && f[5] == dev;
        is_it.then(|| f[4].parse::<u32>().ok().filter(|&p| p > 0))
    })
}

/// A lock over the whole file (to its end, however it grows), for writing or reading.
fn whole_file(write: bool) -> nix::libc::flock {
    let typ = if write {
        nix::libc::F_WRLCK
    } else {
        nix::libc::F_RDLCK
    };
    nix::libc::flock {
        l_type: typ as nix::libc::c_short,
        l_whence: nix::libc::SEEK_SET as nix::libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// Whether someone holds a lock on the lock file that a read lock would conflict with:
/// the marker of `RealStorage::lock`, an open file description lock, asked with
/// `F_OFD_GETLK`, which takes no lock. Seen across pid namespaces, where `/proc/locks`
/// hides the flocks. The pid is unknown (`Some(None)`): the kernel gives none for
/// such a lock (-1), nor for a lock held on another machine (NFS).
fn fcntl_holder(fd: &OwnedFd) -> Option<Option<u32>> {
    let mut ask = whole_file(false);
    nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_OFD_GETLK(&mut ask)).ok()?;
    if ask.l_type == nix::libc::F_UNLCK as nix::libc::c_short {
        return None;
    }
    Some(u32::try_from(ask.l_pid).ok().filter(|&p| p > 0))
}

/// The pids a process has in each pid namespace it is in, outermost first (the
/// `NSpid` line of `/proc/PID/status`): `[pid]` where the kernel does not say.
fn namespace_pids(pid: u32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let listed: Vec<u32> = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if listed.first() == Some(&pid) {
        listed
    } else {
        vec![pid]
    }
}

/// Opens with `O_NONBLOCK` (a FIFO put in the place of a file must not block the
/// open) and refuses anything but a regular file.
fn open_regular(path: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let fd = retry(|| rustix::fs::open(path, flags | OFlags::NONBLOCK, mode))?;
    let st = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, NOT_REGULAR));
    }
    Ok(fd)
}

/// The memory this process can have, in bytes, when known: the machine's
/// (`MemTotal` of `/proc/meminfo`), or less under an address-space limit
/// (`ulimit -v`).
pub(crate) fn memory_total() -> Option<u64> {
    let machine = (|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    })();
    let limit = rustix::process::getrlimit(rustix::process::Resource::As).current;
    match (machine, limit) {
        (Some(m), Some(l)) => Some(m.min(l)),
        (m, l) => m.or(l),
    }
}

/// The error text of a data-directory file that is not a regular file.
pub(crate) const NOT_REGULAR: &str = "not a regular file";

impl Storage for RealStorage {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        let mut flags = OFlags::RDWR | OFlags::CLOEXEC;
        if create {
            flags |= OFlags::CREATE;
        }
        let fd = open_regular(path, flags, Mode::from_raw_mode(0o644))?;
        Ok(Box::new(RealFile { fd }))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let fd = open_regular(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Box::new(RealFile { fd }))
    }
    fn dir_id(&self, dir: &Path) -> io::Result<Option<(u64, u64)>> {
        let st = rustix::fs::stat(dir)?;
        Ok(Some((st.st_dev as u64, st.st_ino as u64)))
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        match rustix::fs::stat(path) {
            Ok(_) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(dir)?
            .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
            .collect()
    }
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        match rustix::fs::mkdir(path, Mode::from_raw_mode(0o755)) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::EXIST) => {
                let st = rustix::fs::stat(path)?;
                if rustix::fs::FileType::from_raw_mode(st.st_mode)
                    != rustix::fs::FileType::Directory
                {
                    return Err(rustix::io::Errno::NOTDIR.into());
                }
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let fd = retry(|| {
            rustix::fs::open(
                dir,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
        })?;
        Ok(rustix::fs::fsync(&fd)?)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        Ok(rustix::fs::rename(from, to)?)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        Ok(rustix::fs::unlink(path)?)
    }
    fn lock(&self, path: &Path, pid: u32) -> Result<Box<dyn LockGuard>, LockError> {
        // The directory itself is locked: unlike the `lock` file, it cannot be deleted
        // or replaced under a running holder. The `lock` file is locked too (what
        // earlier versions lock) and holds the pid for messages.
        let dir = lock_dir(path);
        let dir_fd = retry(|| {
            rustix::fs::open(
                dir,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
        })
        .map_err(|e| LockError::Io("open", e))?;
        let deadline = std::time::Instant::now() + EXITING_HOLDER_WAIT;
        let try_lock = || rustix::fs::flock(&dir_fd, FlockOperation::NonBlockingLockExclusive);
        // A holder that was killed keeps its lock until its last thread has ended
        // (one in `fdatasync` on a slow disk ends when the sync does): its main
        // thread is then a zombie. The lock is as good as free, so it is waited for,
        // not refused (helper-89: 5 of 25 restarts after `timeout -s KILL` exited 75,
        // "locked by" a process that had been killed). Only a holder the kernel's
        // table names counts (the pid in `DIR/lock` may be another namespace's, or an
        // earlier holder's); once seen exiting, it is waited for until the lock comes
        // free or the time is up, even after it has left the table.
        let mut seen_exiting = false;
        loop {
            match try_lock() {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    let listed = flock_holder(&dir_fd).flatten();
                    seen_exiting |= listed.is_some_and(exiting);
                    if seen_exiting && std::time::Instant::now() < deadline {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        continue;
                    }
                    // The holder may have let go between the attempt and the look at
                    // the table (its last thread ended): once more before refusing.
                    if try_lock().is_ok() {
                        break;
                    }
                    let pid = listed.or_else(|| {
                        let fd =
                            rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty());
                        fd.ok().and_then(|fd| read_pid(&fd))
                    });
                    return Err(LockError::Held(pid));
                }
                Err(e) => return Err(LockError::Io("flock", e.into())),
            }
        }
        let fd = retry(|| {
            rustix::fs::open(
                path,
                OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NONBLOCK,
                Mode::from_raw_mode(0o644),
            )
        })
        .map_err(|e| LockError::Io("open", e))?;
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(LockError::Held(read_pid(&fd))),
            Err(e) => return Err(LockError::Io("flock", e.into())),
        }
        // The pid is informative only: plain `write` (not `pwrite64`), never synced.
        let mut former = [0u8; LOCK_TEXT_MAX];
        let n = retry(|| rustix::io::pread(&fd, &mut former, 0)).unwrap_or(0);
        let (text, note_at, carried) = taken_lock_text(pid, &former[..n]);
        rustix::fs::ftruncate(&fd, 0).map_err(|e| LockError::Io("ftruncate", e.into()))?;
        rustix::io::write(&fd, text.as_bytes()).map_err(|e| LockError::Io("write", e.into()))?;
        // A marker for readers that cannot see the flocks: the kernel's table of
        // locks (`/proc/locks`) hides the locks of processes outside the reader's pid
        // namespace (a writer and a backup in two containers), but `F_OFD_GETLK` sees
        // a conflicting open file description lock from anywhere. Such a lock belongs
        // to this descriptor (a POSIX `F_SETLK` lock would be dropped when the process
        // closed any other descriptor of the file: a program reading `d/lock` with
        // `fs.read_text`). Best effort: nothing else takes this lock (readers only
        // ask, `lock_holder`), and a file system without such locks leaves the readers
        // with the table alone.
        let _ = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_OFD_SETLK(&whole_file(true)));
        Ok(Box::new(RealLock {
            _dir: dir_fd,
            fd: Arc::new(fd),
            pid,
            note_at,
            carried,
        }))
    }
    fn lock_holder(&self, path: &Path) -> io::Result<Option<Option<u32>>> {
        // Never takes a lock, not even a shared one for a moment: a program starting
        // at that moment would find the directory locked. The kernel's table of locks
        // says who holds one.
        let dir_fd = rustix::fs::open(
            lock_dir(path),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if let Some(held) = flock_holder(&dir_fd) {
            return Ok(Some(held));
        }
        // An earlier version's holder locks only the `lock` file.
        match rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => Ok(flock_holder(&fd).or_else(|| fcntl_holder(&fd))),
            // A lock file this process may not read says nothing either way: the
            // table of locks, read above, named no holder of the directory.
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::ACCESS | rustix::io::Errno::PERM) => {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }
    fn namespace_pids(&self, pid: u32) -> Vec<u32> {
        namespace_pids(pid)
    }
    fn durable_note(&self, path: &Path) -> io::Result<Option<(u32, Noted)>> {
        let fd = match rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let mut buf = [0u8; LOCK_TEXT_MAX];
        let n = retry(|| rustix::io::pread(&fd, &mut buf, 0))?;
        Ok(parse_note(&buf[..n]))
    }
}

#[cfg(test)]
mod tests {
    use super::{note_line, parse_note, Noted};

    const SALT: u64 = 0x0123_4567_89ab_cdef;

    fn noted(lsn: u64) -> Noted {
        Noted {
            lsn,
            salt: Some(SALT),
        }
    }

    #[test]
    fn a_note_is_trusted_only_whole() {
        let file = |pid: u32, lsn: u64| format!("{pid}\n{}", note_line(pid, noted(lsn)));
        assert_eq!(
            parse_note(file(4242, 17).as_bytes()),
            Some((4242, noted(17)))
        );
        assert_eq!(parse_note(b"4242\n"), None, "no note yet");
        // A rewrite from 99 to 100 read half old, half new: the digits say 199.
        let old = file(7, 99);
        let new = file(7, 100);
        let torn = format!("{}{}", &new[..old.len() - 12], &old[old.len() - 12..]);
        assert_ne!(torn, old);
        assert_eq!(parse_note(torn.as_bytes()), None, "{torn:?}");
        // Another holder's pid over a note it did not write.
        let stale = format!("8\n{}", note_line(7, noted(100)));
        assert_eq!(parse_note(stale.as_bytes()), None);
        // Cut short, or with more after it.
        let whole = file(7, 100);
        assert_eq!(parse_note(&whole.as_bytes()[..whole.len() - 2]), None);
        assert_eq!(
            parse_note(format!("{whole}x").as_bytes()),
            Some((7, noted(100)))
        );
        assert_eq!(parse_note(b"7\ndurable 100 00000000\n"), None);
        // Another salt under the same CRC: not whole.
        let other = whole.replace("0123456789abcdef", "0123456789abcdee");
        assert_eq!(parse_note(other.as_bytes()), None);
        // An earlier version's note, without the salt, is read as such.
        let crc = crc32fast::hash(b"7 100");
        let earlier = format!("7\ndurable {:020} {crc:08x}\n", 100);
        let without = Noted {
            lsn: 100,
            salt: None,
        };
        assert_eq!(parse_note(earlier.as_bytes()), Some((7, without)));
        assert_eq!(format!("7\n{}", note_line(7, without)), earlier);
    }
}
