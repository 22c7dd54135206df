//! The durable half of the database: a data directory holding a write-ahead log and a
//! checkpoint, opened with [`open`] (lock, load the checkpoint, replay the log, cut a
//! torn tail) into a [`Db`] and a [`DataDir`] whose [`DataDir::commit`] makes a
//! statement's or transaction's changes durable before they are acknowledged.
//!
//! This module is the policy: what goes in a record, when to sync, the failure
//! contract of LANGUAGE.md §8 (undo in memory, cut the log back, fence it), when to
//! checkpoint, and what recovery refuses. The byte formats live in `wal.rs`,
//! `checkpoint.rs` and `codec.rs`; every file operation goes through the
//! [`Storage`] seam (`storage.rs`), which tests replace with [`SimStorage`].
//!
//! Files in a data directory: `wal` (the log), `checkpoint` (the latest snapshot),
//! `checkpoint.tmp` and `wal.tmp` (only while a checkpoint or a new log generation is
//! being written; a leftover one is ignored, and removed by the next open), `lock` (holding the
//! owner's pid; the directory itself and this file are `flock`ed). `docs/wal-format.md`
//! has the details.

mod checkpoint;
mod codec;
mod migrate;
pub mod read;
mod restore;
mod sim;
mod storage;
mod switch;
mod syncer;
mod tools;
mod wal;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codec::{put_cell, put_ivar, put_uvar, Item, Reader, StoredSchema, StoredType};
use switch::{Switch, SwitchError};
use syncer::Done;
use wal::{failure, LogWriter, Tail, WalHeader, FRAME_LEN, HEADER_LEN};

pub use sim::{Fate, FaultKind, OpKind, OpRecord, SimStorage};
pub use storage::{note_line, LockError, LockGuard, Noted, RealStorage, Storage, StorageFile};

use checkpoint::Salts;
pub use migrate::{ColumnEvolution, Evolution, Plan, Step, StepKind, TableEvolution, ROWS_REFUSE};
pub use tools::{checkpoint_dir, near_table_name, stored_schema, CheckpointDirError};

use crate::{Change, ColType, Db, RowId, Savepoint, Schema, TableId};

/// The default automatic checkpoint threshold: the log is checkpointed after a commit
/// once it holds at least this many bytes *and* more bytes than the last checkpoint
/// (so a large database is not rewritten for every few megabytes of log).
pub const DEFAULT_CHECKPOINT_MIN: u64 = 4 << 20;

/// The default preallocation chunk of the log.
pub const DEFAULT_PREALLOCATE: u64 = 1 << 20;

/// Replay reports progress every this many records.
pub const PROGRESS_EVERY: u64 = 100_000;

/// Recovery progress, for a callback that shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub records: u64,
    pub bytes: u64,
    pub total_bytes: u64,
}

/// A progress callback.
pub type ProgressFn = Box<dyn FnMut(&Progress)>;

/// How to open a data directory.
pub struct Options {
    /// Where the files live (the real file system by default).
    pub storage: Arc<dyn Storage>,
    /// Checkpoint automatically after a commit when the log reaches
    /// `max(checkpoint_min, size of the last checkpoint)` bytes.
    pub auto_checkpoint: bool,
    pub checkpoint_min: u64,
    /// Grow the log by writing zero-filled chunks of this many bytes ahead of the
    /// records ([`DEFAULT_PREALLOCATE`]; 0: off), so that a commit's `fdatasync` does
    /// not also have to write file-size metadata. Turned off by itself (for the rest of
    /// the process) when the disk is full or the file-size limit is reached.
    pub preallocate: u64,
    /// Called every [`PROGRESS_EVERY`] replayed records.
    pub progress: Option<ProgressFn>,
    /// Written in the lock file (the process id by default).
    pub pid: u32,
    /// The largest record a commit may write, in payload bytes: the 1 GiB that recovery
    /// accepts by default (a smaller bound only for tests; a larger one is capped).
    pub max_record: usize,
    /// Renames and literal defaults of the program's tables, for a migration.
    pub evolution: Evolution,
    /// How messages name the program (`wo db migrate DIR PROGRAM --apply`).
    pub program: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            storage: Arc::new(RealStorage),
            auto_checkpoint: true,
            checkpoint_min: DEFAULT_CHECKPOINT_MIN,
            preallocate: DEFAULT_PREALLOCATE,
            progress: None,
            pid: rustix::process::getpid().as_raw_nonzero().get() as u32,
            max_record: wal::MAX_RECORD,
            evolution: Evolution::default(),
            program: None,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("storage", &self.storage)
            .field("auto_checkpoint", &self.auto_checkpoint)
            .field("checkpoint_min", &self.checkpoint_min)
            .field("preallocate", &self.preallocate)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

/// A durability failure (LANGUAGE.md §8): the operation that failed, the file, the OS
/// error, and how many in-memory changes were undone because of it. Displays as
/// `fdatasync failed on DIR/wal: Input/output error (os error 5)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `pwrite`, `fdatasync`, `fsync`, `ftruncate`, `rename`, `open`, or `checkpoint`
    /// (a checkpoint refused because changes are not committed).
    pub op: &'static str,
    pub path: PathBuf,
    pub os_error: Option<i32>,
    /// The OS error's text (`Input/output error (os error 5)`).
    pub message: String,
    pub changes_undone: usize,
    /// The change is larger than a log record may be (`op` is `commit`): nothing was
    /// written and the log is not fenced; the change is undone and the program gets
    /// `LIMIT`, not `IO`.
    pub limit: bool,
    /// The failed records could not be cut from the log afterwards (the OS error of
    /// the `ftruncate`): they were written, so they may come back when the directory
    /// is next opened, though their changes were undone in memory.
    pub cut_failed: Option<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed on {}: {}",
            self.op,
            self.path.display(),
            self.message
        )
    }
}

impl std::error::Error for Failure {}

/// Why a data directory could not be opened. [`OpenError::exit_status`] gives the
/// sysexits status the CLI uses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// An I/O error while creating, reading or repairing the directory (exit 74).
    #[error("{op} failed on {}: {message}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        os_error: Option<i32>,
        message: String,
    },
    /// Another process (or another open in this one) holds the lock (exit 75).
    #[error("data directory {} is locked by {}", dir.display(), match pid { Some(p) => format!("process {p}"), None => "another process".into() })]
    Locked { dir: PathBuf, pid: Option<u32> },
    /// Damage recovery must not repair (exit 65).
    #[error("{}: damaged at offset {offset}: {what}", file.display())]
    Damaged {
        file: PathBuf,
        offset: u64,
        what: String,
    },
    /// The program's schema does not match the data (exit 65).
    #[error("{message}")]
    Schema { message: String },
    /// The command line names what the directory does not hold (exit 64): `wo db
    /// migrate --drop NAME` of a table that is not stored.
    #[error("{message}")]
    Usage { message: String },
    /// The directory exists but holds neither a log nor a checkpoint (exit 66): the
    /// maintenance commands refuse it rather than make it a data directory.
    #[error("{}", not_a_data_directory(dir))]
    NotADataDirectory { dir: PathBuf },
    /// Recovery needed more memory than it could get (exit 74).
    #[error("out of memory while opening {}: {what}", dir.display())]
    OutOfMemory { dir: PathBuf, what: String },
    /// `verify` found the directory changed under it every time it read it (exit 75).
    #[error("data directory {} changed under every attempt to read it (a writer checkpointing constantly?); try again", dir.display())]
    Busy { dir: PathBuf },
}

/// The error of taking the lock of an existing directory, with a hint after a
/// permission error or a read-only file system (EPERM, EACCES, EROFS): opening a data
/// directory writes to it, also for a program that only reads.
fn lock_failed(op: &'static str, path: &Path, e: &std::io::Error) -> OpenError {
    let mut err = io_err(op, path, e);
    if let OpenError::Io { message, .. } = &mut err {
        if matches!(e.raw_os_error(), Some(1 | 13 | 30)) {
            message.push_str("; opening a data directory writes to it (its lock, its log), also for a program that only reads: `wo db export DIR` and `wo db verify DIR` read one without writing");
        }
    }
    err
}

/// [`OpenError::NotADataDirectory`]'s message (and that of `wo db`'s commands for a
/// DIR that is not a directory): a path that is not there is said to be missing, a
/// file to be a file, not to hold nothing.
pub fn not_a_data_directory(dir: &Path) -> String {
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            format!("no data directory at `{shown}`")
        }
        Err(e) if e.raw_os_error() == Some(20) => {
            // ENOTDIR: a parent is a file.
            match dir.ancestors().skip(1).find(|a| a.is_file()) {
                Some(f) => format!(
                    "`{shown}` cannot be a data directory: `{}` is a file",
                    f.display()
                ),
                None => format!("cannot read `{shown}`: {e}"),
            }
        }
        Err(e) => format!("cannot read `{shown}`: {e}"),
        Ok(m) if !m.is_dir() => format!("`{shown}` is a file, not a wo data directory"),
        Ok(_) => {
            format!("`{shown}` is not a wo data directory: it holds no `wal` and no `checkpoint`")
        }
    }
}

impl OpenError {
    /// The sysexits status: 74 I/O, 75 locked, 65 damaged or incompatible, 64 a
    /// command line naming what is not there.
    pub fn exit_status(&self) -> i32 {
        match self {
            OpenError::Usage { .. } => 64,
            OpenError::Io { .. } | OpenError::OutOfMemory { .. } => 74,
            OpenError::Locked { .. } | OpenError::Busy { .. } => 75,
            OpenError::Damaged { .. } | OpenError::Schema { .. } => 65,
            OpenError::NotADataDirectory { .. } => 66,
        }
    }
}

/// Why `open` could not make the data directory `dir`: an I/O failure (exit 74,
/// LANGUAGE.md §8) whose message also says what is in the way: a file in its place or
/// in a parent's, or a missing parent.
fn cannot_make(dir: &Path, e: &std::io::Error) -> OpenError {
    const ENOENT: i32 = 2;
    const ENOTDIR: i32 = 20;
    let why = match e.raw_os_error() {
        Some(ENOTDIR) if dir.is_file() => Some(format!(
            "`{}` is a file, not a wo data directory",
            dir.display()
        )),
        Some(ENOTDIR) => dir
            .ancestors()
            .skip(1)
            .find(|a| a.is_file())
            .map(|f| format!("`{}` is a file", f.display())),
        Some(ENOENT) => dir.parent().filter(|p| !p.as_os_str().is_empty()).map(|p| {
            format!(
                "`{}` does not exist (only the data directory itself is made)",
                p.display()
            )
        }),
        _ => None,
    };
    let mut err = io_err("mkdir", dir, e);
    if let (OpenError::Io { message, .. }, Some(why)) = (&mut err, why) {
        message.push_str(": ");
        message.push_str(&why);
    }
    err
}

fn io_err(op: &'static str, path: &Path, e: &std::io::Error) -> OpenError {
    OpenError::Io {
        op,
        path: path.to_path_buf(),
        os_error: e.raw_os_error(),
        message: e.to_string(),
    }
}

fn damaged(file: &Path, offset: u64, what: impl Into<String>) -> OpenError {
    OpenError::Damaged {
        file: file.to_path_buf(),
        offset,
        what: what.into(),
    }
}

