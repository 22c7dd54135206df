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
use std::time::Duration;

use super::storage::{DurableNote, Noted, Storage, StorageFile};
use super::syncer::{Done, Syncer};
use super::Failure;

pub(crate) const WAL_MAGIC: [u8; 8] = *b"\x89wowal\r\n";
/// Version 2 adds the schema item with indexes (tag 5) and the migration item (tag
/// 6); version 1 logs (schema items without indexes) are still read.
pub(crate) const WAL_VERSION: u32 = 2;
pub(crate) const HEADER_LEN: usize = 36;
pub(crate) const FRAME_LEN: usize = 24;
/// No record is larger (a sanity bound for damaged length fields).
pub(crate) const MAX_RECORD: usize = 1 << 30;
/// No LSN is larger: at a billion commits a second this lasts 146 years, and LSN
/// arithmetic (`lsn + 1`, `first - 1`) can never overflow. A larger LSN in a header is
/// damage.
pub(crate) const MAX_LSN: u64 = 1 << 62;

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
            // A checksum cannot say which byte is wrong: the offset is where the bytes
            // it covers begin, as a damaged record's is (helper-88: offset 32 pointed
            // at the checksum, not the damage).
            return Err((
                0,
                "log header checksum mismatch (it covers bytes 0..32)".into(),
            ));
        }
        let version = le32(&buf[8..12]);
        if version != 1 && version != WAL_VERSION {
            return Err((8, format!("log format version {version} is not supported (this build reads 1 and {WAL_VERSION})")));
        }
        let flags = le32(&buf[12..16]);
        if flags != 0 {
            return Err((12, format!("unknown log header flags {flags:#x}")));
        }
        let first_lsn = le64(&buf[24..32]);
        if first_lsn == 0 || first_lsn > MAX_LSN {
            return Err((
                24,
                format!("log header first lsn {first_lsn} is out of range (1..={MAX_LSN})"),
            ));
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
    /// The last LSN known durable when the record was written.
    pub durable_lsn: u64,
    /// File offset of the payload.
    pub payload_at: u64,
    /// File offset just past the record.
    pub end: u64,
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
    pub end: u64,
    /// LSN of the last valid record (`first_lsn - 1` if there is none).
    pub last_lsn: u64,
    pub records: u64,
    pub tail: Tail,
}

/// Damage found by a scan: the offset and what is wrong.
pub(crate) type Damage = (u64, String);

/// Why a scan stopped early.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// Damage at an offset (or a refusal returned by the record callback).
    Damage(Damage),
    /// `pread` failed.
    Io(io::Error),
    /// A buffer of this many bytes could not be allocated.
    Memory(usize),
}

impl From<Damage> for ScanError {
    fn from(d: Damage) -> ScanError {
        ScanError::Damage(d)
    }
}

/// Bytes read at once while scanning.
const READ_CHUNK: usize = 1 << 20;

/// The first `len` bytes of a log file, read through a window that holds one chunk or
/// one record (whichever is larger): replay needs memory for the largest record, not
/// for the log.
pub(crate) struct LogSource<'f> {
    file: &'f dyn StorageFile,
    len: u64,
    /// File offset of `buf[0]`.
    at: u64,
    buf: Vec<u8>,
}

