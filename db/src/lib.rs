//! `wo-db`: the integrated database engine (rows, indexes, the query engine, the undo
//! log and, later, the write-ahead log). It knows nothing of bytecode or script values:
//! the VM converts its values to [`Cell`]s at the builtin boundary.
//!
//! This file is the crate's public contract; the implementation lives in the modules.

use std::rc::Rc;

mod db;
mod index;
mod query;
mod sum;
mod table;
mod undo;
mod value;

pub use db::Db;
pub use sum::{FloatSum, IntSum};
pub use table::Generations;
pub use undo::Change;
pub use value::float_order;

/// A table's position in the schema.
pub type TableId = u32;
/// A row id: per table `1, 2, 3, …`, never reused.
pub type RowId = i64;

/// A column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    Int,
    Float,
    Bool,
    Text,
    /// A foreign key to a row of that table.
    Ref(TableId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
    pub nullable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// Equality lookups on one or more columns.
    Hash,
    /// A hash index whose keys must be distinct (`@unique`; `nil` keys are exempt).
    Unique,
    /// An ordered index on one column: ranges and `order by` without sorting.
    Sorted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    /// Column positions; exactly one for `Sorted`.
    pub columns: Vec<usize>,
    pub kind: IndexKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    /// The stored table name (used in messages).
    pub name: String,
    pub columns: Vec<Column>,
    pub indexes: Vec<IndexDef>,
    /// `durable: false` tables are never logged.
    pub durable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schema {
    pub tables: Vec<TableDef>,
}

/// Where a column of a table rebuilt by [`Db::restructure`] gets its values.
#[derive(Debug, Clone, PartialEq)]
pub enum ColSource {
    /// The old table's column at that position.
    From(usize),
    /// This value in every row (a new column: nil or its default).
    Fill(Cell),
}

/// Where a table of the new schema comes from in [`Db::restructure`].
#[derive(Debug, Clone, PartialEq)]
pub enum TableSource {
    /// The old table of that id, moved as it is (same definition).
    Keep(TableId),
    /// The old table `from`, rebuilt: same ids, each column from `cols`.
    Rebuild { from: TableId, cols: Vec<ColSource> },
    /// A new, empty table.
    Empty,
}

/// One column value crossing the engine boundary.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Nil,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(Rc<str>),
    /// A foreign key: the id of a row in the column's referenced table.
    Ref(RowId),
}

/// A comparison in a pushed-down predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The column a predicate or sort key reads: a column position, or the row id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Id,
    At(usize),
}

/// `row.col <op> args[arg]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pred {
    pub col: Col,
    pub op: CmpOp,
    pub arg: usize,
}

/// A query the engine runs by itself: every predicate must hold; rows come in id order
/// unless `order` is given (ties in ascending id order, `nil` first, for `asc` and
/// `desc` alike); then `skip` and `take` (argument positions holding Ints) apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub table: TableId,
    pub preds: Vec<Pred>,
    /// `(column, descending)`.
    pub order: Vec<(Col, bool)>,
    pub skip: Option<usize>,
    pub take: Option<usize>,
}

/// What an aggregate computes over the rows of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    Count,
    Exists,
    /// Over one column: Int sums stay Int (OVERFLOW on overflow), Float sums Float.
    Sum(Col),
    Min(Col),
    Max(Col),
    /// `nil` on no rows.
    Avg(Col),
}

/// The access path the planner chose (exposed for tests and `docs/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `x.id == v`.
    ById,
    /// Equality on every column of hash index `n`.
    HashProbe(usize),
    /// A range and/or order walk of sorted index `n`.
    SortedWalk(usize),
    Scan,
}

/// A stable error kind, mapped by the VM to its trap kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Misuse: a deleted row, a transaction inside a transaction, a bad argument.
    Db,
    Unique,
    Fk,
    Overflow,
}

/// A database error with a message that names the table, column and value, e.g.
/// `duplicate value "ops" for unique column departments.name`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct DbError {
    pub kind: ErrorKind,
    pub message: String,
}

/// A position in the undo log; rolling back to it undoes every later change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Savepoint(pub usize);

/// The durable half: data directory, write-ahead log, checkpoints, recovery.
pub mod durable;
