//! The disassembler behind `wo disasm`: an image as text, one function after another,
//! each instruction on its own line with its pc, source line, mnemonic and operands,
//! interleaved with the source lines it came from and commented with what an index
//! means (a constant's value, a callee's name, a class's fields, a table's columns, what
//! a query descriptor asks for). The output is
//! deterministic so snapshot tests can pin it.
//!
//! It works on any image, verified or not: an index out of range simply gets no comment.

use std::fmt::Write as _;

use crate::image::{Class, Const, Function, Image, QueryAgg, QueryCol, QueryDesc, Table};
use crate::op::{Op, OperandRef, OPCODES};
use crate::types::{Pc, Reg};

/// Longest Text constant shown in a comment, in characters.
const MAX_TEXT: usize = 40;
/// Register runs longer than this are shown as `r2..r9` instead of one by one.
const MAX_LISTED: u32 = 4;

/// Renders `image`. `source_line(file, line)` returns the text of a 1-based source line
/// of `image.files[file]` when it is available; each time the line changes the
/// disassembly shows it as a `; 12 | …` comment above the instructions it produced.
pub fn disasm(image: &Image, source_line: &dyn Fn(u32, u32) -> Option<String>) -> String {
    let mnemonic_width = OPCODES.iter().map(|(_, mn, _)| mn.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (i, f) in image.functions.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        function(&mut out, image, i, f, mnemonic_width, source_line);
    }
    renames(&mut out, image);
    out
}

/// The renames the tables declare (`@table(was:)`, `@was`), after the functions: one
/// line per renamed table or column, and nothing when there is none.
fn renames(out: &mut String, image: &Image) {
    for t in &image.tables {
        if let Some(old) = &t.was {
            let _ = writeln!(out, "\n; table {}: was `{old}`", t.name);
        }
        for c in &t.columns {
            if let Some(old) = &c.was {
                let _ = writeln!(out, "; column {}.{}: was `{old}`", t.name, c.name);
            }
        }
    }
}

