//! The VM's side of the database boundary: the [`wo_db::Db`] built from the image's
//! table definitions, the image's query descriptors converted once to engine queries,
//! the conversions between script values and engine cells, the mapping of engine errors
//! to traps, and the transaction state. The interpreter calls one method per database
//! instruction; everything that knows both `Value` and `Cell` lives here, so `wo-db`
//! stays free of script values (ARCHITECTURE.md).
//!
//! The database belongs to the [`crate::Vm`] and is shared by all fibers. A transaction
//! belongs to the fiber that began it (its id is recorded with the undo savepoint, the
//! frame depth and the number of try handlers at `TX_BEGIN`), so that a trap unwinding
//! that fiber can tell whether it leaves the transaction.
//!
//! Every change becomes final in one place, [`Database::change_became_final`]: after each
//! write outside a transaction, and at `TX_COMMIT`. That is where the write-ahead log
//! record will be written and where a fiber will wait for its sync once the database is
//! durable.

use std::path::Path;
use std::rc::Rc;

use wo_bytecode::image::{
    ColumnDefault, ColumnType, IndexKind as ImageIndexKind, QueryAgg, QueryCol,
};
use wo_bytecode::Image;
use wo_db::durable::{self, DataDir, Failure, LogEvent, OpenError};
use wo_db::{
    Agg, Cell, CmpOp, Col, ColType, Column, Db, DbError, ErrorKind, IndexDef, IndexKind, Pred,
    Query, RowId, Savepoint, Schema, TableDef,
};

use crate::interp::type_name;
use crate::value::{RowRef, Trap, TrapKind, Value};
use crate::LinkError;

/// Why a database instruction did not complete.
#[derive(Debug)]
pub(crate) enum DbStop {
    /// A trap the script can catch (`DB`, `UNIQUE`, `FK`, `OVERFLOW`).
    Trap(Trap),
    /// The image broke an invariant (a register holds the wrong kind of value); the
    /// text is what follows `internal error: `.
    Fault(String),
    /// A write (or `TX_BEGIN`) while a checkpoint is being written: the fiber waits
    /// until it ends, then runs the instruction again.
    Gate,
}

type DbResult<T> = Result<T, DbStop>;

fn fault<T>(msg: impl Into<String>) -> DbResult<T> {
    Err(DbStop::Fault(msg.into()))
}

/// An engine error as the trap of LANGUAGE.md §10, with the engine's message.
fn trap(e: DbError) -> DbStop {
    let kind = match e.kind {
        ErrorKind::Db => TrapKind::Db,
        ErrorKind::Unique => TrapKind::Unique,
        ErrorKind::Fk => TrapKind::Fk,
        ErrorKind::Overflow => TrapKind::Overflow,
    };
    DbStop::Trap(Trap::new(kind, e.message))
}

/// The active transaction: where its undo starts and what the fiber that began it looked
/// like at `TX_BEGIN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tx {
    pub sp: Savepoint,
    /// The id of the fiber that ran `TX_BEGIN`.
    pub fiber: u64,
    /// Its number of caller frames (`Fiber::frames.len()`) at `TX_BEGIN`.
    pub depth: usize,
    /// Its number of installed try handlers at `TX_BEGIN`.
    pub n_handlers: usize,
}

/// A query descriptor as the engine runs it, converted once at load.
#[derive(Debug)]
struct CachedQuery {
    query: Query,
    /// `None` for a query that produces its rows.
    agg: Option<Agg>,
    /// The column type the aggregate reads (to turn a `Ref` minimum back into a row).
    agg_ty: Option<ColumnType>,
}

/// Called before the program waits for a durable commit (the CLI flushes stdout, so a
/// line printed before a commit is never lost behind it).
pub type BeforeSync = Box<dyn FnMut()>;

/// Rows of an automatic checkpoint written between two fiber turns: the longest a
/// reading fiber waits for a checkpoint (about a millisecond or two).
const CHECKPOINT_SLICE: usize = 8_192;

/// The text of the `IO` trap a durability failure raises (LANGUAGE.md §8).
pub fn durability_message(f: &Failure) -> String {
    let n = f.changes_undone;
    let s = if n == 1 { "" } else { "s" };
    let mut msg =
        format!("{DURABILITY_FAILURE}{f}; {n} change{s} undone, nothing acknowledged was lost");
    // The cut is best effort (LANGUAGE.md §8): when it fails, the records of the undone
    // changes stay in the log, and the program is told so.
    if let Some(e) = f.cut_failed.as_ref().filter(|_| n > 0) {
        let (it, them) = if n == 1 {
            ("it", "its record")
        } else {
            ("they", "their records")
        };
        msg.push_str(&format!(
            "; but {them} could not be cut from the log (ftruncate failed: {e}), so {it} may come back when the directory is next opened"
        ));
    }
    msg
}

/// The text of the `IO` trap of a change refused because an earlier failure `f`
/// closed the log for writing: it names that failure as earlier, so that it does not
/// read as a second one.
fn refused_message(f: &Failure) -> String {
    // The change refused (its rows, one or many) is made and undone at its commit:
    // as far as the program can see it was never made. Nothing else waits for a sync
    // once the log is closed: the failure undid it.
    format!(
        "{DURABILITY_FAILURE}the log is closed for writing since an earlier failure ({f}); this change was not made, nothing acknowledged was lost"
    )
}