/// What the log thread told ([`DataDir::poll`]).
#[derive(Debug)]
pub enum LogEvent {
    /// Every record up to this LSN is durable.
    Durable(u64),
    /// A sync failed: the log is fenced; nothing after the last durable record is.
    Failed(Failure),
    /// The automatic checkpoint under way ended: in charge, or failed (fenced or not,
    /// see [`DataDir::fence`]).
    Checkpoint(Result<CheckpointStats, Failure>),
}

/// What a successful commit did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommitOutcome {
    /// The LSN of the record written, `None` when nothing durable changed (no I/O).
    pub lsn: Option<u64>,
    /// An automatic checkpoint that ran after the commit.
    pub checkpoint: Option<CheckpointStats>,
    /// An automatic checkpoint that failed. The commit itself is durable. If the
    /// failure came before the new checkpoint replaced the old one, automatic
    /// checkpoints are off for the rest of the process and the log goes on; otherwise
    /// the log is fenced and the next commit fails with this.
    pub checkpoint_error: Option<Failure>,
}

/// What a checkpoint wrote and how long the program was paused.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointStats {
    pub lsn: u64,
    pub rows: u64,
    pub bytes: u64,
    /// Encoding and writing the snapshot.
    pub write: Duration,
    /// The syncs, renames and the new log generation.
    pub sync: Duration,
    pub total: Duration,
}

/// An open data directory: the log writer, the lock, and the mapping between the
/// program's tables and the stored ones.
#[derive(Debug)]
pub struct DataDir {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    wal: LogWriter,
    _lock: Box<dyn LockGuard>,
    /// What `dir` named when the lock was taken ([`Storage::dir_id`]): a checkpoint is
    /// written into `dir` by name only while it still names that directory.
    dir_id: Option<(u64, u64)>,
    /// Program table -> stored position (durable tables only).
    map: Vec<Option<u32>>,
    /// Stored position -> program table.
    tables: Vec<TableId>,
    /// The next record must begin with the stored schema (the program's durable
    /// tables differ from the log's latest schema).
    schema_pending: bool,
    auto_checkpoint: bool,
    checkpoint_min: u64,
    checkpoint_bytes: u64,
    checkpoint_lsn: u64,
    /// After a failed automatic checkpoint: the log size at which to try again.
    retry_at: u64,
    max_record: usize,
    /// The automatic checkpoint under way.
    ckpt: Option<Ckpt>,
    preallocate: u64,
    buf: Vec<u8>,
    /// What the migration applied on open changed.
    notice: Option<String>,
}

/// Opens (creating if missing) the data directory `dir` for a program with `schema`:
/// takes the lock, loads the checkpoint, replays the log, and returns the database
/// with every acknowledged change. A torn tail is cut (the only repair, and the only
/// case in which opening syncs, besides creating the directory and a migration).
///
/// When the program's durable tables differ from the stored ones (`docs/schema.md`),
/// the differences `open` applies are applied as one migration (a checkpoint whose new
/// log generation begins with a migration item; [`DataDir::migration_notice`] says
/// what changed); any other difference is refused (`OpenError::Schema`) before
/// anything is written.
pub fn open(dir: &Path, schema: Schema, options: Options) -> Result<(DataDir, Db), OpenError> {
    let (dd, db, _) = open_as(dir, schema, options, None)?;
    match dd {
        Some(dd) => Ok((dd, db)),
        None => unreachable!("open without a migration request always opens"),
    }
}

/// The names a data directory holds: what `open` and a checkpoint make (a crash can
/// leave any of them before the first log exists).
const OWN_NAMES: [&str; 5] = ["lock", "wal", "wal.tmp", "checkpoint", "checkpoint.tmp"];

/// Why an existing directory that holds no log and no checkpoint cannot become a data
/// directory: it holds something else (as `initdb` refuses a non-empty directory).
/// Allowed besides wo's own files: hidden names (`.gitkeep`, `.DS_Store`) and the
/// `lost+found` of a file system's root (a disk mounted for the data).
fn foreign_entries(dir: &Path, entries: Vec<String>) -> Option<String> {
    let mut foreign: Vec<String> = entries
        .into_iter()
        .filter(|n| !OWN_NAMES.contains(&n.as_str()) && !n.starts_with('.') && n != "lost+found")
        .collect();
    if foreign.is_empty() {
        return None;
    }
    foreign.sort();
    let n = foreign.len();
    let mut shown: Vec<String> = foreign.iter().take(3).map(|f| format!("`{f}`")).collect();
    if n > 3 {
        shown.push(format!("{} more", n - 3));
    }
    let last = shown.pop().unwrap_or_default();
    let list = if shown.is_empty() {
        last
    } else {
        format!("{} and {last}", shown.join(", "))
    };
    Some(format!(
        "{} holds no wo data but is not empty (it holds {list}): a data directory is made only in a new or empty directory; give one, such as {}",
        dir.display(),
        dir.join("data").display()
    ))
}

/// `a` as a shell reads it back: quoted when it holds anything but plain characters.
/// For the commands that messages suggest (`wo db migrate DIR PROGRAM --apply`), so
/// that a path with a space can be pasted.
pub fn shell_word(a: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !a.is_empty() && a.chars().all(plain) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// What `wo db migrate` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrateRequest {
    /// Carry the plan out (else only plan, writing nothing).
    pub apply: bool,
    /// Stored tables the program does not declare, to remove.
    pub drop: Vec<String>,
}

/// `wo db migrate DIR PROGRAM [--apply] [--drop NAME]…`: takes the lock, recovers the
/// existing directory `dir` and plans the migration to `schema`; with `apply`, carries
/// it out (the changes `open` refuses included, except those no migration does) as one
/// crash-atomic step. Returns the plan.
pub fn migrate(
    dir: &Path,
    schema: Schema,
    options: Options,
    req: &MigrateRequest,
) -> Result<Plan, OpenError> {
    if !options
        .storage
        .exists(dir)
        .map_err(|e| io_err("stat", dir, &e))?
    {
        return Err(io_err("stat", dir, &std::io::Error::from_raw_os_error(2)));
    }
    let (_dd, _db, plan) = open_as(dir, schema, options, Some(req))?;
    Ok(plan)
}

/// [`open`] and [`migrate`]: `req` is `None` for `open`. Returns no [`DataDir`] for a
/// plan that is not applied.
fn open_as(
    dir: &Path,
    schema: Schema,
    mut options: Options,
    req: Option<&MigrateRequest>,
) -> Result<(Option<DataDir>, Db, Plan), OpenError> {
    let storage = options.storage.clone();
    check_program_schema(&schema)?;
    let mut db = Db::new(schema).map_err(|e| OpenError::Schema { message: e.message })?;

    let created_dir = match req {
        None => storage.create_dir(dir).map_err(|e| cannot_make(dir, &e))?,
        Some(_) => false,
    };
    // `wo db migrate` of a directory that holds no data directory: said before the
    // lock is taken, which would leave a `lock` file there (checked again under it).
    // And `open` makes a data directory only where nothing else lives.
    let no_data = |name: &str| storage.exists(&dir.join(name)).map(|e| !e);
    if !created_dir
        && no_data("wal").map_err(|e| io_err("stat", dir, &e))?
        && no_data("checkpoint").map_err(|e| io_err("stat", dir, &e))?
    {
        if req.is_some() {
            return Err(OpenError::NotADataDirectory {
                dir: dir.to_path_buf(),
            });
        }
        let entries = storage
            .entries(dir)
            .map_err(|e| io_err("readdir", dir, &e))?;
        if let Some(message) = foreign_entries(dir, entries) {
            return Err(OpenError::Usage { message });
        }
    }
    let lock_path = dir.join("lock");
    let lock = match storage.lock(&lock_path, options.pid) {
        Ok(l) => l,
        Err(LockError::Held(pid)) => {
            return Err(OpenError::Locked {
                dir: dir.to_path_buf(),
                pid,
            })
        }
        Err(LockError::Io(op, e)) => return Err(lock_failed(op, &lock_path, &e)),
    };
    let wal_path = dir.join("wal");
    let mut files = Files::open(storage.as_ref(), dir)?;
    files.noted = lock.carried_note().unwrap_or_default();
    if req.is_some() && files.ckpt.is_none() && files.wal.is_none() {
        return Err(OpenError::NotADataDirectory {
            dir: dir.to_path_buf(),
        });
    }
    let program = db.schema().clone();
    let rec = recover(dir, &mut db, &files, options.progress.as_mut())?;
    drop(files);
    let drops = req.map_or(&[][..], |r| &r.drop[..]);
    let plan = migrate::plan(&db, &program, &options.evolution, &rec.stored, drops, dir)?;
    let apply = req.is_some_and(|r| r.apply);
    if req.is_some() && !apply {
        // Carried out in memory only (nothing is written), so that what the stored
        // rows refuse (a unique index over repeated values, a nil where none may
        // be) shows in the plan, naming the value or the row.
        let mut plan = plan;
        // (Not when a change is refused already: the rows then refuse what it
        // refuses, said again in the engine's words.)
        let refused = plan
            .steps
            .iter()
            .any(|s| s.kind == migrate::StepKind::Refused);
        let refusals = if refused {
            Vec::new()
        } else {
            migrate::rows_refuse(&mut db, &plan)
        };
        for message in refusals {
            plan.steps.push(migrate::Step {
                what: format!("{}: {message}", migrate::ROWS_REFUSE),
                rows: 0,
                kind: migrate::StepKind::Refused,
                hint: None,
            });
        }
        return Ok((None, db, plan));
    }
    let prog_name = options.program.as_deref().unwrap_or("PROGRAM");
    if let Some(e) = migrate::refusal(&plan, apply, dir, prog_name) {
        // A change that open leaves to `--apply`, which the stored rows would refuse
        // (a nil where none may be, a unique index over repeated values): the advice
        // to run `--apply` would lead to one more refusal, so the rows' is said too.
        // (Tried in memory: the directory is not opened, nothing is written.)
        let only_apply = plan
            .steps
            .iter()
            .all(|s| s.kind != migrate::StepKind::Refused);
        if !apply && only_apply {
            let rows = migrate::rows_refuse(&mut db, &plan);
            if let (false, OpenError::Schema { message }) = (rows.is_empty(), &e) {
                return Err(OpenError::Schema {
                    message: format!(
                        "{message}\n{}: but `--apply` would be refused too, since the stored rows refuse it: {}; change them with the program as it was first",
                        dir.display(),
                        rows.join("; ")
                    ),
                });
            }
        }
        return Err(e);
    }
    // What an interrupted checkpoint or log generation left (recovery ignores it, the
    // next checkpoint would overwrite it): removed now, under the lock, so that a
    // crash during a big checkpoint does not leave its size on the disk until the next
    // one. Best effort, not synced: should the removal be lost, the file is ignored
    // again.
    for leftover in ["checkpoint.tmp", "wal.tmp"] {
        let path = dir.join(leftover);
        if storage.exists(&path).unwrap_or(false) {
            // A directory of that name would fail the next checkpoint, after its
            // rename, and close the log for writing (helper-98): refused now.
            if let Err(e) = storage.remove(&path) {
                if e.kind() == std::io::ErrorKind::IsADirectory {
                    return Err(io_err("unlink", &path, &e));
                }
            }
        }
    }
    let migrating = !plan.is_empty() && (apply || !plan.only_new_tables());
    if migrating {
        migrate::restructure(&mut db, &plan, dir)?;
    }
    let (stored, map, tables) = program_stored(&db);
    let (checkpoint_bytes, ckpt_lsn) = (rec.checkpoint_bytes, rec.ckpt_lsn);

    let Some(log) = rec.log else {
        // A new data directory: the first log generation, made durable by name. (A
        // note carried over from a former holder, whose log is gone, says nothing
        // now.)
        lock.settle_note(0)
            .map_err(|(op, e)| io_err(op, &lock_path, &e))?;
        let first = schema_record(&stored);
        let wal = LogWriter::create(
            &storage,
            dir,
            1,
            wal::new_salt(None),
            first,
            options.preallocate,
        )
        .map_err(failure_to_open)?;
        if created_dir {
            // `--data d` names a directory in the current one: its parent is `.`.
            let parent = match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            storage
                .sync_dir(parent)
                .map_err(|e| io_err("fsync", parent, &e))?;
        }
        let dd = DataDir::new(dir, storage, wal, lock, map, tables, false, &options, 0, 0);
        return Ok((Some(dd), db, plan));
    };
    let (end, latest, hdr) = (log.end, log.latest, log.hdr);
    let mut file = storage
        .open(&wal_path, false)
        .map_err(|e| io_err("open", &wal_path, &e))?;
    let mut alloc_end = log.len;
    if end.tail == Tail::Torn {
        // The only repair: cut the torn write, durably, before anything is appended.
        file.truncate(end.end)
            .map_err(|e| io_err("ftruncate", &wal_path, &e))?;
        file.fsync().map_err(|e| io_err("fsync", &wal_path, &e))?;
        alloc_end = end.end;
    }
    let same = latest.as_ref().is_some_and(|l| same_tables(l, &stored));
    lock.settle_note(end.last_lsn)
        .map_err(|(op, e)| io_err(op, &lock_path, &e))?;
    let wal = LogWriter::resume(
        wal_path,
        file,
        hdr.salt,
        end.last_lsn,
        end.end,
        alloc_end,
        options.preallocate,
    );
    let mut dd = DataDir::new(
        dir,
        storage,
        wal,
        lock,
        map,
        tables,
        !same,
        &options,
        checkpoint_bytes,
        ckpt_lsn,
    );
    if migrating {
        let mut m = plan.migration.clone();
        m.schema = stored;
        dd.checkpoint_as(&db, Some(&m)).map_err(failure_to_open)?;
        dd.notice = Some(migrated_notice(dir, &plan));
    } else if !plan.is_empty() && dd.schema_pending {
        // Only new tables: no stored row changes, so no checkpoint; the directory
        // records them at once, with a record that holds only the new schema (so a
        // later program declaring one of them otherwise is refused, and `verify`,
        // `export` and `mirror` list them).
        dd.record_schema(&db).map_err(failure_to_open)?;
        dd.notice = Some(migrated_notice(dir, &plan));
    } else if let Some((m, salts)) = rec.migration {
        // A crash came after a migration's checkpoint was renamed in and before its
        // log generation was: start that generation now, with its migration item, so
        // that the log says what the migration did.
        if hdr.salt == salts.taken_from && end.last_lsn == ckpt_lsn {
            let w = LogWriter::create(
                &dd.storage,
                dir,
                ckpt_lsn + 1,
                salts.next,
                migration_record(&m),
                options.preallocate,
            )
            .map_err(failure_to_open)?;
            let mut w = w;
            w.note = dd.wal.note.take();
            dd.wal = w;
            dd.schema_pending = !same_tables(&m.schema, &program_stored(&db).0);
        }
    }
    // What the program says that the plan does not do (an unused `was:`) is said on
    // every run, not only by `wo db migrate` (helper-65).
    if !plan.warnings.is_empty() {
        let said = plan
            .warnings
            .iter()
            .map(|w| format!("{}: warning: {w}", dir.display()));
        let lines: Vec<String> = dd.notice.take().into_iter().chain(said).collect();
        dd.notice = Some(lines.join("\n"));
    }
    Ok((Some(dd), db, plan))
}

