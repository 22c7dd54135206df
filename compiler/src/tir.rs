//! Typed IR: what the checker produces and codegen consumes. Names are resolved (locals
//! to `LocalId`s, calls to function ids or builtin names), every expression carries its
//! static type, operators are already specialised by type (`AddInt` vs `AddFloat`), and
//! sugar is gone (compound assignment, `else if`, interpolation). Codegen needs no
//! type information beyond what is written here.

use std::fmt;

use crate::diag::Span;
use wo_bytecode::{Cmp, QueryDesc};

pub type FuncId = usize;
pub type ClassId = usize;
pub type LocalId = usize;
pub type GlobalId = usize;

/// A static type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ty {
    Int,
    Float,
    Bool,
    Text,
    /// The type of the literal `nil` before it meets a context.
    Nil,
    /// `?T`; never nests and never wraps `Nil`.
    Nullable(Box<Ty>),
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Class(ClassId),
    Error,
    Task(Box<Ty>),
    /// No value: what `print(…)` returns.
    Void,
    /// The type of an expression that already produced a diagnostic; it is compatible
    /// with everything so one mistake reports once.
    Unknown,
}

/// The deepest a type may nest: `multi`, `map<…>` and `task<…>` one inside another,
/// `Int` being 1 level and `multi Int` 2 (`?` adds none: it never nests, so it cannot
/// grow a type by repetition). Each expression carries its type,
/// so without a bound a chain of `let a1 = [a0]` statements made types as deep as the
/// program is long, and compiling it took quadratic time and memory (20,000 lines:
/// 94 s; a 100,000-deep annotation used 20,000 times: 24 GB).
pub const MAX_TYPE_DEPTH: usize = 64;

impl Ty {
    /// How many levels of types stand one inside another in this one (see
    /// [`MAX_TYPE_DEPTH`]).
    pub fn depth(&self) -> usize {
        match self {
            Ty::Nullable(t) => t.depth(),
            Ty::List(t) | Ty::Task(t) => 1 + t.depth(),
            Ty::Map(k, v) => 1 + k.depth().max(v.depth()),
            _ => 1,
        }
    }

    /// Whether this type contains `Unknown` (an error was already reported inside it).
    pub fn has_unknown(&self) -> bool {
        match self {
            Ty::Unknown => true,
            Ty::Nullable(x) | Ty::List(x) | Ty::Task(x) => x.has_unknown(),
            Ty::Map(k, v) => k.has_unknown() || v.has_unknown(),
            _ => false,
        }
    }

    pub fn nullable(t: Ty) -> Ty {
        match t {
            Ty::Nullable(_) | Ty::Nil | Ty::Unknown => t,
            t => Ty::Nullable(Box::new(t)),
        }
    }

    /// `T` for `?T`, otherwise the type itself.
    pub fn strip(&self) -> &Ty {
        match self {
            Ty::Nullable(t) => t,
            t => t,
        }
    }

    pub fn is_nullable(&self) -> bool {
        matches!(self, Ty::Nullable(_) | Ty::Nil)
    }

    /// Renders the type as the user writes it, with class names from `classes`.
    pub fn display<'a>(&'a self, classes: &'a [String]) -> TyDisplay<'a> {
        TyDisplay { ty: self, classes }
    }
}

pub struct TyDisplay<'a> {
    ty: &'a Ty,
    classes: &'a [String],
}

impl<'a> fmt::Display for TyDisplay<'a> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sub = |t: &'a Ty| TyDisplay {
            ty: t,
            classes: self.classes,
        };
        match self.ty {
            Ty::Int => write!(f, "Int"),
            Ty::Float => write!(f, "Float"),
            Ty::Bool => write!(f, "Bool"),
            Ty::Text => write!(f, "Text"),
            Ty::Nil => write!(f, "nil"),
            Ty::Nullable(t) => write!(f, "?{}", sub(t)),
            Ty::List(t) => write!(f, "multi {}", sub(t)),
            Ty::Map(k, v) => write!(f, "map<{}, {}>", sub(k), sub(v)),
            Ty::Class(c) => write!(
                f,
                "{}",
                self.classes.get(*c).map(String::as_str).unwrap_or("?")
            ),
            Ty::Error => write!(f, "Error"),
            Ty::Task(t) if **t == Ty::Void => write!(f, "task"),
            Ty::Task(t) => write!(f, "task<{}>", sub(t)),
            Ty::Void => write!(f, "no value"),
            Ty::Unknown => write!(f, "unknown"),
        }
    }
}