impl<'f> LogSource<'f> {
    pub(crate) fn new(file: &'f dyn StorageFile, len: u64) -> LogSource<'f> {
        LogSource {
            file,
            len,
            at: 0,
            buf: Vec::new(),
        }
    }

    /// The bytes of the log the scan reads (a live log may grow past them).
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Bytes `pos..pos + n`, or `None` when the log (as of `len`) ends before them.
    pub(crate) fn get(&mut self, pos: u64, n: usize) -> Result<Option<&[u8]>, ScanError> {
        let Some(end) = pos.checked_add(n as u64).filter(|&e| e <= self.len) else {
            return Ok(None);
        };
        if pos < self.at || end > self.at + self.buf.len() as u64 {
            self.fill(pos, n)?;
            if end > self.at + self.buf.len() as u64 {
                // The file is shorter than it was (a live log cut back): it ends here.
                self.len = self.at + self.buf.len() as u64;
                return Ok(None);
            }
        }
        let from = (pos - self.at) as usize;
        Ok(Some(&self.buf[from..from + n]))
    }

    fn fill(&mut self, pos: u64, n: usize) -> Result<(), ScanError> {
        let want = n.max(READ_CHUNK).min((self.len - pos) as usize);
        self.buf.clear();
        if self.buf.capacity() > 4 * READ_CHUNK && want <= READ_CHUNK {
            self.buf = Vec::new();
        }
        self.buf
            .try_reserve_exact(want)
            .map_err(|_| ScanError::Memory(want))?;
        self.buf.resize(want, 0);
        self.at = pos;
        let mut got = 0;
        while got < want {
            match self.file.read_at(&mut self.buf[got..], pos + got as u64) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ScanError::Io(e)),
            }
        }
        self.buf.truncate(got);
        Ok(())
    }

    /// The record at `pos` if it is complete and its checksum (which covers this
    /// generation's salt) matches, with its payload.
    pub(crate) fn frame_at(
        &mut self,
        pos: u64,
        salt: u64,
    ) -> Result<Option<(Frame, &[u8])>, ScanError> {
        let Some(frame) = self.get(pos, FRAME_LEN)? else {
            return Ok(None);
        };
        let len = le32(&frame[0..4]) as usize;
        if len == 0 || len > MAX_RECORD {
            return Ok(None);
        }
        let Some(rec) = self.get(pos, FRAME_LEN + len)? else {
            return Ok(None);
        };
        let (frame, payload) = rec.split_at(FRAME_LEN);
        if frame_crc(salt, frame, payload) != le32(&frame[4..8]) {
            return Ok(None);
        }
        let fr = Frame {
            lsn: le64(&frame[8..16]),
            durable_lsn: le64(&frame[16..24]),
            payload_at: pos + FRAME_LEN as u64,
            end: pos + (FRAME_LEN + len) as u64,
        };
        Ok(Some((fr, payload)))
    }

    /// Whether every byte from `pos` to the end is zero.
    pub(crate) fn zeros_from(&mut self, mut pos: u64) -> Result<bool, ScanError> {
        while pos < self.len {
            let n = (self.len - pos).min(READ_CHUNK as u64) as usize;
            match self.get(pos, n)? {
                Some(b) if b.iter().all(|&x| x == 0) => pos += n as u64,
                Some(_) => return Ok(false),
                None => return Ok(true),
            }
        }
        Ok(true)
    }
}

/// Walks the records of a log (header already checked), calling `f` with each valid
/// record's frame and payload, in order. Stops with `Err` at the first damage: a
/// record out of sequence, an error returned by `f`, or an invalid record that a later
/// valid record of this generation proves was acknowledged (its "durable up to" LSN
/// reaches the invalid record's LSN), or that the lock file's note (`noted`, what its
/// last holder published; LSN 0 when none) says was synced while a valid record
/// follows it; and a log that ends (cleanly or not) before the last record the note
/// says this very generation synced ([`check_noted_end`]). Invalid bytes that nothing
/// proves acknowledged are a torn tail. Memory: the largest record, whatever the
/// log's length.
pub(crate) fn scan(
    src: &mut LogSource<'_>,
    hdr: &WalHeader,
    noted: Noted,
    mut f: impl FnMut(&Frame, &[u8]) -> Result<(), Damage>,
) -> Result<ScanEnd, ScanError> {
    let mut pos = HEADER_LEN as u64;
    // `decode` bounds the first LSN by `MAX_LSN`, and each record is at least one
    // byte, so `expect` cannot overflow.
    let mut expect = hdr.first_lsn;
    let mut records = 0u64;
    let end = loop {
        if pos >= src.len() {
            break ScanEnd {
                end: pos,
                last_lsn: expect - 1,
                records,
                tail: Tail::Clean,
            };
        }
        match src.frame_at(pos, hdr.salt)? {
            Some((fr, payload)) if fr.lsn == expect => {
                f(&fr, payload)?;
                records += 1;
                expect += 1;
                pos = fr.end;
            }
            Some((fr, _)) => {
                return Err(ScanError::Damage((
                    pos,
                    format!("record has lsn {}, expected {expect}", fr.lsn),
                )));
            }
            None => {
                let tail = if src.zeros_from(pos)? {
                    Tail::Zeros
                } else {
                    check_unproven(src, pos, expect, hdr.salt, noted.lsn)?;
                    Tail::Torn
                };
                break ScanEnd {
                    end: pos,
                    last_lsn: expect - 1,
                    records,
                    tail,
                };
            }
        }
    };
    // However the records end: not before the note says this generation synced.
    check_noted_end(noted, hdr, end.end, end.last_lsn)?;
    Ok(end)
}