/// The notice of a migration applied on open: what changed, naming tables and columns.
/// A step's hint (a new table while a stored one goes undeclared) follows on a line
/// of its own.
fn migrated_notice(dir: &Path, plan: &Plan) -> String {
    let what: Vec<&str> = plan.steps.iter().map(|s| s.what.as_str()).collect();
    let mut out = format!("{}: schema migrated: {}", dir.display(), what.join("; "));
    for hint in plan.steps.iter().filter_map(|s| s.hint.as_deref()) {
        out.push_str(&format!("\n{}: hint: {hint}", dir.display()));
    }
    out
}

/// What [`recover`] found in the log.
struct LogState {
    hdr: WalHeader,
    end: wal::ScanEnd,
    /// The log's latest schema.
    latest: Option<StoredSchema>,
    len: u64,
}

struct Recovered {
    checkpoint_bytes: u64,
    ckpt_lsn: u64,
    /// The names of the stored tables (the log's latest schema, or the checkpoint's).
    stored: Vec<String>,
    /// The checkpoint's migration and salts, when the checkpoint carries one out.
    migration: Option<(codec::Migration, Salts)>,
    /// `None` when there is no log (a new directory).
    log: Option<LogState>,
}

/// The files of a data directory, opened once: recovery and `verify` read these
/// descriptors only, so a `verify` beside a running writer reads one checkpoint and
/// one log even when the writer renames new ones in meanwhile.
struct Files {
    ckpt: Option<Box<dyn StorageFile>>,
    /// The log and its length when opened (a live log may grow; what is read stops
    /// there).
    wal: Option<(Box<dyn StorageFile>, u64)>,
    /// The memory this process may use (`Storage::memory_limit`), to refuse id counters
    /// whose slots could not fit.
    memory: Option<u64>,
    /// What the lock file's note states (its last holder's, whoever that was; LSN 0
    /// when there is no whole note, or it is not read): damage to a record it covers,
    /// followed by a valid record, is damage, not a torn write (`wal::check_unproven`),
    /// and so is a log of its generation that ends before it (`wal::check_noted_end`).
    /// Set by `open` (the note its lock carried over) and `verify` (the note as it
    /// reads it, before the files).
    noted: Noted,
}

impl Files {
    fn open(storage: &dyn Storage, dir: &Path) -> Result<Files, OpenError> {
        let ckpt = open_existing(storage, &dir.join("checkpoint"))?;
        let wal_path = dir.join("wal");
        let wal = match open_existing(storage, &wal_path)? {
            Some(f) => {
                let len = f.len().map_err(|e| io_err("fstat", &wal_path, &e))?;
                Some((f, len))
            }
            None => None,
        };
        Ok(Files {
            ckpt,
            wal,
            memory: storage.memory_limit(),
            noted: Noted::default(),
        })
    }
}

/// Opens a file of the data directory for reading; `None` when it does not exist.
fn open_existing(
    storage: &dyn Storage,
    path: &Path,
) -> Result<Option<Box<dyn StorageFile>>, OpenError> {
    match storage.open_read(path) {
        Ok(f) => Ok(Some(f)),
        // A path through a file (`DIR` is no directory) holds no file either.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::InvalidInput
                && e.to_string() == storage::NOT_REGULAR =>
        {
            Err(damaged(
                path,
                0,
                "not a regular file (a FIFO, a device or a directory?)",
            ))
        }
        Err(e) => Err(io_err("open", path, &e)),
    }
}

