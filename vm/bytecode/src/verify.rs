//! The verifier: the static checks every image passes before the VM runs it, whether it
//! came from the compiler or from a `.wob` file. After [`verify`] accepts an image the
//! interpreter may index registers, constants, functions, classes, builtins, globals,
//! tables, query descriptors and jump targets without bounds checks of its own, table
//! definitions and query descriptors are consistent (so the VM can build its database
//! from them), and no function can run off the end of its code. What stays dynamic (value types, field indices against the object's
//! actual class, arithmetic traps) is the interpreter's job.
//!
//! It sits apart from the file reader so compiler output can be checked the same way
//! (codegen tests run it on everything they produce).

use std::fmt;

use crate::builtins;
use crate::image::{
    ColumnType, Function, Image, IndexKind as DbIndexKind, QueryAgg, QueryCol, MAX_GLOBALS,
};
use crate::op::{Op, OperandRef};
use crate::types::Reg;

/// The kind of table an index operand points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexKind {
    Const,
    Func,
    Class,
    Builtin,
    Global,
    Table,
    Query,
}

impl IndexKind {
    /// The prefix the disassembler prints before such an index (`k3`, `f1`, …).
    pub fn prefix(self) -> &'static str {
        match self {
            IndexKind::Const => "k",
            IndexKind::Func => "f",
            IndexKind::Class => "c",
            IndexKind::Builtin => "b",
            IndexKind::Global => "g",
            IndexKind::Table => "t",
            IndexKind::Query => "q",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            IndexKind::Const => "constants",
            IndexKind::Func => "functions",
            IndexKind::Class => "classes",
            IndexKind::Builtin => "builtins",
            IndexKind::Global => "globals",
            IndexKind::Table => "tables",
            IndexKind::Query => "queries",
        }
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IndexKind::Const => "constant",
            IndexKind::Func => "function",
            IndexKind::Class => "class",
            IndexKind::Builtin => "builtin",
            IndexKind::Global => "global",
            IndexKind::Table => "table",
            IndexKind::Query => "query",
        })
    }
}