/// The end of a log's valid records, at byte `pos` after record `last`: damage when
/// the lock file's note says that this very generation (the note names the header's
/// salt) synced records past `last`. Synced records do not vanish, so the log was cut
/// short, or its last records damaged, after they were acknowledged (helper-102: a
/// truncated log, or one bit flipped in its last record, lost acknowledged records
/// with exit 0, `verify` said ok, and the next start lowered the note that said so).
/// A note of another generation (a checkpoint since, a log put back or started
/// again) or of an earlier version (no salt) proves nothing here.
pub(crate) fn check_noted_end(
    noted: Noted,
    hdr: &WalHeader,
    pos: u64,
    last: u64,
) -> Result<(), ScanError> {
    if noted.salt != Some(hdr.salt) || noted.lsn <= last {
        return Ok(());
    }
    Err(ScanError::Damage((
        pos,
        format!(
            "the log's records end with lsn {last}, but the lock file's note says this log had \
             synced records up to lsn {}: the log was cut short or its last records damaged \
             (for a copy taken while its program ran, or an older log put back on purpose, \
             remove the `lock` file to take the log as it is)",
            noted.lsn
        ),
    )))
}

/// At `pos`, where the bytes are not the valid record `expect`: `Err` when a later
/// valid record of this generation proves that record was acknowledged (damage, not
/// a torn tail). Recovery's rule, which the readers of `export` and `mirror` share so
/// that they never show less than the next recovery would refuse to open for damage
/// in the log. (They apply [`check_noted_end`] only when no process holds the lock:
/// beside a live writer the note runs ahead of what they read.)
///
/// When the lock file's note says record `expect` was synced (`noted >= expect`) and
/// the record the note names is in this log after it, valid, that is proof enough: a
/// bad record followed by good ones in a batch that was synced is damage (LANGUAGE.md
/// §8), where a torn write of a batch not yet synced can leave the same bytes
/// (helper-98: one flipped bit in the first record of the last batch cut it and the
/// 15 acknowledged records after it, silently). The note is written after each sync:
/// a note lost or older than the log only detects less; one newer than the log (left
/// from another log) names a record this log does not hold, and is not used.
pub(crate) fn check_unproven(
    src: &mut LogSource<'_>,
    pos: u64,
    expect: u64,
    salt: u64,
    noted: u64,
) -> Result<(), ScanError> {
    // The log's own proof first; the note's where the log has none.
    if let Some((q, lsn)) = find_proof(src, pos, expect, salt, expect, None)? {
        return Err(ScanError::Damage((
            pos,
            format!(
                "record {expect} is damaged (bad checksum or length), but the record at offset {q} \
                 (lsn {lsn}) shows it had been synced"
            ),
        )));
    }
    if noted < expect {
        return Ok(());
    }
    // The note counts only where the record it names is in this log, after the bad
    // one: a note left from another log (an older copy put back, a log removed to
    // start again, a lock file from elsewhere) names records this one does not hold
    // (helper-99).
    match find_proof(src, pos, expect, salt, 0, Some(noted))? {
        // (Nothing of the note's in the message: beside a live writer it moves, and
        // `verify` wants the same problem twice: helper-99.)
        Some(_) => Err(ScanError::Damage((
            pos,
            format!(
                "record {expect} is damaged (bad checksum or length), but valid records follow \
                 it, and the lock file's note says they had been synced (if the \
                 directory was copied while its program ran, remove the copy's `lock` file to take \
                 the half-copied record as a crash would)"
            ),
        ))),
        None => Ok(()),
    }
}

/// A place where the scan for a proof needs the running checksum.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Point {
    /// File offset.
    at: u64,
    /// Offset of the candidate record.
    q: u64,
    /// 0: its payload starts here; 1: it ends here.
    kind: u8,
    /// At the start: the checksum of the frame's covered bytes; at the end, that
    /// combined with the running checksum at the start.
    k: u32,
    /// Payload length.
    n: u64,
    /// The checksum the frame claims.
    crc: u32,
    lsn: u64,
}

