//! Reading a data directory beside the program that writes it, for `wo db export` and
//! `wo db mirror`: no lock is taken or tested (the holder is looked up in
//! `/proc/locks`), nothing is written, and only what recovery would restore is ever
//! handed out.
//!
//! **The durable prefix.** A record the writer has written is not yet acknowledged:
//! its sync may still fail, and then the writer cuts it from the log and undoes it. A
//! reader cannot see the writer's syncs, but every record carries the last LSN known
//! durable when it was written (`docs/wal-format.md`), and a checkpoint is taken only
//! when everything before it is durable. So while a process holds the directory, the
//! records that are *final* are those up to the largest durable LSN any record states
//! (and the checkpoint's LSN, and the first record of a generation, which is synced
//! before the log is renamed into place). When no process holds the directory (looked
//! up before and after reading, and the last record read again after the second
//! look), every valid record is final: it is what the next recovery replays. The
//! records after the final ones are *in doubt* and are not handed out; they become
//! final when a later record says so or the writer exits. So a writer that stops
//! writing leaves its last batch in doubt for readers until it writes again or exits.
//!
//! Not covered: a writer that fails a sync, cuts its records and exits, and a new
//! writer that writes different records with the same LSNs, all between two reads of
//! one scan (the last record is read again after the lock look-up, not every one).
//!
//! [`snapshot`] streams the state at the final LSN table by table (the checkpoint's rows
//! merged with the changes the log makes to them, in id order; memory for the log's
//! changed rows and one read window, not for the data); the returned [`Follower`]
//! then hands out every later final record in log order, across checkpoints (an old
//! log generation stays readable through the descriptor it was opened with, so the
//! records before a checkpoint are still read when the follower keeps up), or says
//! the records it needs are gone ([`Poll::Gone`]), when the caller must copy again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::checkpoint::{self, CKPT_HEADER_LEN};
use super::codec::{self, Item, Reader, StoredType};
use super::storage::{Noted, RealStorage, Storage, StorageFile};
use super::wal::{LogSource, WalHeader, HEADER_LEN};
use super::{check_gap, check_tie, damaged, io_err, open_existing, read_header, OpenError};
use crate::{Cell, RowId};

/// A durable table as the directory stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    /// The indexes the directory stores (none for a directory that does not store
    /// them).
    pub indexes: Vec<Index>,
}

/// A stored index: column positions in [`Table::columns`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub columns: Vec<usize>,
    /// `@unique`: values (other than nil) are distinct.
    pub unique: bool,
}

/// A stored column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    pub nullable: bool,
}

/// The type of a stored column; a reference names its target table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnType {
    Int,
    Float,
    Bool,
    Text,
    Ref(String),
}

fn table_of(st: &codec::StoredTable) -> Table {
    Table {
        name: st.name.clone(),
        columns: st
            .columns
            .iter()
            .map(|c| Column {
                name: c.name.clone(),
                ty: match &c.ty {
                    StoredType::Int => ColumnType::Int,
                    StoredType::Float => ColumnType::Float,
                    StoredType::Bool => ColumnType::Bool,
                    StoredType::Text => ColumnType::Text,
                    StoredType::Ref(t) => ColumnType::Ref(t.clone()),
                },
                nullable: c.nullable,
            })
            .collect(),
        indexes: st
            .indexes
            .iter()
            .flatten()
            .map(|ix| Index {
                columns: ix.columns.clone(),
                unique: ix.kind == crate::IndexKind::Unique,
            })
            .collect(),
    }
}

/// A migration (`docs/schema.md`): the first record of the log generation it starts.
/// Table names in `renamed_columns`, `dropped_columns` and `filled` are the new ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Migration {
    /// Every stored table after the migration, in stored order.
    pub schema: Vec<Table>,
    /// Where each table of `schema` is in [`Follower::tables`] (a renamed table keeps
    /// its place; a new one is added at the end).
    pub tables: Vec<usize>,
    /// [`Follower::tables`] as they were before the migration.
    pub previous: Vec<Table>,
    /// `(old name, new name)`.
    pub renamed_tables: Vec<(String, String)>,
    /// `(table, old column, new column)`.
    pub renamed_columns: Vec<(String, String, String)>,
    /// Tables removed (they stay in [`Follower::tables`], bound to nothing).
    pub dropped_tables: Vec<String>,
    /// `(table, column)`: columns removed with their values.
    pub dropped_columns: Vec<(String, String)>,
    /// `(table, column, value)`: each new column of an existing table, and the value
    /// every existing row got (nil, or the column's default).
    pub filled: Vec<(String, String, Cell)>,
}

/// One change of a record; `table` indexes [`Follower::tables`].
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The schema changed (`ALTER TABLE`): a migration. Every other change of later
    /// records refers to the tables and columns as they are after it.
    Migrate(Box<Migration>),
    /// A table the log declares for the first time (its definition is in `tables`).
    CreateTable(usize),
    Insert {
        table: usize,
        id: RowId,
        cells: Vec<Cell>,
    },
    /// One column of a row (only the changed column is logged).
    Update {
        table: usize,
        id: RowId,
        col: usize,
        cell: Cell,
    },
    Delete {
        table: usize,
        id: RowId,
    },
}