/// The first rule an image breaks. Messages name the function and pc where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    #[error(
        "function `{function}` pc {pc}: register r{reg} out of range (function has {n_regs} \
         registers)"
    )]
    Register {
        function: String,
        pc: usize,
        reg: u16,
        n_regs: u16,
    },
    #[error(
        "function `{function}` pc {pc}: {len} registers from r{base} out of range (function \
         has {n_regs} registers)"
    )]
    RegisterRun {
        function: String,
        pc: usize,
        base: u16,
        len: u32,
        n_regs: u16,
    },
    #[error(
        "function `{function}` pc {pc}: {kind} {}{index} out of range (image has {count} {})",
        .kind.prefix(),
        .kind.plural()
    )]
    Index {
        function: String,
        pc: usize,
        kind: IndexKind,
        index: u32,
        count: usize,
    },
    #[error(
        "function `{function}` pc {pc}: jump target @{target} out of range (function has \
         {len} instructions)"
    )]
    JumpTarget {
        function: String,
        pc: usize,
        target: u32,
        len: usize,
    },
    #[error(
        "function `{function}` pc {pc}: builtin `{builtin}` called with {n} arguments (it \
         takes {arity})"
    )]
    BuiltinArgs {
        function: String,
        pc: usize,
        builtin: String,
        n: u16,
        arity: u16,
    },
    #[error("function `{function}` pc {pc}: SPAWN passes {n} arguments to `{callee}`, which takes {arity}")]
    SpawnArgs {
        function: String,
        pc: usize,
        callee: String,
        n: u16,
        arity: u16,
    },
    #[error("function `{function}` pc {pc}: field index {field} out of range (at most 65534)")]
    FieldIndex {
        function: String,
        pc: usize,
        field: u16,
    },
    #[error(
        "function `{function}` pc {pc}: column .{field} out of range (table `{table}` has \
         {n_columns} columns)"
    )]
    ColumnIndex {
        function: String,
        pc: usize,
        table: String,
        field: u16,
        n_columns: usize,
    },
    /// A table definition that contradicts its class or itself.
    #[error("table t{table} `{name}`: {problem}")]
    Table {
        table: usize,
        name: String,
        problem: String,
    },
    /// A query descriptor that reads a column, argument or table that does not exist.
    #[error("query q{query}: {problem}")]
    Query { query: usize, problem: String },
    #[error("the image asks for {n_globals} global slots (at most {max})")]
    TooManyGlobals { n_globals: u32, max: u32 },
    #[error(
        "function `{function}` pc {pc}: TRY_ENTER handler @{target} is not after the \
         TRY_ENTER (a handler must come later in the code)"
    )]
    HandlerNotForward {
        function: String,
        pc: usize,
        target: u32,
    },
    #[error("function `{function}` has no code")]
    EmptyCode { function: String },
    #[error(
        "function `{function}` pc {pc}: the last instruction is {mnemonic}, not RET, RET_NIL \
         or JUMP, so execution could run off the end"
    )]
    FallsOffEnd {
        function: String,
        pc: usize,
        mnemonic: &'static str,
    },
    #[error("function `{function}` has {n_regs} registers, fewer than its arity {arity}")]
    RegsBelowArity {
        function: String,
        arity: u16,
        n_regs: u16,
    },
    #[error("function `{function}` has {n_code} instructions but {n_pos} source positions")]
    PosCount {
        function: String,
        n_code: usize,
        n_pos: usize,
    },
    #[error(
        "function `{function}` pc {pc}: source file index {file} out of range (image has \
         {n_files} files)"
    )]
    PosFile {
        function: String,
        pc: usize,
        file: u32,
        n_files: usize,
    },
    #[error("function `{function}` has {len} instructions, more than a pc can address")]
    CodeTooLong { function: String, len: usize },
    #[error("entry function f{entry} does not exist (image has {n_functions} functions)")]
    NoEntry { entry: u32, n_functions: usize },
    #[error("entry function `{function}` has arity {arity} (expected 0 or 1)")]
    EntryArity { function: String, arity: u16 },
    #[error("init function f{init} does not exist (image has {n_functions} functions)")]
    NoInit { init: u32, n_functions: usize },
    #[error("init function `{function}` has arity {arity} (expected 0)")]
    InitArity { function: String, arity: u16 },
    #[error("builtin b{index} `{name}` is not in this wo's builtin catalogue")]
    UnknownBuiltin { index: usize, name: String },
    #[error(
        "builtin b{index} `{name}` is declared with arity {arity}, but the catalogue's \
         `{name}` takes {expected}"
    )]
    BuiltinArity {
        index: usize,
        name: String,
        arity: u16,
        expected: u16,
    },
}

/// Checks every rule listed in `docs/image-format.md` ("What the verifier guarantees")
/// and returns the first violation.
pub fn verify(image: &Image) -> Result<(), VerifyError> {
    for (index, b) in image.builtins.iter().enumerate() {
        let spec = builtins::lookup(&b.name).ok_or_else(|| VerifyError::UnknownBuiltin {
            index,
            name: b.name.clone(),
        })?;
        if spec.arity != b.arity {
            return Err(VerifyError::BuiltinArity {
                index,
                name: b.name.clone(),
                arity: b.arity,
                expected: spec.arity,
            });
        }
    }

    if image.n_globals > MAX_GLOBALS {
        return Err(VerifyError::TooManyGlobals {
            n_globals: image.n_globals,
            max: MAX_GLOBALS,
        });
    }

    let n_functions = image.functions.len();
    let entry = image
        .functions
        .get(image.entry.index())
        .ok_or(VerifyError::NoEntry {
            entry: image.entry.0,
            n_functions,
        })?;
    if entry.arity > 1 {
        return Err(VerifyError::EntryArity {
            function: entry.name.clone(),
            arity: entry.arity,
        });
    }
    if let Some(init) = image.init {
        let f = image
            .functions
            .get(init.index())
            .ok_or(VerifyError::NoInit {
                init: init.0,
                n_functions,
            })?;
        if f.arity != 0 {
            return Err(VerifyError::InitArity {
                function: f.name.clone(),
                arity: f.arity,
            });
        }
    }

    verify_schema(image)?;
    for f in &image.functions {
        verify_function(image, f)?;
    }
    Ok(())
}