/// Looks after the invalid record at `pos` (LSN `expect`) for a valid record of this
/// generation whose durable LSN is at least `durable_from` (`expect`: one that proves
/// the invalid record synced; 0: any that follows it), and whose LSN is `lsn_is` when
/// given: `(offset, lsn)` of the first found.
///
/// Linear in the bytes after `pos` (a damaged tail of megabytes used to take seconds:
/// every offset was tried with a checksum over its claimed payload). Offsets are first
/// filtered by what a real record there would have to say (an LSN after `expect`, but
/// no further than the bytes in between allow, a durable LSN in `expect..lsn`, a
/// length inside the file); the payload checksums of the survivors all come from one
/// running CRC over the tail: with `P(x)` the CRC of the bytes from `pos` to `x`, the
/// CRC of the bytes `a..b` is `P(b) ^ shift(P(a), b - a)` (zlib's `crc32_combine`).
fn find_proof(
    src: &mut LogSource<'_>,
    pos: u64,
    expect: u64,
    salt: u64,
    durable_from: u64,
    lsn_is: Option<u64>,
) -> Result<Option<(u64, u64)>, ScanError> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let len = src.len();
    let mut points: BinaryHeap<Reverse<Point>> = BinaryHeap::new();
    // The CRC of the bytes `pos..cur`.
    let mut run = crc32fast::Hasher::new();
    let mut cur = pos;
    let mut chunk_at = pos;
    while chunk_at < len {
        let n = (len - chunk_at).min(READ_CHUNK as u64) as usize;
        // A frame starting in this chunk may end in the next: read 23 bytes more.
        let extra = (len - chunk_at - n as u64).min(FRAME_LEN as u64 - 1) as usize;
        let Some(bytes) = src.get(chunk_at, n + extra)? else {
            break;
        };
        let bytes = bytes.to_vec();
        for i in 0..n {
            let q = chunk_at + i as u64;
            if q == pos {
                continue;
            }
            let Some(f) = bytes.get(i..i + FRAME_LEN) else {
                break;
            };
            let lsn = le64(&f[8..16]);
            let durable = le64(&f[16..24]);
            // Records `expect..lsn` lie in `pos..q`, each at least FRAME_LEN + 1 bytes.
            let room = (q - pos) / (FRAME_LEN as u64 + 1);
            if lsn <= expect
                || lsn - expect > room
                || durable < durable_from
                || durable >= lsn
                || lsn_is.is_some_and(|want| lsn != want)
            {
                continue;
            }
            let plen = le32(&f[0..4]) as u64;
            let a = q + FRAME_LEN as u64;
            if plen == 0 || plen > MAX_RECORD as u64 || a + plen > len {
                continue;
            }
            let mut h = crc32fast::Hasher::new();
            h.update(&salt.to_le_bytes());
            h.update(&f[0..4]);
            h.update(&f[8..24]);
            points.push(Reverse(Point {
                at: a,
                q,
                kind: 0,
                k: h.finalize(),
                n: plen,
                crc: le32(&f[4..8]),
                lsn,
            }));
        }
        let chunk_end = chunk_at + n as u64;
        while let Some(Reverse(p)) = points.peek() {
            if p.at > chunk_end || (p.at == chunk_end && chunk_end < len) {
                break;
            }
            let Some(Reverse(p)) = points.pop() else {
                break;
            };
            run.update(&bytes[(cur - chunk_at) as usize..(p.at - chunk_at) as usize]);
            cur = p.at;
            let here = run.clone().finalize();
            if p.kind == 0 {
                points.push(Reverse(Point {
                    at: p.at + p.n,
                    kind: 1,
                    k: p.k ^ here,
                    ..p
                }));
            } else if crc_shift(p.k, p.n) ^ here == p.crc {
                return Ok(Some((p.q, p.lsn)));
            }
        }
        run.update(&bytes[(cur - chunk_at) as usize..n]);
        cur = chunk_end;
        chunk_at = chunk_end;
    }
    Ok(None)
}

/// The CRC-32 polynomial, reflected.
const CRC_POLY: u32 = 0xedb8_8320;

/// `a * b` modulo the CRC polynomial (reflected bit order), as zlib's `multmodp`.
const fn multmodp(a: u32, mut b: u32) -> u32 {
    if a == 0 {
        return 0;
    }
    let mut m = 1u32 << 31;
    let mut p = 0u32;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                return p;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 {
            (b >> 1) ^ CRC_POLY
        } else {
            b >> 1
        };
    }
}

