//! The write-ahead log: its file header, record framing, the recovery scan that tells
//! a torn tail from damage, and the writer that appends, syncs and fences.
//!
//! Cut here because framing and the torn-versus-damaged decision are the subtle part
//! of durability and deserve one small module with one job: `mod.rs` decides *what*
//! goes in a record and when to sync; this module decides how records are laid out
//! and read back. The format is specified byte by byte in `docs/wal-format.md`.
//!
//! The writer is split into [`LogWriter::stage`] (frame and `pwrite` one record, no
//! sync) and [`LogWriter::sync`] (one `fdatasync` that makes every staged record
//! durable). That is the seam for group commit: a writer thread can stage the records
//! of several fibers and cover them with one sync, and each record already carries the
//! LSN known durable when it was written, which is what lets recovery tell a batch torn
//! by a crash from a damaged acknowledged record.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::storage::{Storage, StorageFile};
use super::Failure;

pub(crate) const WAL_MAGIC: [u8; 8] = *b"\x89wowal\r\n";
pub(crate) const WAL_VERSION: u32 = 1;
pub(crate) const HEADER_LEN: usize = 36;
pub(crate) const FRAME_LEN: usize = 24;
/// No record is larger (a sanity bound for damaged length fields).
pub(crate) const MAX_RECORD: usize = 1 << 30;

/// The fixed part at the start of a log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WalHeader {
    pub salt: u64,
    pub first_lsn: u64,
}

impl WalHeader {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&WAL_MAGIC);
        h[8..12].copy_from_slice(&WAL_VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&0u32.to_le_bytes());
        h[16..24].copy_from_slice(&self.salt.to_le_bytes());
        h[24..32].copy_from_slice(&self.first_lsn.to_le_bytes());
        let crc = crc32fast::hash(&h[0..32]);
        h[32..36].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// Decodes and checks a header: `(offset, what)` on any problem.
    pub(crate) fn decode(buf: &[u8]) -> Result<WalHeader, (u64, String)> {
        if buf.len() < HEADER_LEN {
            return Err((
                0,
                format!("log header is {} bytes, expected {HEADER_LEN}", buf.len()),
            ));
        }
        if buf[0..8] != WAL_MAGIC {
            return Err((0, "not a wo log (bad magic)".into()));
        }
        let crc = le32(&buf[32..36]);
        if crc32fast::hash(&buf[0..32]) != crc {
            return Err((32, "log header checksum mismatch".into()));
        }
        let version = le32(&buf[8..12]);
        if version != WAL_VERSION {
            return Err((8, format!("log format version {version} is not supported (this build reads {WAL_VERSION})")));
        }
        let flags = le32(&buf[12..16]);
        if flags != 0 {
            return Err((12, format!("unknown log header flags {flags:#x}")));
        }
        let first_lsn = le64(&buf[24..32]);
        if first_lsn == 0 {
            return Err((24, "log header first lsn is 0".into()));
        }
        Ok(WalHeader {
            salt: le64(&buf[16..24]),
            first_lsn,
        })
    }
}

pub(crate) fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

pub(crate) fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn frame_crc(salt: u64, frame: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&salt.to_le_bytes());
    h.update(&frame[0..4]);
    h.update(&frame[8..24]);
    h.update(payload);
    h.finalize()
}