/// How the text of every durability failure's trap begins.
const DURABILITY_FAILURE: &str = "durability failure: ";

/// Whether `trap` is a durability failure (raised with [`durability_message`]), not
/// another `IO` trap (a file `fs` cannot read, stdout closed).
pub(crate) fn is_durability_failure(trap: &Trap) -> bool {
    trap.kind == TrapKind::Io && trap.message.starts_with(DURABILITY_FAILURE)
}

/// What the log thread answered ([`Database::poll_sync`]).
#[derive(Debug)]
pub(crate) enum Synced {
    /// Every commit up to `lsn` is durable; an automatic checkpoint that then failed
    /// (the log goes on, and it is tried again later) is reported for a warning.
    Durable {
        lsn: u64,
        checkpoint_failed: Option<Failure>,
    },
    /// The sync failed: every pending change was undone and the log is fenced.
    Failed(Failure),
    /// The automatic checkpoint under way ended (writes may go on); its failure, if
    /// it failed, for a warning.
    Checkpoint(Option<Failure>),
}

/// A table's rows to load: its index, its next id and its live rows.
type TableRows = (u32, RowId, Vec<(RowId, Vec<Cell>)>);

/// The database state the VM owns.
pub struct Database {
    db: Db,
    /// The tables' renames and literal defaults, for a data directory's migration.
    evolution: durable::Evolution,
    /// The data directory when the database is durable (`--data`).
    data: Option<DataDir>,
    before_sync: Option<BeforeSync>,
    /// For each table, the class index of its class (rows carry it).
    table_class: Vec<u32>,
    /// For each table, its column types (the image's, so a `Ref` names a table).
    column_types: Vec<Vec<ColumnType>>,
    /// For each class, the table it is the class of.
    class_table: Vec<Option<u32>>,
    queries: Vec<CachedQuery>,
    pub(crate) tx: Option<Tx>,
    /// Reused by `DB_QUERY` for its arguments and the ids the engine returns.
    args: Vec<Cell>,
    ids: Vec<RowId>,
    /// Reused by `DB_INSERT` for the new row's cells.
    cells: Vec<Cell>,
    /// The commits written to the log and not yet durable, oldest first: the LSN each
    /// waits for and where its undo entries start (group commit: their undo entries are
    /// kept until the sync that covers them, so a failed sync can undo them all).
    pending: std::collections::VecDeque<(u64, Savepoint)>,
    /// The LSN the fiber that just made a change must wait for (`take_wait`).
    wait: Option<u64>,
    /// A failed write undid the pending commits of other fibers too: the failure, for
    /// the scheduler to raise `IO` in each of them.
    failed: Option<Failure>,
    /// Records were written and the log thread is not yet asked to sync them.
    sync_owed: bool,
}

impl Database {
    /// Builds the engine's schema from `image.tables` and converts the query descriptors.
    /// The image's schema must already be verified (`verify_schema`).
    pub(crate) fn new(image: &Image) -> Result<Database, LinkError> {
        let (schema, evolution) = engine_schema(image);
        let mut db =
            Db::new(schema).map_err(|e| LinkError::Invalid(format!("database schema: {e}")))?;
        // In memory and outside a transaction nothing is ever undone, and every
        // operation checks before it changes anything: no undo entries to make.
        db.set_undo(false);

        let table_class: Vec<u32> = image.tables.iter().map(|t| t.class.0).collect();
        let mut class_table = vec![None; image.classes.len()];
        for (ti, &class) in table_class.iter().enumerate() {
            if let Some(slot) = usize::try_from(class)
                .ok()
                .and_then(|c| class_table.get_mut(c))
            {
                *slot = u32::try_from(ti).ok();
            }
        }
        let column_types: Vec<Vec<ColumnType>> = image
            .tables
            .iter()
            .map(|t| t.columns.iter().map(|c| c.ty).collect())
            .collect();

        let queries = image
            .queries
            .iter()
            .map(|q| {
                let agg_col = match q.agg {
                    QueryAgg::Sum(c) | QueryAgg::Min(c) | QueryAgg::Max(c) | QueryAgg::Avg(c) => {
                        Some(c)
                    }
                    QueryAgg::Rows | QueryAgg::Count | QueryAgg::Exists => None,
                };
                let agg_ty = agg_col.and_then(|c| match c {
                    QueryCol::Id => Some(ColumnType::Int),
                    QueryCol::Col(c) => usize::try_from(q.table)
                        .ok()
                        .and_then(|t| column_types.get(t))
                        .and_then(|cols| cols.get(usize::from(c)))
                        .copied(),
                });
                CachedQuery {
                    query: Query {
                        table: q.table,
                        preds: q
                            .preds
                            .iter()
                            .map(|p| Pred {
                                col: col(p.col),
                                op: cmp_op(p.op),
                                arg: usize::from(p.arg),
                            })
                            .collect(),
                        order: q.order.iter().map(|&(c, desc)| (col(c), desc)).collect(),
                        skip: q.skip.map(usize::from),
                        take: q.take.map(usize::from),
                    },
                    agg: match q.agg {
                        QueryAgg::Rows => None,
                        QueryAgg::Count => Some(Agg::Count),
                        QueryAgg::Exists => Some(Agg::Exists),
                        QueryAgg::Sum(c) => Some(Agg::Sum(col(c))),
                        QueryAgg::Min(c) => Some(Agg::Min(col(c))),
                        QueryAgg::Max(c) => Some(Agg::Max(col(c))),
                        QueryAgg::Avg(c) => Some(Agg::Avg(col(c))),
                    },
                    agg_ty,
                }
            })
            .collect();

        Ok(Database {
            db,
            evolution,
            data: None,
            before_sync: None,
            table_class,
            column_types,
            class_table,
            queries,
            tx: None,
            args: Vec::new(),
            ids: Vec::new(),
            cells: Vec::new(),
            pending: std::collections::VecDeque::new(),
            wait: None,
            failed: None,
            sync_owed: false,
        })
    }