/// Checks the table definitions and query descriptors on their own (the instructions
/// that use them are checked with their functions). The VM runs this at link time too,
/// since it builds its database from them.
pub fn verify_schema(image: &Image) -> Result<(), VerifyError> {
    let n_tables = image.tables.len();
    // The table of each class, looked up (helper-76: 64,000 tables searched each
    // other).
    let mut table_of_class: std::collections::HashMap<u32, usize> =
        std::collections::HashMap::new();
    for (ti, t) in image.tables.iter().enumerate() {
        let bad = |problem: String| VerifyError::Table {
            table: ti,
            name: t.name.clone(),
            problem,
        };
        let class = image.classes.get(t.class.index()).ok_or_else(|| {
            bad(format!(
                "class c{} out of range (image has {} classes)",
                t.class.0,
                image.classes.len()
            ))
        })?;
        if let Some(&other) = table_of_class.get(&t.class.0) {
            return Err(bad(format!(
                "class `{}` already belongs to table t{other} `{}`",
                class.name, image.tables[other].name
            )));
        }
        table_of_class.insert(t.class.0, ti);
        if class.fields.len() != t.columns.len() {
            return Err(bad(format!(
                "has {} columns but class `{}` has {} fields",
                t.columns.len(),
                class.name,
                class.fields.len()
            )));
        }
        for (i, (col, field)) in t.columns.iter().zip(&class.fields).enumerate() {
            if &col.name != field {
                return Err(bad(format!(
                    "column {i} is named `{}` but field {i} of class `{}` is `{field}`",
                    col.name, class.name
                )));
            }
            if let ColumnType::Ref(target) = col.ty {
                if idx(target) >= n_tables {
                    return Err(bad(format!(
                        "column `{}` refers to table t{target} (image has {n_tables} tables)",
                        col.name
                    )));
                }
            }
        }
        for (ii, index) in t.indexes.iter().enumerate() {
            if index.columns.is_empty() {
                return Err(bad(format!("index {ii} has no columns")));
            }
            if index.kind == DbIndexKind::Sorted && index.columns.len() != 1 {
                return Err(bad(format!(
                    "sorted index {ii} has {} columns (exactly one expected)",
                    index.columns.len()
                )));
            }
            for &c in &index.columns {
                if usize::from(c) >= t.columns.len() {
                    return Err(bad(format!(
                        "index {ii} names column {c} (table has {} columns)",
                        t.columns.len()
                    )));
                }
            }
        }
    }

    for (qi, q) in image.queries.iter().enumerate() {
        let bad = |problem: String| VerifyError::Query { query: qi, problem };
        let t = image.tables.get(idx(q.table)).ok_or_else(|| {
            bad(format!(
                "table t{} out of range (image has {n_tables} tables)",
                q.table
            ))
        })?;
        let column = |what: &str, col: QueryCol| match col {
            QueryCol::Col(c) if usize::from(c) >= t.columns.len() => Err(bad(format!(
                "{what} reads column {c} (table `{}` has {} columns)",
                t.name,
                t.columns.len()
            ))),
            _ => Ok(()),
        };
        let arg = |what: &str, a: u16| {
            if a < q.n_args {
                Ok(())
            } else {
                Err(bad(format!(
                    "{what} reads argument {a} (the query takes {})",
                    q.n_args
                )))
            }
        };
        for (i, p) in q.preds.iter().enumerate() {
            column(&format!("predicate {i}"), p.col)?;
            arg(&format!("predicate {i}"), p.arg)?;
        }
        for (i, &(col, _)) in q.order.iter().enumerate() {
            column(&format!("order key {i}"), col)?;
        }
        if let Some(a) = q.skip {
            arg("skip", a)?;
        }
        if let Some(a) = q.take {
            arg("take", a)?;
        }
        match q.agg {
            QueryAgg::Rows | QueryAgg::Count | QueryAgg::Exists => {}
            QueryAgg::Sum(col) | QueryAgg::Min(col) | QueryAgg::Max(col) | QueryAgg::Avg(col) => {
                column("the aggregate", col)?;
            }
        }
    }
    Ok(())
}