/// Reads a whole file (a checkpoint) into memory allocated fallibly.
fn read_all(file: &dyn StorageFile, path: &Path, dir: &Path) -> Result<Vec<u8>, OpenError> {
    let len = file.len().map_err(|e| io_err("fstat", path, &e))?;
    let n = usize::try_from(len)
        .map_err(|_| out_of_memory(dir, format!("{} is {len} bytes", path.display())))?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(n)
        .map_err(|_| out_of_memory(dir, format!("reading {} ({len} bytes)", path.display())))?;
    buf.resize(n, 0);
    let mut got = 0;
    while got < n {
        match file.read_at(&mut buf[got..], got as u64) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err("pread", path, &e)),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

fn out_of_memory(dir: &Path, what: String) -> OpenError {
    OpenError::OutOfMemory {
        dir: dir.to_path_buf(),
        what,
    }
}

/// The log's header (the first [`HEADER_LEN`] bytes, fewer if the file is shorter).
fn read_header(file: &dyn StorageFile, path: &Path) -> Result<WalHeader, OpenError> {
    let head = file
        .read_vec(0, HEADER_LEN)
        .map_err(|e| io_err("pread", path, &e))?;
    WalHeader::decode(&head).map_err(|(off, what)| damaged(path, off, what))
}

/// A scan error as the open error it is.
fn scan_err(e: wal::ScanError, path: &Path, dir: &Path) -> OpenError {
    match e {
        wal::ScanError::Damage((off, what)) => damaged(path, off, what),
        wal::ScanError::Io(e) => io_err("pread", path, &e),
        wal::ScanError::Memory(n) => out_of_memory(
            dir,
            format!("a log record of {n} bytes in {}", path.display()),
        ),
    }
}

/// Refuses a log that starts past what the checkpoint covers (records missing in
/// between, or the checkpoint missing): recovery and the readers (`wo db export`, the
/// mirror) alike, so that no reader hands out a part of the rows as the whole
/// (helper-88: export printed a third of them and exited 0).
pub(crate) fn check_gap(
    has_checkpoint: bool,
    hdr: &WalHeader,
    ckpt_lsn: u64,
    wal_path: &Path,
) -> Result<(), OpenError> {
    if hdr.first_lsn <= ckpt_lsn.saturating_add(1) {
        return Ok(());
    }
    let what = if has_checkpoint {
        format!(
            "the log starts at lsn {}, but the checkpoint ends at lsn {ckpt_lsn}",
            hdr.first_lsn
        )
    } else {
        format!(
            "the log starts at lsn {} and there is no checkpoint",
            hdr.first_lsn
        )
    };
    Err(damaged(wal_path, 24, what))
}

/// Refuses a log that is not the checkpoint's: a version 2 checkpoint names the log
/// generation it was taken from and the one after it, and a log with another salt
/// (copied from another directory, or an older generation put back) would be merged
/// into data it does not belong to.
fn check_tie(
    salts: Option<checkpoint::Salts>,
    hdr: &WalHeader,
    ckpt_lsn: u64,
    wal_path: &Path,
) -> Result<(), OpenError> {
    let Some(s) = salts else {
        return Ok(());
    };
    if hdr.salt == s.taken_from || hdr.salt == s.next {
        return Ok(());
    }
    Err(damaged(
        wal_path,
        16,
        format!(
            "this log does not belong to the checkpoint: its generation (salt {:016x}, first lsn {}) is neither the one \
             the checkpoint (lsn {ckpt_lsn}) was taken from ({:016x}) nor the one after it ({:016x}); \
             was a log copied in from another directory or an older backup?",
            hdr.salt, hdr.first_lsn, s.taken_from, s.next
        ),
    ))
}

/// Refuses id counters whose row slots could not fit in this machine's memory (the
/// engine keeps a slot per id, deleted ones included): a damaged or hostile counter
/// must not make loading allocate without bound.
fn check_id_counters(
    stored: &StoredSchema,
    memory: Option<u64>,
    path: &Path,
    dir: &Path,
) -> Result<(), OpenError> {
    let Some(total) = memory else {
        return Ok(());
    };
    for t in stored {
        let slots = u64::try_from(t.next_id.saturating_sub(1)).unwrap_or(0);
        // At least 8 bytes per slot and column.
        let need = slots
            .saturating_mul(8)
            .saturating_mul(t.columns.len().max(1) as u64);
        if need > total {
            return Err(out_of_memory(
                dir,
                format!(
                    "{}: table `{}` has next id {}: its row ids need at least {} MiB, more than the {} MiB this process may use",
                    path.display(),
                    t.name,
                    t.next_id,
                    need >> 20,
                    total >> 20
                ),
            ));
        }
    }
    Ok(())
}

/// Loads the checkpoint and replays the log into `db` (empty, with the program's
/// schema) from `files`: reads only, never writes, takes no lock. Used by [`open`] and
/// [`verify`].
///
/// Recovery writes no undo entries (nothing it applies is ever rolled back) and defers
/// the hash and sorted indexes: they are built once, in bulk, after the last record.
/// Unique indexes, types, references and row liveness are checked as each change
/// applies, so a log that contradicts itself is still `Damaged` at the record that
/// does. The log is streamed: memory for the largest record, not for the log.
fn recover(
    dir: &Path,
    db: &mut Db,
    files: &Files,
    progress: Option<&mut ProgressFn>,
) -> Result<Recovered, OpenError> {
    let undo = db.undo_enabled();
    db.set_undo(false);
    db.defer_indexes(true);
    let res = recover_into(dir, db, files, progress);
    db.defer_indexes(false);
    db.set_undo(undo);
    res
}

fn recover_into(
    dir: &Path,
    db: &mut Db,
    files: &Files,
    progress: Option<&mut ProgressFn>,
) -> Result<Recovered, OpenError> {
    let ckpt_path = dir.join("checkpoint");
    let wal_path = dir.join("wal");
    let mut checkpoint_bytes = 0;
    let mut ckpt_lsn = 0;
    let mut stored: Vec<String> = Vec::new();
    let mut migration = None;
    let hdr = match &files.wal {
        Some((f, _)) => Some(read_header(f.as_ref(), &wal_path)?),
        None => None,
    };
    if let Some(file) = &files.ckpt {
        let buf = read_all(file.as_ref(), &ckpt_path, dir)?;
        checkpoint_bytes = buf.len() as u64;
        let body = checkpoint::open(&buf).map_err(|(off, what)| damaged(&ckpt_path, off, what))?;
        ckpt_lsn = body.lsn;
        if let Some(hdr) = &hdr {
            check_tie(body.salts, hdr, ckpt_lsn, &wal_path)?;
        }
        check_id_counters(&body.schema, files.memory, &ckpt_path, dir)?;
        stored = body.schema.iter().map(|t| t.name.clone()).collect();
        if let (Some(m), Some(salts)) = (&body.migration, body.salts) {
            migration = Some((m.clone(), salts));
        }
        let bind = bind_schema(&body.schema, db, dir)?;
        restore::restore(db, body, &bind).map_err(|e| match e {
            restore::RestoreError::Damaged((off, what)) => damaged(&ckpt_path, off, what),
            restore::RestoreError::Unique(m) => unique_conflict(dir, &m),
        })?;
    }

    let (Some((file, len)), Some(hdr)) = (&files.wal, hdr) else {
        if files.ckpt.is_some() {
            return Err(damaged(
                &wal_path,
                0,
                "the log is missing but a checkpoint exists",
            ));
        }
        return Ok(Recovered {
            checkpoint_bytes,
            ckpt_lsn,
            stored,
            migration,
            log: None,
        });
    };

    // Replay the log.
    check_gap(files.ckpt.is_some(), &hdr, ckpt_lsn, &wal_path)?;
    let mut rp = Replay {
        db,
        dir,
        first_lsn: hdr.first_lsn,
        bind: None,
        pending: None,
        latest: None,
        ckpt_lsn,
        records: 0,
        total: *len,
        progress,
        err: None,
    };
    let mut src = wal::LogSource::new(file.as_ref(), *len);
    let scanned = wal::scan(&mut src, &hdr, files.noted, |fr, payload| {
        rp.record(fr, payload)
    });
    if let Some(e) = rp.err.take() {
        return Err(e);
    }
    let end = scanned.map_err(|e| scan_err(e, &wal_path, dir))?;
    let latest = rp.latest.take();
    if end.records == 0 {
        return Err(damaged(
            &wal_path,
            HEADER_LEN as u64,
            "the log has no schema record",
        ));
    }
    if end.last_lsn < ckpt_lsn {
        return Err(damaged(
            &wal_path,
            end.end,
            format!(
                "the log ends at lsn {}, before the checkpoint's lsn {ckpt_lsn}",
                end.last_lsn
            ),
        ));
    }
    if let Some(l) = &latest {
        stored = l.iter().map(|t| t.name.clone()).collect();
    }
    Ok(Recovered {
        checkpoint_bytes,
        ckpt_lsn,
        stored,
        migration,
        log: Some(LogState {
            hdr,
            end,
            latest,
            len: *len,
        }),
    })
}

/// Stored rows that repeat a value of a unique index the program declares: the
/// stored schema has no indexes, so the data was valid when written and the program
/// adds the `@unique`. A schema conflict naming the value, not damage.
fn unique_conflict(dir: &Path, engine_message: &str) -> OpenError {
    OpenError::Schema {
        message: format!(
            "{} holds a {engine_message}: the program declares it unique, but the stored rows repeat it \
             (remove the duplicates with a program that does not declare @unique, then add it)",
            dir.display()
        ),
    }
}

fn failure_to_open(f: Failure) -> OpenError {
    OpenError::Io {
        op: f.op,
        path: f.path,
        os_error: f.os_error,
        message: f.message,
    }
}

/// Durable tables may only refer to durable tables (a reference into a table that is
/// empty after every restart could not be restored).
fn check_program_schema(schema: &Schema) -> Result<(), OpenError> {
    let mut durable_names = std::collections::HashSet::new();
    for t in &schema.tables {
        if !t.durable {
            continue;
        }
        if !durable_names.insert(t.name.as_str()) {
            // Tables are stored by name: two of one name would make the directory
            // unreadable after the first run.
            return Err(OpenError::Schema {
                message: format!(
                    "the program declares two durable tables named `{}`; a data directory tells tables apart by name",
                    t.name
                ),
            });
        }
        for c in &t.columns {
            if let ColType::Ref(r) = c.ty {
                if let Some(target) = schema.tables.get(r as usize) {
                    if !target.durable {
                        return Err(OpenError::Schema {
                            message: format!(
                                "durable table `{}` refers to `{}` in column `{}`, but `{}` is not durable",
                                t.name, target.name, c.name, target.name
                            ),
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

/// The program's durable tables as stored, with the mappings both ways.
fn program_stored(db: &Db) -> (StoredSchema, Vec<Option<u32>>, Vec<TableId>) {
    let (stored, map) = codec::stored_schema(db.schema(), |t| db.next_id(t as TableId));
    let tables = map
        .iter()
        .enumerate()
        .filter_map(|(t, m)| m.map(|_| t as TableId))
        .collect();
    (stored, map, tables)
}

fn same_tables(a: &StoredSchema, b: &StoredSchema) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.name == y.name && x.columns == y.columns)
}

/// Maps each stored table to the database's table of the same name (the program's, or
/// one kept for the directory: a stored table the program does not declare is added
/// to the database as it is stored, so it is checkpointed and recovered untouched).
///
/// A table whose definition in the database differs from the stored one takes the
/// stored one while it holds no rows (the program's declaration is compared with
/// what is stored once recovery is done, see `migrate.rs`); a table with rows whose
/// columns would change is damage (columns change only by a migration).
fn bind_schema(stored: &StoredSchema, db: &mut Db, dir: &Path) -> Result<Vec<TableId>, OpenError> {
    let d = dir.display();
    if let Some(dup) = duplicate_name(stored) {
        return Err(OpenError::Schema {
            message: format!("{d} stores two tables named `{dup}` and cannot tell them apart"),
        });
    }
    let mut schema = db.schema().clone();
    let mut sources: Vec<crate::TableSource> = (0..schema.tables.len())
        .map(|t| crate::TableSource::Keep(t as TableId))
        .collect();
    let mut bind = Vec::with_capacity(stored.len());
    // The program's tables by name, looked up, not searched (helper-76: 64,000 stored
    // tables took more than a minute to open). A stored table the program does not
    // declare is added after them under a name none of them has.
    let by_name: std::collections::HashMap<String, usize> = schema
        .tables
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| (t.name.clone(), i))
        .collect();
    for st in stored {
        let t = match by_name.get(&st.name).copied() {
            Some(t) => {
                if !schema.tables[t].durable {
                    return Err(OpenError::Schema {
                        message: format!(
                            "{d} holds durable table `{}`, which the program declares `durable: false`: remove `durable: false` to go on with its rows, give the in-memory table another name (`@table(name: \"…\", durable: false)`), or drop the stored table with `wo db migrate {} OTHER.wo --drop {} --apply`, where OTHER.wo is a program that does not declare `{}` (`fn main() {{}}` will do: the other stored tables are kept as they are)",
                            st.name,
                            shell_word(&d.to_string()),
                            shell_word(&st.name),
                            st.name
                        ),
                    });
                }
                t
            }
            None => {
                // Kept: filled in below, once every stored table has a place.
                schema.tables.push(crate::TableDef {
                    name: st.name.clone(),
                    columns: Vec::new(),
                    indexes: Vec::new(),
                    durable: true,
                });
                sources.push(crate::TableSource::Empty);
                schema.tables.len() - 1
            }
        };
        bind.push(t as TableId);
    }
    let mut changed = sources.len() != db.schema().tables.len();
    for (st, &t) in stored.iter().zip(&bind) {
        let current = &schema.tables[t as usize];
        let def =
            migrate::stored_def(st, current, &schema).map_err(|message| OpenError::Schema {
                message: format!("{d}: {message}"),
            })?;
        if def == *current {
            continue;
        }
        changed = true;
        if let crate::TableSource::Keep(_) = sources[t as usize] {
            let same_columns = def.columns == current.columns;
            if !same_columns && (db.len(t) != 0 || db.next_id(t) != 1) {
                return Err(OpenError::Schema {
                    message: format!(
                        "table `{}` in {d} changes its columns without a migration",
                        st.name
                    ),
                });
            }
            // (A table's column names are unique.)
            let old: std::collections::HashMap<&str, usize> = current
                .columns
                .iter()
                .enumerate()
                .rev()
                .map(|(k, o)| (o.name.as_str(), k))
                .collect();
            let cols = def
                .columns
                .iter()
                .map(|c| {
                    let same = old.get(c.name.as_str()).copied();
                    match same.filter(|&k| current.columns[k].ty == c.ty) {
                        Some(k) if same_columns => crate::ColSource::From(k),
                        _ => crate::ColSource::Fill(crate::Cell::Nil),
                    }
                })
                .collect();
            sources[t as usize] = crate::TableSource::Rebuild { from: t, cols };
        }
        schema.tables[t as usize] = def;
    }
    if changed {
        db.restructure(schema, sources).map_err(|e| match e.kind {
            crate::ErrorKind::Unique => unique_conflict(dir, &e.message),
            _ => OpenError::Schema {
                message: format!("{d}: {}", e.message),
            },
        })?;
    }
    Ok(bind)
}

/// A record holding only a migration item (the first record of a migration's
/// generation).
fn migration_record(m: &codec::Migration) -> Vec<u8> {
    let mut rec = vec![0u8; FRAME_LEN];
    codec::put_migration(&mut rec, m);
    rec
}

/// A record holding only the stored schema (the first record of a generation).
fn schema_record(stored: &StoredSchema) -> Vec<u8> {
    let mut rec = vec![0u8; FRAME_LEN];
    rec.push(codec::ITEM_SCHEMA_INDEXED);
    codec::put_schema_indexed(&mut rec, stored);
    rec
}

/// Replay state: applies each record's items to the database.
struct Replay<'a, 'p> {
    db: &'a mut Db,
    dir: &'a Path,
    /// Stored position -> (program table, number of columns), per the latest schema.
    bind: Option<Vec<(TableId, usize)>>,
    /// The schema of the last record the checkpoint covers, not bound (see
    /// [`Replay::table`]).
    pending: Option<StoredSchema>,
    /// The last schema bound (the log's latest, as far as it is replayed).
    latest: Option<StoredSchema>,
    ckpt_lsn: u64,
    records: u64,
    total: u64,
    progress: Option<&'p mut ProgressFn>,
    /// A schema error (reported as such, not as damage).
    err: Option<OpenError>,
    /// The LSN of the log's first record (where a migration item may stand).
    first_lsn: u64,
}

impl Replay<'_, '_> {
    fn record(&mut self, fr: &wal::Frame, payload: &[u8]) -> Result<(), wal::Damage> {
        let apply = fr.lsn > self.ckpt_lsn;
        let mut r = Reader::new(payload);
        let base = fr.payload_at;
        let at = |p: usize| base + p as u64;
        while !r.at_end() {
            let p = r.pos();
            let item = r.item().map_err(|e| {
                (
                    at(e.at),
                    format!("record {} does not decode: {}", fr.lsn, e.what),
                )
            })?;
            let bad = |what: String| (at(p), format!("record {}: {what}", fr.lsn));
            let covered = !apply;
            if let Item::Migrate(_) = item {
                if let Some(what) = codec::misplaced_migration(fr.lsn, self.first_lsn) {
                    return Err((at(p), what));
                }
            }
            match item {
                Item::Schema(_) | Item::Migrate(_) if covered => {
                    // The checkpoint holds this record's effect and its schema (which
                    // a migration may have changed since): nothing to bind now. Kept
                    // in case a later record of this log relies on it.
                    self.bind = None;
                    self.pending = Some(match item {
                        Item::Schema(s) => s,
                        Item::Migrate(m) => m.schema,
                        _ => unreachable!(),
                    });
                }
                Item::Schema(s) => self.bind_to(s, true).map_err(bad)?,
                Item::Migrate(m) => self.bind_to(m.schema, true).map_err(bad)?,
                Item::Insert { .. } | Item::Update { .. } | Item::Delete { .. }
                    if covered && self.bind.is_none() => {}
                Item::Insert { table, id, cells } => {
                    let (t, ncols) = self.table(table).map_err(bad)?;
                    if cells.len() != ncols {
                        return Err(bad(format!(
                            "insert has {} cells, table has {ncols} columns",
                            cells.len()
                        )));
                    }
                    if apply {
                        let want = self.db.next_id(t);
                        if id != want {
                            return Err(bad(format!(
                                "insert of row {id}, but the next id is {want}"
                            )));
                        }
                        if let Err(e) = self.db.insert(t, cells) {
                            if e.kind == crate::ErrorKind::Unique {
                                self.err = Some(unique_conflict(self.dir, &e.message));
                            }
                            return Err(bad(format!("insert does not apply: {}", e.message)));
                        }
                    }
                }
                Item::Update {
                    table,
                    id,
                    col,
                    cell,
                } => {
                    let (t, ncols) = self.table(table).map_err(bad)?;
                    if col >= ncols {
                        return Err(bad(format!(
                            "update of column {col}, table has {ncols} columns"
                        )));
                    }
                    if apply {
                        if let Err(e) = self.db.update(t, id, col, cell) {
                            if e.kind == crate::ErrorKind::Unique {
                                self.err = Some(unique_conflict(self.dir, &e.message));
                            }
                            return Err(bad(format!("update does not apply: {}", e.message)));
                        }
                    }
                }
                Item::Delete { table, id } => {
                    let (t, _) = self.table(table).map_err(bad)?;
                    if apply {
                        self.db
                            .delete(t, id)
                            .map_err(|e| bad(format!("delete does not apply: {}", e.message)))?;
                    }
                }
            }
        }
        self.db.truncate_undo(Savepoint(0));
        self.records += 1;
        if self.records.is_multiple_of(PROGRESS_EVERY) {
            if let Some(p) = self.progress.as_mut() {
                p(&Progress {
                    records: self.records,
                    bytes: fr.end,
                    total_bytes: self.total,
                });
            }
        }
        Ok(())
    }

    /// Binds the record's table numbers to `s` (checking its next ids when `check`).
    fn bind_to(&mut self, s: StoredSchema, check: bool) -> Result<(), String> {
        let bind = match bind_schema(&s, self.db, self.dir) {
            Ok(b) => b,
            Err(e) => {
                self.err = Some(e);
                return Err("incompatible schema".into());
            }
        };
        if check {
            for (st, &t) in s.iter().zip(&bind) {
                if st.next_id != self.db.next_id(t) {
                    return Err(format!(
                        "table `{}` should have next id {} here, but replay reached {}",
                        st.name,
                        st.next_id,
                        self.db.next_id(t)
                    ));
                }
            }
        }
        self.bind = Some(
            s.iter()
                .zip(&bind)
                .map(|(st, &t)| (t, st.columns.len()))
                .collect(),
        );
        self.latest = Some(s);
        Ok(())
    }

    fn table(&mut self, table: u32) -> Result<(TableId, usize), String> {
        if self.bind.is_none() {
            if let Some(s) = self.pending.take() {
                // A record after the checkpoint that relies on a schema item the
                // checkpoint covers (a log written by an older wo).
                self.bind_to(s, false)?;
            }
        }
        match &self.bind {
            None => Err(format!("table {table} used before any schema record")),
            Some(b) => b
                .get(table as usize)
                .copied()
                .ok_or_else(|| format!("no table {table} in the log's schema")),
        }
    }
}

/// Appends the encoding of `changes` (durable tables only) to `rec`; false if none.
fn encode_changes(rec: &mut Vec<u8>, changes: &[Change], map: &[Option<u32>]) -> bool {
    let mut any = false;
    for ch in changes {
        let Some(Some(st)) = map.get(ch.table() as usize) else {
            continue;
        };
        any = true;
        match ch {
            Change::Insert { id, cells, .. } => {
                rec.push(codec::ITEM_INSERT);
                put_uvar(rec, u64::from(*st));
                put_ivar(rec, *id);
                put_uvar(rec, cells.len() as u64);
                for c in cells {
                    put_cell(rec, c);
                }
            }
            Change::Update { id, col, new, .. } => {
                rec.push(codec::ITEM_UPDATE);
                put_uvar(rec, u64::from(*st));
                put_ivar(rec, *id);
                put_uvar(rec, *col as u64);
                put_cell(rec, new);
            }
            Change::Delete { id, .. } => {
                rec.push(codec::ITEM_DELETE);
                put_uvar(rec, u64::from(*st));
                put_ivar(rec, *id);
            }
        }
    }
    any
}

impl DataDir {
    #[allow(clippy::too_many_arguments)] // One private constructor; a struct of its arguments would be this struct.
    fn new(
        dir: &Path,
        storage: Arc<dyn Storage>,
        wal: LogWriter,
        lock: Box<dyn LockGuard>,
        map: Vec<Option<u32>>,
        tables: Vec<TableId>,
        schema_pending: bool,
        options: &Options,
        checkpoint_bytes: u64,
        checkpoint_lsn: u64,
    ) -> DataDir {
        let mut wal = wal;
        wal.note = lock.durable_note();
        let dir_id = lock.dir_id();
        DataDir {
            dir: dir.to_path_buf(),
            storage,
            wal,
            _lock: lock,
            dir_id,
            map,
            tables,
            schema_pending,
            auto_checkpoint: options.auto_checkpoint,
            checkpoint_min: options.checkpoint_min,
            checkpoint_bytes,
            checkpoint_lsn,
            retry_at: 0,
            max_record: options.max_record.min(wal::MAX_RECORD),
            ckpt: None,
            preallocate: options.preallocate,
            buf: Vec::new(),
            notice: None,
        }
    }

    /// What the migration applied on open changed, if one was: a line, then a line for
    /// each hint (a new table while a stored one goes undeclared).
    pub fn migration_notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Bytes of log (header and records; preallocated space excluded).
    pub fn log_bytes(&self) -> u64 {
        self.wal.len()
    }

    /// The LSN of the last durable record.
    pub fn durable_lsn(&self) -> u64 {
        self.wal.durable_lsn
    }

    /// Where the last durable record ends in the current log file (its byte offset).
    pub fn durable_log_end(&self) -> u64 {
        self.wal.durable_end
    }

    /// The LSN the latest checkpoint covers (0: none).
    pub fn checkpoint_lsn(&self) -> u64 {
        self.checkpoint_lsn
    }

    /// Switches to `schema`, whose tables extend the open ones (a `wo repl` session
    /// declaring a table): the directory stays open and locked, a fence stays, and the
    /// next record starts with the stored schema when the durable tables changed.
    /// Refused (nothing changes) when `schema` could not be stored.
    pub fn adopt_schema(&mut self, schema: &Schema) -> Result<(), OpenError> {
        check_program_schema(schema)?;
        let (stored, map) = codec::stored_schema(schema, |_| 1);
        let tables: Vec<TableId> = map
            .iter()
            .enumerate()
            .filter_map(|(t, m)| m.map(|_| t as TableId))
            .collect();
        if tables != self.tables {
            self.schema_pending = true;
        }
        debug_assert_eq!(stored.len(), tables.len());
        self.map = map;
        self.tables = tables;
        Ok(())
    }

    /// The failure that fenced the log, if one did.
    pub fn fence(&self) -> Option<&Failure> {
        self.wal.fence.as_ref()
    }

    /// Makes the changes made since `sp` durable, then forgets their undo entries:
    /// encodes them (durable tables only; nothing to log means no I/O), appends one
    /// record and waits for the log thread to sync it. On any write or sync error, the
    /// failure contract: every change since `sp` is undone in memory (rows, indexes, id
    /// counters), the log is cut back to its last durable record and fenced, and the
    /// failure is returned — as it is, at once, by every later commit that has changes.
    /// A change too large for one record is undone and refused (`limit`), nothing
    /// written. Then, past the threshold, an automatic checkpoint.
    ///
    /// This is the one-writer form; the VM pipelines many fibers' commits through
    /// [`DataDir::stage`], [`DataDir::request_sync`] and [`DataDir::poll`].
    pub fn commit(&mut self, db: &mut Db, sp: Savepoint) -> Result<CommitOutcome, Failure> {
        let n = db.changes_since(sp).len();
        if n == 0 {
            return Ok(CommitOutcome::default());
        }
        let res = self.stage(db, sp).and_then(|lsn| {
            if lsn.is_some() {
                self.sync()?;
            }
            Ok(lsn)
        });
        let lsn = match res {
            Ok(lsn) => lsn,
            Err(f) => {
                db.rollback_to(sp);
                db.truncate_undo(sp);
                return Err(Failure {
                    changes_undone: n,
                    ..f
                });
            }
        };
        db.truncate_undo(sp);
        let mut out = CommitOutcome {
            lsn,
            ..CommitOutcome::default()
        };
        if lsn.is_some() {
            match self.maybe_checkpoint(db) {
                Some(Ok(s)) => out.checkpoint = Some(s),
                Some(Err(f)) => out.checkpoint_error = Some(f),
                None => {}
            }
        }
        Ok(out)
    }

    /// The automatic checkpoint: runs one when the log has grown past the threshold
    /// (`max(checkpoint_min, size of the last checkpoint)`) and no durable change is
    /// waiting for its commit. Call it between statements, when every record written is
    /// durable. A checkpoint that fails before the new one replaces the old leaves the
    /// log in charge (it goes on growing, every commit still durable) and is tried
    /// again once the log has grown by another threshold; one that fails later has
    /// fenced the log.
    pub fn maybe_checkpoint(&mut self, db: &Db) -> Option<Result<CheckpointStats, Failure>> {
        if !self.checkpoint_due(db) {
            return None;
        }
        let res = self.checkpoint(db);
        if let Err(f) = &res {
            self.checkpoint_failed(f.clone());
        }
        Some(res)
    }

    /// The first half of a commit: encodes the durable changes since `sp` as one
    /// record and writes it after the last one, without syncing. `None` when there is
    /// nothing to log. After an error the log is fenced (except for a change too large
    /// for one record: `limit`, nothing written); the caller must undo the changes
    /// (`db.rollback_to(sp)`).
    ///
    /// Group commit: the VM stages the records of several fibers one after another and
    /// covers them with one sync ([`DataDir::request_sync`]); until that sync succeeds
    /// every fiber keeps its undo entries, and a failed sync undoes them all (from the
    /// oldest record not yet durable).
    pub fn stage(&mut self, db: &Db, sp: Savepoint) -> Result<Option<u64>, Failure> {
        if let Some(f) = &self.wal.fence {
            return Err(f.clone());
        }
        let mut rec = std::mem::take(&mut self.buf);
        rec.clear();
        rec.resize(FRAME_LEN, 0);
        if self.schema_pending {
            let (stored, _, _) = program_stored(db);
            // Next ids as of the start of this record: the changes follow it.
            let stored = rewind_next_ids(stored, db.changes_since(sp), &self.map);
            rec.push(codec::ITEM_SCHEMA_INDEXED);
            codec::put_schema_indexed(&mut rec, &stored);
        }
        let any = encode_changes(&mut rec, db.changes_since(sp), &self.map);
        let res = if !any {
            Ok(None)
        } else if rec.len() - FRAME_LEN > self.max_record {
            Err(Failure {
                op: "commit",
                path: self.dir.join("wal"),
                os_error: None,
                message: format!(
                    "the change needs a log record of {} bytes, over the limit of {} bytes; split it into smaller transactions",
                    rec.len() - FRAME_LEN,
                    self.max_record
                ),
                changes_undone: 0,
                limit: true,
                cut_failed: None,
            })
        } else {
            self.wal.stage(&mut rec).map(|lsn| {
                self.schema_pending = false;
                Some(lsn)
            })
        };
        // Keep a moderate buffer for the next record, not one of a huge transaction.
        if rec.capacity() <= 1 << 20 {
            self.buf = rec;
        }
        res
    }

    /// Writes the program's schema as a record of its own and syncs it (new tables,
    /// recorded on open).
    fn record_schema(&mut self, db: &Db) -> Result<(), Failure> {
        let (stored, _, _) = program_stored(db);
        let mut rec = schema_record(&stored);
        self.wal.stage(&mut rec)?;
        self.schema_pending = false;
        self.wal.sync()
    }

    /// The LSN of the last record written (durable or not).
    pub fn staged_lsn(&self) -> u64 {
        self.wal.next_lsn - 1
    }

    /// Asks the log thread to make every record written so far durable, and returns at
    /// once. [`DataDir::poll`] tells when it is.
    pub fn request_sync(&mut self) -> Result<(), Failure> {
        self.wal.request_sync()
    }

    /// The log thread's next answer, waiting at most `timeout` (`None`: until it
    /// comes): the LSN now durable, a failed sync (the log is then cut back to its last
    /// durable record and fenced; the caller undoes every change not yet durable), or
    /// the end of the checkpoint under way. `None` when nothing came in time, or
    /// nothing was asked.
    pub fn poll(&mut self, timeout: Option<Duration>) -> Option<LogEvent> {
        match self.wal.next_answer(timeout)? {
            Done::Checkpoint(res) => {
                let Some(Ckpt::Switching(written)) = self.ckpt.take() else {
                    return None;
                };
                Some(LogEvent::Checkpoint(match res {
                    Ok(w) => {
                        let mut w = *w;
                        w.syncer = self.wal.syncer.take();
                        Ok(self.installed(w, written))
                    }
                    Err(e) => {
                        let f = self.switch_failed(e);
                        Err(self.checkpoint_failed(f))
                    }
                }))
            }
            done => Some(match self.wal.answer(done) {
                Ok(lsn) => LogEvent::Durable(lsn),
                Err(f) => LogEvent::Failed(f),
            }),
        }
    }

    /// Makes every staged record durable (one sync on the log thread) and waits for
    /// it. Returns the durable LSN. Never retried: after a failure the log is fenced
    /// and every later call returns the same failure.
    pub fn sync(&mut self) -> Result<u64, Failure> {
        self.wal.sync()?;
        Ok(self.wal.durable_lsn)
    }

    /// Writes a checkpoint of `db`'s durable tables and starts a new log generation:
    /// snapshot to `checkpoint.tmp`, `fsync`, rename to `checkpoint`, `fsync` the
    /// directory, then a new `wal` (new salt, first LSN after the checkpoint) written
    /// as `wal.tmp`, synced and renamed over the old one. A crash at any point leaves
    /// a directory that opens with every acknowledged change. Every change must be
    /// committed (no durable change after `Savepoint(0)`).
    ///
    /// A failure before the rename leaves the old checkpoint and log in charge and does
    /// not fence the log; a failure from the rename on fences it.
    pub fn checkpoint(&mut self, db: &Db) -> Result<CheckpointStats, Failure> {
        self.checkpoint_as(db, None)
    }

    /// [`DataDir::checkpoint`], carrying out `migration` when given: the checkpoint
    /// records it and the new log generation begins with its item instead of a schema
    /// item.
    fn checkpoint_as(
        &mut self,
        db: &Db,
        migration: Option<&codec::Migration>,
    ) -> Result<CheckpointStats, Failure> {
        if let Some(f) = &self.wal.fence {
            return Err(f.clone());
        }
        if self.has_uncommitted(db) {
            return Err(Failure {
                op: "checkpoint",
                path: self.dir.clone(),
                os_error: None,
                message: "the database has uncommitted changes".into(),
                changes_undone: 0,
                limit: false,
                cut_failed: None,
            });
        }
        self.sync()?;
        let mut job = self.start_checkpoint(db, migration)?;
        let res = job
            .enc
            .step(job.file.as_mut(), &job.tmp, db, usize::MAX)
            .and_then(|_| self.end_encoding(db, job));
        let (switch, written) = match res {
            Ok(x) => x,
            Err(f) => {
                self.remove_checkpoint_tmp();
                return Err(f);
            }
        };
        match switch.run() {
            Ok(mut w) => {
                w.take_syncer(&mut self.wal);
                Ok(self.installed(w, written))
            }
            Err(e) => Err(self.switch_failed(e)),
        }
    }

    /// Whether a durable change is not yet committed.
    fn has_uncommitted(&self, db: &Db) -> bool {
        db.changes_since(Savepoint(0)).iter().any(|c| {
            self.map
                .get(c.table() as usize)
                .is_some_and(Option::is_some)
        })
    }

    /// Opens `checkpoint.tmp` and sets up the encoder for a snapshot of `db` as of the
    /// durable LSN (every record written must be durable).
    fn start_checkpoint(
        &mut self,
        db: &Db,
        migration: Option<&codec::Migration>,
    ) -> Result<CheckpointJob, Failure> {
        let lsn = self.wal.durable_lsn;
        let (stored, _, _) = program_stored(db);
        let tmp = self.dir.join("checkpoint.tmp");
        same_dir(self.storage.as_ref(), &self.dir, self.dir_id)?;
        let mut file = self
            .storage
            .open(&tmp, true)
            .map_err(|e| failure("open", &tmp, &e))?;
        file.truncate(0)
            .map_err(|e| failure("ftruncate", &tmp, &e))?;
        // The checkpoint names the generation it is taken from and the one after it.
        let salts = Salts {
            taken_from: self.wal.salt,
            next: wal::new_salt(Some(self.wal.salt)),
        };
        Ok(CheckpointJob {
            enc: checkpoint::Encoder::new(&stored, self.tables.clone(), lsn, salts, migration),
            next_salt: salts.next,
            first: match migration {
                Some(m) => migration_record(m),
                None => schema_record(&stored),
            },
            file,
            tmp,
            lsn,
            t0: Instant::now(),
        })
    }

    /// The encoded checkpoint's last bytes; what the switch needs, and what was written.
    fn end_encoding(&self, db: &Db, mut job: CheckpointJob) -> Result<(Switch, Written), Failure> {
        let bytes = job.enc.finish(job.file.as_mut(), &job.tmp)?;
        let written = Written {
            lsn: job.lsn,
            bytes,
            rows: self.tables.iter().map(|&t| db.len(t) as u64).sum(),
            t0: job.t0,
            t1: Instant::now(),
        };
        let switch = Switch {
            storage: self.storage.clone(),
            dir: self.dir.clone(),
            dir_id: self.dir_id,
            file: job.file,
            lsn: job.lsn,
            salt: job.next_salt,
            first: job.first,
            prealloc: self.preallocate,
        };
        Ok((switch, written))
    }

    /// The new generation is in charge.
    fn installed(&mut self, w: LogWriter, written: Written) -> CheckpointStats {
        self.wal = w;
        self.schema_pending = false;
        self.checkpoint_bytes = written.bytes;
        self.checkpoint_lsn = written.lsn;
        self.retry_at = 0;
        let end = Instant::now();
        CheckpointStats {
            lsn: written.lsn,
            rows: written.rows,
            bytes: written.bytes,
            write: written.t1 - written.t0,
            sync: end - written.t1,
            total: end - written.t0,
        }
    }

    fn switch_failed(&mut self, e: SwitchError) -> Failure {
        if e.fence {
            return self.wal.fence_with(e.failure);
        }
        e.failure
    }

    /// Whether an automatic checkpoint is due: the log is past the threshold, every
    /// record written is durable, nothing is uncommitted, and none is under way.
    fn checkpoint_due(&self, db: &Db) -> bool {
        self.auto_checkpoint
            && self.ckpt.is_none()
            && self.wal.fence.is_none()
            && self.wal.len()
                >= self
                    .checkpoint_min
                    .max(self.checkpoint_bytes)
                    .max(self.retry_at)
            && self.wal.durable_lsn + 1 == self.wal.next_lsn
            && !self.has_uncommitted(db)
    }

    /// Starts an automatic checkpoint when one is due, to be written a slice at a time
    /// by [`DataDir::checkpoint_step`] while the program's fibers read (the caller
    /// holds back every write until it ends), then synced and put in charge on the log
    /// thread. `Some(Err)` when it could not start (it is tried again later).
    pub fn begin_checkpoint(&mut self, db: &Db) -> Option<Result<(), Failure>> {
        if !self.checkpoint_due(db) {
            return None;
        }
        Some(match self.start_checkpoint(db, None) {
            Ok(job) => {
                self.ckpt = Some(Ckpt::Encoding(Box::new(job)));
                Ok(())
            }
            Err(f) => Err(self.checkpoint_failed(f)),
        })
    }

    /// Whether a checkpoint is under way (the database must not change until it ends).
    pub fn checkpoint_busy(&self) -> bool {
        self.ckpt.is_some()
    }

    /// Whether the checkpoint under way is still being encoded (the caller gives it
    /// slices); after that it waits for the log thread ([`DataDir::poll`]).
    pub fn checkpoint_encoding(&self) -> bool {
        matches!(self.ckpt, Some(Ckpt::Encoding(_)))
    }

    /// Encodes up to `rows` more rows of the checkpoint under way; after the last,
    /// hands it to the log thread. `Some(Err)` when it failed (abandoned, the log in
    /// charge; tried again later).
    pub fn checkpoint_step(&mut self, db: &Db, rows: usize) -> Option<Result<(), Failure>> {
        let Some(Ckpt::Encoding(mut job)) = self.ckpt.take() else {
            return None;
        };
        let res = job
            .enc
            .step(job.file.as_mut(), &job.tmp, db, rows)
            .and_then(|done| {
                if !done {
                    return Ok(Some(job));
                }
                let (switch, written) = self.end_encoding(db, *job)?;
                self.wal.start_syncer()?;
                if let Some(s) = self.wal.syncer.as_mut() {
                    s.checkpoint(switch);
                }
                self.ckpt = Some(Ckpt::Switching(written));
                Ok(None)
            });
        match res {
            Ok(Some(job)) => {
                self.ckpt = Some(Ckpt::Encoding(job));
                Some(Ok(()))
            }
            Ok(None) => Some(Ok(())),
            Err(f) => {
                self.remove_checkpoint_tmp();
                Some(Err(self.checkpoint_failed(f)))
            }
        }
    }

    /// Drops a checkpoint that is still being encoded (the program ends): its
    /// `checkpoint.tmp` is ignored by recovery, removed by the next open and
    /// overwritten by the next checkpoint.
    /// One already handed to the log thread goes on.
    pub fn abandon_checkpoint(&mut self) {
        if self.checkpoint_encoding() {
            self.ckpt = None;
        }
    }

    /// Removes the `checkpoint.tmp` of a checkpoint given up, when `dir` still names the
    /// directory this program holds (in one that replaced it, the file is another's).
    fn remove_checkpoint_tmp(&self) {
        if same_dir(self.storage.as_ref(), &self.dir, self.dir_id).is_ok() {
            let _ = self.storage.remove(&self.dir.join("checkpoint.tmp"));
        }
    }

    /// Gives up on a checkpoint that cannot go on: tried again once the log has grown by
    /// another threshold.
    fn checkpoint_failed(&mut self, f: Failure) -> Failure {
        self.ckpt = None;
        self.retry_at = self.wal.len() + self.checkpoint_min.max(self.checkpoint_bytes);
        f
    }
}

/// Whether `dir` still names the directory whose identity was `id` when its lock was
/// taken: a failure when it was moved away (and perhaps replaced) under the program,
/// whose log goes on in the directory it holds, wherever that is now.
pub(crate) fn same_dir(
    storage: &dyn Storage,
    dir: &Path,
    id: Option<(u64, u64)>,
) -> Result<(), Failure> {
    let Some(id) = id else { return Ok(()) };
    match storage.dir_id(dir) {
        Ok(Some(now)) if now == id => Ok(()),
        Ok(None) => Ok(()),
        Ok(Some(_)) | Err(_) => Err(Failure {
            op: "checkpoint",
            path: dir.to_path_buf(),
            os_error: None,
            message: "the data directory was moved or replaced while this program held it: its log goes on in the directory it opened, and nothing is written into what the path names now".into(),
            changes_undone: 0,
            limit: false,
            cut_failed: None,
        }),
    }
}

/// A checkpoint being written (`DataDir::ckpt`).
enum Ckpt {
    /// Slices of rows are being encoded into `checkpoint.tmp`.
    Encoding(Box<CheckpointJob>),
    /// Written; the log thread syncs it and starts the next log generation.
    Switching(Written),
}

impl fmt::Debug for Ckpt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ckpt::Encoding(_) => "Encoding",
            Ckpt::Switching(_) => "Switching",
        })
    }
}

struct CheckpointJob {
    enc: checkpoint::Encoder,
    /// The salt of the log generation that starts after the checkpoint.
    next_salt: u64,
    first: Vec<u8>,
    file: Box<dyn StorageFile>,
    tmp: PathBuf,
    lsn: u64,
    t0: Instant,
}

/// A written checkpoint, for its statistics.
struct Written {
    lsn: u64,
    bytes: u64,
    rows: u64,
    t0: Instant,
    t1: Instant,
}

/// The next ids before `changes` (inserts advance them; rolled back inserts are not
/// in the log, so the ids of a table's inserts are consecutive).
fn rewind_next_ids(
    mut stored: StoredSchema,
    changes: &[Change],
    map: &[Option<u32>],
) -> StoredSchema {
    for ch in changes {
        if let (Change::Insert { id, .. }, Some(Some(st))) = (ch, map.get(ch.table() as usize)) {
            let t = &mut stored[*st as usize];
            t.next_id = t.next_id.min(*id);
        }
    }
    stored
}

/// One table in a [`Report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableReport {
    pub name: String,
    pub rows: u64,
    pub next_id: RowId,
}

/// A problem [`verify`] found: what `open` would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub offset: u64,
    pub what: String,
}

