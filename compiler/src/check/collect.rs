//! Pass 1: collecting the declarations of every module (classes, fields, methods,
//! functions, constants) before any body is checked.
use std::collections::HashMap;

use super::{did_you_mean, Checker, FnSig, GlobalSlot, GlobalState, MODULES};
use crate::ast::{self, ExprKind as A, TypeKind};
use crate::diag::{Diagnostic, Span};
use crate::tir::{ClassId, ClassInfo, FieldInfo, TableInfo, Ty};

/// Whether a field default is a literal or a constant: cheap to check and to compute
/// at each constructor literal, and unable to construct anything.
pub(super) fn simple_default(e: &ast::Expr) -> bool {
    match &e.kind {
        A::Int(_) | A::Float(_) | A::Bool(_) | A::Nil | A::TypeName(_) => true,
        A::Text(parts) => parts.iter().all(|p| matches!(p, ast::TextPart::Lit(_))),
        _ => false,
    }
}

/// The constants of a program by name (the first declaration of each), for
/// [`Folder`].
type ConstExprs<'m> = HashMap<&'m str, &'m ast::Expr>;

/// How many expression nodes one column default may take to compute, constants
/// included (each computed once): more is no value the compiler knows.
const MAX_DEFAULT_STEPS: usize = 10_000;

/// How long a Text the `..` of a column default may build (the work is bounded by
/// [`MAX_DEFAULT_STEPS`]).
const MAX_DEFAULT_BYTES: usize = 64 * 1024;

/// Computes a column default the compiler can know: what existing rows get when a
/// data directory gains the column (`docs/schema.md`). A literal, a constant whose
/// value is one, or `+`, `-`, `*` (and `..` of Texts) of those: `prio: Int =
/// DEFAULT_PRIO`, `limit: Int = 60 * 60`. Overflow is no value (the program's own
/// evaluation traps), nor is anything past the budget of steps and bytes.
struct Folder<'m> {
    consts: ConstExprs<'m>,
    /// Each constant's value once computed (`None`: it has none, or is being computed:
    /// a cycle).
    memo: HashMap<&'m str, Option<wo_bytecode::image::ColumnDefault>>,
    steps: usize,
}

impl<'m> Folder<'m> {
    fn new(consts: ConstExprs<'m>) -> Folder<'m> {
        Folder {
            consts,
            memo: HashMap::new(),
            steps: 0,
        }
    }

    /// The value of `e` as a default of a column of type `ty`.
    fn value(&mut self, e: &'m ast::Expr, ty: &Ty) -> Option<wo_bytecode::image::ColumnDefault> {
        self.steps = 0;
        // A constant's value depends on the column's type (`7` is no Float).
        self.memo.clear();
        self.fold(e, ty)
    }

    fn fold(&mut self, e: &'m ast::Expr, ty: &Ty) -> Option<wo_bytecode::image::ColumnDefault> {
        use wo_bytecode::image::ColumnDefault as D;
        self.steps += 1;
        if self.steps > MAX_DEFAULT_STEPS {
            return None;
        }
        Some(match (&e.kind, ty.strip()) {
            (A::Nil, _) if ty.is_nullable() => D::Nil,
            (A::Int(i), Ty::Int) => D::Int(*i),
            (A::Float(x), Ty::Float) => D::Float(*x),
            (A::TypeName(n), _) => {
                if let Some(known) = self.memo.get(n.as_str()) {
                    return known.clone();
                }
                let (name, init) = self.consts.get_key_value(n.as_str())?;
                let (name, init) = (*name, *init);
                self.memo.insert(name, None);
                let v = self.fold(init, ty);
                self.memo.insert(name, v.clone());
                v?
            }
            (
                A::Unary {
                    op: ast::UnOp::Neg,
                    expr,
                },
                Ty::Int | Ty::Float,
            ) => match self.fold(expr, ty)? {
                D::Int(i) => D::Int(i.checked_neg()?),
                D::Float(x) => D::Float(-x),
                _ => return None,
            },
            (A::Binary { op, lhs, rhs }, _) => {
                match (op, self.fold(lhs, ty)?, self.fold(rhs, ty)?) {
                    (ast::BinOp::Add, D::Int(a), D::Int(b)) => D::Int(a.checked_add(b)?),
                    (ast::BinOp::Sub, D::Int(a), D::Int(b)) => D::Int(a.checked_sub(b)?),
                    (ast::BinOp::Mul, D::Int(a), D::Int(b)) => D::Int(a.checked_mul(b)?),
                    (ast::BinOp::Add, D::Float(a), D::Float(b)) => D::Float(a + b),
                    (ast::BinOp::Sub, D::Float(a), D::Float(b)) => D::Float(a - b),
                    (ast::BinOp::Mul, D::Float(a), D::Float(b)) => D::Float(a * b),
                    (ast::BinOp::Concat, D::Text(a), D::Text(b)) => {
                        if a.len() + b.len() > MAX_DEFAULT_BYTES {
                            return None;
                        }
                        D::Text(a + &b)
                    }
                    _ => return None,
                }
            }
            (A::Bool(b), Ty::Bool) => D::Bool(*b),
            (A::Text(parts), Ty::Text) => {
                let mut s = String::new();
                for p in parts {
                    match p {
                        ast::TextPart::Lit(l) => s.push_str(l),
                        _ => return None,
                    }
                }
                D::Text(s)
            }
            _ => return None,
        })
    }
}

impl<'a> Checker<'a> {
    /// Every constant's initializer by name, the first declaration of each.
    fn const_exprs(&self) -> ConstExprs<'a> {
        let mut out = ConstExprs::new();
        for m in self.modules {
            for item in &m.items {
                if let ast::Item::Const { name, value, .. } = item {
                    out.entry(name.name.as_str()).or_insert(value);
                }
            }
        }
        out
    }