fn verify_function(image: &Image, f: &Function) -> Result<(), VerifyError> {
    let function = || f.name.clone();
    if f.n_regs < f.arity {
        return Err(VerifyError::RegsBelowArity {
            function: function(),
            arity: f.arity,
            n_regs: f.n_regs,
        });
    }
    if f.code.is_empty() {
        return Err(VerifyError::EmptyCode {
            function: function(),
        });
    }
    if u32::try_from(f.code.len()).is_err() {
        return Err(VerifyError::CodeTooLong {
            function: function(),
            len: f.code.len(),
        });
    }
    if f.pos.len() != f.code.len() {
        return Err(VerifyError::PosCount {
            function: function(),
            n_code: f.code.len(),
            n_pos: f.pos.len(),
        });
    }
    for (pc, p) in f.pos.iter().enumerate() {
        if idx(p.file) >= image.files.len() {
            return Err(VerifyError::PosFile {
                function: function(),
                pc,
                file: p.file,
                n_files: image.files.len(),
            });
        }
    }

    for (pc, op) in f.code.iter().enumerate() {
        verify_op(image, f, pc, op)?;
    }

    let pc = f.code.len() - 1;
    match f.code.get(pc) {
        Some(op) if op.is_terminator() => Ok(()),
        Some(op) => Err(VerifyError::FallsOffEnd {
            function: function(),
            pc,
            mnemonic: op.mnemonic(),
        }),
        None => Err(VerifyError::EmptyCode {
            function: function(),
        }),
    }
}

/// A u32 table index as a `usize` (saturating, so a comparison against a length stays
/// correct even where `usize` is narrower).
fn idx(i: u32) -> usize {
    usize::try_from(i).unwrap_or(usize::MAX)
}

