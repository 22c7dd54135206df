//! Name resolution and static type checking: AST in, typed IR (`tir`) out, with every
//! error reported as a diagnostic (checking goes on after an error, using the
//! `Unknown` type so one mistake reports once). This is where the language's static
//! rules live: the type rules of §3 (including `?T` narrowing), constructor-literal
//! rules, call arity and types, and the typing of every builtin (`builtin.rs`).

use std::collections::{HashMap, HashSet};

use crate::ast::{self, AssignOp, ExprKind as A, StmtKind as S, TypeKind};
use crate::diag::{Diagnostic, SourceMap, Span};
use crate::tir::{
    self, BinOp, ClassId, ClassInfo, Expr, ExprKind as E, FieldInfo, Func, FuncId, Global, LocalId,
    Stmt, StmtKind as T, TableInfo, Ty, UnOp,
};
use wo_bytecode::Cmp;

mod builtin;
mod table;

/// The standard modules a program may `use`.
pub const MODULES: &[&str] = &["time", "math", "env", "fs", "random"];

struct FnSig {
    name: String,
    params: Vec<(String, Ty)>,
    ret: Ty,
    decl: Option<(usize, usize, Option<usize>)>,
}

enum GlobalState {
    Pending,
    InProgress,
    Done,
}

struct GlobalSlot {
    name: String,
    /// (module index, item index)
    decl: (usize, usize),
    state: GlobalState,
    ty: Ty,
}

/// Per-function checking state.
#[derive(Default)]
struct FnCtx {
    locals: Vec<Ty>,
    scopes: Vec<HashMap<String, LocalId>>,
    narrowed: HashMap<LocalId, Ty>,
    assigned_log: Vec<LocalId>,
    ret: Option<Ty>,
    loop_depth: usize,
}

pub(crate) struct Checker<'a> {
    modules: &'a [ast::Module],
    diags: &'a mut Vec<Diagnostic>,
    class_names: Vec<String>,
    class_index: HashMap<String, ClassId>,
    classes: Vec<ClassInfo>,
    class_decls: Vec<(usize, usize)>,
    funcs: Vec<FnSig>,
    func_index: HashMap<String, FuncId>,
    globals: Vec<GlobalSlot>,
    global_index: HashMap<String, usize>,
    global_out: Vec<Option<Global>>,
    init_order: Vec<usize>,
    uses: HashSet<String>,
    ctx: FnCtx,
    /// Classes declared with `@table`.
    table_classes: HashSet<ClassId>,
    /// Table index → class.
    tables: Vec<ClassId>,
    /// While resolving the column types of a table, `ref T` is allowed.
    in_table: bool,
    /// Lexical depth of `transaction` blocks in the current function.
    tx_depth: usize,
}

/// Checks a whole program. Diagnostics are appended to `diags`; the returned program is
/// only meaningful when no error was reported.
pub fn check(
    modules: &[ast::Module],
    _sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> tir::Program {
    let mut c = Checker {
        modules,
        diags,
        class_names: Vec::new(),
        class_index: HashMap::new(),
        classes: Vec::new(),
        class_decls: Vec::new(),
        funcs: Vec::new(),
        func_index: HashMap::new(),
        globals: Vec::new(),
        global_index: HashMap::new(),
        global_out: Vec::new(),
        init_order: Vec::new(),
        uses: HashSet::new(),
        ctx: FnCtx::default(),
        table_classes: HashSet::new(),
        tables: Vec::new(),
        in_table: false,
        tx_depth: 0,
    };
    c.run()
}

fn ty_is_comparable_eq(t: &Ty) -> bool {
    matches!(
        t.strip(),
        Ty::Int | Ty::Float | Ty::Bool | Ty::Text | Ty::Nil | Ty::Unknown
    )
}

/// Whether a value of type `from` may be stored where `to` is expected.
pub(crate) fn assignable(from: &Ty, to: &Ty) -> bool {
    if same(from, to) {
        return true;
    }
    match to {
        Ty::Nullable(inner) => *from == Ty::Nil || assignable(from, inner),
        _ => false,
    }
}

/// Structural equality where `Unknown` (an already reported error) matches anything.
fn same(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Unknown, _) | (_, Ty::Unknown) => true,
        (Ty::Nullable(x), Ty::Nullable(y))
        | (Ty::List(x), Ty::List(y))
        | (Ty::Task(x), Ty::Task(y)) => same(x, y),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => same(k1, k2) && same(v1, v2),
        _ => a == b,
    }
}

/// The common type of two values (list elements, branches), if any.
pub(crate) fn unify(a: &Ty, b: &Ty) -> Option<Ty> {
    if a == b {
        return Some(a.clone());
    }
    match (a, b) {
        (Ty::Unknown, t) | (t, Ty::Unknown) => Some(t.clone()),
        (Ty::Nil, t) | (t, Ty::Nil) if *t != Ty::Void => Some(Ty::nullable(t.clone())),
        (Ty::Nullable(x), y) | (y, Ty::Nullable(x)) if **x == *y => Some(Ty::Nullable(x.clone())),
        _ => None,
    }
}

/// The closest of `candidates` to a misspelt `name` (edit distance at most 2, and less
/// than half the name), for "did you mean" hints.
pub(crate) fn suggest<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    }
    let limit = (name.chars().count() / 2).clamp(1, 2);
    candidates
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Whether evaluating `e` can never produce a value: a call of `fail` or `exit`.
fn diverging(e: &Expr) -> bool {
    matches!(
        &e.kind,
        E::Builtin {
            name: "fail" | "exit",
            ..
        }
    )
}

/// Whether a block cannot complete normally (LANGUAGE.md §3: it ends in `return`,
/// `break`, `continue`, `fail(…)` or `exit(…)`; also an `if` whose branches all end so).
fn diverges(block: &[ast::Stmt]) -> bool {
    match block.last() {
        None => false,
        Some(s) => stmt_diverges(s),
    }
}

fn stmt_diverges(s: &ast::Stmt) -> bool {
    match &s.kind {
        S::Return(_) | S::Break | S::Continue => true,
        S::Expr(ast::Expr {
            kind: A::Call { callee, .. },
            ..
        }) => callee.name == "fail" || callee.name == "exit",
        S::If {
            then,
            els: Some(els),
            ..
        } => diverges(&then.stmts) && diverges(&els.stmts),
        S::Try { body, handler, .. } => diverges(&body.stmts) && diverges(&handler.stmts),
        S::While { cond, body } => matches!(cond.kind, A::Bool(true)) && !has_break(&body.stmts),
        _ => false,
    }
}

/// Whether a `break` in `block` targets the enclosing loop.
fn has_break(block: &[ast::Stmt]) -> bool {
    block.iter().any(|s| match &s.kind {
        S::Break => true,
        S::If { then, els, .. } => {
            has_break(&then.stmts) || els.as_ref().is_some_and(|b| has_break(&b.stmts))
        }
        S::Try { body, handler, .. } => has_break(&body.stmts) || has_break(&handler.stmts),
        S::Transaction(b) => has_break(&b.stmts),
        _ => false,
    })
}

/// Names assigned anywhere in a block (for invalidating narrowing around loops).
fn assigned_names(block: &[ast::Stmt], out: &mut HashSet<String>) {
    for s in block {
        match &s.kind {
            S::Assign {
                target: ast::Expr {
                    kind: A::Name(n), ..
                },
                ..
            } => {
                out.insert(n.clone());
            }
            S::If { then, els, .. } => {
                assigned_names(&then.stmts, out);
                if let Some(b) = els {
                    assigned_names(&b.stmts, out);
                }
            }
            S::While { body, .. } | S::For { body, .. } | S::Transaction(body) => {
                assigned_names(&body.stmts, out)
            }
            S::Try { body, handler, .. } => {
                assigned_names(&body.stmts, out);
                assigned_names(&handler.stmts, out);
            }
            _ => {}
        }
    }
}

type Facts = Vec<(LocalId, Ty)>;

impl<'a> Checker<'a> {
    fn err(&mut self, code: &'static str, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(code, span, msg));
    }

    fn tyname(&self, t: &Ty) -> String {
        format!("`{}`", t.display(&self.class_names))
    }

    fn run(&mut self) -> tir::Program {
        self.collect();
        // Constants.
        for g in 0..self.globals.len() {
            self.ensure_global(g, None);
        }
        // Function bodies.
        let mut funcs = Vec::with_capacity(self.funcs.len());
        for f in 0..self.funcs.len() {
            funcs.push(self.check_fn(f));
        }
        let main = self.find_main();
        let globals = self
            .global_out
            .drain(..)
            .map(|g| {
                g.unwrap_or(Global {
                    name: String::new(),
                    ty: Ty::Unknown,
                    value: Expr::new(E::Nil, Ty::Unknown, Span::default()),
                    n_locals: 0,
                })
            })
            .collect();
        tir::Program {
            funcs,
            classes: std::mem::take(&mut self.classes),
            globals,
            init_order: std::mem::take(&mut self.init_order),
            main,
            tables: std::mem::take(&mut self.tables),
        }
    }