/// One final log record: one committed statement or transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub lsn: u64,
    pub changes: Vec<Change>,
}

/// What [`snapshot`] streams.
#[derive(Debug)]
pub enum Event<'a> {
    /// The rows of this table follow, in id order.
    Table(&'a Table),
    Row(RowId, &'a [Cell]),
    EndTable,
}

/// How many times a checkpoint and log pair is read again when a writer's checkpoint
/// replaces one of them between the two opens.
const ATTEMPTS: usize = 50;
/// Bytes read at once.
const CHUNK: usize = 1 << 20;

/// A checkpoint whose header and body checksum have been checked.
struct Ckpt {
    file: Box<dyn StorageFile>,
    head: checkpoint::Header,
}

/// A checkpoint and the log generation that goes with it, each opened once.
struct Pair {
    dir: PathBuf,
    wal: Box<dyn StorageFile>,
    hdr: WalHeader,
    ckpt: Option<Ckpt>,
}

/// Where the next record is expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pos {
    offset: u64,
    lsn: u64,
}

/// What a pass over the frames from some position found.
#[derive(Debug, Clone, Copy)]
struct Survey {
    last_lsn: u64,
    /// Offset of the last valid record (0 when none was read).
    last_at: u64,
    end: u64,
    max_durable: u64,
}

fn open_pair(storage: &dyn Storage, dir: &Path) -> Result<Pair, OpenError> {
    let wal_path = dir.join("wal");
    let ckpt_path = dir.join("checkpoint");
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let ckpt = open_existing(storage, &ckpt_path)?;
        let wal = open_existing(storage, &wal_path)?;
        let wal = match (wal, &ckpt) {
            (None, None) => {
                return Err(OpenError::NotADataDirectory {
                    dir: dir.to_path_buf(),
                })
            }
            (None, Some(_)) => {
                return Err(damaged(
                    &wal_path,
                    0,
                    "the log is missing but a checkpoint exists",
                ))
            }
            (Some(w), _) => w,
        };
        let hdr = read_header(wal.as_ref(), &wal_path)?;
        let ckpt = match ckpt {
            Some(file) => {
                let len = file.len().map_err(|e| io_err("fstat", &ckpt_path, &e))?;
                let head = file
                    .read_vec(0, CKPT_HEADER_LEN)
                    .map_err(|e| io_err("pread", &ckpt_path, &e))?;
                let head = checkpoint::header(&head, len)
                    .map_err(|(off, what)| damaged(&ckpt_path, off, what))?;
                check_body(file.as_ref(), &head, &ckpt_path)?;
                Some(Ckpt { file, head })
            }
            None => None,
        };
        let (salts, lsn) = ckpt
            .as_ref()
            .map_or((None, 0), |c| (c.head.salts, c.head.lsn));
        // (A gap too may be a writer's switch between the two opens: its first
        // checkpoint renamed in after `checkpoint` was found missing, helper-89.)
        match check_tie(salts, &hdr, lsn, &wal_path)
            .and_then(|()| check_gap(ckpt.is_some(), &hdr, lsn, &wal_path))
        {
            Ok(()) => {
                return Ok(Pair {
                    dir: dir.to_path_buf(),
                    wal,
                    hdr,
                    ckpt,
                });
            }
            // A writer renamed a new checkpoint in between the two opens: read again.
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or(OpenError::Busy {
        dir: dir.to_path_buf(),
    }))
}

/// Checks a checkpoint's body checksum, reading it a chunk at a time.
fn check_body(
    file: &dyn StorageFile,
    head: &checkpoint::Header,
    path: &Path,
) -> Result<(), OpenError> {
    let mut h = crc32fast::Hasher::new();
    let mut at = head.hlen as u64;
    let end = at + head.body_len;
    while at < end {
        let n = (end - at).min(CHUNK as u64) as usize;
        let b = file
            .read_vec(at, n)
            .map_err(|e| io_err("pread", path, &e))?;
        if b.len() < n {
            return Err(damaged(
                path,
                at,
                "checkpoint is shorter than its header says",
            ));
        }
        h.update(&b);
        at += n as u64;
    }
    let crc = file
        .read_vec(end, 4)
        .map_err(|e| io_err("pread", path, &e))?;
    if crc.len() < 4 || h.finalize() != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        let what = format!(
            "checkpoint body checksum mismatch (it covers bytes {}..{end})",
            head.hlen
        );
        return Err(damaged(path, head.hlen as u64, what));
    }
    Ok(())
}

/// A read window over a checkpoint's body: values are decoded from it with the
/// bounds-checked [`Reader`], and a value cut by the window's end is decoded again
/// from a refilled (and, for a value larger than the window, larger) window.
struct Window<'f> {
    file: &'f dyn StorageFile,
    path: &'f Path,
    /// File offset of `buf[0]`.
    at: u64,
    buf: Vec<u8>,
    cur: usize,
    end: u64,
}

