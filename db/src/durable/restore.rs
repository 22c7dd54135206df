//! Loading a checkpoint into a fresh [`Db`] with the engine's bulk path, [`Db::load`]:
//! each table's rows are decoded from the file buffer straight into its columns (the
//! ids in between are deleted rows: the id counter comes back exactly, holes included),
//! its indexes are built in one pass each, and references are checked and counted once
//! every table is filled, so tables may refer to each other in any order. Nothing goes
//! through the undo log.
//!
//! The engine checks what it would check row by row (types, ids, unique keys, live
//! reference targets), so a checkpoint that passes its checksums but holds data the
//! engine could never have held is refused as damaged, not loaded.

use std::cell::RefCell;

use super::checkpoint::Body;
use super::codec::StoredTable;
use crate::{Cell, Db, ErrorKind, RowId, TableId};

/// Where a checkpoint stops loading: a decoding problem at a file offset, or rows the
/// engine refuses (offset 0: the problem is the content, not a place).
pub(crate) type LoadError = (u64, String);

/// Why [`restore`] failed.
#[derive(Debug)]
pub(crate) enum RestoreError {
    /// Damage: a decoding problem, or rows the engine could never have held.
    Damaged(LoadError),
    /// Rows that repeat a value of a unique index the program declares (the stored
    /// schema has no indexes, so this is the program's new `@unique`): the engine's
    /// message, which names the value.
    Unique(String),
}

/// Loads the rows of `body` into `db` (whose tables must be empty); `bind[i]` is the
/// program table of stored table `i`.
pub(crate) fn restore(
    db: &mut Db,
    mut body: Body<'_>,
    bind: &[TableId],
) -> Result<(), RestoreError> {
    let schema = std::mem::take(&mut body.schema);
    // The per-table row iterators share the reader (they run one after the other); a
    // decoding error ends every iterator and is reported once the engine returns.
    let body = RefCell::new(body);
    let failed: RefCell<Option<LoadError>> = RefCell::new(None);
    let tables = schema.iter().zip(bind).map_while(|(st, &t)| {
        if failed.borrow().is_some() {
            return None;
        }
        match body.borrow_mut().count() {
            Ok(n) => Some((
                t,
                st.next_id,
                Rows {
                    body: &body,
                    failed: &failed,
                    table: st,
                    left: n,
                    prev: 0,
                },
            )),
            Err(e) => {
                *failed.borrow_mut() = Some(e);
                None
            }
        }
    });
    let loaded = db.load(tables);
    if let Some(e) = failed.into_inner() {
        return Err(RestoreError::Damaged(e));
    }
    loaded.map_err(|e| match e.kind {
        ErrorKind::Unique => RestoreError::Unique(e.message),
        _ => RestoreError::Damaged((0, format!("cannot load the checkpoint: {}", e.message))),
    })?;
    body.into_inner().end().map_err(RestoreError::Damaged)
}

/// The rows of one stored table, decoded as the engine asks for them.
struct Rows<'b, 'a> {
    body: &'b RefCell<Body<'a>>,
    failed: &'b RefCell<Option<LoadError>>,
    table: &'b StoredTable,
    left: usize,
    prev: RowId,
}

impl Iterator for Rows<'_, '_> {
    type Item = (RowId, Vec<Cell>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        match self.body.borrow_mut().row(self.table, self.prev) {
            Ok((id, cells)) => {
                self.prev = id;
                Some((id, cells))
            }
            Err(e) => {
                self.left = 0;
                *self.failed.borrow_mut() = Some(e);
                None
            }
        }
    }
}