/// Fills the frame (the first [`FRAME_LEN`] bytes of `rec`, reserved by the caller)
/// around the payload that follows it.
pub(crate) fn seal(rec: &mut [u8], salt: u64, lsn: u64, durable_lsn: u64) {
    let len = (rec.len() - FRAME_LEN) as u32;
    rec[0..4].copy_from_slice(&len.to_le_bytes());
    rec[8..16].copy_from_slice(&lsn.to_le_bytes());
    rec[16..24].copy_from_slice(&durable_lsn.to_le_bytes());
    let (frame, payload) = rec.split_at(FRAME_LEN);
    let crc = frame_crc(salt, frame, payload);
    rec[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// A record that passed its checksum.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    pub lsn: u64,
    pub durable_lsn: u64,
    pub payload_at: usize,
    pub end: usize,
}

/// The record at `pos` if it is complete and its checksum (which covers this
/// generation's salt) matches.
#[inline]
pub(crate) fn frame_at(buf: &[u8], pos: usize, salt: u64) -> Option<Frame> {
    let frame = buf.get(pos..pos.checked_add(FRAME_LEN)?)?;
    let len = le32(&frame[0..4]) as usize;
    if len == 0 || len > MAX_RECORD {
        return None;
    }
    let end = pos + FRAME_LEN + len;
    let payload = buf.get(pos + FRAME_LEN..end)?;
    if frame_crc(salt, frame, payload) != le32(&frame[4..8]) {
        return None;
    }
    Some(Frame {
        lsn: le64(&frame[8..16]),
        durable_lsn: le64(&frame[16..24]),
        payload_at: pos + FRAME_LEN,
        end,
    })
}

/// How the log ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// The last record ends the file.
    Clean,
    /// Only zero bytes (preallocated space) follow the last record.
    Zeros,
    /// Bytes that form no valid record follow the last record, and no later record
    /// proves them acknowledged: a write torn by a crash. It is cut before appending.
    Torn,
}

/// Where the scan stopped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanEnd {
    /// Offset just past the last valid record.
    pub end: usize,
    /// LSN of the last valid record (`first_lsn - 1` if there is none).
    pub last_lsn: u64,
    pub records: u64,
    pub tail: Tail,
}

/// Damage found by a scan: the offset and what is wrong.
pub(crate) type Damage = (u64, String);

/// Walks the records of a log image (header already checked), calling `f` with each
/// valid record's frame and payload, in order. Stops with `Err` at the first damage:
/// a record out of sequence, an error returned by `f`, or an invalid record that a
/// later valid record of this generation proves was acknowledged (its "durable up to"
/// LSN reaches the invalid record's LSN). Invalid bytes that nothing proves
/// acknowledged are a torn tail.
pub(crate) fn scan(
    buf: &[u8],
    hdr: &WalHeader,
    mut f: impl FnMut(&Frame, &[u8]) -> Result<(), Damage>,
) -> Result<ScanEnd, Damage> {
    let mut pos = HEADER_LEN;
    let mut expect = hdr.first_lsn;
    let mut records = 0u64;
    loop {
        if pos >= buf.len() {
            return Ok(ScanEnd {
                end: pos,
                last_lsn: expect - 1,
                records,
                tail: Tail::Clean,
            });
        }
        match frame_at(buf, pos, hdr.salt) {
            Some(fr) if fr.lsn == expect => {
                f(&fr, &buf[fr.payload_at..fr.end])?;
                records += 1;
                expect += 1;
                pos = fr.end;
            }
            Some(fr) => {
                return Err((
                    pos as u64,
                    format!("record has lsn {}, expected {expect}", fr.lsn),
                ));
            }
            None => {
                let end = ScanEnd {
                    end: pos,
                    last_lsn: expect - 1,
                    records,
                    tail: Tail::Torn,
                };
                if buf[pos..].iter().all(|&b| b == 0) {
                    return Ok(ScanEnd {
                        tail: Tail::Zeros,
                        ..end
                    });
                }
                // Is there a valid record of this generation further on that says the
                // bad one had been synced?
                for q in pos + 1..buf.len().saturating_sub(FRAME_LEN - 1) {
                    let lsn = le64(&buf[q + 8..q + 16]);
                    if lsn < expect || lsn - expect > 1 << 32 {
                        continue;
                    }
                    if let Some(fr) = frame_at(buf, q, hdr.salt) {
                        if fr.durable_lsn >= expect {
                            return Err((
                                pos as u64,
                                format!(
                                    "record {expect} is damaged (bad checksum or length), but the record at offset {q} \
                                     (lsn {}) shows it had been synced",
                                    fr.lsn
                                ),
                            ));
                        }
                    }
                }
                return Ok(end);
            }
        }
    }
}