fn verify_op(image: &Image, f: &Function, pc: usize, op: &Op) -> Result<(), VerifyError> {
    let function = || f.name.clone();
    let index = |kind: IndexKind, index: u32, count: usize| {
        if idx(index) < count {
            Ok(())
        } else {
            Err(VerifyError::Index {
                function: function(),
                pc,
                kind,
                index,
                count,
            })
        }
    };

    // The first register of a run that is only read (`b` of NEW_LIST, NEW_MAP,
    // CONCAT_N, NEW_OBJ) is checked with its run below instead: an empty run may start
    // one past the last register (`[]` compiled at the top of the frame reads nothing).
    let run_base = match op {
        Op::NewList { .. }
        | Op::NewMap { .. }
        | Op::ConcatN { .. }
        | Op::NewObj { .. }
        | Op::DbInsert { .. }
        | Op::DbQuery { .. } => Some("b"),
        Op::Spawn { .. } => Some("base"),
        _ => None,
    };
    for (name, operand) in op.operands() {
        match operand {
            OperandRef::Reg(_) if run_base == Some(name) => {}
            OperandRef::Reg(r) => {
                if r.0 >= f.n_regs {
                    return Err(VerifyError::Register {
                        function: function(),
                        pc,
                        reg: r.0,
                        n_regs: f.n_regs,
                    });
                }
            }
            OperandRef::Const(k) => index(IndexKind::Const, k.0, image.consts.len())?,
            OperandRef::Func(i) => index(IndexKind::Func, i.0, image.functions.len())?,
            OperandRef::Class(c) => index(IndexKind::Class, c.0, image.classes.len())?,
            OperandRef::Table(t) => index(IndexKind::Table, t.0, image.tables.len())?,
            OperandRef::Query(q) => index(IndexKind::Query, q.0, image.queries.len())?,
            OperandRef::Builtin(b) => {
                index(IndexKind::Builtin, u32::from(b.0), image.builtins.len())?;
            }
            OperandRef::Global(g) => {
                let n_globals = usize::try_from(image.n_globals).unwrap_or(usize::MAX);
                index(IndexKind::Global, g.0, n_globals)?;
            }
            OperandRef::Pc(t) => {
                if t.index() >= f.code.len() {
                    return Err(VerifyError::JumpTarget {
                        function: function(),
                        pc,
                        target: t.0,
                        len: f.code.len(),
                    });
                }
            }
            OperandRef::Field(field) => {
                if field.0 == u16::MAX {
                    return Err(VerifyError::FieldIndex {
                        function: function(),
                        pc,
                        field: field.0,
                    });
                }
            }
            OperandRef::Imm(_)
            | OperandRef::Count(_)
            | OperandRef::Cmp(_)
            | OperandRef::Bool(_) => {}
        }
    }

    // Register runs. Every index operand is in range by now, so the lookups succeed.
    let run = |base: Reg, len: u32| {
        if u64::from(base.0) + u64::from(len) <= u64::from(f.n_regs) {
            Ok(())
        } else {
            Err(VerifyError::RegisterRun {
                function: function(),
                pc,
                base: base.0,
                len,
                n_regs: f.n_regs,
            })
        }
    };
    match *op {
        Op::NewList { b, n, .. } | Op::ConcatN { b, n, .. } => run(b, u32::from(n))?,
        Op::NewMap { b, n, .. } => run(b, 2 * u32::from(n))?,
        // A counted loop keeps its counter, count and step in `R[a] … R[a+2]`.
        Op::ForPrep { a, .. } | Op::ForLoop { a, .. } => run(a, 3)?,
        Op::CallBuiltin { f: bi, base, n } => {
            run(base, u32::from(n))?;
            if let Some(b) = image.builtins.get(bi.index()) {
                if b.arity != n {
                    return Err(VerifyError::BuiltinArgs {
                        function: function(),
                        pc,
                        builtin: b.name.clone(),
                        n,
                        arity: b.arity,
                    });
                }
            }
        }
        Op::Call { f: callee, base } => {
            if let Some(callee) = image.functions.get(callee.index()) {
                run(base, u32::from(callee.arity))?;
            }
        }
        Op::Spawn {
            f: callee, base, n, ..
        } => {
            run(base, u32::from(n))?;
            if let Some(callee) = image.functions.get(callee.index()) {
                if callee.arity != n {
                    return Err(VerifyError::SpawnArgs {
                        function: function(),
                        pc,
                        callee: callee.name.clone(),
                        n,
                        arity: callee.arity,
                    });
                }
            }
        }
        Op::NewObj { c, b, .. } => {
            if let Some(class) = image.classes.get(c.index()) {
                let n_fields = u32::try_from(class.fields.len()).unwrap_or(u32::MAX);
                run(b, n_fields)?;
            }
        }
        Op::DbInsert { t, b, .. } => {
            if let Some(table) = image.tables.get(t.index()) {
                let n_columns = u32::try_from(table.columns.len()).unwrap_or(u32::MAX);
                run(b, n_columns)?;
            }
        }
        Op::DbQuery { q, b, .. } => {
            if let Some(desc) = image.queries.get(q.index()) {
                run(b, u32::from(desc.n_args))?;
            }
        }
        // A trap delivered to a handler at or before its TRY_ENTER would loop without a
        // back edge, so without spending the instruction budget.
        Op::TryEnter { t, .. } if t.index() <= pc => {
            return Err(VerifyError::HandlerNotForward {
                function: function(),
                pc,
                target: t.0,
            });
        }
        Op::DbGetField { t, f: field, .. } | Op::DbUpdateField { t, f: field, .. } => {
            if let Some(table) = image.tables.get(t.index()) {
                if field.index() >= table.columns.len() {
                    return Err(VerifyError::ColumnIndex {
                        function: function(),
                        pc,
                        table: table.name.clone(),
                        field: field.0,
                        n_columns: table.columns.len(),
                    });
                }
            }
        }
        _ => {}
    }
    Ok(())
}
