//! Checkpoints: a snapshot of the durable tables (stored schema, next-id counters,
//! every live row) written to `checkpoint.tmp`, synced, and renamed over
//! `checkpoint`. This module encodes, writes, reads and checks the file; the protocol
//! around it (directory sync, starting a new log generation, what a failure does) is
//! in `mod.rs`, so this file stays a pure format.
//!
//! Layout (little-endian, see `docs/wal-format.md`): a 52-byte header (magic, version,
//! flags, the LSN of the last log record included, the body length, the salts of the
//! log generations it belongs to, a CRC32 of the header), the body (the stored schema,
//! then each table's rows), and a CRC32 of the body. The whole file is checked before
//! any of it is used. Version 1 files (a 36-byte header without salts) are still read.

use std::path::Path;

use super::codec::{
    self, put_ivar, put_migration, put_schema_indexed, put_uvar, put_val, Migration, Reader,
    StoredSchema,
};
use super::storage::StorageFile;
use super::wal::{failure, le32, le64, MAX_LSN};
use super::Failure;
use crate::{Cell, Db, RowId, TableId};

pub(crate) const CKPT_MAGIC: [u8; 8] = *b"\x89wockp\r\n";
/// Version 2 adds the salts that tie the checkpoint to its log generations; version 3
/// stores each table's indexes in the schema. Versions 1 (no salts) and 2 (no
/// indexes) are still read.
pub(crate) const CKPT_VERSION: u32 = 3;
pub(crate) const CKPT_HEADER_LEN: usize = 52;
const CKPT_V1_HEADER_LEN: usize = 36;
/// Bytes buffered before each `pwrite` while writing a checkpoint.
const WRITE_CHUNK: usize = 1 << 20;

/// The log generations a checkpoint belongs to: the one it was taken from (whose log
/// stays in place if a crash comes before the new generation is renamed in) and the
/// one that starts after it. A log with any other salt is not this checkpoint's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Salts {
    pub taken_from: u64,
    pub next: u64,
}

/// A decoded checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    /// The LSN of the last log record whose effect is included.
    pub lsn: u64,
    pub schema: StoredSchema,
    /// The number of live rows per stored table.
    pub rows: Vec<u64>,
    pub salts: Option<Salts>,
    /// The migration this checkpoint carries out (version 3).
    pub migration: Option<Migration>,
}

/// A checkpoint written a slice of rows at a time, so that the program's other fibers
/// can run between slices (`DataDir::checkpoint_step`). The database must not change
/// between the first step and the last: the VM holds back every write meanwhile.
pub(crate) struct Encoder {
    buf: Vec<u8>,
    /// Bytes written to the file so far.
    off: u64,
    crc: crc32fast::Hasher,
    body_len: u64,
    /// Bytes at the start of `buf` that are the header (rewritten at the end; the
    /// body's CRC skips them).
    header_bytes: usize,
    lsn: u64,
    salts: Salts,
    tables: Vec<TableId>,
    /// The table being written (an index into `tables`) and the next row position.
    t: usize,
    pos: usize,
    prev: RowId,
    /// Whether the current table's row count is written.
    counted: bool,
}

impl Encoder {
    pub(crate) fn new(
        schema: &StoredSchema,
        tables: Vec<TableId>,
        lsn: u64,
        salts: Salts,
        migration: Option<&Migration>,
    ) -> Encoder {
        let mut buf = Vec::with_capacity(WRITE_CHUNK + 4096);
        buf.resize(CKPT_HEADER_LEN, 0);
        put_schema_indexed(&mut buf, schema);
        match migration {
            Some(m) => put_migration(&mut buf, m),
            None => buf.push(0),
        }
        Encoder {
            buf,
            off: 0,
            crc: crc32fast::Hasher::new(),
            body_len: 0,
            header_bytes: CKPT_HEADER_LEN,
            lsn,
            salts,
            tables,
            t: 0,
            pos: 0,
            prev: 0,
            counted: false,
        }
    }

    /// Encodes up to `rows` more rows, writing full chunks to `file`; true when every
    /// table is written.
    pub(crate) fn step(
        &mut self,
        file: &mut dyn StorageFile,
        path: &Path,
        db: &Db,
        rows: usize,
    ) -> Result<bool, Failure> {
        let mut left = rows;
        while let Some(&t) = self.tables.get(self.t) {
            if !self.counted {
                put_uvar(&mut self.buf, db.len(t) as u64);
                self.counted = true;
            }
            let mut next = None;
            for (p, vals) in db.row_vals_from(t, self.pos) {
                if left == 0 {
                    next = Some(p);
                    break;
                }
                left -= 1;
                let id = p as RowId + 1;
                put_ivar(&mut self.buf, id - self.prev);
                self.prev = id;
                for v in vals {
                    put_val(&mut self.buf, v);
                }
                if self.buf.len() >= WRITE_CHUNK {
                    self.flush(file, path)?;
                }
            }
            match next {
                Some(p) => {
                    self.pos = p;
                    return Ok(false);
                }
                None => {
                    self.t += 1;
                    self.pos = 0;
                    self.prev = 0;
                    self.counted = false;
                }
            }
        }
        Ok(true)
    }

