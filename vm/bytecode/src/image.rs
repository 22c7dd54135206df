//! The in-memory form of a bytecode image: what the compiler produces, what `.wob`
//! files serialize (see `docs/image-format.md` and the `format` module), and what the
//! VM runs after the verifier has accepted it.

use crate::op::Op;
use crate::types::{ClassIdx, Cmp, FuncIdx};

/// A constant-pool entry.
#[derive(Debug, Clone)]
pub enum Const {
    Int(i64),
    Float(f64),
    Text(String),
}

/// The same constant: Floats compare by their bits, as the compiler's pool keys them
/// (`-0.0` is not `0.0`, and a NaN equals itself), so an image equals its `.wob` round
/// trip whatever it holds (helper-81: a Float column defaulting to NaN made the fuzz
/// targets' check `read_image(write_image(i)) == i` fail on a correct image).
impl PartialEq for Const {
    fn eq(&self, other: &Const) -> bool {
        match (self, other) {
            (Const::Int(a), Const::Int(b)) => a == b,
            (Const::Float(a), Const::Float(b)) => a.to_bits() == b.to_bits(),
            (Const::Text(a), Const::Text(b)) => a == b,
            _ => false,
        }
    }
}

/// Where an instruction came from, for trap reports and `wo disasm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SrcPos {
    /// Index into [`Image::files`].
    pub file: u32,
    pub line: u32,
    pub col: u32,
}

/// One compiled function (methods are functions whose first parameter is `self`).
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    /// Display name: `main`, `area`, `Point.norm1`.
    pub name: String,
    /// Number of parameters, passed in registers `0 … arity-1`.
    pub arity: u16,
    /// Registers the frame needs (at least `arity`).
    pub n_regs: u16,
    pub code: Vec<Op>,
    /// One position per instruction (`pos.len() == code.len()`).
    pub pos: Vec<SrcPos>,
}

/// A class: its name and field names in declaration order (used to print objects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    pub fields: Vec<String>,
}

/// A builtin the image links against, by name and arity; the loader resolves it in the
/// VM's catalogue (see [`crate::builtins`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinRef {
    pub name: String,
    pub arity: u16,
}

/// A column's type; `Ref` names a table by its index in [`Image::tables`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Int,
    Float,
    Bool,
    Text,
    Ref(u32),
}

/// One column of a table: the field of the same position in the table's class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    pub nullable: bool,
    /// `@was("old")`: the stored name the column had (a rename, `docs/schema.md`).
    pub was: Option<String>,
    /// The field's default when it is a literal: what existing rows get when a data
    /// directory gains this column.
    pub default: Option<ColumnDefault>,
}

/// A literal column default (format version 6).
#[derive(Debug, Clone)]
pub enum ColumnDefault {
    Nil,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

/// The same default: Floats compare by their bits, as [`Const`]s do (so `Eq` holds:
/// a NaN default equals itself).
impl PartialEq for ColumnDefault {
    fn eq(&self, other: &ColumnDefault) -> bool {
        match (self, other) {
            (ColumnDefault::Nil, ColumnDefault::Nil) => true,
            (ColumnDefault::Int(a), ColumnDefault::Int(b)) => a == b,
            (ColumnDefault::Float(a), ColumnDefault::Float(b)) => a.to_bits() == b.to_bits(),
            (ColumnDefault::Bool(a), ColumnDefault::Bool(b)) => a == b,
            (ColumnDefault::Text(a), ColumnDefault::Text(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for ColumnDefault {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// `index: [cols]`: equality lookups.
    Hash,
    /// `@unique`: a hash index whose non-nil keys are distinct.
    Unique,
    /// `sorted: [col]`: ranges and ordering.
    Sorted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// Column positions.
    pub columns: Vec<u16>,
    pub kind: IndexKind,
}

/// A `@table` class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The class whose instances are this table's rows (its fields are the columns).
    pub class: ClassIdx,
    /// The stored name (`@table(name: …)`, default the class name).
    pub name: String,
    pub columns: Vec<Column>,
    pub indexes: Vec<Index>,
    /// `durable: false` tables are never logged.
    pub durable: bool,
    /// `@table(was: "old")`: the stored name the table had (a rename).
    pub was: Option<String>,
}

/// What a query predicate or sort key reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryCol {
    Id,
    Col(u16),
}

/// `row.col <op> arg[arg]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryPred {
    pub col: QueryCol,
    pub op: Cmp,
    pub arg: u16,
}

/// What `DB_QUERY` produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryAgg {
    /// The list of rows.
    Rows,
    Count,
    Exists,
    Sum(QueryCol),
    Min(QueryCol),
    Max(QueryCol),
    Avg(QueryCol),
}

/// A query the engine runs by itself (the parts of a `from … select` the compiler
/// could push down): all predicates hold; order by the keys (`true` = descending);
/// then skip and take, whose values are arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryDesc {
    pub table: u32,
    pub preds: Vec<QueryPred>,
    pub order: Vec<(QueryCol, bool)>,
    pub skip: Option<u16>,
    pub take: Option<u16>,
    /// Number of argument registers `DB_QUERY` passes.
    pub n_args: u16,
    pub agg: QueryAgg,
}

/// The most global slots an image may ask for (one per `const`; 2^20 slots are 24 MiB
/// of VM memory). The verifier refuses more, so a hostile image cannot make the VM
/// allocate without bound.
pub const MAX_GLOBALS: u32 = 1 << 20;

/// A whole program.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Image {
    /// Source file names, for positions.
    pub files: Vec<String>,
    pub consts: Vec<Const>,
    pub functions: Vec<Function>,
    pub classes: Vec<Class>,
    pub builtins: Vec<BuiltinRef>,
    /// The `@table` classes, in declaration order.
    pub tables: Vec<Table>,
    /// Query descriptors used by `DB_QUERY`.
    pub queries: Vec<QueryDesc>,
    /// Number of global slots (one per `const`), all nil until `init` sets them. At
    /// most [`MAX_GLOBALS`].
    pub n_globals: u32,
    /// Runs before `entry`: evaluates the constants. Arity 0.
    pub init: Option<FuncIdx>,
    /// `main`: arity 0, or 1 (then it receives the command-line arguments as a list).
    pub entry: FuncIdx,
}