    fn find_main(&mut self) -> FuncId {
        match self.func_index.get("main") {
            Some(&f) => {
                let sig = &self.funcs[f];
                let span = self.fn_decl(f).map(|d| d.span).unwrap_or_default();
                let params_ok = sig.params.is_empty()
                    || (sig.params.len() == 1 && sig.params[0].1 == Ty::List(Box::new(Ty::Text)));
                let ret_ok = matches!(sig.ret, Ty::Void | Ty::Int);
                if !params_ok {
                    self.err(
                        "main",
                        span,
                        "`main` takes no parameters or one `args: multi Text`",
                    );
                }
                if !ret_ok {
                    self.err(
                        "main",
                        span,
                        "`main` returns nothing or an `Int` (the exit status)",
                    );
                }
                f
            }
            None => {
                // A syntax error may have swallowed `main`; saying so again is noise.
                if !self.diags.iter().any(|d| d.code == "syntax") {
                    self.err("main", Span::default(), "the program has no `fn main()`");
                }
                0
            }
        }
    }

    fn fn_decl(&self, f: FuncId) -> Option<&'a ast::FnDecl> {
        let (m, i, meth) = self.funcs[f].decl?;
        match (&self.modules[m].items[i], meth) {
            (ast::Item::Fn(d), None) => Some(d),
            (ast::Item::Class(c), Some(k)) => c.methods.get(k),
            _ => None,
        }
    }

    // ---- pass 1: collect declarations -------------------------------------------------

    fn collect(&mut self) {
        let modules = self.modules;
        // Classes first (names), so types can refer to any class.
        for (mi, m) in modules.iter().enumerate() {
            for (ii, item) in m.items.iter().enumerate() {
                match item {
                    ast::Item::Class(c) => {
                        if self.class_index.contains_key(&c.name.name) {
                            self.err(
                                "name",
                                c.name.span,
                                format!("class `{}` is defined more than once", c.name.name),
                            );
                            continue;
                        }
                        if matches!(
                            c.name.name.as_str(),
                            "Int" | "Float" | "Bool" | "Text" | "Error"
                        ) {
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
                                format!(
                                    "unknown module `{}`; the standard modules are {}",
                                    u.name,
                                    MODULES
                                        .iter()
                                        .map(|m| format!("`{m}`"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
        // Class fields and methods.
        for cid in 0..self.class_decls.len() {
            let (mi, ii) = self.class_decls[cid];
            let ast::Item::Class(c) = &modules[mi].items[ii] else {
                continue;
            };
            let is_table = self.table_classes.contains(&cid);
            let mut table = is_table.then(|| TableInfo {
                index: self.tables.len(),
                name: c.name.name.clone(),
                indexes: Vec::new(),
                durable: true,
            });
            if is_table {
                self.tables.push(cid);
            }
            let mut fields = Vec::new();
            let mut seen = HashSet::new();
            for f in &c.fields {
                if !seen.insert(f.name.name.clone()) {
                    self.err(
                        "name",
                        f.name.span,
                        format!(
                            "field `{}` is declared more than once in `{}`",
                            f.name.name, c.name.name
                        ),
                    );
                }
                self.in_table = is_table;
                let ty = self.resolve_type(&f.ty);
                self.in_table = false;
                if let Some(t) = table.as_mut() {
                    if f.name.name == "id" {
                        self.err(
                            "table",
                            f.name.span,
                            "`id` is every row's read-only id; a table cannot declare it",
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
                    } else if !col_ok
                        || matches!(ty.strip(), Ty::Class(k) if !self.table_classes.contains(k))
                    {
                        let n = self.tyname(&ty);
                        self.err(
                            "table",
                            f.ty.span,
                            format!("a table column cannot have type {n}: columns are `Int`, `Float`, `Bool`, `Text`, `ref T`, or `?` of one of them"),
                        );
                    }
                    let col = u16::try_from(fields.len()).unwrap_or(u16::MAX);
                    for a in &f.annots {
                        if a.name.name == "unique" && a.args.is_none() {
                            t.indexes
                                .push((vec![col], wo_bytecode::image::IndexKind::Unique));
                        } else {
                            self.err(
                                "annotation",
                                a.span,
                                format!(
                                    "unknown field annotation `@{}` (table columns take `@unique`)",
                                    a.name.name
                                ),
                            );
                        }
                    }
                } else {
                    for a in &f.annots {
                        let msg = if a.name.name == "unique" {
                            format!("`@unique` applies only to columns of a `@table` class, and `{}` is not one", c.name.name)
                        } else {
                            format!("unknown field annotation `@{}`", a.name.name)
                        };
                        self.err("annotation", a.span, msg);
                    }
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
            for (k, m) in c.methods.iter().enumerate() {
                if seen.contains(&m.name.name)
                    || methods
                        .iter()
                        .any(|(n, _): &(String, FuncId)| *n == m.name.name)
                {
                    self.err(
                        "name",
                        m.name.span,
                        format!(
                            "`{}` is declared more than once in `{}`",
                            m.name.name, c.name.name
                        ),
                    );
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
                });
                methods.push((m.name.name.clone(), id));
            }
            self.classes.push(ClassInfo {
                name: c.name.name.clone(),
                fields,
                methods,
                table,
            });
        }
        // A durable table cannot point into one that forgets its rows at exit.
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
        // Functions and constants.
        for (mi, m) in modules.iter().enumerate() {
            for (ii, item) in m.items.iter().enumerate() {
                match item {
                    ast::Item::Fn(f) => {
                        if self.func_index.contains_key(&f.name.name) {
                            self.err(
                                "name",
                                f.name.span,
                                format!("function `{}` is defined more than once", f.name.name),
                            );
                            continue;
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
                        });
                        self.func_index.insert(f.name.name.clone(), id);
                    }
                    ast::Item::Const { name, .. } => {
                        if self.global_index.contains_key(&name.name)
                            || self.class_index.contains_key(&name.name)
                        {
                            self.err(
                                "name",
                                name.span,
                                format!("`{}` is defined more than once", name.name),
                            );
                            continue;
                        }
                        let id = self.globals.len();
                        self.globals.push(GlobalSlot {
                            name: name.name.clone(),
                            decl: (mi, ii),
                            state: GlobalState::Pending,
                            ty: Ty::Unknown,
                        });
                        self.global_out.push(None);
                        self.global_index.insert(name.name.clone(), id);
                    }
                    _ => {}
                }
            }
        }
    }

    fn resolve_params(&mut self, params: &[ast::Param]) -> Vec<(String, Ty)> {
        let mut out: Vec<(String, Ty)> = Vec::new();
        for p in params {
            if out.iter().any(|(n, _)| *n == p.name.name) {
                self.err(
                    "name",
                    p.name.span,
                    format!("parameter `{}` is declared more than once", p.name.name),
                );
            }
            let ty = self.resolve_type(&p.ty);
            out.push((p.name.name.clone(), ty));
        }
        out
    }

    fn resolve_type(&mut self, t: &ast::TypeExpr) -> Ty {
        match &t.kind {
            TypeKind::Named(n) => match n.as_str() {
                "Int" => Ty::Int,
                "Float" => Ty::Float,
                "Bool" => Ty::Bool,
                "Text" => Ty::Text,
                "Error" => Ty::Error,
                _ => match self.class_index.get(n) {
                    Some(&c) => Ty::Class(c),
                    None => {
                        self.err("type", t.span, format!("unknown type `{n}`"));
                        Ty::Unknown
                    }
                },
            },
            TypeKind::Nullable(inner) => {
                let i = self.resolve_type(inner);
                if i.is_nullable() {
                    self.err(
                        "type",
                        t.span,
                        "`??T` is not a type: `?` applies to a non-nullable type",
                    );
                    return i;
                }
                Ty::nullable(i)
            }
            TypeKind::Multi(inner) => Ty::List(Box::new(self.resolve_type(inner))),
            TypeKind::Map(k, v) => {
                let kt = self.resolve_type(k);
                let vt = self.resolve_type(v);
                if !matches!(kt, Ty::Int | Ty::Text | Ty::Bool | Ty::Unknown) {
                    self.err(
                        "type",
                        k.span,
                        format!(
                            "map keys must be `Int`, `Text` or `Bool`, not {}",
                            self.tyname(&kt)
                        ),
                    );
                }
                Ty::Map(Box::new(kt), Box::new(vt))
            }
            TypeKind::Task(inner) => {
                let i = self.resolve_type(inner);
                self.err(
                    "unsupported",
                    t.span,
                    "fibers (`task<T>`) are not supported by this version of wo yet",
                );
                Ty::Task(Box::new(i))
            }
            TypeKind::Ref(name) => {
                match self.class_index.get(&name.name) {
                    Some(&c) if self.table_classes.contains(&c) => {
                        if !self.in_table {
                            self.err(
                            "type",
                            t.span,
                            format!("`ref {}` is a table column type; elsewhere a row is written `{}`", name.name, name.name),
                        );
                        }
                        Ty::Class(c)
                    }
                    Some(_) => {
                        self.err(
                            "type",
                            t.span,
                            format!(
                                "`ref` points to a table, and `{}` is not a `@table` class",
                                name.name
                            ),
                        );
                        Ty::Unknown
                    }
                    None if matches!(
                        name.name.as_str(),
                        "Int" | "Float" | "Bool" | "Text" | "Error"
                    ) =>
                    {
                        self.err(
                            "type",
                            t.span,
                            format!(
                                "`ref` points to a table, and `{}` is not a `@table` class",
                                name.name
                            ),
                        );
                        Ty::Unknown
                    }
                    None => {
                        self.err("type", name.span, format!("unknown type `{}`", name.name));
                        Ty::Unknown
                    }
                }
            }
        }
    }

    // ---- constants ----------------------------------------------------------------------

    fn ensure_global(&mut self, g: usize, use_span: Option<Span>) -> Ty {
        match self.globals[g].state {
            GlobalState::Done => return self.globals[g].ty.clone(),
            GlobalState::InProgress => {
                let span = use_span.unwrap_or_default();
                let name = self.globals[g].name.clone();
                self.err(
                    "const",
                    span,
                    format!("constant `{name}` depends on itself"),
                );
                return Ty::Unknown;
            }
            GlobalState::Pending => {}
        }
        self.globals[g].state = GlobalState::InProgress;
        let (mi, ii) = self.globals[g].decl;
        let ast::Item::Const { value, .. } = &self.modules[mi].items[ii] else {
            return Ty::Unknown;
        };
        let saved = std::mem::take(&mut self.ctx);
        self.ctx.scopes.push(HashMap::new());
        let e = self.expr(value, None);
        let n_locals = self.ctx.locals.len();
        self.ctx = saved;
        let ty = match e.ty {
            Ty::Nil => {
                self.err("type", value.span, "a constant cannot be just `nil`");
                Ty::Unknown
            }
            Ty::Void => {
                self.err("type", value.span, "this expression has no value");
                Ty::Unknown
            }
            ref t => t.clone(),
        };
        self.globals[g].ty = ty.clone();
        self.globals[g].state = GlobalState::Done;
        self.global_out[g] = Some(Global {
            name: self.globals[g].name.clone(),
            ty: ty.clone(),
            value: e,
            n_locals,
        });
        self.init_order.push(g);
        ty
    }

    // ---- functions ----------------------------------------------------------------------

    fn check_fn(&mut self, f: FuncId) -> Func {
        let decl = self.fn_decl(f);
        let sig_ret = self.funcs[f].ret.clone();
        let name = self.funcs[f].name.clone();
        self.ctx = FnCtx {
            ret: Some(sig_ret.clone()),
            ..FnCtx::default()
        };
        self.tx_depth = 0;
        self.ctx.scopes.push(HashMap::new());
        let mut params = Vec::new();
        for (pname, pty) in self.funcs[f].params.clone() {
            let id = self.new_local(&pname, pty);
            params.push(id);
        }
        let (body, span) = match decl {
            Some(d) => {
                let body = self.block(&d.body.stmts);
                if sig_ret != Ty::Void && !diverges(&d.body.stmts) {
                    self.err(
                        "return",
                        d.span,
                        format!("function `{name}` may reach its end without returning a value"),
                    );
                }
                (body, d.span)
            }
            None => (Vec::new(), Span::default()),
        };
        let n_locals = self.ctx.locals.len();
        Func {
            name,
            params,
            ret: sig_ret,
            body,
            span,
            n_locals,
        }
    }

    fn new_local(&mut self, name: &str, ty: Ty) -> LocalId {
        let id = self.ctx.locals.len();
        self.ctx.locals.push(ty);
        if let Some(scope) = self.ctx.scopes.last_mut() {
            scope.insert(name.to_string(), id);
        }
        id
    }

    fn lookup_local(&self, name: &str) -> Option<LocalId> {
        self.ctx
            .scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name).copied())
    }

    fn local_ty(&self, id: LocalId) -> Ty {
        self.ctx
            .narrowed
            .get(&id)
            .cloned()
            .unwrap_or_else(|| self.ctx.locals[id].clone())
    }

    /// Checks a block in a new scope; narrowing established inside ends with it, and
    /// locals assigned inside lose any narrowing from outside.
    fn block(&mut self, stmts: &[ast::Stmt]) -> tir::Block {
        self.block_with(stmts, &[])
    }

    fn block_with(&mut self, stmts: &[ast::Stmt], facts: &[(LocalId, Ty)]) -> tir::Block {
        let saved = self.ctx.narrowed.clone();
        let log_len = self.ctx.assigned_log.len();
        for (id, ty) in facts {
            self.ctx.narrowed.insert(*id, ty.clone());
        }
        self.ctx.scopes.push(HashMap::new());
        let mut out = Vec::new();
        for s in stmts {
            self.stmt(s, &mut out);
        }
        self.ctx.scopes.pop();
        let mut restored = saved;
        for id in &self.ctx.assigned_log[log_len..] {
            restored.remove(id);
        }
        self.ctx.narrowed = restored;
        out
    }

    fn note_assigned(&mut self, id: LocalId) {
        self.ctx.narrowed.remove(&id);
        self.ctx.assigned_log.push(id);
    }

    /// What a condition proves about nullable locals when it is true, and when false.
    fn facts(&self, e: &ast::Expr) -> (Facts, Facts) {
        match &e.kind {
            A::Binary { op, lhs, rhs } if matches!(op, ast::BinOp::Eq | ast::BinOp::Ne) => {
                let name = match (&lhs.kind, &rhs.kind) {
                    (A::Name(n), A::Nil) | (A::Nil, A::Name(n)) => n,
                    _ => return (Vec::new(), Vec::new()),
                };
                let Some(id) = self.lookup_local(name) else {
                    return (Vec::new(), Vec::new());
                };
                let ty = self.local_ty(id);
                let fact = match ty {
                    Ty::Nullable(inner) => vec![(id, *inner)],
                    _ => Vec::new(),
                };
                if *op == ast::BinOp::Ne {
                    (fact, Vec::new())
                } else {
                    (Vec::new(), fact)
                }
            }
            A::Unary {
                op: ast::UnOp::Not,
                expr,
            } => {
                let (t, f) = self.facts(expr);
                (f, t)
            }
            A::Binary {
                op: ast::BinOp::And,
                lhs,
                rhs,
            } => {
                let (mut t, _) = self.facts(lhs);
                t.extend(self.facts(rhs).0);
                (t, Vec::new())
            }
            A::Binary {
                op: ast::BinOp::Or,
                lhs,
                rhs,
            } => {
                let (_, mut f) = self.facts(lhs);
                f.extend(self.facts(rhs).1);
                (Vec::new(), f)
            }
            _ => (Vec::new(), Vec::new()),
        }
    }

    fn with_facts<R>(&mut self, facts: &[(LocalId, Ty)], f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = self.ctx.narrowed.clone();
        for (id, ty) in facts {
            self.ctx.narrowed.insert(*id, ty.clone());
        }
        let r = f(self);
        self.ctx.narrowed = saved;
        r
    }

    fn cond(&mut self, e: &ast::Expr) -> Expr {
        let c = self.expr(e, Some(&Ty::Bool));
        if !assignable(&c.ty, &Ty::Bool) || c.ty.is_nullable() {
            let t = self.tyname(&c.ty);
            self.err(
                "type",
                e.span,
                format!("a condition must be `Bool`, found {t}"),
            );
        }
        c
    }

    fn stmt(&mut self, s: &ast::Stmt, out: &mut tir::Block) {
        let span = s.span;
        let push = |out: &mut tir::Block, kind| out.push(Stmt { kind, span });
        match &s.kind {
            S::Let { name, ty, value } => {
                let declared = ty.as_ref().map(|t| self.resolve_type(t));
                let v = self.expr(value, declared.as_ref());
                let ty = match declared {
                    Some(d) => {
                        self.expect_assignable(&v, &d, value.span);
                        d
                    }
                    None => match &v.ty {
                        Ty::Nil => {
                            self.err(
                                "type",
                                value.span,
                                format!("cannot infer the type of `{}` from `nil`; write `let {}: ?T = nil`", name.name, name.name),
                            );
                            Ty::Unknown
                        }
                        Ty::Void => {
                            self.err("type", value.span, "this expression has no value");
                            Ty::Unknown
                        }
                        t => t.clone(),
                    },
                };
                if self
                    .ctx
                    .scopes
                    .last()
                    .is_some_and(|sc| sc.contains_key(&name.name))
                {
                    self.err(
                        "name",
                        name.span,
                        format!("`{}` is already defined in this block", name.name),
                    );
                }
                let id = self.new_local(&name.name, ty);
                push(out, T::Let(id, v));
            }
            S::Assign { target, op, value } => self.assign(target, *op, value, span, out),
            S::Expr(e) => {
                let e = self.expr(e, None);
                push(out, T::Expr(e));
            }
            S::Return(v) => {
                let ret = self.ctx.ret.clone().unwrap_or(Ty::Void);
                match v {
                    Some(v) => {
                        let e = self.expr(v, Some(&ret));
                        if ret == Ty::Void {
                            self.err(
                                "return",
                                v.span,
                                "this function returns no value; declare `-> T` to return one",
                            );
                        } else {
                            self.expect_assignable(&e, &ret, v.span);
                        }
                        push(out, T::Return(Some(e)));
                    }
                    None => {
                        if ret != Ty::Void && ret != Ty::Unknown {
                            let t = self.tyname(&ret);
                            self.err(
                                "return",
                                span,
                                format!("this function must return a value of type {t}"),
                            );
                        }
                        push(out, T::Return(None));
                    }
                }
            }
            S::Break | S::Continue => {
                if self.ctx.loop_depth == 0 {
                    let w = if matches!(s.kind, S::Break) {
                        "break"
                    } else {
                        "continue"
                    };
                    self.err("loop", span, format!("`{w}` outside of a loop"));
                }
                push(
                    out,
                    if matches!(s.kind, S::Break) {
                        T::Break
                    } else {
                        T::Continue
                    },
                );
            }
            S::Delete(e) => {
                if let A::TypeName(n) = &e.kind {
                    if self
                        .class_index
                        .get(n)
                        .is_some_and(|c| self.table_classes.contains(c))
                    {
                        self.err(
                            "type",
                            e.span,
                            format!("`delete` takes one row, and `{n}` is a table: delete its rows in a loop, `for r in from r in {n} where … select r {{ delete r }}`"),
                        );
                        return;
                    }
                }
                let row = self.expr(e, None);
                match self.table_of(&row.ty) {
                    Some(table) => push(out, T::Delete { row, table }),
                    None if row.ty == Ty::Unknown => {}
                    None => {
                        let t = self.tyname(&row.ty);
                        let mut d = Diagnostic::error(
                            "type",
                            e.span,
                            format!("`delete` takes a table row, found {t}"),
                        );
                        if matches!(&row.ty, Ty::Nullable(inner) if self.table_of(inner).is_some())
                        {
                            d = d.with_note(
                                "the row may be nil: narrow it with `if r != nil { … }` first",
                            );
                        }
                        self.diags.push(d);
                    }
                }
            }
            S::If { cond, then, els } => {
                let c = self.cond(cond);
                let (tf, ff) = self.facts(cond);
                // Each branch starts from the narrowing before the `if`; what holds
                // after it is what holds after every branch that can complete.
                let before = self.ctx.narrowed.clone();
                let then_b = self.block_with(&then.stmts, &tf);
                let after_then = std::mem::replace(&mut self.ctx.narrowed, before);
                let els_b = match els {
                    Some(b) => self.block_with(&b.stmts, &ff),
                    None => Vec::new(),
                };
                let after_else = std::mem::take(&mut self.ctx.narrowed);
                let then_div = diverges(&then.stmts);
                let else_div = els.as_ref().is_some_and(|b| diverges(&b.stmts));
                self.ctx.narrowed = if then_div {
                    let mut n = after_else;
                    n.extend(ff);
                    n
                } else if else_div {
                    let mut n = after_then;
                    n.extend(tf);
                    n
                } else {
                    after_then
                        .into_iter()
                        .filter(|(id, ty)| after_else.get(id) == Some(ty))
                        .collect()
                };
                push(
                    out,
                    T::If {
                        cond: c,
                        then: then_b,
                        els: els_b,
                    },
                );
            }
            S::While { cond, body } => {
                self.forget_assigned_in(&body.stmts);
                let c = self.cond(cond);
                let (tf, _) = self.facts(cond);
                self.ctx.loop_depth += 1;
                let b = self.block_with(&body.stmts, &tf);
                self.ctx.loop_depth -= 1;
                push(out, T::While { cond: c, body: b });
            }
            S::For {
                var,
                var2,
                iter,
                body,
            } => {
                self.forget_assigned_in(&body.stmts);
                if let (A::Query(q), None) = (&iter.kind, var2) {
                    let c = self.query(q, iter.span);
                    if c.table.is_some() {
                        self.ctx.scopes.push(HashMap::new());
                        self.ctx.loop_depth += 1;
                        let v = self.new_local(&var.name, c.select_ty.clone());
                        let b = self.block(&body.stmts);
                        self.ctx.loop_depth -= 1;
                        self.ctx.scopes.pop();
                        let mut rows = c.query;
                        let select = rows.select.take();
                        push(
                            out,
                            T::ForQuery {
                                var: v,
                                rows: Box::new(rows),
                                select,
                                body: b,
                            },
                        );
                        return;
                    }
                    let it = Expr::new(
                        E::Query(Box::new(c.query)),
                        Ty::List(Box::new(c.select_ty)),
                        iter.span,
                    );
                    self.ctx.scopes.push(HashMap::new());
                    self.ctx.loop_depth += 1;
                    let v = self.new_local(&var.name, it.ty.strip().clone());
                    let v_ty = match &it.ty {
                        Ty::List(t) => (**t).clone(),
                        _ => Ty::Unknown,
                    };
                    self.ctx.locals[v] = v_ty;
                    let b = self.block(&body.stmts);
                    self.ctx.loop_depth -= 1;
                    self.ctx.scopes.pop();
                    push(
                        out,
                        T::ForList {
                            var: v,
                            list: it,
                            body: b,
                        },
                    );
                    return;
                }
                let it = self.expr(iter, None);
                self.ctx.scopes.push(HashMap::new());
                self.ctx.loop_depth += 1;
                match (it.ty.clone(), var2) {
                    (Ty::List(elem), None) => {
                        let v = self.new_local(&var.name, *elem);
                        let b = self.block(&body.stmts);
                        push(
                            out,
                            T::ForList {
                                var: v,
                                list: it,
                                body: b,
                            },
                        );
                    }
                    (Ty::Map(k, v), Some(var2)) => {
                        let kid = self.new_local(&var.name, *k);
                        let vid = self.new_local(&var2.name, *v);
                        let b = self.block(&body.stmts);
                        push(
                            out,
                            T::ForMap {
                                key: kid,
                                value: vid,
                                map: it,
                                body: b,
                            },
                        );
                    }
                    (Ty::Map(..), None) => {
                        self.err(
                            "type",
                            iter.span,
                            format!("iterating a map takes two variables: `for k, v in {}`", "…"),
                        );
                    }
                    (Ty::List(_), Some(v2)) => {
                        self.err(
                            "type",
                            v2.span,
                            "iterating a list takes one variable: `for x in xs`",
                        );
                    }
                    (Ty::Unknown, _) => {
                        self.new_local(&var.name, Ty::Unknown);
                        if let Some(v2) = var2 {
                            self.new_local(&v2.name, Ty::Unknown);
                        }
                        self.block(&body.stmts);
                    }
                    (t, _) => {
                        let t = self.tyname(&t);
                        self.err(
                            "type",
                            iter.span,
                            format!("cannot iterate over a value of type {t}"),
                        );
                    }
                }
                self.ctx.loop_depth -= 1;
                self.ctx.scopes.pop();
            }
            S::Transaction(b) => {
                if self.tx_depth > 0 {
                    self.err(
                        "transaction",
                        span,
                        "transactions do not nest: this `transaction` is inside another one",
                    );
                }
                self.tx_depth += 1;
                let body = self.block(&b.stmts);
                self.tx_depth -= 1;
                push(out, T::Transaction(body));
            }
            S::Try { body, err, handler } => {
                let b = self.block(&body.stmts);
                self.ctx.scopes.push(HashMap::new());
                let eid = self.new_local(&err.name, Ty::Error);
                let h = self.block(&handler.stmts);
                self.ctx.scopes.pop();
                push(
                    out,
                    T::Try {
                        body: b,
                        err: eid,
                        handler: h,
                    },
                );
            }
        }
    }

    fn forget_assigned_in(&mut self, body: &[ast::Stmt]) {
        let mut names = HashSet::new();
        assigned_names(body, &mut names);
        for n in names {
            if let Some(id) = self.lookup_local(&n) {
                self.ctx.narrowed.remove(&id);
            }
        }
    }

    fn expect_assignable(&mut self, e: &Expr, to: &Ty, span: Span) {
        if e.ty == Ty::Void {
            self.err("type", span, "this expression has no value");
        } else if !assignable(&e.ty, to) {
            let (f, t) = (self.tyname(&e.ty), self.tyname(to));
            let mut d = Diagnostic::error("type", span, format!("expected {t}, found {f}"));
            if let Ty::Nullable(inner) = &e.ty {
                if assignable(inner, to) {
                    d = d.with_note("a `?T` may be nil: narrow it with `if x != nil { … }`, or use `x ?? default` or `unwrap(x)`");
                }
            }
            if matches!((&e.ty, to), (Ty::Int, Ty::Float)) {
                d = d.with_note("there is no implicit conversion: use `float(…)`");
            }
            if matches!((&e.ty, to), (Ty::Float, Ty::Int)) {
                d = d.with_note("there is no implicit conversion: use `int(…)`");
            }
            self.diags.push(d);
        }
    }

    fn arith_op(op: AssignOp) -> Option<ast::BinOp> {
        match op {
            AssignOp::Set => None,
            AssignOp::Add => Some(ast::BinOp::Add),
            AssignOp::Sub => Some(ast::BinOp::Sub),
            AssignOp::Mul => Some(ast::BinOp::Mul),
            AssignOp::Div => Some(ast::BinOp::Div),
            AssignOp::Rem => Some(ast::BinOp::Rem),
        }
    }

    fn assign(
        &mut self,
        target: &ast::Expr,
        op: AssignOp,
        value: &ast::Expr,
        span: Span,
        out: &mut tir::Block,
    ) {
        let bin = Self::arith_op(op);
        match &target.kind {
            A::Name(n) => {
                let Some(id) = self.lookup_local(n) else {
                    if self.func_index.contains_key(n) {
                        self.err(
                            "assign",
                            target.span,
                            format!("cannot assign to function `{n}`"),
                        );
                    } else {
                        self.err("name", target.span, format!("unknown variable `{n}`"));
                    }
                    self.expr(value, None);
                    return;
                };
                let declared = self.ctx.locals[id].clone();
                let v = match bin {
                    None => self.expr(value, Some(&declared)),
                    Some(b) => {
                        let cur = Expr::new(E::Local(id), self.local_ty(id), target.span);
                        let rhs = self.expr(value, Some(&declared));
                        self.binary(b, cur, rhs, span)
                    }
                };
                self.expect_assignable(&v, &declared, value.span);
                self.note_assigned(id);
                out.push(Stmt {
                    kind: T::SetLocal(id, v),
                    span,
                });
            }
            A::TypeName(n) => {
                self.err(
                    "assign",
                    target.span,
                    format!("cannot assign to constant `{n}`"),
                );
                self.expr(value, None);
            }
            A::Field { recv, name } => {
                let obj = self.expr(recv, None);
                let row_table = self.table_of(&obj.ty);
                if row_table.is_some() && name.name == "id" {
                    self.err("assign", name.span, "a row's `id` is read-only");
                    self.expr(value, None);
                    return;
                }
                let Some((idx, fty)) = self.field_of(&obj, name, recv.span, true) else {
                    self.expr(value, None);
                    return;
                };
                let set = |obj: Expr, value: Expr| match row_table {
                    Some(table) => T::SetRowField {
                        row: obj,
                        table,
                        col: idx,
                        value,
                    },
                    None => T::SetField {
                        obj,
                        field: idx,
                        value,
                    },
                };
                let get = |obj: Expr| match row_table {
                    Some(table) => E::RowField(Box::new(obj), table, idx),
                    None => E::Field(Box::new(obj), idx),
                };
                match bin {
                    None => {
                        let v = self.expr(value, Some(&fty));
                        self.expect_assignable(&v, &fty, value.span);
                        out.push(Stmt {
                            kind: set(obj, v),
                            span,
                        });
                    }
                    Some(b) => {
                        // `o.f op= v` evaluates `o` once: `{ let t = o; t.f = t.f op v }`.
                        let tmp = self.ctx.locals.len();
                        self.ctx.locals.push(obj.ty.clone());
                        let t_ref = Expr::new(E::Local(tmp), obj.ty.clone(), recv.span);
                        let cur = Expr::new(get(t_ref.clone()), fty.clone(), target.span);
                        let rhs = self.expr(value, Some(&fty));
                        let v = self.binary(b, cur, rhs, span);
                        self.expect_assignable(&v, &fty, value.span);
                        out.push(Stmt {
                            kind: T::Block(vec![
                                Stmt {
                                    kind: T::Let(tmp, obj),
                                    span,
                                },
                                Stmt {
                                    kind: set(t_ref, v),
                                    span,
                                },
                            ]),
                            span,
                        });
                    }
                }
            }
            A::Index { recv, index } => {
                let coll = self.expr(recv, None);
                let (is_list, key_ty, val_ty) = match &coll.ty {
                    Ty::List(t) => (true, Ty::Int, (**t).clone()),
                    Ty::Map(k, v) => (false, (**k).clone(), (**v).clone()),
                    Ty::Unknown => (true, Ty::Unknown, Ty::Unknown),
                    t => {
                        let t = self.tyname(t);
                        self.err(
                            "type",
                            recv.span,
                            format!("cannot index into a value of type {t}"),
                        );
                        (true, Ty::Unknown, Ty::Unknown)
                    }
                };
                let key = self.expr(index, Some(&key_ty));
                self.expect_assignable(&key, &key_ty, index.span);
                let mk = |is_list: bool, c: Expr, k: Expr, v: Expr| {
                    if is_list {
                        T::SetList {
                            list: c,
                            index: k,
                            value: v,
                        }
                    } else {
                        T::SetMap {
                            map: c,
                            key: k,
                            value: v,
                        }
                    }
                };
                match bin {
                    None => {
                        let v = self.expr(value, Some(&val_ty));
                        self.expect_assignable(&v, &val_ty, value.span);
                        out.push(Stmt {
                            kind: mk(is_list, coll, key, v),
                            span,
                        });
                    }
                    Some(b) => {
                        let tc = self.ctx.locals.len();
                        self.ctx.locals.push(coll.ty.clone());
                        let tk = self.ctx.locals.len();
                        self.ctx.locals.push(key.ty.clone());
                        let c_ref = Expr::new(E::Local(tc), coll.ty.clone(), recv.span);
                        let k_ref = Expr::new(E::Local(tk), key.ty.clone(), index.span);
                        let cur = if is_list {
                            Expr::new(
                                E::ListIndex(Box::new(c_ref.clone()), Box::new(k_ref.clone())),
                                val_ty.clone(),
                                target.span,
                            )
                        } else {
                            // A compound assignment on a map entry requires it to exist.
                            Expr::new(
                                E::Builtin {
                                    name: "get",
                                    args: vec![c_ref.clone(), k_ref.clone()],
                                },
                                val_ty.clone(),
                                target.span,
                            )
                        };
                        let rhs = self.expr(value, Some(&val_ty));
                        let v = self.binary(b, cur, rhs, span);
                        self.expect_assignable(&v, &val_ty, value.span);
                        out.push(Stmt {
                            kind: T::Block(vec![
                                Stmt {
                                    kind: T::Let(tc, coll),
                                    span,
                                },
                                Stmt {
                                    kind: T::Let(tk, key),
                                    span,
                                },
                                Stmt {
                                    kind: mk(is_list, c_ref, k_ref, v),
                                    span,
                                },
                            ]),
                            span,
                        });
                    }
                }
            }
            _ => {
                self.err(
                    "assign",
                    target.span,
                    "cannot assign to this expression; assign to a variable, a field `x.f` or an element `xs[i]`",
                );
                self.expr(value, None);
            }
        }
    }

    /// Resolves `obj.name` to a field index and type.
    fn field_of(
        &mut self,
        obj: &Expr,
        name: &ast::Ident,
        span: Span,
        for_write: bool,
    ) -> Option<(u16, Ty)> {
        match &obj.ty {
            Ty::Class(c) => {
                let class = &self.classes[*c];
                match class.fields.iter().position(|f| f.name == name.name) {
                    Some(i) => Some((
                        u16::try_from(i).unwrap_or(u16::MAX),
                        class.fields[i].ty.clone(),
                    )),
                    None => {
                        let cname = class.name.clone();
                        if class.methods.iter().any(|(m, _)| *m == name.name) {
                            self.err(
                                "name",
                                name.span,
                                format!(
                                    "`{}` is a method of `{cname}`; call it with `.{}(…)`",
                                    name.name, name.name
                                ),
                            );
                        } else {
                            self.err(
                                "name",
                                name.span,
                                format!("class `{cname}` has no field `{}`", name.name),
                            );
                        }
                        None
                    }
                }
            }
            Ty::Error => {
                if for_write {
                    self.err(
                        "assign",
                        name.span,
                        "the fields of an `Error` are read-only",
                    );
                    return None;
                }
                let (i, t) = match name.name.as_str() {
                    "kind" => (0, Ty::Text),
                    "code" => (1, Ty::Int),
                    "message" => (2, Ty::Text),
                    "line" => (3, Ty::Int),
                    _ => {
                        self.err(
                            "name",
                            name.span,
                            format!("`Error` has no field `{}` (it has `kind`, `code`, `message`, `line`)", name.name),
                        );
                        return None;
                    }
                };
                Some((i, t))
            }
            Ty::Nullable(inner) if matches!(**inner, Ty::Class(_) | Ty::Error) => {
                let t = self.tyname(&obj.ty);
                let note = if matches!(obj.kind, E::Local(_)) {
                    "check `if x != nil { … }` first, or use `unwrap(…)`"
                } else {
                    "copy it to a local and check `if x != nil { … }` first, or use `unwrap(…)`"
                };
                self.diags.push(
                    Diagnostic::error(
                        "nil",
                        span,
                        format!("this value has type {t} and may be nil"),
                    )
                    .with_note(note),
                );
                None
            }
            Ty::Unknown => None,
            t => {
                let t = self.tyname(t);
                self.err(
                    "type",
                    name.span,
                    format!("a value of type {t} has no field `{}`", name.name),
                );
                None
            }
        }
    }

    // ---- expressions ----------------------------------------------------------------------

    pub(crate) fn expr(&mut self, e: &ast::Expr, expect: Option<&Ty>) -> Expr {
        let span = e.span;
        match &e.kind {
            A::Int(v) => Expr::new(E::Int(*v), Ty::Int, span),
            A::Float(v) => Expr::new(E::Float(*v), Ty::Float, span),
            A::Bool(b) => Expr::new(E::Bool(*b), Ty::Bool, span),
            A::Nil => Expr::new(E::Nil, Ty::Nil, span),
            A::Text(parts) => self.text(parts, span),
            A::Name(n) => self.name(n, span),
            A::TypeName(n) => {
                if let Some(&g) = self.global_index.get(n) {
                    let ty = self.ensure_global(g, Some(span));
                    Expr::new(E::Global(g), ty, span)
                } else if self.class_index.contains_key(n) {
                    self.err(
                        "name",
                        span,
                        format!("class `{n}` is not a value; construct one with `{n} {{ … }}`"),
                    );
                    self.unknown(span)
                } else {
                    self.err("name", span, format!("unknown constant `{n}`"));
                    self.unknown(span)
                }
            }
            A::Call { callee, args } => self.call(callee, args, span, expect),
            A::MethodCall { recv, method, args } => {
                self.method_call(recv, method, args, span, expect)
            }
            A::Field { recv, name } => {
                if let A::Name(m) = &recv.kind {
                    if self.lookup_local(m).is_none() && MODULES.contains(&m.as_str()) {
                        return self.module_member(m, name, span);
                    }
                }
                let obj = self.expr(recv, None);
                if let Some(t) = self.table_of(&obj.ty) {
                    if name.name == "id" {
                        return Expr::new(E::RowId(Box::new(obj)), Ty::Int, span);
                    }
                    return match self.field_of(&obj, name, recv.span, false) {
                        Some((idx, ty)) => Expr::new(E::RowField(Box::new(obj), t, idx), ty, span),
                        None => self.unknown(span),
                    };
                }
                match self.field_of(&obj, name, recv.span, false) {
                    Some((idx, ty)) => Expr::new(E::Field(Box::new(obj), idx), ty, span),
                    None => self.unknown(span),
                }
            }
            A::Index { recv, index } => {
                let coll = self.expr(recv, None);
                match coll.ty.clone() {
                    Ty::List(t) => {
                        let i = self.expr(index, Some(&Ty::Int));
                        self.expect_assignable(&i, &Ty::Int, index.span);
                        Expr::new(E::ListIndex(Box::new(coll), Box::new(i)), *t, span)
                    }
                    Ty::Map(k, v) => {
                        let key = self.expr(index, Some(&k));
                        self.expect_assignable(&key, &k, index.span);
                        Expr::new(
                            E::MapIndex(Box::new(coll), Box::new(key)),
                            Ty::nullable(*v),
                            span,
                        )
                    }
                    Ty::Unknown => {
                        self.expr(index, None);
                        self.unknown(span)
                    }
                    t => {
                        let t = self.tyname(&t);
                        self.err(
                            "type",
                            recv.span,
                            format!("cannot index into a value of type {t}"),
                        );
                        self.expr(index, None);
                        self.unknown(span)
                    }
                }
            }
            A::Unary { op, expr } => {
                let v = self.expr(expr, None);
                match (op, v.ty.clone()) {
                    (ast::UnOp::Neg, Ty::Int) => {
                        Expr::new(E::Unary(UnOp::NegInt, Box::new(v)), Ty::Int, span)
                    }
                    (ast::UnOp::Neg, Ty::Float) => {
                        Expr::new(E::Unary(UnOp::NegFloat, Box::new(v)), Ty::Float, span)
                    }
                    (ast::UnOp::Not, Ty::Bool) => {
                        Expr::new(E::Unary(UnOp::Not, Box::new(v)), Ty::Bool, span)
                    }
                    (_, Ty::Unknown) => self.unknown(span),
                    (op, t) => {
                        let t = self.tyname(&t);
                        let (sym, want) = match op {
                            ast::UnOp::Neg => ("-", "`Int` or `Float`"),
                            ast::UnOp::Not => ("not", "`Bool`"),
                        };
                        self.err("type", span, format!("`{sym}` needs {want}, found {t}"));
                        self.unknown(span)
                    }
                }
            }
            A::Binary { op, lhs, rhs } => match op {
                ast::BinOp::And | ast::BinOp::Or => {
                    let l = self.cond(lhs);
                    let (tf, ff) = self.facts(lhs);
                    let facts = if *op == ast::BinOp::And { tf } else { ff };
                    let r = self.with_facts(&facts, |c| c.cond(rhs));
                    let bop = if *op == ast::BinOp::And {
                        BinOp::And
                    } else {
                        BinOp::Or
                    };
                    Expr::new(E::Binary(bop, Box::new(l), Box::new(r)), Ty::Bool, span)
                }
                ast::BinOp::Coalesce => {
                    let l = self.expr(lhs, expect);
                    let inner = l.ty.strip().clone();
                    let r = self.expr(rhs, Some(&inner));
                    if l.ty == Ty::Nil {
                        return Expr::new(
                            E::Binary(BinOp::Coalesce, Box::new(l), Box::new(r.clone())),
                            r.ty,
                            span,
                        );
                    }
                    if diverging(&r) {
                        // `x ?? fail("…")`: the value is `x`, known not nil.
                        return Expr::new(
                            E::Binary(BinOp::Coalesce, Box::new(l), Box::new(r)),
                            inner,
                            span,
                        );
                    }
                    if !assignable(&r.ty, &l.ty) && !(inner == Ty::Unknown) {
                        let (lt, rt) = (self.tyname(&l.ty), self.tyname(&r.ty));
                        self.err(
                            "type",
                            rhs.span,
                            format!("the default of `??` must fit {lt}, found {rt}"),
                        );
                    }
                    let ty = r.ty.clone();
                    Expr::new(
                        E::Binary(BinOp::Coalesce, Box::new(l), Box::new(r)),
                        ty,
                        span,
                    )
                }
                _ => {
                    let l = self.expr(lhs, None);
                    let hint = match op {
                        ast::BinOp::Eq | ast::BinOp::Ne => Some(l.ty.clone()),
                        _ => None,
                    };
                    let r = self.expr(rhs, hint.as_ref());
                    self.binary(*op, l, r, span)
                }
            },
            A::List(items) => self.list(items, span, expect),
            A::Map(entries) => self.map(entries, span, expect),
            A::Construct { class, fields } => self.construct(class, fields, span),
            A::Insert { table, fields } => self.insert(table, fields, span),
            A::Spawn { func, args } => {
                self.err(
                    "unsupported",
                    span,
                    format!(
                        "`spawn {}(…)`: fibers are not supported by this version of wo yet",
                        func.name
                    ),
                );
                for a in args {
                    self.expr(a, None);
                }
                self.unknown(span)
            }
            A::Query(q) => self.query_expr(q, span),
            A::Try { body, err, handler } => {
                let b = self.expr(body, expect);
                self.ctx.scopes.push(HashMap::new());
                let eid = self.new_local(&err.name, Ty::Error);
                let h = self.expr(handler, expect.or(Some(&b.ty)));
                self.ctx.scopes.pop();
                // A side that cannot produce a value (`fail(…)`, `exit(…)`) takes the
                // other side's type, as `!` does in Rust.
                let ty = match (diverging(&b), diverging(&h)) {
                    (false, true) if b.ty != Ty::Void => Some(b.ty.clone()),
                    (true, false) if h.ty != Ty::Void => Some(h.ty.clone()),
                    _ => unify(&b.ty, &h.ty),
                };
                let ty = match ty {
                    Some(t) if t != Ty::Void => t,
                    _ => {
                        let (bt, ht) = (self.tyname(&b.ty), self.tyname(&h.ty));
                        self.err("type", span, format!("the two sides of `try … catch` have different types: {bt} and {ht}"));
                        Ty::Unknown
                    }
                };
                Expr::new(
                    E::Try {
                        body: Box::new(b),
                        err: eid,
                        handler: Box::new(h),
                    },
                    ty,
                    span,
                )
            }
            A::Error => self.unknown(span),
        }
    }

    fn unknown(&self, span: Span) -> Expr {
        Expr::new(E::Nil, Ty::Unknown, span)
    }

    fn name(&mut self, n: &str, span: Span) -> Expr {
        if let Some(id) = self.lookup_local(n) {
            return Expr::new(E::Local(id), self.local_ty(id), span);
        }
        if MODULES.contains(&n) {
            self.err(
                "name",
                span,
                format!("module `{n}` is not a value; call its functions as `{n}.name(…)`"),
            );
        } else if self.func_index.contains_key(n) || builtin::is_builtin(n) {
            self.err(
                "name",
                span,
                format!("function `{n}` is not a value; call it with `{n}(…)`"),
            );
        } else if n == "self" {
            self.err("name", span, "`self` is only defined inside methods");
        } else {
            let names: Vec<String> = self
                .ctx
                .scopes
                .iter()
                .flat_map(|s| s.keys().cloned())
                .collect();
            let hint = suggest(n, names.iter().map(String::as_str))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            self.err("name", span, format!("unknown variable `{n}`{hint}"));
        }
        self.unknown(span)
    }

    fn text(&mut self, parts: &[ast::TextPart], span: Span) -> Expr {
        let mut pieces = Vec::new();
        for p in parts {
            match p {
                ast::TextPart::Lit(s) => {
                    if !s.is_empty() {
                        pieces.push(Expr::new(E::Text(s.clone()), Ty::Text, span));
                    }
                }
                ast::TextPart::Expr(e) => {
                    let v = self.expr(e, None);
                    match v.ty {
                        Ty::Text => pieces.push(v),
                        Ty::Void => self.err(
                            "type",
                            e.span,
                            "this expression has no value to interpolate",
                        ),
                        _ => {
                            let sp = v.span;
                            pieces.push(Expr::new(
                                E::Unary(UnOp::ToText, Box::new(v)),
                                Ty::Text,
                                sp,
                            ));
                        }
                    }
                }
            }
        }
        match pieces.len() {
            0 => Expr::new(E::Text(String::new()), Ty::Text, span),
            1 if matches!(parts, [ast::TextPart::Lit(_)]) => {
                pieces.pop().unwrap_or_else(|| self.unknown(span))
            }
            _ => Expr::new(E::Concat(pieces), Ty::Text, span),
        }
    }

    fn binary(&mut self, op: ast::BinOp, l: Expr, r: Expr, span: Span) -> Expr {
        use ast::BinOp as B;
        let (lt, rt) = (l.ty.clone(), r.ty.clone());
        if lt == Ty::Unknown || rt == Ty::Unknown {
            let ty = match op {
                B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge | B::And | B::Or => Ty::Bool,
                B::Concat => Ty::Text,
                _ => {
                    if lt == Ty::Unknown {
                        rt.clone()
                    } else {
                        lt.clone()
                    }
                }
            };
            return Expr::new(E::Binary(BinOp::Eq, Box::new(l), Box::new(r)), ty, span);
        }
        let mk = |bop: BinOp, ty: Ty, l: Expr, r: Expr| {
            Expr::new(E::Binary(bop, Box::new(l), Box::new(r)), ty, span)
        };
        let arith = |i: BinOp, f: BinOp| match (&lt, &rt) {
            (Ty::Int, Ty::Int) => Some((i, Ty::Int)),
            (Ty::Float, Ty::Float) => Some((f, Ty::Float)),
            _ => None,
        };
        let found = match op {
            B::Add => arith(BinOp::AddInt, BinOp::AddFloat),
            B::Sub => arith(BinOp::SubInt, BinOp::SubFloat),
            B::Mul => arith(BinOp::MulInt, BinOp::MulFloat),
            B::Div => arith(BinOp::DivInt, BinOp::DivFloat),
            B::Rem => arith(BinOp::RemInt, BinOp::RemFloat),
            B::Concat => (lt == Ty::Text && rt == Ty::Text).then_some((BinOp::Concat, Ty::Text)),
            B::Lt | B::Le | B::Gt | B::Ge => {
                let c = match op {
                    B::Lt => Cmp::Lt,
                    B::Le => Cmp::Le,
                    B::Gt => Cmp::Gt,
                    _ => Cmp::Ge,
                };
                match (&lt, &rt) {
                    (Ty::Int, Ty::Int) => Some((BinOp::CmpInt(c), Ty::Bool)),
                    (Ty::Float, Ty::Float) => Some((BinOp::CmpFloat(c), Ty::Bool)),
                    (Ty::Text, Ty::Text) => Some((BinOp::CmpText(c), Ty::Bool)),
                    _ => None,
                }
            }
            B::Eq | B::Ne => {
                let eq = op == B::Eq;
                let same = lt.strip() == rt.strip() || lt == Ty::Nil || rt == Ty::Nil;
                let row = |t: &Ty| self.table_of(t.strip()).is_some();
                let comparable = (ty_is_comparable_eq(&lt) || row(&lt))
                    && (ty_is_comparable_eq(&rt) || row(&rt));
                let either_nil = lt == Ty::Nil || rt == Ty::Nil;
                if same && (comparable || either_nil) {
                    match (&lt, &rt) {
                        (Ty::Int, Ty::Int) => {
                            Some((BinOp::CmpInt(if eq { Cmp::Eq } else { Cmp::Ne }), Ty::Bool))
                        }
                        _ => Some((if eq { BinOp::Eq } else { BinOp::Ne }, Ty::Bool)),
                    }
                } else if same {
                    let what = match lt.strip() {
                        Ty::List(_) => "lists",
                        Ty::Map(..) => "maps",
                        Ty::Error => "errors",
                        _ => "objects",
                    };
                    self.err(
                        "type",
                        span,
                        format!("cannot compare two {what} with `{}`", op.symbol()),
                    );
                    return mk(BinOp::Eq, Ty::Bool, l, r);
                } else {
                    None
                }
            }
            B::And | B::Or | B::Coalesce => None,
        };
        match found {
            Some((bop, ty)) => mk(bop, ty, l, r),
            None => {
                let (ls, rs) = (self.tyname(&lt), self.tyname(&rt));
                let mut d = Diagnostic::error(
                    "type",
                    span,
                    format!("cannot apply `{}` to {ls} and {rs}", op.symbol()),
                );
                if matches!(
                    (lt.strip(), rt.strip()),
                    (Ty::Int, Ty::Float) | (Ty::Float, Ty::Int)
                ) {
                    d = d
                        .with_note("Int and Float do not mix: convert with `float(…)` or `int(…)`");
                }
                if op == B::Add && (lt == Ty::Text || rt == Ty::Text) {
                    d = d.with_note("Text is joined with `..`");
                }
                if lt.is_nullable() || rt.is_nullable() {
                    d = d.with_note("a `?T` may be nil: narrow it first, or use `??`");
                }
                self.diags.push(d);
                let ty = match op {
                    B::Lt | B::Le | B::Gt | B::Ge | B::Eq | B::Ne => Ty::Bool,
                    _ => Ty::Unknown,
                };
                mk(BinOp::Eq, ty, l, r)
            }
        }
    }

    fn list(&mut self, items: &[ast::Expr], span: Span, expect: Option<&Ty>) -> Expr {
        let elem_expect = match expect.map(Ty::strip) {
            Some(Ty::List(t)) => Some((**t).clone()),
            _ => None,
        };
        let mut out = Vec::new();
        let mut elem: Option<Ty> = elem_expect.clone();
        for it in items {
            let v = self.expr(it, elem.as_ref());
            match &elem {
                Some(t) if elem_expect.is_some() => self.expect_assignable(&v, t, it.span),
                Some(t) => match unify(t, &v.ty) {
                    Some(u) => elem = Some(u),
                    None => {
                        let (a, b) = (self.tyname(t), self.tyname(&v.ty));
                        self.err(
                            "type",
                            it.span,
                            format!("list elements must have one type: {a} and {b}"),
                        );
                    }
                },
                None => {
                    if v.ty == Ty::Void {
                        self.err("type", it.span, "this expression has no value");
                    }
                    elem = Some(v.ty.clone());
                }
            }
            out.push(v);
        }
        let elem = match elem {
            Some(Ty::Nil) => {
                self.err(
                    "type",
                    span,
                    "cannot infer the element type of a list of only `nil`; annotate it",
                );
                Ty::Unknown
            }
            Some(t) => t,
            None => {
                self.err("type", span, "an empty list `[]` needs a type from its context, e.g. `let xs: multi Int = []`");
                Ty::Unknown
            }
        };
        Expr::new(E::List(out), Ty::List(Box::new(elem)), span)
    }

    fn map(&mut self, entries: &[(ast::Expr, ast::Expr)], span: Span, expect: Option<&Ty>) -> Expr {
        let (kx, vx) = match expect.map(Ty::strip) {
            Some(Ty::Map(k, v)) => (Some((**k).clone()), Some((**v).clone())),
            _ => (None, None),
        };
        let fixed = kx.is_some();
        let (mut kt, mut vt) = (kx, vx);
        let mut out = Vec::new();
        for (k, v) in entries {
            let ke = self.expr(k, kt.as_ref());
            let ve = self.expr(v, vt.as_ref());
            if fixed {
                let (a, b) = (
                    kt.clone().unwrap_or(Ty::Unknown),
                    vt.clone().unwrap_or(Ty::Unknown),
                );
                self.expect_assignable(&ke, &a, k.span);
                self.expect_assignable(&ve, &b, v.span);
            } else {
                for (slot, e, sp) in [(&mut kt, &ke, k.span), (&mut vt, &ve, v.span)] {
                    match slot {
                        None => *slot = Some(e.ty.clone()),
                        Some(t) => match unify(t, &e.ty) {
                            Some(u) => *slot = Some(u),
                            None => {
                                let msg = format!(
                                    "map entries must have one key type and one value type: `{}` and `{}`",
                                    t.display(&self.class_names),
                                    e.ty.display(&self.class_names)
                                );
                                self.diags.push(Diagnostic::error("type", sp, msg));
                            }
                        },
                    }
                }
            }
            out.push((ke, ve));
        }
        let (Some(k), Some(v)) = (kt, vt) else {
            self.err("type", span, "an empty map `{}` needs a type from its context, e.g. `let m: map<Text, Int> = {}`");
            return Expr::new(E::Map(out), Ty::Unknown, span);
        };
        // A key type that came from the context was already reported there.
        if !fixed && !matches!(k, Ty::Int | Ty::Text | Ty::Bool | Ty::Unknown) {
            let t = self.tyname(&k);
            self.err(
                "type",
                span,
                format!("map keys must be `Int`, `Text` or `Bool`, not {t}"),
            );
        }
        Expr::new(E::Map(out), Ty::Map(Box::new(k), Box::new(v)), span)
    }

    fn construct(&mut self, class: &ast::Ident, inits: &[ast::FieldInit], span: Span) -> Expr {
        let Some(&cid) = self.class_index.get(&class.name) else {
            self.err(
                "name",
                class.span,
                format!("unknown class `{}`", class.name),
            );
            for f in inits {
                self.expr(&f.value, None);
            }
            return self.unknown(span);
        };
        if self.table_classes.contains(&cid) {
            self.err(
                "table",
                span,
                format!(
                    "`{}` is a table: rows are created with `insert {} {{ … }}`",
                    class.name, class.name
                ),
            );
            return self.unknown(span);
        }
        match self.construct_fields(cid, &class.name, inits, span) {
            Some((fields, order)) => Expr::new(
                E::New {
                    class: cid,
                    fields,
                    order,
                },
                Ty::Class(cid),
                span,
            ),
            None => self.unknown(span),
        }
    }

    /// The field values of a constructor literal or an `insert`, in declaration
    /// order, and the order to evaluate them in.
    fn construct_fields(
        &mut self,
        cid: ClassId,
        class_name: &str,
        inits: &[ast::FieldInit],
        span: Span,
    ) -> Option<(Vec<Expr>, Vec<usize>)> {
        let class = ast::Ident {
            name: class_name.to_string(),
            span,
        };
        let n = self.classes[cid].fields.len();
        let mut fields: Vec<Option<Expr>> = vec![None; n];
        let mut order = Vec::new();
        for init in inits {
            let Some(i) = self.classes[cid]
                .fields
                .iter()
                .position(|f| f.name == init.name.name)
            else {
                let is_table = self.table_classes.contains(&cid);
                let msg = if is_table && init.name.name == "id" {
                    format!(
                        "`id` is assigned by the database; `insert {}` cannot set it",
                        class.name
                    )
                } else {
                    let names = self.classes[cid].fields.iter().map(|f| f.name.as_str());
                    let hint = suggest(&init.name.name, names)
                        .map(|s| format!("; did you mean `{s}`?"))
                        .unwrap_or_default();
                    format!(
                        "class `{}` has no field `{}`{hint}",
                        class.name, init.name.name
                    )
                };
                self.err("name", init.name.span, msg);
                self.expr(&init.value, None);
                continue;
            };
            let fty = self.classes[cid].fields[i].ty.clone();
            let v = self.expr(&init.value, Some(&fty));
            self.expect_assignable(&v, &fty, init.value.span);
            if fields[i].is_some() {
                self.err(
                    "name",
                    init.name.span,
                    format!("field `{}` is given more than once", init.name.name),
                );
                continue;
            }
            fields[i] = Some(v);
            order.push(i);
        }
        let mut missing = Vec::new();
        let (mi, ii) = self.class_decls[cid];
        let ast::Item::Class(decl) = &self.modules[mi].items[ii] else {
            return None;
        };
        for (i, (slot, fdecl)) in fields.iter_mut().zip(&decl.fields).enumerate() {
            if slot.is_some() {
                continue;
            }
            let fty = self.classes[cid].fields[i].ty.clone();
            if let Some(def) = &fdecl.default {
                // Defaults are checked where they are used, in a scope that sees no locals.
                let scopes = std::mem::replace(&mut self.ctx.scopes, vec![HashMap::new()]);
                let narrowed = std::mem::take(&mut self.ctx.narrowed);
                let v = self.expr(def, Some(&fty));
                self.ctx.scopes = scopes;
                self.ctx.narrowed = narrowed;
                self.expect_assignable(&v, &fty, def.span);
                *slot = Some(v);
                order.push(i);
            } else if fty.is_nullable() {
                *slot = Some(Expr::new(E::Nil, fty, span));
            } else {
                missing.push(format!("`{}`", self.classes[cid].fields[i].name));
            }
        }
        if !missing.is_empty() {
            let s = if missing.len() == 1 { "" } else { "s" };
            self.err(
                "name",
                span,
                format!(
                    "missing field{s} {} in `{}` literal",
                    missing.join(", "),
                    class.name
                ),
            );
        }
        let fields = fields
            .into_iter()
            .map(|f| f.unwrap_or_else(|| Expr::new(E::Nil, Ty::Unknown, span)))
            .collect();
        Some((fields, order))
    }

    fn call(
        &mut self,
        callee: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
        expect: Option<&Ty>,
    ) -> Expr {
        if let Some(&f) = self.func_index.get(&callee.name) {
            let params: Vec<Ty> = self.funcs[f]
                .params
                .iter()
                .map(|(_, t)| t.clone())
                .collect();
            let ret = self.funcs[f].ret.clone();
            let args = self.call_args(&callee.name, &params, args, span);
            return Expr::new(E::Call { func: f, args }, ret, span);
        }
        if self.lookup_local(&callee.name).is_some() {
            self.err(
                "name",
                callee.span,
                format!("`{}` is a variable, not a function", callee.name),
            );
            for a in args {
                self.expr(a, None);
            }
            return self.unknown(span);
        }
        builtin::call(self, &callee.name, callee.span, args, span, expect)
    }

    /// Checks call arguments against parameter types.
    fn call_args(
        &mut self,
        name: &str,
        params: &[Ty],
        args: &[ast::Expr],
        span: Span,
    ) -> Vec<Expr> {
        if params.len() != args.len() {
            let s = if params.len() == 1 { "" } else { "s" };
            self.err(
                "arity",
                span,
                format!(
                    "`{name}` takes {} argument{s}, found {}",
                    params.len(),
                    args.len()
                ),
            );
        }
        let mut out = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let want = params.get(i);
            let v = self.expr(a, want);
            if let Some(t) = want {
                self.expect_assignable(&v, t, a.span);
            }
            out.push(v);
        }
        out
    }

    fn method_call(
        &mut self,
        recv: &ast::Expr,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
        expect: Option<&Ty>,
    ) -> Expr {
        if let A::Name(m) = &recv.kind {
            if self.lookup_local(m).is_none() && MODULES.contains(&m.as_str()) {
                if !self.uses.contains(m) {
                    self.err(
                        "use",
                        recv.span,
                        format!(
                            "`{m}.{}` needs `use {m}` at the top of the file",
                            method.name
                        ),
                    );
                }
                return builtin::module_call(self, m, method, args, span, expect);
            }
        }
        if let A::TypeName(t) = &recv.kind {
            if self.class_index.contains_key(t) {
                return self.find(t, method, args, span);
            } else {
                self.err("name", recv.span, format!("unknown class `{t}`"));
            }
            for a in args {
                self.expr(a, None);
            }
            return self.unknown(span);
        }
        let obj = self.expr(recv, None);
        match obj.ty.clone() {
            Ty::Class(c) => {
                let Some(&(_, f)) = self.classes[c]
                    .methods
                    .iter()
                    .find(|(n, _)| *n == method.name)
                else {
                    let cname = self.classes[c].name.clone();
                    if self.classes[c].fields.iter().any(|f| f.name == method.name) {
                        self.err(
                            "name",
                            method.span,
                            format!("`{}` is a field of `{cname}`, not a method", method.name),
                        );
                    } else {
                        self.err(
                            "name",
                            method.span,
                            format!("class `{cname}` has no method `{}`", method.name),
                        );
                    }
                    for a in args {
                        self.expr(a, None);
                    }
                    return self.unknown(span);
                };
                let params: Vec<Ty> = self.funcs[f].params[1..]
                    .iter()
                    .map(|(_, t)| t.clone())
                    .collect();
                let ret = self.funcs[f].ret.clone();
                let name = self.funcs[f].name.clone();
                let mut all = vec![obj];
                all.extend(self.call_args(&name, &params, args, span));
                Expr::new(E::Call { func: f, args: all }, ret, span)
            }
            Ty::Unknown => {
                for a in args {
                    self.expr(a, None);
                }
                self.unknown(span)
            }
            t => {
                let ts = self.tyname(&t);
                let mut d = Diagnostic::error(
                    "type",
                    method.span,
                    format!("a value of type {ts} has no method `{}`", method.name),
                );
                if matches!(t, Ty::Nullable(_)) {
                    d = d.with_note("a `?T` may be nil: narrow it with `if x != nil { … }` first");
                } else if builtin::is_builtin(&method.name) {
                    d = d.with_note(format!(
                        "`{}` is a function: write `{}(x, …)`",
                        method.name, method.name
                    ));
                }
                self.diags.push(d);
                for a in args {
                    self.expr(a, None);
                }
                self.unknown(span)
            }
        }
    }

    fn module_member(&mut self, m: &str, name: &ast::Ident, span: Span) -> Expr {
        if !self.uses.contains(m) {
            self.err(
                "use",
                span,
                format!("`{m}.{}` needs `use {m}` at the top of the file", name.name),
            );
        }
        if m == "math" && name.name == "PI" {
            return Expr::new(E::Float(std::f64::consts::PI), Ty::Float, span);
        }
        self.err(
            "name",
            name.span,
            format!("module `{m}` has no constant `{}`", name.name),
        );
        self.unknown(span)
    }
}