    pub(super) fn collect(&mut self) {
        self.collect_names();
        for cid in 0..self.class_decls.len() {
            self.collect_class(cid);
        }
        self.check_table_names();
        self.check_durable_refs();
        self.collect_fns_and_consts();
        self.collect_defaults();
    }

    /// Each field default that is more than a literal or a constant becomes a
    /// function without parameters, checked once and called by every constructor
    /// literal that omits the field, so defaults that construct classes with
    /// defaults stay linear however deep they nest. A literal or a constant is
    /// checked in place at each use (`simple_default`).
    fn collect_defaults(&mut self) {
        for cid in 0..self.classes.len() {
            let (mi, ii) = self.class_decls[cid];
            let ast::Item::Class(c) = &self.modules[mi].items[ii] else {
                continue;
            };
            for (i, fd) in c.fields.iter().enumerate() {
                let Some(field) = self.classes[cid].fields.get(i) else {
                    continue;
                };
                if fd.default.as_ref().is_none_or(simple_default) {
                    continue;
                }
                let id = self.funcs.len();
                self.funcs.push(FnSig {
                    name: format!("{}.{} (default)", c.name.name, fd.name.name),
                    params: Vec::new(),
                    ret: field.ty.clone(),
                    decl: None,
                    default: Some((cid, i)),
                });
                self.default_fns.insert((cid, i), id);
            }
        }
    }

    /// Reports a second definition of a name, pointing at both.
    pub(super) fn duplicate(&mut self, span: Span, first: Span, msg: String) {
        let d = Diagnostic::error("name", span, msg).with_label(first, "first defined here");
        self.diags.push(d);
    }

    /// The span of class `cid`'s name.
    fn class_span(&self, cid: ClassId) -> Span {
        let (mi, ii) = self.class_decls[cid];
        match &self.modules[mi].items[ii] {
            ast::Item::Class(c) => c.name.span,
            _ => Span::default(),
        }
    }