    fn flush(&mut self, file: &mut dyn StorageFile, path: &Path) -> Result<(), Failure> {
        self.crc.update(&self.buf[self.header_bytes..]);
        self.body_len += (self.buf.len() - self.header_bytes) as u64;
        file.pwrite_all(&self.buf, self.off)
            .map_err(|e| failure("pwrite", path, &e))?;
        self.off += self.buf.len() as u64;
        self.buf.clear();
        self.header_bytes = 0;
        Ok(())
    }

    /// Writes the rest, the body's CRC and the header; returns the file's length.
    pub(crate) fn finish(
        mut self,
        file: &mut dyn StorageFile,
        path: &Path,
    ) -> Result<u64, Failure> {
        self.crc.update(&self.buf[self.header_bytes..]);
        self.body_len += (self.buf.len() - self.header_bytes) as u64;
        let crc = std::mem::replace(&mut self.crc, crc32fast::Hasher::new());
        self.buf.extend_from_slice(&crc.finalize().to_le_bytes());
        file.pwrite_all(&self.buf, self.off)
            .map_err(|e| failure("pwrite", path, &e))?;
        let len = self.off + self.buf.len() as u64;
        let mut h = [0u8; CKPT_HEADER_LEN];
        h[0..8].copy_from_slice(&CKPT_MAGIC);
        h[8..12].copy_from_slice(&CKPT_VERSION.to_le_bytes());
        h[16..24].copy_from_slice(&self.lsn.to_le_bytes());
        h[24..32].copy_from_slice(&self.body_len.to_le_bytes());
        h[32..40].copy_from_slice(&self.salts.taken_from.to_le_bytes());
        h[40..48].copy_from_slice(&self.salts.next.to_le_bytes());
        let hcrc = crc32fast::hash(&h[0..48]);
        h[48..52].copy_from_slice(&hcrc.to_le_bytes());
        file.pwrite_all(&h, 0)
            .map_err(|e| failure("pwrite", path, &e))?;
        Ok(len)
    }
}

/// Checks and decodes a whole checkpoint file, counting the rows (decoded and
/// dropped one by one): `(offset, what)` on any problem.
pub(crate) fn read(buf: &[u8]) -> Result<Snapshot, (u64, String)> {
    let mut body = open(buf)?;
    let schema = std::mem::take(&mut body.schema);
    let mut rows = Vec::with_capacity(schema.len());
    for t in &schema {
        let n = body.count()?;
        let mut prev: RowId = 0;
        for _ in 0..n {
            let (id, _) = body.row(t, prev)?;
            prev = id;
        }
        rows.push(n as u64);
    }
    body.end()?;
    Ok(Snapshot {
        lsn: body.lsn,
        schema,
        rows,
        salts: body.salts,
        migration: body.migration.take(),
    })
}

/// A checkpoint file whose header, checksums and schema have been checked; its rows
/// are decoded on demand, table after table in schema order ([`Body::count`], then
/// that many [`Body::row`]s), so that loading streams them into the engine without
/// building the whole snapshot first.
pub(crate) struct Body<'a> {
    /// The LSN of the last log record whose effect is included.
    pub lsn: u64,
    /// `None` in a version 1 file.
    pub salts: Option<Salts>,
    pub schema: StoredSchema,
    /// The migration the checkpoint carries out (version 3).
    pub migration: Option<Migration>,
    r: Reader<'a>,
    /// Where the body starts in the file.
    hlen: usize,
}

fn at_in(hlen: usize, e: codec::CodecError) -> (u64, String) {
    ((hlen + e.at) as u64, e.what)
}

impl Body<'_> {
    /// The row count of the next table.
    pub(crate) fn count(&mut self) -> Result<usize, (u64, String)> {
        let hlen = self.hlen;
        self.r.count(1, "row").map_err(|e| at_in(hlen, e))
    }

    /// The next row of table `t`, whose previous row had id `prev` (0 before the first).
    pub(crate) fn row(
        &mut self,
        t: &codec::StoredTable,
        prev: RowId,
    ) -> Result<(RowId, Vec<Cell>), (u64, String)> {
        let hlen = self.hlen;
        let at = |e| at_in(hlen, e);
        let r = &mut self.r;
        let p = r.pos();
        let delta = r.ivar().map_err(at)?;
        let id = prev
            .checked_add(delta)
            .filter(|&id| delta > 0 && id < t.next_id)
            .ok_or_else(|| {
                at(codec::CodecError {
                    at: p,
                    what: format!(
                        "row id after {prev} in `{}` is out of order or not below next id {}",
                        t.name, t.next_id
                    ),
                })
            })?;
        let mut cells = Vec::with_capacity(t.columns.len());
        for _ in 0..t.columns.len() {
            cells.push(r.cell().map_err(at)?);
        }
        Ok((id, cells))
    }

    /// Checks that nothing follows the last table.
    pub(crate) fn end(&self) -> Result<(), (u64, String)> {
        if !self.r.at_end() {
            return Err(at_in(
                self.hlen,
                self.r.err("trailing bytes after the last table"),
            ));
        }
        Ok(())
    }
}