    /// What the migration applied when the data directory was opened changed, if one
    /// was (one line).
    pub fn migration_notice(&self) -> Option<&str> {
        self.data.as_ref()?.migration_notice()
    }

    /// The engine, for inspection (tests, future tooling).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Makes the database durable in `dir`: opens (or creates) the data directory,
    /// recovers every acknowledged change into a fresh engine, and from then on every
    /// change is logged and synced before it is acknowledged. Called before anything
    /// runs.
    pub fn open_data_dir(
        &mut self,
        dir: &Path,
        options: durable::Options,
        before_sync: Option<BeforeSync>,
    ) -> Result<(), OpenError> {
        let mut options = options;
        if options.evolution == durable::Evolution::default() {
            options.evolution = self.evolution.clone();
        }
        let (data, mut db) = durable::open(dir, self.db.schema().clone(), options)?;
        // The log is written from the undo entries (they carry the redo half too).
        db.set_undo(true);
        self.db = db;
        self.data = Some(data);
        self.before_sync = before_sync;
        Ok(())
    }

    /// Takes over the engine (and data directory) of `old`, the database of the
    /// previous image of a `wo repl` session. Its tables must be the first tables of
    /// this one; tables the new image adds start empty. The rows are moved over; an
    /// open data directory stays open (its lock held, a fenced log still fenced) and
    /// learns the new tables, which the next record declares. On error this database
    /// holds `old`'s engine and data directory unchanged, so the session goes on with
    /// them.
    pub fn adopt(&mut self, mut old: Database) -> Result<(), String> {
        let new_schema = self.db.schema().clone();
        let old_tables = &old.db.schema().tables;
        let new_tables = &new_schema.tables;
        // The old tables must come first, with their names and columns; their
        // indexes may change (the rows are loaded again and the indexes rebuilt).
        let same_columns = |a: &wo_db::TableDef, b: &wo_db::TableDef| {
            a.name == b.name && a.columns == b.columns && a.durable == b.durable
        };
        let compatible = old_tables.len() <= new_tables.len()
            && old_tables
                .iter()
                .zip(new_tables.iter())
                .all(|(a, b)| same_columns(a, b));
        let grows = compatible
            && (old_tables.len() < new_tables.len()
                || old_tables[..] != new_tables[..old_tables.len()]);
        if grows {
            match self.grow_from(&mut old) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    self.keep(old);
                    return Err(e);
                }
            }
        }
        self.keep(old);
        if compatible {
            return Ok(());
        }
        let old_tables = &self.db.schema().tables;
        let new_tables = &new_schema.tables;
        let changed = old_tables
            .iter()
            .enumerate()
            .find(|(i, a)| !new_tables.get(*i).is_some_and(|b| same_columns(a, b)));
        Err(match changed {
            Some((i, a)) => match new_tables.get(i).filter(|b| b.name == a.name) {
                Some(b) => format!(
                    "table `{}` has the columns ({}); this declaration gives ({}): a table's columns cannot change during a session (to change them, run the program that declares them with `wo run PROGRAM --data DIR`, which migrates the directory, or see `wo db migrate`; then start the session again)",
                    a.name,
                    columns_text(a, old_tables),
                    columns_text(b, new_tables)
                ),
                None => format!(
                    "table `{}` is no longer declared where it was: a session cannot drop or reorder its tables",
                    a.name
                ),
            },
            None => "a table's definition changed: restart the session to change it".into(),
        })
    }

    /// Carries `old`'s engine and data directory over as they are.
    fn keep(&mut self, mut old: Database) {
        std::mem::swap(&mut self.db, &mut old.db);
        self.data = old.data.take();
        self.before_sync = old.before_sync.take();
    }

    /// [`Database::adopt`] when this image adds tables: loads `old`'s rows into this
    /// (empty) engine and moves the data directory over. Leaves `old` whole on error.
    fn grow_from(&mut self, old: &mut Database) -> Result<(), String> {
        let n_old = old.db.schema().tables.len();
        let tables: Vec<TableRows> = (0..n_old)
            .filter_map(|t| u32::try_from(t).ok())
            .map(|t| (t, old.db.next_id(t), old.db.rows(t).collect()))
            .collect();
        if let Some(data) = old.data.as_mut() {
            data.adopt_schema(self.db.schema())
                .map_err(|e| e.to_string())?;
        }
        if let Err(e) = self.db.load(tables) {
            if let Some(data) = old.data.as_mut() {
                // Back to the old tables (they were accepted before).
                let _ = data.adopt_schema(old.db.schema());
            }
            return Err(e.message);
        }
        // The session's handles to these rows live on: so do their ids' generations.
        for t in (0..n_old).filter_map(|t| u32::try_from(t).ok()) {
            self.db.set_generations(t, old.db.generations(t));
        }
        if let Some(data) = old.data.take() {
            // The log is written from the undo entries.
            self.db.set_undo(true);
            self.data = Some(data);
            self.before_sync = old.before_sync.take();
        }
        Ok(())
    }

    /// The open data directory, if the database is durable.
    pub fn data_dir(&self) -> Option<&DataDir> {
        self.data.as_ref()
    }

    /// Whether the program declares tables that would be logged with `--data`.
    pub fn has_durable_tables(&self) -> bool {
        self.db.schema().tables.iter().any(|t| t.durable)
    }

    /// Whether a transaction is active.
    pub fn in_transaction(&self) -> bool {
        self.tx.is_some()
    }

    /// The hook for "a change became final": every change since `sp` is now permanent.
    /// Called after each write outside a transaction and at `TX_COMMIT`. In memory it
    /// only forgets the undo entries. With a data directory the changes' record is
    /// written to the log and the log thread asked to sync it; the fiber then waits
    /// for that sync ([`Database::take_wait`]) while the others run, and its undo
    /// entries are kept until the sync succeeds (group commit, LANGUAGE.md §8 and §9).
    /// A change that logs nothing but comes after records still in flight waits for
    /// them too: acknowledgement order is log order.
    pub(crate) fn change_became_final(&mut self, sp: Savepoint) -> DbResult<()> {
        let Some(data) = self.data.as_mut() else {
            self.db.truncate_undo(sp);
            return Ok(());
        };
        if self.db.changes_since(sp).is_empty() {
            return Ok(());
        }
        // Before the record can reach the log thread: a line printed after an earlier
        // commit is out before this one can be acknowledged (and before a crash during
        // its sync).
        if let Some(flush) = self.before_sync.as_mut() {
            flush();
        }
        // The sync is asked for at the end of the scheduler's round
        // (`request_owed_sync`), so the commits of every fiber that runs before then
        // share it.
        let fenced_before = data.fence().is_some();
        let staged = data.stage(&self.db, sp);
        let lsn = match staged {
            Ok(lsn) => lsn,
            Err(f) if f.limit => {
                // Nothing was written: only this change is undone.
                self.db.rollback_to(sp);
                self.db.truncate_undo(sp);
                return Err(DbStop::Trap(Trap::new(TrapKind::Limit, f.message)));
            }
            Err(f) => {
                // The log is fenced: this change and every one still waiting for its
                // sync are undone, and their fibers told.
                // Every fiber waiting for a commit hears of it: those whose commit
                // the log made durable before it stopped go on, the others trap.
                let others_wait = !self.pending.is_empty();
                let n = self.undo_not_durable(Some(sp));
                let f = Failure {
                    changes_undone: n,
                    ..f
                };
                let msg = if fenced_before {
                    refused_message(&f)
                } else {
                    durability_message(&f)
                };
                if others_wait {
                    self.failed = Some(f);
                }
                return Err(DbStop::Trap(Trap::new(TrapKind::Io, msg)));
            }
        };
        self.sync_owed |= lsn.is_some();
        match lsn.or(self.pending.back().map(|p| p.0)) {
            None => self.db.truncate_undo(sp),
            Some(l) => {
                self.pending.push_back((l, sp));
                self.wait = Some(l);
            }
        }
        Ok(())
    }

    /// Forgets the pending commits whose records are durable (LSN up to `durable`).
    fn pop_durable(&mut self, durable: u64) {
        while self.pending.front().is_some_and(|p| p.0 <= durable) {
            self.pending.pop_front();
        }
    }

    /// The commits up to `durable` are final: forgets them and their undo entries.
    fn settle(&mut self, durable: u64) {
        self.pop_durable(durable);
        match self.pending.front() {
            Some(&(_, sp)) => self.db.forget_undo_before(sp),
            None => {
                let keep = self.tx.map_or_else(|| self.db.savepoint(), |tx| tx.sp);
                self.db.forget_undo_before(keep);
            }
        }
    }

    /// The failure contract, after the log was fenced: the commits the log made
    /// durable before it stopped are final (the scheduler acknowledges them, see
    /// `Vm::fail_committing`), and every later change is undone, newest first: from
    /// the oldest commit still pending, or else from `current` (the change whose
    /// record failed to be written). Returns how many changes were undone.
    fn undo_not_durable(&mut self, current: Option<Savepoint>) -> usize {
        let durable = self.data.as_ref().map_or(0, DataDir::durable_lsn);
        self.pop_durable(durable);
        let Some(from) = self.pending.front().map(|p| p.1).or(current) else {
            self.settle(durable);
            return 0;
        };
        // The undo entries of the commits made durable precede `from`.
        self.db.forget_undo_before(from);
        let n = self.db.changes_since(from).len();
        self.db.rollback_to(from);
        self.db.truncate_undo(from);
        self.pending.clear();
        n
    }

    /// Whether records were written that the log thread has not been asked to sync.
    pub(crate) fn sync_owed(&self) -> bool {
        self.sync_owed
    }

    /// Asks the log thread to sync every record written so far (group commit: once
    /// per scheduler round, not once per commit). A failure to ask (the log thread
    /// cannot start) fences the log like a failed sync: every pending change is undone.
    pub(crate) fn request_owed_sync(&mut self) -> Result<(), Failure> {
        if !std::mem::take(&mut self.sync_owed) {
            return Ok(());
        }
        let Some(data) = self.data.as_mut() else {
            return Ok(());
        };
        data.request_sync().map_err(|f| {
            let n = self.undo_not_durable(None);
            Failure {
                changes_undone: n,
                ..f
            }
        })
    }

    /// The LSN the fiber that just made a change must wait for, once.
    pub(crate) fn take_wait(&mut self) -> Option<u64> {
        self.wait.take()
    }

    /// A write failure that also undid other fibers' pending commits, once.
    pub(crate) fn take_failure(&mut self) -> Option<Failure> {
        self.failed.take()
    }

    /// Whether the log thread owes an answer: commits written and waiting for their
    /// sync, or a written checkpoint being put in charge.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
            || self
                .data
                .as_ref()
                .is_some_and(|d| d.checkpoint_busy() && !d.checkpoint_encoding())
    }

    /// Drops a checkpoint that is still being encoded (the program is ending).
    pub(crate) fn abandon_checkpoint(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.abandon_checkpoint();
        }
    }

    /// The log thread's next answer, waiting at most `timeout` (`None`: until it comes).
    /// On success the commits it covers are final (their undo entries forgotten) and,
    /// with nothing left in flight, an automatic checkpoint may begin; on failure every
    /// pending change is undone.
    pub(crate) fn poll_sync(&mut self, timeout: Option<std::time::Duration>) -> Option<Synced> {
        let data = self.data.as_mut()?;
        match data.poll(timeout)? {
            LogEvent::Durable(durable) => {
                self.settle(durable);
                let data = self.data.as_mut()?;
                let checkpoint_failed = if self.pending.is_empty() && self.tx.is_none() {
                    data.begin_checkpoint(&self.db).and_then(Result::err)
                } else {
                    None
                };
                Some(Synced::Durable {
                    lsn: durable,
                    checkpoint_failed,
                })
            }
            LogEvent::Failed(f) => {
                let n = self.undo_not_durable(None);
                Some(Synced::Failed(Failure {
                    changes_undone: n,
                    ..f
                }))
            }
            LogEvent::Checkpoint(res) => Some(Synced::Checkpoint(res.err())),
        }
    }

    /// Whether writes are held back: an automatic checkpoint is under way, and the
    /// database must not change until it is written.
    pub(crate) fn gated(&self) -> bool {
        self.data.as_ref().is_some_and(DataDir::checkpoint_busy)
    }

    /// Writes the next slice of the checkpoint under way, if it is being encoded; an
    /// error (the checkpoint abandoned, the log still in charge) for a warning.
    pub(crate) fn checkpoint_step(&mut self) -> Option<Result<(), Failure>> {
        let data = self.data.as_mut()?;
        if !data.checkpoint_encoding() {
            return None;
        }
        data.checkpoint_step(&self.db, CHECKPOINT_SLICE)
    }

    /// Whether the checkpoint under way is being encoded (the scheduler gives it
    /// slices between fiber turns).
    pub(crate) fn checkpoint_encoding(&self) -> bool {
        self.data.as_ref().is_some_and(DataDir::checkpoint_encoding)
    }

    /// Runs one write: inside a transaction the undo entries stay (the transaction may
    /// roll back); outside, the change is final as soon as it succeeds.
    fn write<T>(&mut self, f: impl FnOnce(&mut Db) -> Result<T, DbError>) -> DbResult<T> {
        if self.tx.is_none() && self.gated() {
            return Err(DbStop::Gate);
        }
        let sp = self.db.savepoint();
        let res = f(&mut self.db).map_err(trap)?;
        if self.tx.is_none() {
            self.change_became_final(sp)?;
        }
        Ok(res)
    }

    fn table(&self, t: u32) -> DbResult<usize> {
        match usize::try_from(t) {
            Ok(ti) if ti < self.table_class.len() => Ok(ti),
            _ => fault(format!("table t{t} does not exist")),
        }
    }

    fn table_name(&self, t: usize) -> &str {
        &self.db.schema().tables[t].name
    }

    /// The id of `v`, a row of table `t`; a handle whose row's insert was undone traps
    /// `DB`, whatever row holds its id now.
    fn row_of(&self, t: usize, v: &Value) -> DbResult<RowId> {
        match v {
            Value::Row(r) if r.class == self.table_class[t] => {
                if self.stale(t, r) {
                    return Err(trap(self.db.stale_row(t as u32, r.id)));
                }
                Ok(r.id)
            }
            other => fault(format!(
                "expected a row of `{}`, found {}",
                self.table_name(t),
                type_name(other)
            )),
        }
    }

    /// Whether `r`, a handle to a row of table `t`, was made before the insert of its
    /// row was undone (its id may since have been given to another row).
    #[inline]
    fn stale(&self, t: usize, r: &RowRef) -> bool {
        self.db.generation(t as u32, r.id) != r.gen
    }

    /// A handle to row `id` of table `t` as it is now.
    #[inline]
    fn handle(&self, t: u32, class: u32, id: RowId) -> Value {
        Value::Row(RowRef {
            class,
            gen: self.db.generation(t, id),
            id,
        })
    }

    /// `v` as the cell stored in column `c` of table `t`; nil passes (the engine checks
    /// nullability and reports it as a `DB` trap).
    fn to_cell(&self, t: usize, c: usize, v: &Value) -> DbResult<Cell> {
        let ty = self.column_types[t][c];
        let cell = match (ty, v) {
            (_, Value::Nil) => Cell::Nil,
            (ColumnType::Int, Value::Int(i)) => Cell::Int(*i),
            (ColumnType::Float, Value::Float(f)) => Cell::Float(*f),
            (ColumnType::Bool, Value::Bool(b)) => Cell::Bool(*b),
            (ColumnType::Text, Value::Text(s)) => Cell::Text(Rc::clone(s)),
            (ColumnType::Ref(target), Value::Row(r))
                if usize::try_from(target)
                    .ok()
                    .and_then(|target| self.table_class.get(target))
                    == Some(&r.class) =>
            {
                if self.stale(target as usize, r) {
                    return Err(trap(self.db.stale_ref(t as u32, c, target, r.id)));
                }
                Cell::Ref(r.id)
            }
            (_, other) => {
                let def = &self.db.schema().tables[t];
                return fault(format!(
                    "column {}.{} cannot hold {}",
                    def.name,
                    def.columns[c].name,
                    type_name(other)
                ));
            }
        };
        Ok(cell)
    }

    /// A cell read from a column of type `ty` as a value.
    fn to_value(&self, cell: Cell, ty: Option<ColumnType>) -> DbResult<Value> {
        Ok(match cell {
            Cell::Nil => Value::Nil,
            Cell::Int(i) => Value::Int(i),
            Cell::Float(f) => Value::Float(f),
            Cell::Bool(b) => Value::Bool(b),
            Cell::Text(s) => Value::Text(s),
            Cell::Ref(id) => match ty {
                Some(ColumnType::Ref(target)) => match usize::try_from(target)
                    .ok()
                    .and_then(|target| self.table_class.get(target))
                {
                    Some(&class) => self.handle(target, class, id),
                    None => return fault(format!("a reference to table t{target}")),
                },
                _ => return fault("a reference read from a column that is not a ref"),
            },
        })
    }

    /// `DB_INSERT`: stores a row from `vals` (one per column) and returns its handle.
    pub(crate) fn insert(&mut self, t: u32, vals: &[Value]) -> DbResult<Value> {
        let ti = self.table(t)?;
        let mut cells = std::mem::take(&mut self.cells);
        cells.clear();
        for (c, v) in vals.iter().enumerate() {
            match self.to_cell(ti, c, v) {
                Ok(cell) => cells.push(cell),
                Err(e) => {
                    self.cells = cells;
                    return Err(e);
                }
            }
        }
        let res = self.write(|db| db.insert_cells(t, &cells));
        cells.clear();
        self.cells = cells;
        let id = res?;
        Ok(self.handle(t, self.table_class[ti], id))
    }

    /// `DB_GET_FIELD`: column `f` of `row`. The common case (a live row of the right
    /// table, a column that is not a reference) in one short path; a reference or an
    /// error goes the long way, out of line.
    #[inline]
    pub(crate) fn get_field(&self, t: u32, row: &Value, f: usize) -> DbResult<Value> {
        if let Value::Row(r) = row {
            if self.table_class.get(t as usize) == Some(&r.class) {
                match self.db.get_current(t, r.id, r.gen, f) {
                    Some(Cell::Int(i)) => return Ok(Value::Int(i)),
                    Some(Cell::Float(x)) => return Ok(Value::Float(x)),
                    Some(Cell::Bool(b)) => return Ok(Value::Bool(b)),
                    Some(Cell::Text(s)) => return Ok(Value::Text(s)),
                    Some(Cell::Nil) => return Ok(Value::Nil),
                    Some(Cell::Ref(_)) | None => {}
                }
            }
        }
        self.get_field_slow(t, row, f)
    }

    #[cold]
    #[inline(never)]
    fn get_field_slow(&self, t: u32, row: &Value, f: usize) -> DbResult<Value> {
        let ti = self.table(t)?;
        let id = self.row_of(ti, row)?;
        let cell = self.db.get(t, id, f).map_err(trap)?;
        self.to_value(cell, self.column_types[ti].get(f).copied())
    }

    /// `DB_UPDATE_FIELD`: sets column `f` of `row` to `v`.
    pub(crate) fn update_field(
        &mut self,
        t: u32,
        row: &Value,
        f: usize,
        v: &Value,
    ) -> DbResult<()> {
        let ti = self.table(t)?;
        let id = self.row_of(ti, row)?;
        if f >= self.column_types[ti].len() {
            return fault(format!("no column {f} in table `{}`", self.table_name(ti)));
        }
        let cell = self.to_cell(ti, f, v)?;
        self.write(|db| db.update(t, id, f, cell))
    }

    /// `DB_DELETE`.
    pub(crate) fn delete(&mut self, t: u32, row: &Value) -> DbResult<()> {
        let ti = self.table(t)?;
        let id = self.row_of(ti, row)?;
        self.write(|db| db.delete(t, id))
    }

    /// `DB_FIND`: the row of table `t` with id `id`, or nil. Small enough to inline
    /// into the interpreter loop; the errors are out of line.
    #[inline]
    pub(crate) fn find(&self, t: u32, id: &Value) -> DbResult<Value> {
        if let (Value::Int(id), Some(&class)) = (id, self.table_class.get(t as usize)) {
            return Ok(if self.db.is_live(t, *id) {
                self.handle(t, class, *id)
            } else {
                Value::Nil
            });
        }
        self.find_slow(t, id)
    }

    #[cold]
    #[inline(never)]
    fn find_slow(&self, t: u32, id: &Value) -> DbResult<Value> {
        let ti = self.table(t)?;
        let id = match id {
            Value::Int(i) => *i,
            other => return fault(format!("expected Int, found {}", type_name(other))),
        };
        if id <= 0 || !self.db.is_live(t, id) {
            return Ok(Value::Nil);
        }
        Ok(self.handle(t, self.table_class[ti], id))
    }

    /// `DB_ALIVE`: whether `row` still exists (every turn of a loop over a query's
    /// rows asks). Small enough to inline into the interpreter loop; the errors are
    /// out of line.
    #[inline]
    pub(crate) fn alive(&self, row: &Value) -> DbResult<bool> {
        if let Value::Row(r) = row {
            if let Some(&Some(t)) = self.class_table.get(r.class as usize) {
                return Ok(self.db.is_current(t, r.id, r.gen));
            }
        }
        self.alive_slow(row)
    }

    #[cold]
    #[inline(never)]
    fn alive_slow(&self, row: &Value) -> DbResult<bool> {
        let r = row_ref(row)?;
        let t = usize::try_from(r.class)
            .ok()
            .and_then(|c| self.class_table.get(c).copied().flatten());
        match t {
            Some(t) => Ok(self.db.is_current(t, r.id, r.gen)),
            None => fault(format!("class {} is not a table", r.class)),
        }
    }

    /// A query argument as a cell: any scalar, Text or row (as its id; a handle whose
    /// row's insert was undone as id 0, which no row has, so it equals no reference).
    fn arg_cell(&self, v: &Value) -> Option<Cell> {
        Some(match v {
            Value::Nil => Cell::Nil,
            Value::Int(i) => Cell::Int(*i),
            Value::Float(f) => Cell::Float(*f),
            Value::Bool(b) => Cell::Bool(*b),
            Value::Text(s) => Cell::Text(Rc::clone(s)),
            Value::Row(r) => {
                let fresh = self
                    .class_table
                    .get(r.class as usize)
                    .copied()
                    .flatten()
                    .is_none_or(|t| self.db.generation(t, r.id) == r.gen);
                Cell::Ref(if fresh { r.id } else { 0 })
            }
            Value::List(_) | Value::Map(_) | Value::Obj(_) | Value::Error(_) | Value::Task(_) => {
                return None
            }
        })
    }

    /// `DB_QUERY`: runs query `q` with `args`; its rows as a new list, or its aggregate.
    pub(crate) fn query(&mut self, q: u32, args: &[Value]) -> DbResult<Value> {
        let Some(cached) = usize::try_from(q).ok().and_then(|q| self.queries.get(q)) else {
            return fault(format!("query q{q} does not exist"));
        };
        let mut cells = std::mem::take(&mut self.args);
        cells.clear();
        for v in args {
            match self.arg_cell(v) {
                Some(c) => cells.push(c),
                None => {
                    self.args = cells;
                    return fault(format!("a query argument cannot be {}", type_name(v)));
                }
            }
        }
        let res = match cached.agg {
            None => {
                let mut ids = std::mem::take(&mut self.ids);
                ids.clear();
                let res = self.db.query(&cached.query, &cells, &mut ids);
                let out = res.map_err(trap).and_then(|_plan| {
                    let class = usize::try_from(cached.query.table)
                        .ok()
                        .and_then(|t| self.table_class.get(t))
                        .copied()
                        .unwrap_or(u32::MAX);
                    // The result list is within the list limit, like any other.
                    let mut rows: Vec<Value> = Vec::new();
                    crate::limit::list_room(&mut rows, "a query", ids.len())
                        .map_err(DbStop::Trap)?;
                    let t = cached.query.table;
                    rows.extend(ids.iter().map(|&id| self.handle(t, class, id)));
                    Ok(Value::new_list(rows))
                });
                self.ids = ids;
                out
            }
            Some(agg) => {
                let ty = cached.agg_ty;
                let res = self.db.aggregate(&cached.query, agg, &cells);
                match res {
                    Ok(cell) => self.to_value(cell, ty),
                    Err(e) => Err(trap(e)),
                }
            }
        };
        self.args = cells;
        res
    }

    /// `TX_BEGIN` on fiber `fiber` with `depth` caller frames and `n_handlers` handlers.
    pub(crate) fn begin(&mut self, fiber: u64, depth: usize, n_handlers: usize) -> DbResult<()> {
        if self.tx.is_none() && self.gated() {
            return Err(DbStop::Gate);
        }
        if self.tx.is_some() {
            return Err(DbStop::Trap(Trap::new(
                TrapKind::Db,
                "a transaction is already active",
            )));
        }
        // A transaction may roll back: record undo entries until it ends.
        self.db.set_undo(true);
        self.tx = Some(Tx {
            sp: self.db.savepoint(),
            fiber,
            depth,
            n_handlers,
        });
        Ok(())
    }

    /// `TX_COMMIT`: ends the transaction; its changes become final.
    pub(crate) fn commit(&mut self, fiber: u64) -> DbResult<()> {
        match self.tx {
            Some(tx) if tx.fiber == fiber => {
                self.tx = None;
                let res = self.change_became_final(tx.sp);
                self.undo_outside_transactions();
                res
            }
            Some(_) => fault("TX_COMMIT of another fiber's transaction"),
            None => fault("TX_COMMIT without an active transaction"),
        }
    }

    /// A trap is unwinding fiber `fiber` to the handler with index `handler` (its
    /// position in the fiber's handler stack) at frame level `level`, or to no handler.
    /// When that leaves the fiber's transaction — the handler was installed before
    /// `TX_BEGIN`, or belongs to a frame below the one that began it, or there is none —
    /// the transaction is rolled back and ended. A handler installed inside the
    /// transaction catches the trap within it, and nothing is undone.
    pub(crate) fn unwinding(&mut self, fiber: u64, handler: Option<(usize, usize)>) {
        let Some(tx) = self.tx else { return };
        if tx.fiber != fiber {
            return;
        }
        let leaves = match handler {
            None => true,
            Some((index, level)) => index < tx.n_handlers || level < tx.depth,
        };
        if leaves {
            self.abort();
        }
    }

    /// Rolls the active transaction back and ends it (a trap left it, or its fiber ended
    /// without committing).
    pub(crate) fn abort(&mut self) {
        if let Some(tx) = self.tx.take() {
            self.db.rollback_to(tx.sp);
            self.db.truncate_undo(tx.sp);
            self.undo_outside_transactions();
        }
    }

    /// Outside a transaction, undo entries are needed only to write the log.
    fn undo_outside_transactions(&mut self) {
        self.db.set_undo(self.data.is_some());
    }

    /// Ends the transaction of a fiber that finished without committing it.
    pub(crate) fn fiber_ended(&mut self, fiber: u64) {
        if self.tx.is_some_and(|tx| tx.fiber == fiber) {
            self.abort();
        }
    }
}