/// A random 64-bit value (per generation salt) without extra dependencies: the
/// standard library's randomly keyed hasher over the time and a counter.
pub(crate) fn random_u64() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.finish()
}

/// Turns an I/O error into the failure of operation `op` on `path`.
pub(crate) fn failure(op: &'static str, path: &Path, e: &io::Error) -> Failure {
    Failure {
        op,
        path: path.to_path_buf(),
        os_error: e.raw_os_error(),
        message: e.to_string(),
        changes_undone: 0,
    }
}

/// Appends records to the current log generation.
#[derive(Debug)]
pub(crate) struct LogWriter {
    pub path: PathBuf,
    file: Box<dyn StorageFile>,
    pub salt: u64,
    /// LSN the next staged record gets.
    pub next_lsn: u64,
    /// LSN of the last record known durable.
    pub durable_lsn: u64,
    /// Offset past the last staged record.
    pub end: u64,
    /// Offset past the last durable record.
    pub durable_end: u64,
    /// File length: bytes past `end` up to here are preallocated zeros.
    alloc_end: u64,
    /// Preallocation chunk in bytes; 0 when off.
    prealloc: u64,
    /// Set by the first failure; every later stage or sync returns it at once.
    pub fence: Option<Failure>,
}

impl LogWriter {
    /// A writer appending after `end` (the file's length is `alloc_end`).
    pub(crate) fn resume(
        path: PathBuf,
        file: Box<dyn StorageFile>,
        salt: u64,
        last_lsn: u64,
        end: u64,
        alloc_end: u64,
        prealloc: u64,
    ) -> LogWriter {
        LogWriter {
            path,
            file,
            salt,
            next_lsn: last_lsn + 1,
            durable_lsn: last_lsn,
            end,
            durable_end: end,
            alloc_end: alloc_end.max(end),
            prealloc,
            fence: None,
        }
    }

    /// Creates a new generation in `dir/wal`: writes header and first record
    /// (`first`, a payload with [`FRAME_LEN`] reserved bytes) to `dir/wal.tmp`, syncs
    /// it, renames it over `dir/wal` and syncs the directory. The old log stays whole
    /// until the rename.
    pub(crate) fn create(
        storage: &Arc<dyn Storage>,
        dir: &Path,
        first_lsn: u64,
        old_salt: Option<u64>,
        mut first: Vec<u8>,
        prealloc: u64,
    ) -> Result<LogWriter, Failure> {
        let tmp = dir.join("wal.tmp");
        let path = dir.join("wal");
        let mut salt = random_u64();
        while Some(salt) == old_salt {
            salt = random_u64();
        }
        let mut file = storage
            .open(&tmp, true)
            .map_err(|e| failure("open", &tmp, &e))?;
        file.truncate(0)
            .map_err(|e| failure("ftruncate", &tmp, &e))?;
        let mut buf = WalHeader { salt, first_lsn }.encode().to_vec();
        seal(&mut first, salt, first_lsn, first_lsn - 1);
        buf.extend_from_slice(&first);
        file.pwrite_all(&buf, 0)
            .map_err(|e| failure("pwrite", &tmp, &e))?;
        let end = buf.len() as u64;
        let mut w = LogWriter::resume(path, file, salt, first_lsn, end, end, prealloc);
        w.preallocate(end + 1)
            .map_err(|e| failure("pwrite", &tmp, &e))?;
        w.file.fsync().map_err(|e| failure("fsync", &tmp, &e))?;
        storage
            .rename(&tmp, &w.path)
            .map_err(|e| failure("rename", &tmp, &e))?;
        storage
            .sync_dir(dir)
            .map_err(|e| failure("fsync", dir, &e))?;
        Ok(w)
    }