impl Window<'_> {
    fn decode<T>(
        &mut self,
        f: impl Fn(&mut Reader<'_>) -> Result<T, codec::CodecError>,
    ) -> Result<T, OpenError> {
        loop {
            let mut r = Reader::new(&self.buf[self.cur..]);
            match f(&mut r) {
                Ok(v) => {
                    self.cur += r.pos();
                    return Ok(v);
                }
                Err(e) => {
                    let start = self.at + self.cur as u64;
                    if self.at + self.buf.len() as u64 >= self.end {
                        return Err(damaged(self.path, start + e.at as u64, e.what));
                    }
                    let left = self.buf.len() - self.cur;
                    let want = (left * 2).max(CHUNK).min((self.end - start) as usize);
                    self.buf = self
                        .file
                        .read_vec(start, want)
                        .map_err(|e| io_err("pread", self.path, &e))?;
                    if self.buf.len() < want {
                        return Err(damaged(self.path, start, "checkpoint changed while read"));
                    }
                    self.at = start;
                    self.cur = 0;
                }
            }
        }
    }
}

/// Whether a process holds the directory's lock (read from `/proc/locks`), and its
/// pid when known.
fn holder(storage: &dyn Storage, dir: &Path) -> Result<Option<Option<u32>>, OpenError> {
    // (No lock is taken: the holder is looked up, which opens the directory.)
    storage
        .lock_holder(&dir.join("lock"))
        .map_err(|e| io_err("open", dir, &e))
}

/// The LSN up to which the holder of the directory's lock has said (in the lock file's
/// note, `storage::DurableNote`) that its log is durable, read before the log is:
/// trusted only when the note is whole and was written by the process that holds the
/// lock (`before`; its pid in its own pid namespace counts, for a writer in a
/// container read from the host). A durable record is never cut or replaced, by that
/// writer or a later one, and a new holder lowers a carried note to what it recovered
/// before it writes (`LockGuard::settle_note`: the log may have been replaced), so
/// every record read afterwards at or below that LSN is final. Where the holder's pid is unknown (it is in a pid namespace this process
/// cannot see), a whole note is trusted: its first line names the process that last
/// took the lock, and whatever it said durable stays durable. 0 when unknown. Best
/// effort: a lock file this process may not read gives 0, never a failed read.
fn noted_durable(storage: &dyn Storage, dir: &Path, before: Option<Option<u32>>) -> u64 {
    let Some(holder) = before else {
        return 0;
    };
    let Ok(Some((by, Noted { lsn, .. }))) = storage.durable_note(&dir.join("lock")) else {
        return 0;
    };
    match holder {
        Some(pid) if pid == by || storage.namespace_pids(pid).contains(&by) => lsn,
        Some(_) => 0,
        None => lsn,
    }
}

impl Pair {
    fn wal_path(&self) -> PathBuf {
        self.dir.join("wal")
    }

    fn start(&self) -> Pos {
        Pos {
            offset: HEADER_LEN as u64,
            lsn: self.hdr.first_lsn,
        }
    }

    fn ckpt_lsn(&self) -> u64 {
        self.ckpt.as_ref().map_or(0, |c| c.head.lsn)
    }

    /// Calls `f` with each valid record from `from` while its LSN is at most `upto`
    /// and `f` returns `true`; stops at the first bytes that are not the next valid
    /// record (the end of what the writer has written, or a torn write). Returns the
    /// position after the last.
    fn records<E: From<OpenError>>(
        &self,
        from: Pos,
        upto: u64,
        mut f: impl FnMut(u64, u64, &[u8]) -> Result<bool, E>,
    ) -> Result<(Pos, Survey), E> {
        let path = self.wal_path();
        let len = self.wal.len().map_err(|e| io_err("fstat", &path, &e))?;
        let mut src = LogSource::new(self.wal.as_ref(), len);
        let mut pos = from;
        let mut survey = Survey {
            last_lsn: from.lsn - 1,
            last_at: 0,
            end: from.offset,
            max_durable: 0,
        };
        while pos.lsn <= upto {
            let frame = src
                .frame_at(pos.offset, self.hdr.salt)
                .map_err(|e| self.scan_error(e))?;
            let Some((fr, payload)) = frame else { break };
            if fr.lsn != pos.lsn {
                break;
            }
            let go_on = f(fr.lsn, fr.payload_at, payload)?;
            survey = Survey {
                last_lsn: fr.lsn,
                last_at: pos.offset,
                end: fr.end,
                max_durable: survey.max_durable.max(fr.durable_lsn),
            };
            pos = Pos {
                offset: fr.end,
                lsn: fr.lsn + 1,
            };
            if !go_on {
                break;
            }
        }
        Ok((pos, survey))
    }

    fn scan_error(&self, e: super::wal::ScanError) -> OpenError {
        let path = self.wal_path();
        match e {
            super::wal::ScanError::Io(e) => io_err("pread", &path, &e),
            super::wal::ScanError::Memory(n) => OpenError::OutOfMemory {
                dir: self.dir.clone(),
                what: format!("a log record of {n} bytes"),
            },
            super::wal::ScanError::Damage((off, what)) => damaged(&path, off, what),
        }
    }