/// `DB_ROW_ID`: the id of a row handle (valid after a delete too).
pub(crate) fn row_id(v: &Value) -> DbResult<i64> {
    Ok(row_ref(v)?.id)
}

fn row_ref(v: &Value) -> DbResult<RowRef> {
    match v {
        Value::Row(r) => Ok(*r),
        other => fault(format!("expected a row, found {}", type_name(other))),
    }
}

/// The engine's schema of an image's tables, and what the tables say about their
/// stored past (renames, literal defaults) for a data directory's migration.
pub fn engine_schema(image: &Image) -> (Schema, durable::Evolution) {
    let tables = image
        .tables
        .iter()
        .map(|t| TableDef {
            name: t.name.clone(),
            columns: t
                .columns
                .iter()
                .map(|c| Column {
                    name: c.name.clone(),
                    ty: col_type(c.ty),
                    nullable: c.nullable,
                })
                .collect(),
            indexes: t
                .indexes
                .iter()
                .map(|ix| IndexDef {
                    columns: ix.columns.iter().map(|&c| usize::from(c)).collect(),
                    kind: match ix.kind {
                        ImageIndexKind::Hash => IndexKind::Hash,
                        ImageIndexKind::Unique => IndexKind::Unique,
                        ImageIndexKind::Sorted => IndexKind::Sorted,
                    },
                })
                .collect(),
            durable: t.durable,
        })
        .collect();
    let evolution = durable::Evolution {
        tables: image
            .tables
            .iter()
            .map(|t| durable::TableEvolution {
                was: t.was.clone(),
                columns: t
                    .columns
                    .iter()
                    .map(|c| durable::ColumnEvolution {
                        was: c.was.clone(),
                        default: c.default.as_ref().map(|d| match d {
                            ColumnDefault::Nil => Cell::Nil,
                            ColumnDefault::Int(i) => Cell::Int(*i),
                            ColumnDefault::Float(x) => Cell::Float(*x),
                            ColumnDefault::Bool(b) => Cell::Bool(*b),
                            ColumnDefault::Text(t) => Cell::Text(Rc::from(t.as_str())),
                        }),
                    })
                    .collect(),
            })
            .collect(),
    };
    (Schema { tables }, evolution)
}

