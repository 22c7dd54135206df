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
pub trait LockGuard: Send + Debug {}

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
    /// Opens an existing file read-only (for `verify`).
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Whether `path` names an existing file or directory.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Creates directory `path`; `false` when it already exists.
    fn create_dir(&self, path: &Path) -> io::Result<bool>;
    /// `fsync` of a directory: its entries (creates, renames, removes) are stable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Takes the exclusive advisory lock on `path` (created when missing) without
    /// blocking and writes `pid` in it (not synced).
    fn lock(&self, path: &Path, pid: u32) -> Result<Box<dyn LockGuard>, LockError>;
    /// Whether someone holds the lock on `path`, and the pid written in it; takes and
    /// releases a shared lock, writes nothing, never creates the file.
    fn lock_holder(&self, path: &Path) -> io::Result<Option<Option<u32>>>;
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
    // Held for its drop: closing the descriptor releases the flock.
    _fd: OwnedFd,
}

impl LockGuard for RealLock {}

/// Retries a system call interrupted by a signal.
fn retry<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(rustix::io::Errno::INTR) => {}
            r => return Ok(r?),
        }
    }
}

fn read_pid(fd: &OwnedFd) -> Option<u32> {
    let mut buf = [0u8; 32];
    let n = rustix::io::pread(fd, &mut buf, 0).ok()?;
    std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
}

impl Storage for RealStorage {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        let mut flags = OFlags::RDWR | OFlags::CLOEXEC;
        if create {
            flags |= OFlags::CREATE;
        }
        let fd = retry(|| rustix::fs::open(path, flags, Mode::from_raw_mode(0o644)))?;
        Ok(Box::new(RealFile { fd }))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let fd = retry(|| rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()))?;
        Ok(Box::new(RealFile { fd }))
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        match rustix::fs::stat(path) {
            Ok(_) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        match rustix::fs::mkdir(path, Mode::from_raw_mode(0o755)) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::EXIST) => Ok(false),
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
        let fd = retry(|| {
            rustix::fs::open(
                path,
                OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC,
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
        let text = format!("{pid}\n");
        rustix::fs::ftruncate(&fd, 0).map_err(|e| LockError::Io("ftruncate", e.into()))?;
        rustix::io::write(&fd, text.as_bytes()).map_err(|e| LockError::Io("write", e.into()))?;
        Ok(Box::new(RealLock { _fd: fd }))
    }
    fn lock_holder(&self, path: &Path) -> io::Result<Option<Option<u32>>> {
        let fd = match rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockShared) {
            Ok(()) => Ok(None),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(Some(read_pid(&fd))),
            Err(e) => Err(e.into()),
        }
    }
}