    /// Two `@table` classes cannot share a stored name: their rows would be one table
    /// on disk with two schemas. Nor can one say it was (`@table(was:)`) the stored
    /// name of another: a swap, or a rename left over, that one rename cannot carry
    /// out (see `check_column_renames`).
    fn check_table_names(&mut self) {
        let mut first: HashMap<String, ClassId> = HashMap::new();
        for cid in 0..self.classes.len() {
            let Some(t) = &self.classes[cid].table else {
                continue;
            };
            let name = t.name.clone();
            if let Some(w) = t.was.as_ref().filter(|w| **w != name) {
                let other = (0..self.classes.len()).find(|&o| {
                    self.classes[o]
                        .table
                        .as_ref()
                        .is_some_and(|ot| ot.name == *w)
                });
                if let Some(other) = other {
                    let msg = format!(
                        "table `{name}` says it was `{w}` (`was:`), but class `{}` is stored as `{w}`",
                        self.classes[other].name
                    );
                    let d = Diagnostic::error("table", self.class_span(cid), msg)
                        .with_label(self.class_span(other), "stored as that name here")
                        .with_note("a swap of table names goes through a name not in use, one rename per run; a `was:` left over from an earlier rename can be removed");
                    self.diags.push(d);
                }
            }
            match first.get(&name) {
                Some(&other) => {
                    let msg = format!(
                        "classes `{}` and `{}` are both stored as table `{name}`",
                        self.classes[other].name, self.classes[cid].name
                    );
                    let d = Diagnostic::error("table", self.class_span(cid), msg)
                        .with_label(self.class_span(other), "the first one is here")
                        .with_note("give one of them another name with `@table(name: \"…\")`");
                    self.diags.push(d);
                }
                None => {
                    first.insert(name, cid);
                }
            }
        }
    }