/// What a data directory holds, as read by [`verify`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub dir: PathBuf,
    /// `Some(pid)` when another process holds the lock (the pid when readable).
    pub locked_by: Option<Option<u32>>,
    pub checkpoint_bytes: Option<u64>,
    /// `None` when there is no checkpoint or its header could not be read.
    pub checkpoint_lsn: Option<u64>,
    /// The log file's size: what it holds and the room allocated ahead of it.
    pub log_bytes: u64,
    /// Where its valid records end (at a torn tail or damage, where they stop).
    pub log_used: u64,
    pub log_records: u64,
    pub log_first_lsn: u64,
    pub last_lsn: u64,
    /// Offset of a torn tail that opening would cut.
    pub torn_tail: Option<u64>,
    pub tables: Vec<TableReport>,
    /// The first problem found; the figures above stop there.
    pub problem: Option<Problem>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "data directory {}", self.dir.display())?;
        match self.locked_by {
            Some(Some(pid)) => writeln!(f, "in use by process {pid}")?,
            Some(None) => writeln!(f, "in use by another process")?,
            None => {}
        }
        match (self.checkpoint_bytes, self.checkpoint_lsn) {
            (Some(b), Some(lsn)) => writeln!(f, "checkpoint: {b} bytes, up to lsn {lsn}")?,
            // Damaged: "up to lsn 0" would be a figure it does not hold (helper-88).
            (Some(b), None) => {
                writeln!(f, "checkpoint: {b} bytes, not read (see the problem below)")?
            }
            (None, _) => writeln!(f, "checkpoint: none")?,
        }
        // A log of no bytes was not read: the problem below stopped the reading first
        // (a damaged checkpoint), and "0 records" would say it is empty (helper-88).
        if self.log_bytes == 0 && self.problem.is_some() {
            writeln!(f, "log: not read (the problem below comes first)")?;
        } else {
            let s = if self.log_records == 1 { "" } else { "s" };
            writeln!(
                f,
                "log: {} record{s} in {} bytes ({} allocated), lsn {}..{}",
                self.log_records, self.log_used, self.log_bytes, self.log_first_lsn, self.last_lsn
            )?;
        }
        if let Some(t) = self.torn_tail {
            writeln!(f, "torn tail at offset {t} (cut on the next open)")?;
        }
        for t in &self.tables {
            let s = if t.rows == 1 { "" } else { "s" };
            writeln!(
                f,
                "table {}: {} row{s}, next id {}",
                t.name, t.rows, t.next_id
            )?;
        }
        match &self.problem {
            Some(p) => write!(
                f,
                "problem: {}: damaged at offset {}: {}",
                p.file.display(),
                p.offset,
                p.what
            ),
            None => write!(f, "ok"),
        }
    }
}