    /// Where the records end (`at`, the next LSN expected there): damage when a later
    /// record proves the one expected there was synced, as recovery would find
    /// (`wal::check_unproven`). A snapshot taken of a log that recovery refuses would
    /// show the rows before the damage as if they were all.
    ///
    /// A writer may be appending: after the scan ended at `at`, it can write the
    /// record expected there, sync it, and write the next, which names it durable.
    /// So a proof found is damage only if the bytes at `at` are still not that record
    /// when read again after it: the proof was written after the record it names was
    /// whole and synced, so a record that is there now was there when the proof was.
    /// Then, with no writer, the end against the lock file's note
    /// ([`Pair::check_noted_end`]), as recovery's scan checks it after the first.
    fn check_end(&self, storage: &dyn Storage, at: Pos) -> Result<(), OpenError> {
        let path = self.wal_path();
        let len = self.wal.len().map_err(|e| io_err("fstat", &path, &e))?;
        let mut src = LogSource::new(self.wal.as_ref(), len);
        // The usual end: the preallocated zeros (read, not checksummed). Otherwise
        // the lock file's note, as recovery and `verify` take it (whoever wrote it: a
        // live writer's covers only records whole in the file, read after it).
        if !src.zeros_from(at.offset).map_err(|e| self.scan_error(e))? {
            let noted = super::storage::stated_durable(storage, &self.dir);
            let unproven =
                super::wal::check_unproven(&mut src, at.offset, at.lsn, self.hdr.salt, noted.lsn);
            if let Err(e) = unproven {
                self.confirm(at, e)?;
            }
        }
        // Then, as recovery's scan does, the end against the note.
        self.check_noted_end(storage, at)
    }

    /// Where the records end, with no writer: damage when the lock file's note says
    /// this very generation synced records past the end, as recovery and `verify` find
    /// (`wal::check_noted_end`: a log cut short, or its last records damaged). A
    /// snapshot or mirror of it would otherwise hand out fewer rows than were
    /// acknowledged, without a word. Beside a live writer the note runs ahead of
    /// what was read (it syncs and notes records written after the scan), so the
    /// rule is applied only when no process holds the lock, before the note is read
    /// and after; and a writer that came and went in between appended the record
    /// expected at the end, which the last look finds.
    fn check_noted_end(&self, storage: &dyn Storage, at: Pos) -> Result<(), OpenError> {
        if holder(storage, &self.dir)?.is_some() {
            return Ok(());
        }
        let noted = super::storage::stated_durable(storage, &self.dir);
        let Err(e) = super::wal::check_noted_end(noted, &self.hdr, at.offset, at.lsn - 1) else {
            return Ok(());
        };
        if holder(storage, &self.dir)?.is_some() {
            return Ok(());
        }
        self.confirm(at, e)
    }

    /// `e`, the damage found where the records end (`at`), unless the record expected
    /// there is there when read again: a writer appended it since the scan, and what
    /// was taken for proof of damage was written after it.
    fn confirm(&self, at: Pos, e: super::wal::ScanError) -> Result<(), OpenError> {
        let path = self.wal_path();
        let len = self.wal.len().map_err(|e| io_err("fstat", &path, &e))?;
        let mut again = LogSource::new(self.wal.as_ref(), len);
        match again.frame_at(at.offset, self.hdr.salt) {
            Ok(Some((fr, _))) if fr.lsn == at.lsn => Ok(()),
            _ => Err(self.scan_error(e)),
        }
    }

    /// Whether the record a survey ended with is still in the file (a writer that
    /// failed a sync cuts its records before it exits).
    fn still_there(&self, s: &Survey) -> Result<bool, OpenError> {
        if s.last_at == 0 {
            return Ok(true);
        }
        let path = self.wal_path();
        let len = self.wal.len().map_err(|e| io_err("fstat", &path, &e))?;
        if len < s.end {
            return Ok(false);
        }
        let mut src = LogSource::new(self.wal.as_ref(), len);
        Ok(matches!(
            src.frame_at(s.last_at, self.hdr.salt),
            Ok(Some((fr, _))) if fr.lsn == s.last_lsn && fr.end == s.end
        ))
    }

    /// The last final LSN of this log from `from` on (`known`: a bound already
    /// known), the last LSN it holds at all, and where its records end.
    fn settle(
        &self,
        storage: &dyn Storage,
        from: Pos,
        known: u64,
    ) -> Result<(u64, u64, Pos), OpenError> {
        let before = holder(storage, &self.dir)?;
        let noted = noted_durable(storage, &self.dir, before);
        let (end, s) = self.records::<OpenError>(from, u64::MAX, |_, _, _| Ok(true))?;
        let after = holder(storage, &self.dir)?;
        if before.is_none() && after.is_none() && self.still_there(&s)? {
            return Ok((known.max(s.last_lsn), s.last_lsn, end));
        }
        // The first record of a generation and everything a checkpoint covers were
        // synced before anyone could read them; the holder's note says how far its
        // syncs have reached since. The note is read again after the scan and the
        // lower of the two taken: a new holder lowers the note it carried over to what
        // it recovered before it appends (`LockGuard::settle_note`), and a note read
        // before that, with records appended before the scan, would pass them for
        // final (helper-65). Otherwise the note only rises.
        let noted = noted.min(noted_durable(storage, &self.dir, after));
        let floor = (self.hdr.first_lsn.max(self.ckpt_lsn()))
            .max(s.max_durable)
            .max(noted);
        Ok((known.max(floor.min(s.last_lsn)), s.last_lsn, end))
    }
}