    /// Classes first (names), so types can refer to any class; and `use` items.
    fn collect_names(&mut self) {
        let modules = self.modules;
        for (mi, m) in modules.iter().enumerate() {
            for (ii, item) in m.items.iter().enumerate() {
                match item {
                    ast::Item::Class(c) => {
                        if let Some(&first) = self.class_index.get(&c.name.name) {
                            let first = self.class_span(first);
                            let msg = format!("class `{}` is defined more than once", c.name.name);
                            self.duplicate(c.name.span, first, msg);
                            continue;
                        }
                        if crate::BUILTIN_TYPES.contains(&c.name.name.as_str()) {
                            self.err(
                                "name",
                                c.name.span,
                                format!("`{}` is a built-in type", c.name.name),
                            );
                            continue;
                        }
                        let id = self.class_names.len();
                        self.class_names.push(c.name.name.clone());
                        self.class_index.insert(c.name.name.clone(), id);
                        self.class_decls.push((mi, ii));
                        if c.annots.iter().any(|a| a.name.name == "table") {
                            self.table_classes.insert(id);
                        }
                    }
                    ast::Item::Use(u) => {
                        if MODULES.contains(&u.name.as_str()) {
                            self.uses.insert(u.name.clone());
                        } else {
                            self.err(
                                "name",
                                u.span,
                                match did_you_mean(&u.name, MODULES.iter().copied()) {
                                    hint if !hint.is_empty() => {
                                        format!("unknown module `{}`{hint}", u.name)
                                    }
                                    _ => format!(
                                        "unknown module `{}`; the standard modules are {}",
                                        u.name,
                                        MODULES
                                            .iter()
                                            .map(|m| format!("`{m}`"))
                                            .collect::<Vec<_>>()
                                            .join(", ")
                                    ),
                                },
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The fields and methods of one class, and its table if it is one.
    fn collect_class(&mut self, cid: ClassId) {
        let (mi, ii) = self.class_decls[cid];
        let ast::Item::Class(c) = &self.modules[mi].items[ii] else {
            return;
        };
        let is_table = self.table_classes.contains(&cid);
        let mut table = is_table.then(|| TableInfo {
            index: self.tables.len(),
            name: c.name.name.clone(),
            indexes: Vec::new(),
            durable: true,
            was: None,
            column_was: Vec::new(),
            column_default: Vec::new(),
        });
        if is_table {
            self.tables.push(cid);
        }
        let mut fields = Vec::new();
        let mut seen: HashMap<String, Span> = HashMap::new();
        // Made at the first column default, once per class.
        let mut folder: Option<Folder<'a>> = None;
        for f in &c.fields {
            if let Some(&first) = seen.get(&f.name.name) {
                let msg = format!(
                    "field `{}` is declared more than once in `{}`",
                    f.name.name, c.name.name
                );
                self.duplicate(f.name.span, first, msg);
            } else {
                seen.insert(f.name.name.clone(), f.name.span);
            }
            self.in_table = is_table;
            let ty = self.resolve_type(&f.ty);
            self.in_table = false;
            match table.as_mut() {
                Some(t) => self.table_column(f, &ty, fields.len(), t, &mut folder),
                None => self.plain_field_annots(c, f),
            }
            fields.push(FieldInfo {
                name: f.name.name.clone(),
                ty,
                default: None,
            });
        }
        for a in &c.annots {
            if a.name.name == "table" {
                if let Some(t) = table.as_mut() {
                    self.table_args(a, &fields, t);
                }
            } else {
                self.err(
                    "annotation",
                    a.span,
                    format!(
                        "unknown annotation `@{}` (classes take `@table`)",
                        a.name.name
                    ),
                );
            }
        }
        if fields.len() > usize::from(u16::MAX) {
            self.err("limit", c.name.span, "a class has at most 65535 fields");
        }
        let mut methods = Vec::new();
        // (Earlier methods looked up, not searched: 80,000 methods took 21 s,
        // helper-76.)
        let mut earlier: HashMap<&str, Span> = HashMap::new();
        for (k, m) in c.methods.iter().enumerate() {
            let first = seen
                .get(&m.name.name)
                .copied()
                .or(earlier.get(m.name.name.as_str()).copied());
            earlier.entry(m.name.name.as_str()).or_insert(m.name.span);
            if let Some(first) = first {
                let msg = format!(
                    "`{}` is declared more than once in `{}`",
                    m.name.name, c.name.name
                );
                self.duplicate(m.name.span, first, msg);
            }
            let mut params = vec![("self".to_string(), Ty::Class(cid))];
            params.extend(self.resolve_params(&m.params));
            let ret = m
                .ret
                .as_ref()
                .map(|t| self.resolve_type(t))
                .unwrap_or(Ty::Void);
            let id = self.funcs.len();
            self.funcs.push(FnSig {
                name: format!("{}.{}", c.name.name, m.name.name),
                params,
                ret,
                decl: Some((mi, ii, Some(k))),
                default: None,
            });
            methods.push((m.name.name.clone(), id));
        }
        if let Some(t) = &table {
            self.check_column_renames(c);
            if !t.durable {
                // Like `was:` of the table (`table_args`): nothing stored to rename.
                for f in &c.fields {
                    for a in f.annots.iter().filter(|a| a.name.name == "was") {
                        self.err(
                            "table",
                            a.span,
                            format!(
                                "`@was` renames a stored column, but `{}` has `durable: false` and is not stored: remove one of them",
                                c.name.name
                            ),
                        );
                    }
                }
            }
        }
        self.classes.push(ClassInfo {
            name: c.name.name.clone(),
            fields,
            methods,
            table,
        });
    }

    /// `@was("w")` on a column of a class that also declares `w` cannot be carried out
    /// as one rename: a swap (`a @was("b")` beside `b @was("a")`), or an `@was` left
    /// over from an earlier rename whose old name is in use again. Read by stored name
    /// first, such a program would keep each value under the name it had, so it is
    /// refused here, whatever the data directory holds.
    fn check_column_renames(&mut self, c: &ast::ClassDecl) {
        // Each former name, with the column that first claimed it.
        let mut claimed: HashMap<String, &ast::FieldDecl> = HashMap::new();
        for f in &c.fields {
            for a in f.annots.iter().filter(|a| a.name.name == "was") {
                let old = match a.args.as_deref() {
                    Some([arg]) if arg.name.name.is_empty() => {
                        super::table::text_literal(&arg.value)
                    }
                    _ => None,
                };
                let Some(old) = old.filter(|o| *o != f.name.name) else {
                    continue;
                };
                let first = claimed
                    .get(old.as_str())
                    .filter(|g| g.name.name != f.name.name)
                    .copied();
                let (msg, at, label, note) = if let Some(first) = first {
                    (
                        format!(
                            "columns `{}` and `{}` both say they were `{old}`",
                            first.name.name, f.name.name
                        ),
                        first.name.span,
                        "also claims it",
                        format!("a column is renamed to one name; a copy of `{old}` under a second name is a new column, filled by the program"),
                    )
                } else {
                    claimed.entry(old.to_string()).or_insert(f);
                    let Some(other) = c.fields.iter().find(|o| o.name.name == old) else {
                        continue;
                    };
                    (
                        format!(
                            "column `{}` says it was `{old}`, but `{}` also has a column `{old}`",
                            f.name.name, c.name.name
                        ),
                        other.name.span,
                        "declared here",
                        format!("a swap of names goes through a name not in use, one rename per run (rename `{old}` to a new name first); an `@was` left over from an earlier rename can be removed"),
                    )
                };
                let d = Diagnostic::error("annotation", a.span, msg)
                    .with_label(at, label)
                    .with_note(note);
                self.diags.push(d);
            }
        }
    }

    /// The checks and annotations of one column of a `@table` class.
    fn table_column(
        &mut self,
        f: &'a ast::FieldDecl,
        ty: &Ty,
        index: usize,
        t: &mut TableInfo,
        folder: &mut Option<Folder<'a>>,
    ) {
        if f.name.name == "id" {
            self.err(
                "table",
                f.name.span,
                "`id` is every row's read-only id; a table cannot declare it",
            );
        }
        if f.name.name == "table" {
            self.err(
                "table",
                f.name.span,
                "`table` names each row's table in `wo db export`'s JSON lines; a table cannot declare a column of that name (call it `kind`, `category`, …)",
            );
        }
        let col_ok = match ty.strip() {
            Ty::Int | Ty::Float | Ty::Bool | Ty::Text | Ty::Unknown => true,
            Ty::Class(k) => {
                matches!(&f.ty.kind, TypeKind::Ref(_))
                    || matches!(&f.ty.kind, TypeKind::Nullable(inner) if matches!(inner.kind, TypeKind::Ref(_)))
                    || !self.table_classes.contains(k)
            }
            _ => false,
        };
        let is_plain_row = matches!(ty.strip(), Ty::Class(k) if self.table_classes.contains(k))
            && !matches!(&f.ty.kind, TypeKind::Ref(_))
            && !matches!(&f.ty.kind, TypeKind::Nullable(inner) if matches!(inner.kind, TypeKind::Ref(_)));
        if is_plain_row {
            let n = self.tyname(ty.strip());
            let q = if ty.is_nullable() { "?" } else { "" };
            self.err(
                "table",
                f.ty.span,
                format!(
                    "a column that points to a row is written `{q}ref {}`",
                    n.trim_matches('`')
                ),
            );
        } else if !col_ok || matches!(ty.strip(), Ty::Class(k) if !self.table_classes.contains(k)) {
            let n = self.tyname(ty);
            self.err(
                "table",
                f.ty.span,
                format!("a table column cannot have type {n}: columns are `Int`, `Float`, `Bool`, `Text`, `ref T`, or `?` of one of them"),
            );
        }
        let col = u16::try_from(index).unwrap_or(u16::MAX);
        if let Some(d) = f.default.as_ref().and_then(|e| {
            folder
                .get_or_insert_with(|| Folder::new(self.const_exprs()))
                .value(e, ty)
        }) {
            t.column_default.push((col, d));
        }
        for a in &f.annots {
            if a.name.name == "unique" && a.args.is_none() {
                t.indexes
                    .push((vec![col], wo_bytecode::image::IndexKind::Unique));
            } else if a.name.name == "was" {
                let old = match a.args.as_deref() {
                    Some([arg]) if arg.name.name.is_empty() => {
                        super::table::text_literal(&arg.value)
                    }
                    _ => None,
                };
                match old {
                    Some(_) if t.column_was.iter().any(|(c, _)| *c == col) => {
                        self.err("annotation", a.span, "a column takes one `@was`");
                    }
                    Some(old) => t.column_was.push((col, old)),
                    None => self.err(
                        "annotation",
                        a.span,
                        "`@was` takes the column's former name as a text literal, e.g. `@was(\"old_name\")`",
                    ),
                }
            } else {
                self.err(
                    "annotation",
                    a.span,
                    format!(
                        "unknown field annotation `@{}` (table columns take `@unique` and `@was`)",
                        a.name.name
                    ),
                );
            }
        }
    }

    /// A field of a class that is not a table takes no annotation.
    fn plain_field_annots(&mut self, c: &ast::ClassDecl, f: &ast::FieldDecl) {
        for a in &f.annots {
            let msg = if a.name.name == "unique" || a.name.name == "was" {
                format!(
                    "`@{}` applies only to columns of a `@table` class, and `{}` is not one",
                    a.name.name, c.name.name
                )
            } else {
                format!("unknown field annotation `@{}`", a.name.name)
            };
            self.err("annotation", a.span, msg);
        }
    }

    /// A durable table cannot point into one that forgets its rows at exit.
    fn check_durable_refs(&mut self) {
        let modules = self.modules;
        for cid in 0..self.classes.len() {
            let Some(t) = &self.classes[cid].table else {
                continue;
            };
            if !t.durable {
                continue;
            }
            let (mi, ii) = self.class_decls[cid];
            let ast::Item::Class(decl) = &modules[mi].items[ii] else {
                continue;
            };
            for (f, fd) in self.classes[cid].fields.iter().zip(&decl.fields) {
                if let Ty::Class(k) = f.ty.strip() {
                    if self.classes[*k].table.as_ref().is_some_and(|t| !t.durable) {
                        let msg = format!(
                            "durable table `{}` cannot refer to `{}`, whose rows are not kept (`durable: false`)",
                            self.classes[cid].name, self.classes[*k].name
                        );
                        self.diags.push(Diagnostic::error("table", fd.ty.span, msg));
                    }
                }
            }
        }
    }

    /// Functions and constants.
    fn collect_fns_and_consts(&mut self) {
        let modules = self.modules;
        for (mi, m) in modules.iter().enumerate() {
            for (ii, item) in m.items.iter().enumerate() {
                match item {
                    ast::Item::Fn(f) => {
                        if let Some(&first) = self.func_index.get(&f.name.name) {
                            let first =
                                self.fn_decl(first).map(|d| d.name.span).unwrap_or_default();
                            let msg =
                                format!("function `{}` is defined more than once", f.name.name);
                            self.duplicate(f.name.span, first, msg);
                            continue;
                        }
                        // The checker takes a call of these for the end of a code path
                        // (narrowing, a function's missing return): one of the program's
                        // own would return, and a nil would get past the types.
                        if matches!(f.name.name.as_str(), "fail" | "exit") {
                            self.err(
                                "name",
                                f.name.span,
                                format!(
                                    "`{}` is the built-in function that ends the code path (it never returns); a function of the program cannot take its name",
                                    f.name.name
                                ),
                            );
                        }
                        if MODULES.contains(&f.name.name.as_str()) {
                            self.err(
                                "name",
                                f.name.span,
                                format!("`{}` is the name of a standard module", f.name.name),
                            );
                        }
                        let params = self.resolve_params(&f.params);
                        let ret = f
                            .ret
                            .as_ref()
                            .map(|t| self.resolve_type(t))
                            .unwrap_or(Ty::Void);
                        let id = self.funcs.len();
                        self.funcs.push(FnSig {
                            name: f.name.name.clone(),
                            params,
                            ret,
                            decl: Some((mi, ii, None)),
                            default: None,
                        });
                        self.func_index.insert(f.name.name.clone(), id);
                    }
                    ast::Item::Const { name, .. } => {
                        let first = match (
                            self.global_index.get(&name.name),
                            self.class_index.get(&name.name),
                        ) {
                            (Some(&g), _) => Some(self.const_span(g)),
                            (None, Some(&c)) => Some(self.class_span(c)),
                            (None, None) => None,
                        };
                        if let Some(first) = first {
                            let msg = format!("`{}` is defined more than once", name.name);
                            self.duplicate(name.span, first, msg);
                            continue;
                        }
                        let id = self.globals.len();
                        self.globals.push(GlobalSlot {
                            name: name.name.clone(),
                            decl: (mi, ii),
                            state: GlobalState::Pending,
                            ty: Ty::Unknown,
                            cyclic: false,
                        });
                        self.global_out.push(None);
                        self.global_index.insert(name.name.clone(), id);
                    }
                    _ => {}
                }
            }
        }
    }
}