/// Checks a data directory on the real file system without opening it for writing.
pub fn verify(dir: &Path) -> Result<Report, OpenError> {
    verify_with(&RealStorage, dir)
}

/// How many times [`verify_with`] reads a directory that changes under it.
const VERIFY_ATTEMPTS: usize = 50;

/// [`verify`] on any storage: reads the checkpoint and the log, takes no lock (not even
/// to test it) and writes nothing. Damage is reported in [`Report::problem`]; I/O
/// errors, a missing directory and a directory that is not a data directory are
/// errors.
///
/// A writer may be running: it appends to the log and, at a checkpoint, renames a new
/// checkpoint and then a new log into place. Each attempt opens both files once and
/// reads only those descriptors, so it sees one checkpoint and one log; a pair that
/// does not belong together (the log of a newer generation beside an older
/// checkpoint, caught by the salts that tie them) or bytes read while being written
/// can look like damage. So a problem is reported only when a second attempt finds
/// the same problem in the same pair of files; otherwise verify reads again.
pub fn verify_with(storage: &dyn Storage, dir: &Path) -> Result<Report, OpenError> {
    if !storage.exists(dir).map_err(|e| io_err("stat", dir, &e))? {
        return Err(io_err("stat", dir, &std::io::Error::from_raw_os_error(2)));
    }
    let locked_by = storage
        .lock_holder(&dir.join("lock"))
        // (No lock is taken: the holder is looked up, which opens the directory;
        // helper-102 was told "flock failed" of a directory it could not read.)
        .map_err(|e| io_err("open", dir, &e))?;
    let mut previous: Option<(Vec<u8>, Problem)> = None;
    for _ in 0..VERIFY_ATTEMPTS {
        // The note first: what it says a live writer synced is then in the log read
        // after it (the writer publishes a sync's LSN after that sync), so a log
        // ending before it is no race.
        let noted = storage::stated_durable(storage, dir);
        let mut files = Files::open(storage, dir)?;
        if files.ckpt.is_none() && files.wal.is_none() {
            return Err(OpenError::NotADataDirectory {
                dir: dir.to_path_buf(),
            });
        }
        files.noted = noted;
        let key = pair_key(&files, dir)?;
        let mut rep = verify_files(dir, &files)?;
        rep.locked_by = locked_by;
        let Some(problem) = rep.problem.clone() else {
            return Ok(rep);
        };
        if previous
            .as_ref()
            .is_some_and(|(k, p)| *k == key && *p == problem)
        {
            return Ok(rep);
        }
        previous = Some((key, problem));
    }
    Err(OpenError::Busy {
        dir: dir.to_path_buf(),
    })
}