/// Turns log items into [`Change`]s: table numbers in a record index the log's latest
/// schema item; tables are known by name.
#[derive(Debug, Clone, Default)]
struct Binder {
    tables: Vec<Table>,
    bind: Vec<usize>,
    /// Records up to this LSN are covered by the checkpoint `tables` came from: they
    /// are decoded (to bind later records) but yield no changes, and their schema
    /// items (which may predate a migration) add no tables.
    covered: u64,
    /// Tables a migration dropped: they keep their place in `tables` (later changes
    /// never name them), and a new table of the same name gets a place of its own.
    dropped: Vec<usize>,
}

impl Binder {
    /// The place of the table called `name` that no migration dropped.
    fn live(&self, name: &str) -> Option<usize> {
        (0..self.tables.len()).find(|&i| self.tables[i].name == name && !self.dropped.contains(&i))
    }

    /// The changes of record `lsn` of a log generation whose first record is
    /// `first_lsn`.
    fn decode(
        &mut self,
        path: &Path,
        (lsn, first_lsn): (u64, u64),
        payload_at: u64,
        payload: &[u8],
    ) -> Result<Vec<Change>, OpenError> {
        let mut r = Reader::new(payload);
        let mut out = Vec::new();
        while !r.at_end() {
            let p = payload_at + r.pos() as u64;
            let item = r.item().map_err(|e| {
                damaged(
                    path,
                    payload_at + e.at as u64,
                    format!("record {lsn} does not decode: {}", e.what),
                )
            })?;
            if let Item::Migrate(_) = item {
                if let Some(what) = codec::misplaced_migration(lsn, first_lsn) {
                    return Err(damaged(path, p, what));
                }
            }
            let n_tables = self.tables.len();
            let tab = |t: u32, bind: &[usize]| {
                bind.get(t as usize)
                    .copied()
                    .filter(|&i| i < n_tables)
                    .ok_or_else(|| {
                        damaged(
                            path,
                            p,
                            format!("record {lsn}: no table {t} in the log's schema"),
                        )
                    })
            };
            if lsn <= self.covered {
                let schema = match &item {
                    Item::Schema(s) => Some(s),
                    Item::Migrate(m) => Some(&m.schema),
                    _ => None,
                };
                if let Some(s) = schema {
                    self.bind = s
                        .iter()
                        .map(|st| {
                            self.tables
                                .iter()
                                .position(|t| t.name == st.name)
                                .unwrap_or(usize::MAX)
                        })
                        .collect();
                }
                continue;
            }
            match item {
                Item::Migrate(m) => {
                    let previous = self.tables.clone();
                    // Names are looked up before any is changed (renames may swap).
                    let gone: Vec<usize> = m
                        .dropped_tables
                        .iter()
                        .filter_map(|name| self.live(name))
                        .collect();
                    let renames: Vec<(usize, &String)> = m
                        .renamed_tables
                        .iter()
                        .filter_map(|(old, new)| Some((self.live(old)?, new)))
                        .collect();
                    for (i, new) in renames {
                        self.tables[i].name.clone_from(new);
                    }
                    self.dropped.extend(gone);
                    self.bind.clear();
                    for st in &m.schema {
                        let i = match self.live(&st.name) {
                            Some(i) => {
                                self.tables[i] = table_of(st);
                                i
                            }
                            None => {
                                self.tables.push(table_of(st));
                                self.tables.len() - 1
                            }
                        };
                        self.bind.push(i);
                    }
                    let m = *m;
                    out.push(Change::Migrate(Box::new(Migration {
                        schema: m.schema.iter().map(table_of).collect(),
                        tables: self.bind.clone(),
                        previous,
                        renamed_tables: m.renamed_tables,
                        renamed_columns: m.renamed_columns,
                        dropped_tables: m.dropped_tables,
                        dropped_columns: m.dropped_columns,
                        filled: m.filled,
                    })));
                }
                Item::Schema(s) => {
                    self.bind.clear();
                    for st in &s {
                        let i = match self.live(&st.name) {
                            Some(i) => i,
                            None => {
                                self.tables.push(table_of(st));
                                out.push(Change::CreateTable(self.tables.len() - 1));
                                self.tables.len() - 1
                            }
                        };
                        self.bind.push(i);
                    }
                }
                Item::Insert { table, id, cells } => {
                    let table = tab(table, &self.bind)?;
                    if cells.len() != self.tables[table].columns.len() {
                        return Err(damaged(
                            path,
                            p,
                            format!(
                                "record {lsn}: an insert into `{}` has {} cells for {} columns",
                                self.tables[table].name,
                                cells.len(),
                                self.tables[table].columns.len()
                            ),
                        ));
                    }
                    out.push(Change::Insert { table, id, cells });
                }
                Item::Update {
                    table,
                    id,
                    col,
                    cell,
                } => {
                    let table = tab(table, &self.bind)?;
                    if col >= self.tables[table].columns.len() {
                        return Err(damaged(
                            path,
                            p,
                            format!(
                                "record {lsn}: an update of `{}` names column {col}",
                                self.tables[table].name
                            ),
                        ));
                    }
                    out.push(Change::Update {
                        table,
                        id,
                        col,
                        cell,
                    });
                }
                Item::Delete { table, id } => {
                    let table = tab(table, &self.bind)?;
                    out.push(Change::Delete { table, id });
                }
            }
        }
        Ok(out)
    }
}