/// A whole checked program.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub funcs: Vec<Func>,
    pub classes: Vec<ClassInfo>,
    /// Constants in evaluation order (dependencies first).
    pub globals: Vec<Global>,
    pub init_order: Vec<GlobalId>,
    pub main: FuncId,
    /// The class of each table, in table order.
    pub tables: Vec<ClassId>,
}

#[derive(Debug, Clone)]
pub struct ClassInfo {
    pub name: String,
    pub fields: Vec<FieldInfo>,
    pub methods: Vec<(String, FuncId)>,
    /// Set for `@table` classes: their values are row handles.
    pub table: Option<TableInfo>,
}

/// What `@table(…)` and `@unique` declared.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Position in [`Program::tables`] (and the image's table list).
    pub index: usize,
    /// The stored name.
    pub name: String,
    pub indexes: Vec<(Vec<u16>, wo_bytecode::image::IndexKind)>,
    pub durable: bool,
    /// `@table(was: "old")`: the stored name the table had.
    pub was: Option<String>,
    /// `@was("old")` on columns: `(column, the stored name it had)`.
    pub column_was: Vec<(u16, String)>,
    /// Columns whose default is a literal of the column's type: `(column, value)`.
    pub column_default: Vec<(u16, wo_bytecode::image::ColumnDefault)>,
}

#[derive(Debug, Clone)]
pub struct FieldInfo {
    pub name: String,
    pub ty: Ty,
    /// Evaluated at construction when the literal omits the field.
    pub default: Option<Expr>,
}

#[derive(Debug, Clone)]
pub struct Global {
    pub name: String,
    pub ty: Ty,
    pub value: Expr,
    /// Locals the initialiser uses (the error variables of `try … catch`).
    pub n_locals: usize,
}

#[derive(Debug, Clone)]
pub struct Func {
    pub name: String,
    pub params: Vec<LocalId>,
    pub ret: Ty,
    pub body: Block,
    pub span: Span,
    /// Number of distinct locals (ids are `0 … n_locals-1`).
    pub n_locals: usize,
}

pub type Block = Vec<Stmt>;

#[derive(Debug, Clone)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub enum StmtKind {
    /// Declares (and initialises) a local.
    Let(LocalId, Expr),
    SetLocal(LocalId, Expr),
    SetField {
        obj: Expr,
        field: u16,
        value: Expr,
    },
    SetList {
        list: Expr,
        index: Expr,
        value: Expr,
    },
    SetMap {
        map: Expr,
        key: Expr,
        value: Expr,
    },
    Expr(Expr),
    Return(Option<Expr>),
    Break,
    Continue,
    If {
        cond: Expr,
        then: Block,
        els: Block,
    },
    While {
        cond: Expr,
        body: Block,
    },
    ForList {
        var: LocalId,
        list: Expr,
        body: Block,
    },
    /// `for var in text`: each character, as a one-character Text, by a byte cursor
    /// over the text (evaluated once).
    ForText {
        var: LocalId,
        text: Expr,
        body: Block,
    },
    /// `for var in range(start, stop, step)`: a counted loop, bounds evaluated once.
    ForRange {
        var: LocalId,
        start: Expr,
        stop: Expr,
        step: Expr,
        body: Block,
    },
    ForMap {
        key: LocalId,
        value: LocalId,
        map: Expr,
        body: Block,
    },
    Try {
        body: Block,
        err: LocalId,
        handler: Block,
    },
    /// A nested scope (the desugaring of compound assignment uses it).
    Block(Block),
    /// `row.col = value` on a table row.
    SetRowField {
        row: Expr,
        table: usize,
        col: u16,
        value: Expr,
    },
    /// `delete row`.
    Delete {
        row: Expr,
        table: usize,
    },
    /// `transaction { … }`.
    Transaction(Block),
    /// `for v in <query over a table>`: the rows (and the selected values) are
    /// decided before the body runs; rows deleted meanwhile are skipped.
    ForQuery {
        var: LocalId,
        /// The query with `select` left out: it yields rows.
        rows: Box<Query>,
        /// The selected value per row (in terms of the query variable), if not the
        /// row itself.
        select: Option<Expr>,
        body: Block,
    },
}

/// Where a query's rows come from.
#[derive(Debug, Clone)]
pub enum QuerySource {
    /// A table: the engine runs `desc` (the pushed-down part) with `args`.
    Table {
        table: usize,
        desc: QueryDesc,
        args: Vec<Expr>,
    },
    /// A list, filtered in bytecode.
    List(Expr),
}