fn function(
    out: &mut String,
    image: &Image,
    index: usize,
    f: &Function,
    mnemonic_width: usize,
    source_line: &dyn Fn(u32, u32) -> Option<String>,
) {
    let mut roles = Vec::new();
    if image.entry.index() == index {
        roles.push(", entry");
    }
    if image.init.is_some_and(|init| init.index() == index) {
        roles.push(", init");
    }
    // With several source files, the header names the function's file and a source
    // comment names its file only when that differs.
    let home = f
        .pos
        .first()
        .map(|p| p.file)
        .filter(|_| image.files.len() > 1);
    let home_name = home
        .and_then(|file| usize::try_from(file).ok())
        .and_then(|i| image.files.get(i))
        .map(|name| format!("  ; {name}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "fn {}  (arity {}, {} register{}{}){home_name}",
        f.name,
        f.arity,
        f.n_regs,
        if f.n_regs == 1 { "" } else { "s" },
        roles.concat()
    );

    let operands: Vec<String> = f.code.iter().map(operand_text).collect();
    let ops_width = operands
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0);
    let pc_width = f.code.len().saturating_sub(1).to_string().len().max(3);
    let line_width = f
        .pos
        .iter()
        .map(|p| p.line.to_string().len())
        .max()
        .unwrap_or(0)
        .max(4);
    let indent = " ".repeat(pc_width + 2 + line_width + 2);

    let mut prev = None;
    for (pc, (op, ops)) in f.code.iter().zip(&operands).enumerate() {
        let pos = f.pos.get(pc).copied();
        let line = match pos {
            Some(p) if p.line > 0 => p.line.to_string(),
            _ => "-".to_string(),
        };
        let here = pos.map(|p| (p.file, p.line));
        if here != prev {
            if let Some(p) = pos.filter(|p| p.line > 0) {
                if let Some(text) = source_line(p.file, p.line) {
                    let file = match usize::try_from(p.file)
                        .ok()
                        .and_then(|i| image.files.get(i))
                    {
                        Some(name) if home.is_some_and(|home| home != p.file) => {
                            format!("{name}:")
                        }
                        _ => String::new(),
                    };
                    let text = text.trim_end();
                    let sep = if text.is_empty() { "" } else { " " };
                    let _ = writeln!(out, "{indent}; {file}{} |{sep}{text}", p.line);
                }
            }
            prev = here;
        }

        let mut row = format!(
            "{pc:>pc_width$}  {line:>line_width$}  {:<mnemonic_width$} {ops:<ops_width$}",
            op.mnemonic()
        );
        if let Some(comment) = comment(image, pc, op) {
            let _ = write!(row, "  ; {comment}");
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
}

/// `r0, r1, k3`: the operands in table order.
fn operand_text(op: &Op) -> String {
    let parts: Vec<String> = op
        .operands()
        .into_iter()
        .map(|(_, operand)| match operand {
            OperandRef::Reg(r) => r.to_string(),
            OperandRef::Const(k) => k.to_string(),
            OperandRef::Func(f) => f.to_string(),
            OperandRef::Class(c) => c.to_string(),
            OperandRef::Builtin(b) => b.to_string(),
            OperandRef::Global(g) => g.to_string(),
            OperandRef::Field(field) => field.to_string(),
            OperandRef::Pc(t) => t.to_string(),
            OperandRef::Table(t) => t.to_string(),
            OperandRef::Query(q) => q.to_string(),
            OperandRef::Imm(v) => v.to_string(),
            OperandRef::Count(n) => n.to_string(),
            OperandRef::Cmp(c) => c.symbol().to_string(),
            OperandRef::Bool(b) => b.to_string(),
        })
        .collect();
    parts.join(", ")
}

fn comment(image: &Image, pc: usize, op: &Op) -> Option<String> {
    match *op {
        Op::LoadConst { k, .. } => image.consts.get(k.index()).map(const_text),
        Op::Call { f: callee, base } => image
            .functions
            .get(callee.index())
            .map(|callee| format!("{}({})", callee.name, reg_list(base, callee.arity.into()))),
        Op::Spawn {
            f: callee, base, n, ..
        } => image
            .functions
            .get(callee.index())
            .map(|callee| format!("spawn {}({})", callee.name, reg_list(base, n.into()))),
        Op::CallBuiltin { f: b, base, n } => image
            .builtins
            .get(b.index())
            .map(|b| format!("{}({})", b.name, reg_list(base, n.into()))),
        Op::NewObj { c, b, .. } => image.classes.get(c.index()).map(|class| new_obj(class, b)),
        Op::GetField { f: field, .. } | Op::SetField { f: field, .. } => {
            field_names(image, field.index())
        }
        Op::NewList { b, n, .. } => Some(format!("[{}]", reg_list(b, n.into()))),
        Op::NewMap { b, n, .. } => Some(map_pairs(b, n)),
        Op::ConcatN { b, n, .. } => Some(concat_list(b, n)),
        Op::CmpInt { a, b, c, op } | Op::CmpFloat { a, b, c, op } | Op::CmpText { a, b, c, op } => {
            Some(format!("{a} = {b} {} {c}", op.symbol()))
        }
        Op::JumpUnlessCmpInt { b, c, op, t } => Some(format!(
            "unless {b} {} {c} goto {t}{}",
            op.symbol(),
            back_edge(pc, t)
        )),
        Op::JumpUnlessCmpIntImm { b, v, op, t } => Some(format!(
            "unless {b} {} {v} goto {t}{}",
            op.symbol(),
            back_edge(pc, t)
        )),
        Op::JumpUnlessEqConst { b, k, eq, t } => Some(format!(
            "unless {b} {} {} goto {t}{}",
            if eq { "==" } else { "!=" },
            image
                .consts
                .get(k.index())
                .map_or(k.to_string(), const_text),
            back_edge(pc, t)
        )),
        Op::ForPrep { a, v, t } => Some(format!(
            "for {v} in range({}); empty: goto {t}",
            reg_list(a, 3)
        )),
        Op::ForLoop { a, v, t } => Some(format!(
            "next {v} in range({}): goto {t}{}",
            reg_list(a, 3),
            back_edge(pc, t)
        )),
        Op::TextNext { v, b, i, t } => Some(format!(
            "next {v} in text {b} at byte {i}; end: goto {t}{}",
            back_edge(pc, t)
        )),
        Op::Jump { t }
        | Op::JumpIf { t, .. }
        | Op::JumpIfNot { t, .. }
        | Op::JumpIfNil { t, .. }
        | Op::JumpIfNotNil { t, .. } => (t.index() <= pc).then(|| "back edge".to_string()),
        Op::TryEnter { t, err } => Some(format!("on trap: {err} = the error, goto {t}")),
        Op::DbInsert { t, .. } => image.tables.get(t.index()).map(|table| {
            let cols: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
            format!("insert into {} ({})", table.name, cols.join(", "))
        }),
        Op::DbGetField { t, f: field, .. } | Op::DbUpdateField { t, f: field, .. } => {
            image.tables.get(t.index()).and_then(|table| {
                let col = table.columns.get(field.index())?;
                Some(format!("{}.{}", table.name, col.name))
            })
        }
        Op::DbDelete { t, .. } => image
            .tables
            .get(t.index())
            .map(|table| format!("delete from {}", table.name)),
        Op::DbFind { t, b, .. } => image
            .tables
            .get(t.index())
            .map(|table| format!("{} row with id {b}, or nil", table.name)),
        Op::DbRowId { b, .. } => Some(format!("{b}.id")),
        Op::DbAlive { b, .. } => Some(format!("whether {b} still exists")),
        Op::DbQuery { q, .. } => image.queries.get(q.index()).map(|q| query_text(image, q)),
        Op::TxBegin {} => Some("begin transaction".to_string()),
        Op::TxCommit {} => Some("commit transaction".to_string()),
        _ => None,
    }
}

/// A query descriptor as a reader would write it:
/// `from employees where dept == arg0 order by salary desc take arg1 → rows`.
fn query_text(image: &Image, q: &QueryDesc) -> String {
    let table = usize::try_from(q.table)
        .ok()
        .and_then(|t| image.tables.get(t));
    let col = |c: QueryCol| column_name(table, c);
    let mut out = format!(
        "from {}",
        table.map_or_else(|| format!("t{}", q.table), |t| t.name.clone())
    );
    for (i, p) in q.preds.iter().enumerate() {
        out.push_str(if i == 0 { " where " } else { " and " });
        let _ = write!(out, "{} {} arg{}", col(p.col), p.op.symbol(), p.arg);
    }
    for (i, &(c, desc)) in q.order.iter().enumerate() {
        out.push_str(if i == 0 { " order by " } else { ", " });
        out.push_str(&col(c));
        if desc {
            out.push_str(" desc");
        }
    }
    if let Some(a) = q.skip {
        let _ = write!(out, " skip arg{a}");
    }
    if let Some(a) = q.take {
        let _ = write!(out, " take arg{a}");
    }
    out.push_str(" → ");
    match q.agg {
        QueryAgg::Rows => out.push_str("rows"),
        QueryAgg::Count => out.push_str("count"),
        QueryAgg::Exists => out.push_str("exists"),
        QueryAgg::Sum(c) => {
            let _ = write!(out, "sum({})", col(c));
        }
        QueryAgg::Min(c) => {
            let _ = write!(out, "min({})", col(c));
        }
        QueryAgg::Max(c) => {
            let _ = write!(out, "max({})", col(c));
        }
        QueryAgg::Avg(c) => {
            let _ = write!(out, "avg({})", col(c));
        }
    }
    out
}

/// A query column's name: `id`, the column's name, or `.3` when it has none.
fn column_name(table: Option<&Table>, c: QueryCol) -> String {
    match c {
        QueryCol::Id => "id".to_string(),
        QueryCol::Col(i) => table
            .and_then(|t| t.columns.get(usize::from(i)))
            .map_or_else(|| format!(".{i}"), |col| col.name.clone()),
    }
}

fn back_edge(pc: usize, t: Pc) -> &'static str {
    if t.index() <= pc {
        " (back edge)"
    } else {
        ""
    }
}

/// A constant as a reader would write it: Text quoted and escaped, long Text cut.
fn const_text(k: &Const) -> String {
    match k {
        Const::Int(i) => i.to_string(),
        Const::Float(x) => format!("{x:?}"),
        Const::Text(t) => {
            let n_chars = t.chars().count();
            if n_chars > MAX_TEXT {
                let head: String = t.chars().take(MAX_TEXT).collect();
                format!("{head:?}… ({n_chars} characters)")
            } else {
                format!("{t:?}")
            }
        }
    }
}

/// `r2, r3` for a short run, `r2..r9` for a long one, nothing for an empty one.
fn reg_list(base: Reg, n: u32) -> String {
    let base = u32::from(base.0);
    if n == 0 {
        String::new()
    } else if n <= MAX_LISTED {
        let regs: Vec<String> = (base..base + n).map(|r| format!("r{r}")).collect();
        regs.join(", ")
    } else {
        format!("r{base}..r{}", base + n - 1)
    }
}

fn new_obj(class: &Class, b: Reg) -> String {
    if class.fields.is_empty() {
        return format!("{} {{}}", class.name);
    }
    let base = u32::from(b.0);
    let fields: Vec<String> = class
        .fields
        .iter()
        .take(usize::try_from(MAX_LISTED * 2).unwrap_or(8))
        .zip(base..)
        .map(|(name, r)| format!("{name}: r{r}"))
        .collect();
    let more = if class.fields.len() > fields.len() {
        ", …"
    } else {
        ""
    };
    format!("{} {{ {}{more} }}", class.name, fields.join(", "))
}

/// The classes that have a field at position `field`, as `Point.y`: at most three,
/// since the instruction itself does not say which class the object has. Table classes
/// are left out: their rows are read with `DB_GET_FIELD`, never `GET_FIELD`.
fn field_names(image: &Image, field: usize) -> Option<String> {
    let names: Vec<String> = image
        .classes
        .iter()
        .enumerate()
        .filter(|(i, _)| !image.tables.iter().any(|t| t.class.index() == *i))
        .filter_map(|(_, c)| c.fields.get(field).map(|name| format!("{}.{name}", c.name)))
        .collect();
    match names.len() {
        0 => None,
        1..=3 => Some(names.join(" or ")),
        n => Some(format!("{} or {} more", names[..2].join(", "), n - 2)),
    }
}

fn map_pairs(b: Reg, n: u16) -> String {
    let base = u32::from(b.0);
    let n = u32::from(n);
    if n == 0 {
        "{}".to_string()
    } else if n <= 3 {
        let pairs: Vec<String> = (0..n)
            .map(|i| format!("r{}: r{}", base + 2 * i, base + 2 * i + 1))
            .collect();
        format!("{{{}}}", pairs.join(", "))
    } else {
        format!("{{{n} pairs in r{base}..r{}}}", base + 2 * n - 1)
    }
}

fn concat_list(b: Reg, n: u16) -> String {
    let base = u32::from(b.0);
    let n = u32::from(n);
    if n == 0 {
        "\"\"".to_string()
    } else if n <= MAX_LISTED {
        let regs: Vec<String> = (base..base + n).map(|r| format!("r{r}")).collect();
        regs.join(" .. ")
    } else {
        format!("r{base} .. … .. r{}", base + n - 1)
    }
}