/// What a checkpoint's header says, checked: the header CRC, flags, LSN range, and the
/// body length against the file length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub lsn: u64,
    /// `None` in a version 1 file.
    pub salts: Option<Salts>,
    /// Header length: where the body starts.
    pub hlen: usize,
    pub body_len: u64,
    /// The schema stores indexes (version 3 on).
    pub indexed: bool,
}

/// Checks the header at the start of `buf` (at least the first 52 bytes of the file,
/// fewer if the file is shorter) of a checkpoint file of `file_len` bytes.
pub(crate) fn header(buf: &[u8], file_len: u64) -> Result<Header, (u64, String)> {
    if buf.len() < CKPT_V1_HEADER_LEN || file_len < (CKPT_V1_HEADER_LEN + 4) as u64 {
        return Err((
            0,
            format!("checkpoint is {file_len} bytes, too short for a header"),
        ));
    }
    if buf[0..8] != CKPT_MAGIC {
        return Err((0, "not a wo checkpoint (bad magic)".into()));
    }
    let version = le32(&buf[8..12]);
    let hlen = match version {
        1 => CKPT_V1_HEADER_LEN,
        2 | CKPT_VERSION => CKPT_HEADER_LEN,
        _ => {
            // A flipped bit is reported as such, not as an unknown version.
            let v1_ok = crc32fast::hash(&buf[0..32]) == le32(&buf[32..36]);
            let v2_ok =
                buf.len() >= CKPT_HEADER_LEN && crc32fast::hash(&buf[0..48]) == le32(&buf[48..52]);
            if !v1_ok && !v2_ok {
                return Err((
                    0,
                    "checkpoint header checksum mismatch (it covers bytes 0..32 or 0..48, by version)"
                        .into(),
                ));
            }
            return Err((8, format!("checkpoint format version {version} is not supported (this build reads 1 to {CKPT_VERSION})")));
        }
    };
    if buf.len() < hlen || file_len < (hlen + 4) as u64 {
        return Err((
            0,
            format!("checkpoint is {file_len} bytes, too short for a header"),
        ));
    }
    let crc_at = hlen - 4;
    if crc32fast::hash(&buf[0..crc_at]) != le32(&buf[crc_at..hlen]) {
        // The offset is where the covered bytes begin, not the checksum's (a
        // checksum cannot say which byte is wrong).
        return Err((
            0,
            format!("checkpoint header checksum mismatch (it covers bytes 0..{crc_at})"),
        ));
    }
    let flags = le32(&buf[12..16]);
    if flags != 0 {
        return Err((12, format!("unknown checkpoint flags {flags:#x}")));
    }
    let lsn = le64(&buf[16..24]);
    if lsn > MAX_LSN {
        return Err((
            16,
            format!("checkpoint lsn {lsn} is out of range (at most {MAX_LSN})"),
        ));
    }
    let salts = (version >= 2).then(|| Salts {
        taken_from: le64(&buf[32..40]),
        next: le64(&buf[40..48]),
    });
    let body_len = le64(&buf[24..32]);
    let want = (hlen as u64).saturating_add(body_len).saturating_add(4);
    if want != file_len {
        return Err((
            24,
            format!("checkpoint body length {body_len} does not match the file length {file_len}"),
        ));
    }
    Ok(Header {
        lsn,
        salts,
        hlen,
        body_len,
        indexed: version >= 3,
    })
}

/// Checks a whole checkpoint file (header, both checksums) and decodes its schema:
/// `(offset, what)` on any problem.
pub(crate) fn open(buf: &[u8]) -> Result<Body<'_>, (u64, String)> {
    let Header {
        lsn,
        salts,
        hlen,
        indexed,
        ..
    } = header(buf, buf.len() as u64)?;
    let body = &buf[hlen..buf.len() - 4];
    if crc32fast::hash(body) != le32(&buf[buf.len() - 4..]) {
        return Err((
            hlen as u64,
            format!(
                "checkpoint body checksum mismatch (it covers bytes {hlen}..{})",
                buf.len() - 4
            ),
        ));
    }
    let mut r = Reader::new(body);
    let (schema, migration) = r.checkpoint_head(indexed).map_err(|e| at_in(hlen, e))?;
    Ok(Body {
        lsn,
        salts,
        schema,
        migration,
        r,
        hlen,
    })
}