fn col_type(ty: ColumnType) -> ColType {
    match ty {
        ColumnType::Int => ColType::Int,
        ColumnType::Float => ColType::Float,
        ColumnType::Bool => ColType::Bool,
        ColumnType::Text => ColType::Text,
        ColumnType::Ref(t) => ColType::Ref(t),
    }
}

fn col(c: QueryCol) -> Col {
    match c {
        QueryCol::Id => Col::Id,
        QueryCol::Col(c) => Col::At(usize::from(c)),
    }
}

fn cmp_op(c: wo_bytecode::Cmp) -> CmpOp {
    use wo_bytecode::Cmp;
    match c {
        Cmp::Eq => CmpOp::Eq,
        Cmp::Ne => CmpOp::Ne,
        Cmp::Lt => CmpOp::Lt,
        Cmp::Le => CmpOp::Le,
        Cmp::Gt => CmpOp::Gt,
        Cmp::Ge => CmpOp::Ge,
    }
}

/// A table's columns as declared: `title: Text, body: ?Text, note: ref Note`.
fn columns_text(t: &wo_db::TableDef, tables: &[wo_db::TableDef]) -> String {
    t.columns
        .iter()
        .map(|c| {
            let ty = match c.ty {
                wo_db::ColType::Int => "Int".to_string(),
                wo_db::ColType::Float => "Float".to_string(),
                wo_db::ColType::Bool => "Bool".to_string(),
                wo_db::ColType::Text => "Text".to_string(),
                wo_db::ColType::Ref(r) => format!(
                    "ref {}",
                    tables.get(r as usize).map_or("?", |d| d.name.as_str())
                ),
            };
            format!("{}: {}{ty}", c.name, if c.nullable { "?" } else { "" })
        })
        .collect::<Vec<_>>()
        .join(", ")
}