/// A `from … select …` after planning: what the engine does (in the source) and what
/// is left for bytecode.
#[derive(Debug, Clone)]
pub struct Query {
    pub var: LocalId,
    pub source: QuerySource,
    /// `where` clauses not pushed into the engine, evaluated per row in order.
    pub residual: Vec<Expr>,
    /// Over a list: the values compared with the element or one of its fields in
    /// `where` (`x.f <op> value`), each evaluated once into its local before the walk,
    /// as the engine's arguments are for a table.
    pub values: Vec<(LocalId, Expr)>,
    /// `order by` keys evaluated in bytecode (empty when the engine orders).
    pub order: Vec<(Expr, bool)>,
    /// `skip`/`take` applied in bytecode (absent when the engine applies them).
    pub skip: Option<Expr>,
    pub take: Option<Expr>,
    /// `None` selects the row (or element) itself.
    pub select: Option<Expr>,
    /// Whether the query's elements are rows of a table (it reads a table, or a list of
    /// rows): a row deleted before the query or its loop reaches it is skipped.
    pub rows: bool,
    /// The elements are rows that may be nil (a list of `?T`): a nil is kept, and only
    /// a row is checked.
    pub rows_nullable: bool,
}

impl Query {
    /// The query as a list for a reader that only reads it (an aggregate's argument,
    /// a `for` loop): a query over a list of values that asks nothing of it
    /// (`from x in xs select x`) is the list itself, not a copy. Where the list may
    /// escape, the query is always a new list (codegen copies it).
    pub fn into_read_only(self, ty: Ty, span: Span) -> Expr {
        let plain = !self.rows
            && self.residual.is_empty()
            && self.order.is_empty()
            && self.skip.is_none()
            && self.take.is_none()
            && self.select.is_none();
        match self.source {
            QuerySource::List(e) if plain => e,
            _ => Expr::new(ExprKind::Query(Box::new(self)), ty, span),
        }
    }
}

/// Binary operators, already specialised by operand type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    AddInt,
    SubInt,
    MulInt,
    DivInt,
    RemInt,
    AddFloat,
    SubFloat,
    MulFloat,
    DivFloat,
    RemFloat,
    CmpInt(Cmp),
    CmpFloat(Cmp),
    CmpText(Cmp),
    /// `<`, `<=`, `>`, `>=` in a query's `where` with a `?T` operand (Int, Float or
    /// Text inside): false when either side is nil, as SQL's `WHERE` keeps no row
    /// whose comparison met a NULL; otherwise the comparison of the values.
    CmpOrNil(Cmp),
    Eq,
    Ne,
    Concat,
    And,
    Or,
    Coalesce,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    NegInt,
    NegFloat,
    Not,
    IntToFloat,
    FloatToInt,
    Unwrap,
    ToText,
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
    Nil,
    Local(LocalId),
    Global(GlobalId),
    Call {
        func: FuncId,
        args: Vec<Expr>,
    },
    Builtin {
        name: &'static str,
        args: Vec<Expr>,
    },
    /// `spawn f(args)` (a method's receiver is its first argument).
    Spawn {
        func: FuncId,
        args: Vec<Expr>,
    },
    /// `join(t)`.
    Join(Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// Text pieces (all already `Text`) joined.
    Concat(Vec<Expr>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    /// A new object: one expression per field in declaration order; `order` is the
    /// order in which they are evaluated (the order written, then the defaults).
    New {
        class: ClassId,
        fields: Vec<Expr>,
        order: Vec<usize>,
    },
    Field(Box<Expr>, u16),
    ListIndex(Box<Expr>, Box<Expr>),
    MapIndex(Box<Expr>, Box<Expr>),
    Try {
        body: Box<Expr>,
        err: LocalId,
        handler: Box<Expr>,
    },
    /// `insert T { … }`: one expression per column, `order` as for `New`.
    Insert {
        table: usize,
        fields: Vec<Expr>,
        order: Vec<usize>,
    },
    /// `row.col` on a table row.
    RowField(Box<Expr>, usize, u16),
    /// `row.id`.
    RowId(Box<Expr>),
    /// `T.find(id)`.
    Find {
        table: usize,
        id: Box<Expr>,
    },
    Query(Box<Query>),
    /// An aggregate the engine computes alone: `desc.agg` says which.
    DbAggregate {
        desc: QueryDesc,
        args: Vec<Expr>,
    },
}

impl Expr {
    pub fn new(kind: ExprKind, ty: Ty, span: Span) -> Expr {
        Expr { kind, ty, span }
    }
}