/// `SHIFT[k]` is x^(8 * 2^k) modulo the polynomial: a shift by 2^k bytes.
const SHIFT: [u32; 64] = {
    let mut t = [0u32; 64];
    t[0] = 1 << 23; // x^8 (x^0 is bit 31)
    let mut k = 1;
    while k < 64 {
        t[k] = multmodp(t[k - 1], t[k - 1]);
        k += 1;
    }
    t
};

/// `crc` followed by `n` bytes' worth of shifting: `crc32_combine(crc, crc2, n)` is
/// `crc_shift(crc, n) ^ crc2`.
pub(crate) fn crc_shift(crc: u32, n: u64) -> u32 {
    let mut p = crc;
    let mut k = 0;
    let mut n = n;
    while n != 0 {
        if n & 1 != 0 {
            p = multmodp(SHIFT[k], p);
        }
        n >>= 1;
        k += 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::crc_shift;

    /// The CRC of a range from running CRCs, as the proof search computes it.
    #[test]
    fn crc_of_a_range_from_prefix_crcs() {
        let data: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let prefix = |x: usize| crc32fast::hash(&data[..x]);
        for (a, b) in [
            (0, 0),
            (0, 1),
            (3, 3),
            (7, 100),
            (1, 4999),
            (2500, 5000),
            (4096, 4100),
        ] {
            let want = crc32fast::hash(&data[a..b]);
            assert_eq!(
                prefix(b) ^ crc_shift(prefix(a), (b - a) as u64),
                want,
                "{a}..{b}"
            );
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

/// A salt for a new log generation, never the previous one's.
pub(crate) fn new_salt(old: Option<u64>) -> u64 {
    let mut salt = random_u64();
    while Some(salt) == old {
        salt = random_u64();
    }
    salt
}

/// Turns an I/O error into the failure of operation `op` on `path`.
pub(crate) fn failure(op: &'static str, path: &Path, e: &io::Error) -> Failure {
    Failure {
        op,
        path: path.to_path_buf(),
        os_error: e.raw_os_error(),
        message: e.to_string(),
        changes_undone: 0,
        limit: false,
        cut_failed: None,
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
    /// The log thread, started by the first sync and handed on to the next generation
    /// (`syncer.rs`).
    pub(crate) syncer: Option<Syncer>,
    /// The lock file's durable note, handed to the log thread when it starts (it
    /// publishes each sync there: `storage::DurableNote`).
    pub(crate) note: Option<Box<dyn DurableNote>>,
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
            syncer: None,
            note: None,
        }
    }

    /// Creates a new generation (salt `salt`, from [`new_salt`]) in `dir/wal`: writes header and first record
    /// (`first`, a payload with [`FRAME_LEN`] reserved bytes) to `dir/wal.tmp`, syncs
    /// it, renames it over `dir/wal` and syncs the directory. The old log stays whole
    /// until the rename.
    pub(crate) fn create(
        storage: &Arc<dyn Storage>,
        dir: &Path,
        first_lsn: u64,
        salt: u64,
        mut first: Vec<u8>,
        prealloc: u64,
    ) -> Result<LogWriter, Failure> {
        let tmp = dir.join("wal.tmp");
        let path = dir.join("wal");
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

    /// Another handle of the log file (for the log thread).
    pub(crate) fn file_handle(&self) -> Result<Box<dyn StorageFile>, Failure> {
        self.file
            .try_clone()
            .map_err(|e| failure("dup", &self.path, &e))
    }

    /// Takes over the log thread of `old` (this is the next generation, after a
    /// checkpoint), so one thread issues every sync of the process.
    pub(crate) fn take_syncer(&mut self, old: &mut LogWriter) {
        let Some(mut syncer) = old.syncer.take() else {
            self.note = old.note.take();
            return;
        };
        // Without a handle for it, the next sync starts a thread of its own.
        if let Ok(f) = self.file.try_clone() {
            syncer.switch(f, self.durable_lsn);
            self.syncer = Some(syncer);
        }
    }

    /// Asks the log thread to make every staged record durable and returns at once;
    /// [`LogWriter::next_answer`] reads its answer.
    pub(crate) fn request_sync(&mut self) -> Result<(), Failure> {
        if let Some(f) = &self.fence {
            return Err(f.clone());
        }
        let lsn = self.next_lsn - 1;
        if lsn == self.durable_lsn {
            return Ok(());
        }
        let end = self.end;
        self.start_syncer()?;
        if let Some(s) = self.syncer.as_mut() {
            s.request(lsn, end, self.salt);
        }
        Ok(())
    }

    /// Starts the log thread if it is not running.
    pub(crate) fn start_syncer(&mut self) -> Result<(), Failure> {
        if self.syncer.is_some() {
            return Ok(());
        }
        let file = match self.file.try_clone() {
            Ok(f) => f,
            Err(e) => return Err(self.fail("dup", &e)),
        };
        // Without real syncs (the negative control) nothing is durable to publish.
        let skip = skip_sync_for_negative_control();
        let note = if skip { None } else { self.note.take() };
        match Syncer::start(file, skip, note) {
            Ok(s) => {
                self.syncer = Some(s);
                Ok(())
            }
            Err(e) => Err(self.fail("spawn", &e)),
        }
    }

    /// The log thread's next answer, waiting at most `timeout` (`None`: until it
    /// comes). `None` when nothing came in time or nothing was asked; a thread that
    /// ended without an answer (it can only have panicked) is a failed sync.
    pub(crate) fn next_answer(&mut self, timeout: Option<Duration>) -> Option<Done> {
        let done = self.syncer.as_ref()?.wait(timeout);
        match done {
            None if timeout.is_none() => {
                Some(Done::Failed(io::Error::other("the log thread stopped")))
            }
            done => done,
        }
    }

    /// Takes a sync answer: the new durable LSN, or the failure, after which the log
    /// is fenced.
    pub(crate) fn answer(&mut self, done: Done) -> Result<u64, Failure> {
        if let Some(f) = &self.fence {
            return Err(f.clone());
        }
        match done {
            Done::Durable { lsn, end } => {
                self.advance(lsn, end);
                Ok(self.durable_lsn)
            }
            Done::Failed(e) => Err(self.fail("fdatasync", &e)),
            Done::Checkpoint(_) => Ok(self.durable_lsn),
        }
    }

    /// Moves the durable point to a sync's answer: records through `lsn`, ending at
    /// byte `end`, are on stable storage. Answers may come out of order; the point
    /// only moves forward.
    fn advance(&mut self, lsn: u64, end: u64) {
        if lsn > self.durable_lsn {
            self.durable_lsn = lsn;
            self.durable_end = end;
        }
    }

    /// Makes every staged record durable (one `fdatasync` on the log thread, none if
    /// nothing is staged) and waits for it. Never retried: a failure fences the log.
    pub(crate) fn sync(&mut self) -> Result<(), Failure> {
        self.request_sync()?;
        while self.durable_lsn < self.next_lsn - 1 {
            if let Some(done) = self.next_answer(None) {
                self.answer(done)?;
            }
        }
        Ok(())
    }

    /// The failure contract's log half: cut the log back to the last durable record
    /// (best effort), fence it, and return the failure.
    pub(crate) fn fail(&mut self, op: &'static str, e: &io::Error) -> Failure {
        let f = failure(op, &self.path, e);
        self.fence_with(f)
    }

    /// Fences the log with `f` after cutting it back to the last durable record, and
    /// returns `f` with the cut's failure, if it failed. (A log already fenced keeps its
    /// first failure, and `f` is returned as it is.)
    pub(crate) fn fence_with(&mut self, mut f: Failure) -> Failure {
        if self.fence.is_some() {
            return f;
        }
        // The log thread is asked for nothing more, and waited for: a sync it was
        // running (or had been asked for) when the failure came is let finish, and
        // what it made durable stays, its commits acknowledged. Undoing a change whose
        // record is already on stable storage would let recovery show what the
        // program was told had never happened. Only the rest is cut.
        if let Some(syncer) = self.syncer.take() {
            for done in syncer.finish() {
                if let Done::Durable { lsn, end } = done {
                    self.advance(lsn, end);
                }
            }
        }
        if let Err(e) = self.file.truncate(self.durable_end) {
            f.cut_failed = Some(e.to_string());
        }
        self.end = self.durable_end;
        self.alloc_end = self.durable_end;
        self.next_lsn = self.durable_lsn + 1;
        self.fence = Some(f.clone());
        f
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