/// A row the log changed after the checkpoint.
#[derive(Debug)]
enum Overlay {
    /// Inserted after the checkpoint: the whole row, its cells encoded as in the log
    /// (a fifth of the memory of decoded cells).
    Full(Box<[u8]>),
    /// A checkpoint row with these columns changed.
    Patch(Vec<Option<Cell>>),
    Deleted,
}

fn encode(cells: &[Cell]) -> Box<[u8]> {
    let mut out = Vec::new();
    for c in cells {
        codec::put_cell(&mut out, c);
    }
    out.into_boxed_slice()
}

/// Cells [`encode`]d here (so they decode).
fn decode_row(bytes: &[u8], n: usize) -> Result<Vec<Cell>, OpenError> {
    let mut r = Reader::new(bytes);
    let mut cells = Vec::with_capacity(n);
    for _ in 0..n {
        cells.push(r.cell().map_err(|e| OpenError::Schema {
            message: format!("internal: a row kept in memory does not decode: {}", e.what),
        })?);
    }
    Ok(cells)
}

/// Whether `dir` is a data directory a reader can open (its log and checkpoint
/// headers read), without reading any record: what `wo db mirror` checks before it
/// touches the database it copies into.
pub fn check_dir(dir: &Path) -> Result<(), OpenError> {
    open_pair(&RealStorage, dir).map(drop)
}

/// Streams the state of the directory at its last final LSN through `f`, table by
/// table in stored order, rows in id order, and returns a [`Follower`] positioned
/// just after that LSN.
pub fn snapshot<E: From<OpenError>>(
    dir: &Path,
    f: impl FnMut(Event<'_>) -> Result<(), E>,
) -> Result<Follower, E> {
    snapshot_in(Arc::new(RealStorage), dir, f)
}

/// [`snapshot`] of a directory in `storage` (the fuzz target's simulated disk).
pub fn snapshot_in<E: From<OpenError>>(
    storage: Arc<dyn Storage>,
    dir: &Path,
    mut f: impl FnMut(Event<'_>) -> Result<(), E>,
) -> Result<Follower, E> {
    let pair = open_pair(storage.as_ref(), dir)?;
    let path = pair.wal_path();
    let (upto, _, end) = pair.settle(storage.as_ref(), pair.start(), 0)?;
    pair.check_end(storage.as_ref(), end)?;
    let ckpt_lsn = pair.ckpt_lsn();
    // The checkpoint's schema, then its rows come through a window.
    let ckpt_path = dir.join("checkpoint");
    let mut win = pair.ckpt.as_ref().map(|c| Window {
        file: c.file.as_ref(),
        path: &ckpt_path,
        at: c.head.hlen as u64,
        buf: Vec::new(),
        cur: 0,
        end: c.head.hlen as u64 + c.head.body_len,
    });
    let stored = match &mut win {
        Some(w) => {
            let indexed = pair.ckpt.as_ref().is_some_and(|c| c.head.indexed);
            w.decode(|r| r.checkpoint_head(indexed))?.0
        }
        None => Vec::new(),
    };
    let mut binder = Binder {
        tables: stored.iter().map(table_of).collect(),
        bind: Vec::new(),
        covered: ckpt_lsn,
        dropped: Vec::new(),
    };
    let mut overlay: Vec<BTreeMap<RowId, Overlay>> = Vec::new();
    let (pos, _) = pair.records::<OpenError>(pair.start(), upto, |lsn, at, payload| {
        let changes = binder.decode(&path, (lsn, pair.hdr.first_lsn), at, payload)?;
        if lsn <= ckpt_lsn {
            return Ok(true);
        }
        overlay.resize_with(binder.tables.len(), BTreeMap::new);
        for ch in changes {
            match ch {
                Change::CreateTable(_) | Change::Migrate(_) => {}
                Change::Insert { table, id, cells } => {
                    overlay[table].insert(id, Overlay::Full(encode(&cells)));
                }
                Change::Update {
                    table,
                    id,
                    col,
                    cell,
                } => {
                    let n = binder.tables[table].columns.len();
                    let e = overlay[table]
                        .entry(id)
                        .or_insert_with(|| Overlay::Patch(vec![None; n]));
                    match e {
                        Overlay::Full(bytes) => {
                            let mut cells = decode_row(bytes, n)?;
                            cells[col] = cell;
                            *bytes = encode(&cells);
                        }
                        Overlay::Patch(cells) => cells[col] = Some(cell),
                        Overlay::Deleted => {}
                    }
                }
                Change::Delete { table, id } => {
                    if let Some(Overlay::Full(_)) = overlay[table].get(&id) {
                        overlay[table].remove(&id);
                    } else {
                        overlay[table].insert(id, Overlay::Deleted);
                    }
                }
            }
        }
        Ok(true)
    })?;
    if pos.lsn <= upto {
        return Err(damaged(
            &path,
            pos.offset,
            format!("record {} changed while it was read", pos.lsn),
        )
        .into());
    }
    overlay.resize_with(binder.tables.len(), BTreeMap::new);
    for (t, table) in binder.tables.iter().enumerate() {
        f(Event::Table(table))?;
        let changed = &mut overlay[t];
        if let (Some(w), Some(st)) = (&mut win, stored.get(t)) {
            let n = w.decode(|r| r.count(1, "row"))?;
            let mut prev: RowId = 0;
            let ncols = st.columns.len();
            let next_id = st.next_id;
            for _ in 0..n {
                let (id, mut cells) = w.decode(|r| {
                    let p = r.pos();
                    let delta = r.ivar()?;
                    let id = prev
                        .checked_add(delta)
                        .filter(|&id| delta > 0 && id < next_id)
                        .ok_or_else(|| codec::CodecError {
                            at: p,
                            what: format!("row id after {prev} is out of order"),
                        })?;
                    let mut cells = Vec::with_capacity(ncols);
                    for _ in 0..ncols {
                        cells.push(r.cell()?);
                    }
                    Ok((id, cells))
                })?;
                prev = id;
                match changed.remove(&id) {
                    None => f(Event::Row(id, &cells))?,
                    Some(Overlay::Deleted) => {}
                    Some(Overlay::Full(full)) => f(Event::Row(id, &decode_row(&full, ncols)?))?,
                    Some(Overlay::Patch(patch)) => {
                        for (c, p) in cells.iter_mut().zip(patch) {
                            if let Some(p) = p {
                                *c = p;
                            }
                        }
                        f(Event::Row(id, &cells))?;
                    }
                }
            }
        }
        let ncols = table.columns.len();
        for (id, e) in std::mem::take(changed) {
            if let Overlay::Full(bytes) = e {
                f(Event::Row(id, &decode_row(&bytes, ncols)?))?;
            }
        }
        f(Event::EndTable)?;
    }
    Ok(Follower {
        storage,
        applied: upto,
        durable: upto,
        pos,
        binder,
        pair,
    })
}

/// Why a [`Follower`] cannot go on from where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gone(pub String);

/// What one [`Follower::poll`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Poll {
    /// Records up to `applied` were handed out; the log holds records up to
    /// `last_lsn`, final up to `final_lsn`.
    Progress {
        applied: u64,
        final_lsn: u64,
        last_lsn: u64,
    },
    /// The records after `applied` are no longer in the directory (a checkpoint
    /// removed them, or the log was cut below them): copy again.
    Gone(Gone),
}

/// Hands out the final records of a directory in log order, from a position.
pub struct Follower {
    storage: Arc<dyn Storage>,
    pair: Pair,
    pos: Pos,
    binder: Binder,
    /// The LSN of the last record handed out (or copied).
    applied: u64,
    /// Records up to here are known final.
    durable: u64,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("salt", &self.pair.hdr.salt)
            .field("applied", &self.applied)
            .finish()
    }
}