    /// Grows the zero-filled area so that `need` bytes fit. Running out of space (or
    /// into the file-size limit) while preallocating is not a failure: preallocation
    /// is turned off and records are appended as they come, so a nearly full disk
    /// stays usable. Other errors are returned.
    fn preallocate(&mut self, need: u64) -> io::Result<()> {
        if self.prealloc == 0 || need <= self.alloc_end {
            return Ok(());
        }
        static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
        let target = need.div_ceil(self.prealloc) * self.prealloc;
        let mut at = self.alloc_end;
        while at < target {
            let n = (target - at).min(ZEROS.len() as u64) as usize;
            match self.file.pwrite_all(&ZEROS[..n], at) {
                Ok(()) => at += n as u64,
                Err(e)
                    if matches!(e.raw_os_error(), Some(28 | 27))
                        || e.kind() == io::ErrorKind::WriteZero =>
                {
                    // ENOSPC, EFBIG or a short write: give up preallocating; what was
                    // written is zeros past the end, which recovery treats as free space.
                    self.prealloc = 0;
                    self.alloc_end = self.file.len().unwrap_or(at).max(self.end);
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
        self.alloc_end = target;
        Ok(())
    }

    /// Frames `rec` (a payload after [`FRAME_LEN`] reserved bytes) as the next record
    /// and writes it after the last one, without syncing. Returns its LSN.
    pub(crate) fn stage(&mut self, rec: &mut [u8]) -> Result<u64, Failure> {
        if let Some(f) = &self.fence {
            return Err(f.clone());
        }
        let lsn = self.next_lsn;
        seal(rec, self.salt, lsn, self.durable_lsn);
        let need = self.end + rec.len() as u64;
        if let Err(e) = self.preallocate(need) {
            return Err(self.fail("pwrite", &e));
        }
        if let Err(e) = self.file.pwrite_all(rec, self.end) {
            return Err(self.fail("pwrite", &e));
        }
        self.end = need;
        self.next_lsn += 1;
        Ok(lsn)
    }

    /// Makes every staged record durable with one `fdatasync` (none if nothing is
    /// staged). Never retried: a failure fences the log.
    pub(crate) fn sync(&mut self) -> Result<(), Failure> {
        if let Some(f) = &self.fence {
            return Err(f.clone());
        }
        if self.next_lsn - 1 == self.durable_lsn {
            return Ok(());
        }
        if !skip_sync_for_negative_control() {
            if let Err(e) = self.file.fdatasync() {
                return Err(self.fail("fdatasync", &e));
            }
        }
        self.durable_lsn = self.next_lsn - 1;
        self.durable_end = self.end;
        Ok(())
    }

    /// The failure contract's log half: cut the log back to the last durable record
    /// (best effort), fence it, and return the failure.
    pub(crate) fn fail(&mut self, op: &'static str, e: &io::Error) -> Failure {
        let f = failure(op, &self.path, e);
        self.fence_with(f.clone());
        f
    }

    /// Fences the log with `f` after cutting it back to the last durable record.
    pub(crate) fn fence_with(&mut self, f: Failure) {
        if self.fence.is_some() {
            return;
        }
        let _ = self.file.truncate(self.durable_end);
        self.end = self.durable_end;
        self.alloc_end = self.durable_end;
        self.next_lsn = self.durable_lsn + 1;
        self.fence = Some(f);
    }

    /// Bytes of records in the log (header included, preallocation excluded).
    pub(crate) fn len(&self) -> u64 {
        self.end
    }
}

/// The negative control of the power-cut test: a build with the `test-skip-sync`
/// feature, run with `WO_UNSAFE_SKIP_SYNC=1`, acknowledges commits without syncing, and
/// the power-cut test must catch it. Without the feature this is always false.
fn skip_sync_for_negative_control() -> bool {
    cfg!(feature = "test-skip-sync") && std::env::var_os("WO_UNSAFE_SKIP_SYNC").is_some()
}