/// What identifies a checkpoint and log pair: both headers (a new generation has a new
/// salt, a new checkpoint a new header) and the log's length.
fn pair_key(files: &Files, dir: &Path) -> Result<Vec<u8>, OpenError> {
    let mut key = Vec::new();
    if let Some(f) = &files.ckpt {
        let p = dir.join("checkpoint");
        key.extend(
            f.read_vec(0, checkpoint::CKPT_HEADER_LEN)
                .map_err(|e| io_err("pread", &p, &e))?,
        );
    }
    key.push(0xff);
    if let Some((f, len)) = &files.wal {
        let p = dir.join("wal");
        key.extend(
            f.read_vec(0, HEADER_LEN)
                .map_err(|e| io_err("pread", &p, &e))?,
        );
        key.extend(len.to_le_bytes());
    }
    Ok(key)
}

/// One reading of `files` for [`verify_with`].
fn verify_files(dir: &Path, files: &Files) -> Result<Report, OpenError> {
    let mut rep = Report {
        dir: dir.to_path_buf(),
        ..Report::default()
    };
    let ckpt_path = dir.join("checkpoint");
    let wal_path = dir.join("wal");
    let problem = |file: &Path, offset: u64, what: String| {
        Some(Problem {
            file: file.to_path_buf(),
            offset,
            what,
        })
    };
    // Table name -> (rows, next id), in stored order of first appearance, and the
    // tables' stored definitions (for the second pass).
    let mut tables: Vec<TableReport> = Vec::new();
    let mut defs: Vec<codec::StoredTable> = Vec::new();
    let mut salts = None;
    if let Some(f) = &files.ckpt {
        let buf = read_all(f.as_ref(), &ckpt_path, dir)?;
        rep.checkpoint_bytes = Some(buf.len() as u64);
        match checkpoint::read(&buf) {
            Ok(s) => {
                rep.checkpoint_lsn = Some(s.lsn);
                salts = s.salts;
                defs.clone_from(&s.schema);
                for (t, &rows) in s.schema.iter().zip(&s.rows) {
                    tables.push(TableReport {
                        name: t.name.clone(),
                        rows,
                        next_id: t.next_id,
                    });
                }
            }
            Err((off, what)) => {
                rep.problem = problem(&ckpt_path, off, what);
                rep.tables = tables;
                return Ok(rep);
            }
        }
    }
    let Some((file, len)) = &files.wal else {
        if rep.checkpoint_bytes.is_some() {
            rep.problem = problem(
                &wal_path,
                0,
                "the log is missing but a checkpoint exists".into(),
            );
        }
        rep.tables = tables;
        return Ok(rep);
    };
    rep.log_bytes = *len;
    let hdr = match read_header(file.as_ref(), &wal_path) {
        Ok(h) => h,
        Err(OpenError::Damaged { file, offset, what }) => {
            rep.problem = Some(Problem { file, offset, what });
            rep.tables = tables;
            return Ok(rep);
        }
        Err(e) => return Err(e),
    };
    rep.log_first_lsn = hdr.first_lsn;
    let ckpt_lsn = rep.checkpoint_lsn.unwrap_or(0);
    if let Err(OpenError::Damaged { file, offset, what }) =
        check_tie(salts, &hdr, ckpt_lsn, &wal_path)
    {
        rep.problem = Some(Problem { file, offset, what });
        rep.tables = tables;
        return Ok(rep);
    }
    if let Some(dup) = duplicate_name(&defs) {
        rep.problem = problem(
            &ckpt_path,
            0,
            format!("the stored schema holds two tables named `{dup}`"),
        );
        rep.tables = tables;
        return Ok(rep);
    }
    let mut bind: Vec<usize> = Vec::new();
    // The schema of a record the checkpoint covers, bound only if a later record
    // relies on it (see `Replay::table`).
    let mut pending: Option<codec::StoredSchema> = None;
    let mut src = wal::LogSource::new(file.as_ref(), *len);
    let mut check = |fr: &wal::Frame, payload: &[u8]| -> Result<(), wal::Damage> {
        let mut r = Reader::new(payload);
        let apply = fr.lsn > ckpt_lsn;
        while !r.at_end() {
            let p = fr.payload_at + r.pos() as u64;
            let item = r.item().map_err(|e| {
                (
                    fr.payload_at + e.at as u64,
                    format!("record {} does not decode: {}", fr.lsn, e.what),
                )
            })?;
            let bind_names = |s: codec::StoredSchema,
                              bind: &mut Vec<usize>,
                              tables: &mut Vec<TableReport>,
                              defs: &mut Vec<codec::StoredTable>|
             -> Result<(), (u64, String)> {
                if let Some(dup) = duplicate_name(&s) {
                    return Err((
                        p,
                        format!(
                            "record {}: the schema holds two tables named `{dup}`",
                            fr.lsn
                        ),
                    ));
                }
                bind.clear();
                for st in s {
                    let i = match tables.iter().position(|t| t.name == st.name) {
                        Some(i) => i,
                        None => {
                            tables.push(TableReport {
                                name: st.name.clone(),
                                rows: 0,
                                next_id: st.next_id,
                            });
                            defs.push(st.clone());
                            tables.len() - 1
                        }
                    };
                    bind.push(i);
                }
                Ok(())
            };
            if matches!(
                item,
                Item::Insert { .. } | Item::Update { .. } | Item::Delete { .. }
            ) && bind.is_empty()
            {
                if !apply {
                    continue;
                }
                if let Some(s) = pending.take() {
                    bind_names(s, &mut bind, &mut tables, &mut defs)?;
                }
            }
            let tab = |t: u32, bind: &[usize]| {
                bind.get(t as usize).copied().ok_or_else(|| {
                    (
                        p,
                        format!("record {}: no table {t} in the log's schema", fr.lsn),
                    )
                })
            };
            if let Item::Migrate(_) = item {
                if let Some(what) = codec::misplaced_migration(fr.lsn, hdr.first_lsn) {
                    return Err((p, what));
                }
            }
            match item {
                Item::Schema(s) if !apply => {
                    bind.clear();
                    pending = Some(s);
                }
                Item::Migrate(m) if !apply => {
                    bind.clear();
                    pending = Some(m.schema);
                }
                Item::Schema(s) => bind_names(s, &mut bind, &mut tables, &mut defs)?,
                Item::Migrate(m) => bind_names(m.schema, &mut bind, &mut tables, &mut defs)?,
                Item::Insert { table, id, .. } => {
                    let t = &mut tables[tab(table, &bind)?];
                    if apply {
                        if id != t.next_id {
                            return Err((p, format!("record {}: insert of row {id} into `{}`, but the next id is {}", fr.lsn, t.name, t.next_id)));
                        }
                        t.rows += 1;
                        t.next_id = t.next_id.checked_add(1).ok_or_else(|| {
                            (
                                p,
                                format!(
                                    "record {}: row id {id} of `{}` is the largest there is",
                                    fr.lsn, t.name
                                ),
                            )
                        })?;
                    }
                }
                Item::Update { table, .. } => {
                    tab(table, &bind)?;
                }
                Item::Delete { table, .. } => {
                    let t = &mut tables[tab(table, &bind)?];
                    if apply {
                        t.rows = t.rows.saturating_sub(1);
                    }
                }
            }
        }
        Ok(())
    };
    // The records that passed before any damage: the figures stop there.
    let mut passed = (0u64, hdr.first_lsn - 1);
    let res = wal::scan(&mut src, &hdr, files.noted, |fr, payload| {
        check(fr, payload)?;
        passed = (passed.0 + 1, fr.lsn);
        Ok(())
    });
    match res {
        Ok(end) => {
            rep.log_records = end.records;
            rep.log_used = end.end;
            rep.last_lsn = end.last_lsn;
            if end.tail == Tail::Torn {
                rep.torn_tail = Some(end.end);
            }
            if end.records == 0 {
                rep.problem = problem(
                    &wal_path,
                    HEADER_LEN as u64,
                    "the log has no schema record".into(),
                );
            }
        }
        Err(wal::ScanError::Damage((off, what))) => {
            (rep.log_records, rep.last_lsn) = passed;
            rep.log_used = off;
            rep.problem = problem(&wal_path, off, what);
        }
        Err(e) => return Err(scan_err(e, &wal_path, dir)),
    }
    rep.tables = tables;
    if rep.problem.is_some() {
        return Ok(rep);
    }
    // Second pass: replay into a database built from the stored schema (without
    // indexes, so unique values are not checked), which checks what only the engine
    // can: types, references, deleted rows, ids. The counts then come from it.
    let schema = match derived_schema(&defs, false) {
        Ok(s) => s,
        Err(what) => {
            rep.problem = problem(&wal_path, 0, what);
            return Ok(rep);
        }
    };
    let mut db = match Db::new(schema) {
        Ok(db) => db,
        Err(e) => {
            rep.problem = problem(&wal_path, 0, e.message);
            return Ok(rep);
        }
    };
    match recover(dir, &mut db, files, None) {
        Ok(_) => {
            for (t, tr) in rep.tables.iter_mut().enumerate() {
                tr.rows = db.len(t as TableId) as u64;
                tr.next_id = db.next_id(t as TableId);
            }
        }
        Err(OpenError::Damaged { file, offset, what }) => {
            rep.problem = Some(Problem { file, offset, what });
        }
        Err(OpenError::Schema { message }) => rep.problem = problem(&wal_path, 0, message),
        Err(e) => return Err(e),
    }
    Ok(rep)
}