impl Follower {
    /// Resumes after LSN `lsn` of the log generation with salt `salt`, or says why
    /// those records are gone.
    pub fn resume(dir: &Path, salt: u64, lsn: u64) -> Result<Result<Follower, Gone>, OpenError> {
        Follower::resume_in(Arc::new(RealStorage), dir, salt, lsn)
    }

    /// [`Follower::resume`] in a directory of `storage`.
    pub fn resume_in(
        storage: Arc<dyn Storage>,
        dir: &Path,
        salt: u64,
        lsn: u64,
    ) -> Result<Result<Follower, Gone>, OpenError> {
        let pair = open_pair(storage.as_ref(), dir)?;
        let (stored, migration) = ckpt_schema(&pair)?;
        let mut binder = Binder {
            tables: stored.iter().map(table_of).collect(),
            bind: Vec::new(),
            covered: pair.ckpt_lsn(),
            dropped: Vec::new(),
        };
        if pair.hdr.salt != salt {
            // Neither the log nor the checkpoint's previous one is the log followed:
            // it was replaced (by hand, or the directory made anew), or the position
            // is another directory's (a database that mirrored another one).
            let Some(c) = &pair.ckpt else {
                return Ok(Err(Gone(
                    "the log is not the one this mirror followed (it was replaced, or the database mirrored another directory)"
                        .into(),
                )));
            };
            if c.head.salts.is_none_or(|s| s.taken_from != salt) {
                // More than one checkpoint since the position, most likely.
                return Ok(Err(Gone(format!(
                    "checkpoints replaced the log after lsn {lsn} (the last at lsn {}; or the database mirrored another directory)",
                    c.head.lsn
                ))));
            }
            // The checkpoint was taken from the log followed.
            if c.head.lsn == lsn {
                if let Some(m) = migration {
                    // The migration this checkpoint carried out is the first record
                    // of its generation, still to be handed out: from the tables as
                    // they were before it.
                    binder.tables = m.previous.iter().map(table_of).collect();
                }
                return Ok(Ok(Follower {
                    storage,
                    pos: pair.start(),
                    applied: lsn,
                    durable: lsn,
                    binder,
                    pair,
                }));
            }
            return Ok(Err(Gone(format!(
                "a checkpoint at lsn {} replaced the log after lsn {lsn}",
                c.head.lsn
            ))));
        }
        if lsn < pair.ckpt_lsn() {
            // The checkpoint (of a migration, maybe) already holds what the records
            // after `lsn` do, and the tables as of its LSN, not as of `lsn`.
            return Ok(Err(Gone(format!(
                "a checkpoint at lsn {} covers the records after lsn {lsn}",
                pair.ckpt_lsn()
            ))));
        }
        if lsn + 1 < pair.hdr.first_lsn {
            return Ok(Err(Gone(format!(
                "the log starts at lsn {}, after lsn {lsn}",
                pair.hdr.first_lsn
            ))));
        }
        let path = pair.wal_path();
        let (pos, _) = pair.records::<OpenError>(pair.start(), lsn, |l, at, payload| {
            binder
                .decode(&path, (l, pair.hdr.first_lsn), at, payload)
                .map(|_| true)
        })?;
        if pos.lsn <= lsn {
            return Ok(Err(Gone(format!(
                "the log ends at lsn {}, before lsn {lsn} that was applied",
                pos.lsn - 1
            ))));
        }
        Ok(Ok(Follower {
            storage,
            pos,
            applied: lsn,
            durable: lsn,
            binder,
            pair,
        }))
    }

