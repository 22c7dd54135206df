//! The undo log. Each entry carries what is needed to undo it and to redo it, so the
//! same records will feed the write-ahead log.

use crate::{Cell, RowId, TableId};

/// One change to the database, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A row was inserted with these cells (one per column).
    Insert {
        table: TableId,
        id: RowId,
        cells: Vec<Cell>,
    },
    /// One column of a row changed from `old` to `new`.
    Update {
        table: TableId,
        id: RowId,
        col: usize,
        old: Cell,
        new: Cell,
    },
    /// A row was deleted; `cells` is what it held.
    Delete {
        table: TableId,
        id: RowId,
        cells: Vec<Cell>,
    },
}

impl Change {
    /// The table the change is in.
    pub fn table(&self) -> TableId {
        match self {
            Change::Insert { table, .. }
            | Change::Update { table, .. }
            | Change::Delete { table, .. } => *table,
        }
    }
}