/// A table name that appears twice in a stored schema.
fn duplicate_name(tables: &[codec::StoredTable]) -> Option<&str> {
    let mut seen = std::collections::HashSet::with_capacity(tables.len());
    tables
        .iter()
        .find(|t| !seen.insert(t.name.as_str()))
        .map(|t| t.name.as_str())
}

/// A schema with the stored tables (durable; with the stored indexes when `indexes`),
/// references by name.
fn derived_schema(defs: &[codec::StoredTable], indexes: bool) -> Result<Schema, String> {
    let mut tables = Vec::with_capacity(defs.len());
    for d in defs {
        let mut columns = Vec::with_capacity(d.columns.len());
        for c in &d.columns {
            let ty = match &c.ty {
                StoredType::Int => ColType::Int,
                StoredType::Float => ColType::Float,
                StoredType::Bool => ColType::Bool,
                StoredType::Text => ColType::Text,
                StoredType::Ref(name) => match defs.iter().position(|t| &t.name == name) {
                    Some(i) => ColType::Ref(i as TableId),
                    None => {
                        return Err(format!(
                            "column `{}` of `{}` refers to table `{name}`, which is not stored",
                            c.name, d.name
                        ))
                    }
                },
            };
            columns.push(crate::Column {
                name: c.name.clone(),
                ty,
                nullable: c.nullable,
            });
        }
        tables.push(crate::TableDef {
            name: d.name.clone(),
            columns,
            indexes: match (&d.indexes, indexes) {
                (Some(ix), true) => ix.clone(),
                _ => Vec::new(),
            },
            durable: true,
        });
    }
    Ok(Schema { tables })
}