    /// The salt of the log generation being read.
    pub fn salt(&self) -> u64 {
        self.pair.hdr.salt
    }

    /// The LSN of the last record handed out.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// The LSN the directory's checkpoint covers (0 without one): a follower resumed
    /// there hands out every record of the current log (until a later checkpoint
    /// replaces it: then [`Poll::Gone`]).
    pub fn checkpoint_lsn(&self) -> u64 {
        self.pair.ckpt_lsn()
    }

    /// Every table known so far, in the order the directory introduced them.
    pub fn tables(&self) -> &[Table] {
        &self.binder.tables
    }

    /// Hands the final records after the last one handed out to `f` (at most `max`,
    /// and none after one for which `f` returns `false`), in log order; moves to the
    /// next log generation after a checkpoint. After an error or [`Poll::Gone`], what
    /// `f` was given must be dropped (and the follower with it).
    pub fn poll<E: From<OpenError>>(
        &mut self,
        max: usize,
        mut f: impl FnMut(&Record, &[Table]) -> Result<bool, E>,
    ) -> Result<Poll, E> {
        let storage = self.storage.clone();
        // A checkpoint may move this follower to the next generation (and, in the
        // old one, make the records it covers final): at most two turns.
        for _ in 0..3 {
            let (final_lsn, last_lsn, end) =
                self.pair.settle(storage.as_ref(), self.pos, self.durable)?;
            self.pair.check_end(storage.as_ref(), end)?;
            self.durable = final_lsn;
            if final_lsn > self.applied {
                let upto = final_lsn.min(self.applied.saturating_add(max as u64));
                let path = self.pair.wal_path();
                let first = self.pair.hdr.first_lsn;
                let binder = &mut self.binder;
                let (pos, _) = self.pair.records(self.pos, upto, |lsn, at, payload| {
                    let changes = binder.decode(&path, (lsn, first), at, payload)?;
                    f(&Record { lsn, changes }, &binder.tables)
                })?;
                if pos.lsn == self.pos.lsn {
                    return Ok(Poll::Gone(Gone(format!(
                        "the log ends at lsn {}, before lsn {upto} that is final",
                        pos.lsn - 1
                    ))));
                }
                self.pos = pos;
                self.applied = pos.lsn - 1;
                return Ok(Poll::Progress {
                    applied: self.applied,
                    final_lsn,
                    last_lsn,
                });
            }
            let fresh = open_pair(storage.as_ref(), &self.pair.dir)?;
            if fresh.hdr.salt == self.pair.hdr.salt {
                return Ok(Poll::Progress {
                    applied: self.applied,
                    final_lsn,
                    last_lsn,
                });
            }
            let Some(c) = fresh.ckpt.as_ref().filter(|c| {
                c.head
                    .salts
                    .is_some_and(|s| s.taken_from == self.pair.hdr.salt)
            }) else {
                return Ok(Poll::Gone(Gone(
                    "more than one checkpoint replaced the log since the last read".into(),
                )));
            };
            let ckpt_lsn = c.head.lsn;
            if self.applied < ckpt_lsn {
                // Every record the checkpoint covers is final; the old log is still
                // readable through our descriptor.
                self.durable = self.durable.max(ckpt_lsn);
                continue;
            }
            if self.applied > ckpt_lsn {
                return Ok(Poll::Gone(Gone(format!(
                    "a checkpoint at lsn {ckpt_lsn} is behind lsn {} that was applied",
                    self.applied
                ))));
            }
            self.pos = fresh.start();
            self.binder.bind.clear();
            self.binder.covered = 0;
            self.pair = fresh;
        }
        Ok(Poll::Progress {
            applied: self.applied,
            final_lsn: self.durable,
            last_lsn: self.applied,
        })
    }
}

/// The checkpoint's schema, and the migration it carried out, if any.
fn ckpt_schema(pair: &Pair) -> Result<(codec::StoredSchema, Option<codec::Migration>), OpenError> {
    let Some(c) = &pair.ckpt else {
        return Ok((Vec::new(), None));
    };
    let path = pair.dir.join("checkpoint");
    let mut w = Window {
        file: c.file.as_ref(),
        path: &path,
        at: c.head.hlen as u64,
        buf: Vec::new(),
        cur: 0,
        end: c.head.hlen as u64 + c.head.body_len,
    };
    w.decode(|r| r.checkpoint_head(c.head.indexed))
}
