//! Answers about one place of an analysed program, in the compiler's terms (byte
//! offsets and spans): what is under the cursor (hover), where it is declared, what
//! may be written there (completion), and the outline of a file. The protocol's types
//! stay in `world`; everything here reads `wo_compiler::Analysis` and the file's text.

use std::collections::HashMap;

use wo_compiler::ast::{self, ExprKind as A, StmtKind as S};
use wo_compiler::check::{CORE, MODULES, MODULE_FUNCTIONS};
use wo_compiler::facts::{Ref, Target};
use wo_compiler::tir::Ty;
use wo_compiler::{Analysis, FileId, SourceMap, Span};

use super::builtins;

/// The built-in types, offered with the classes.
const TYPES: &[&str] = &["Int", "Float", "Bool", "Text", "Error"];

/// The fields of every `Error` value.
const ERROR_FIELDS: &[(&str, &str)] = &[
    ("kind", "Text"),
    ("code", "Int"),
    ("message", "Text"),
    ("line", "Int"),
];

/// One program's analysis, seen from one of its files.
pub struct At<'a> {
    pub analysis: &'a Analysis,
    pub sources: &'a SourceMap,
    pub file: FileId,
}

fn contains(span: Span, file: FileId, off: usize) -> bool {
    span.file == file && (span.lo as usize) <= off && off <= (span.hi as usize)
}

fn width(span: Span) -> u32 {
    span.hi.saturating_sub(span.lo)
}

/// A fenced block of wo code, as hover shows it.
fn code(text: &str) -> String {
    format!("```wo\n{text}\n```")
}

impl<'a> At<'a> {
    fn tyname(&self, t: &Ty) -> String {
        t.display(&self.analysis.facts.class_names).to_string()
    }

    fn is_table(&self, c: usize) -> bool {
        let classes = &self.analysis.program.classes;
        classes.get(c).is_some_and(|i| i.table.is_some())
    }

    /// A field's type as its class declares it: a column of a table that refers to a
    /// row is written `ref T` (`?ref T`).
    fn field_tyname(&self, class: usize, t: &Ty) -> String {
        match t.strip() {
            Ty::Class(r) if self.is_table(class) && self.is_table(*r) => {
                let q = if matches!(t, Ty::Nullable(_)) {
                    "?"
                } else {
                    ""
                };
                format!("{q}ref {}", self.tyname(t.strip()))
            }
            _ => self.tyname(t),
        }
    }

    /// The innermost resolved name at `off`.
    fn ref_at(&self, off: usize) -> Option<&'a Ref> {
        let refs = &self.analysis.facts.refs;
        refs.iter()
            .filter(|r| contains(r.span, self.file, off))
            .min_by_key(|r| width(r.span))
    }

    /// The type of the expression written exactly at `span`, if one was checked there.
    fn expr_ty(&self, span: Span) -> Option<&'a Ty> {
        let exprs = &self.analysis.facts.exprs;
        exprs.iter().rev().find(|(s, _)| *s == span).map(|(_, t)| t)
    }

    /// The `--` comment lines just above the line of `span` (annotations skipped).
    fn doc_comment(&self, span: Span) -> Option<String> {
        let file = self.sources.files.get(span.file.0 as usize)?;
        let mut line = file.line(span.lo);
        let mut lines = Vec::new();
        while line > 1 {
            line -= 1;
            let text = file.line_text(line).trim();
            if let Some(c) = text.strip_prefix("--") {
                lines.push(c.strip_prefix(' ').unwrap_or(c).to_string());
            } else if !text.starts_with('@') || !lines.is_empty() {
                break;
            }
        }
        lines.reverse();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    fn with_doc(&self, head: String, def: Option<Span>) -> String {
        match def.and_then(|d| self.doc_comment(d)) {
            Some(doc) => format!("{head}\n\n{doc}"),
            None => head,
        }
    }

    /// Markdown for what is at `off`, and the span it describes.
    pub fn hover(&self, off: usize) -> Option<(String, Span)> {
        if let Some(r) = self.ref_at(off) {
            return Some((self.describe(r), r.span));
        }
        if let Some(found) = self.table_find_at(off) {
            return Some(found);
        }
        let exprs = &self.analysis.facts.exprs;
        let (span, ty) = exprs
            .iter()
            .filter(|(s, _)| contains(*s, self.file, off))
            .min_by_key(|(s, _)| width(*s))?;
        if *ty == Ty::Unknown {
            return None;
        }
        Some((code(&self.tyname(ty)), *span))
    }

    fn describe(&self, r: &Ref) -> String {
        let facts = &self.analysis.facts;
        match &r.target {
            Target::Local { name, ty } => {
                // At a use, the type there (narrowed by an `if x != nil`).
                let ty = self.expr_ty(r.span).unwrap_or(ty);
                code(&format!("{name}: {}", self.tyname(ty)))
            }
            Target::Func(f) => self.with_doc(code(&facts.signature(*f)), r.def),
            Target::Class(c) => self.with_doc(code(&self.class_outline(*c)), r.def),
            Target::Field { class, name, ty } => {
                let cname = facts.class_names.get(*class).cloned().unwrap_or_default();
                let mut head = code(&format!(
                    "{cname}.{name}: {}",
                    self.field_tyname(*class, ty)
                ));
                let table = self.analysis.program.classes.get(*class);
                if let Some(t) = table.and_then(|c| c.table.as_ref()) {
                    head.push_str(&format!("\n\ncolumn of table `{}`", t.name));
                }
                self.with_doc(head, r.def)
            }
            Target::ErrorField { name, ty } => code(&format!("Error.{name}: {}", self.tyname(ty))),
            Target::Const { name, ty } => {
                self.with_doc(code(&format!("const {name}: {}", self.tyname(ty))), r.def)
            }
            Target::Builtin(name) => match builtins::doc(name) {
                Some((sig, doc)) => format!("{}\n\n{doc}", code(&format!("fn {sig}"))),
                None => code(name),
            },
            Target::Module(m) => format!(
                "{}\n\n{}",
                code(&format!("use {m}")),
                builtins::module_doc(m)
            ),
        }
    }

    /// `@table class Employee { name: Text … }` with its fields and methods.
    fn class_outline(&self, c: usize) -> String {
        let facts = &self.analysis.facts;
        let Some(info) = self.analysis.program.classes.get(c) else {
            return String::new();
        };
        let mut out = String::new();
        let mut unique: Vec<u16> = Vec::new();
        if let Some(t) = &info.table {
            // The annotation as it could be written: what differs from the defaults.
            use wo_bytecode::image::IndexKind;
            let mut args = Vec::new();
            if t.name != info.name {
                args.push(format!("name: {}", text_literal(&t.name)));
            }
            if let Some(was) = &t.was {
                args.push(format!("was: {}", text_literal(was)));
            }
            let names = |cols: &[u16]| {
                cols.iter()
                    .filter_map(|&c| info.fields.get(usize::from(c)).map(|f| f.name.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            for (cols, kind) in &t.indexes {
                match kind {
                    IndexKind::Hash => args.push(format!("index: [{}]", names(cols))),
                    IndexKind::Sorted => args.push(format!("sorted: [{}]", names(cols))),
                    IndexKind::Unique => unique.extend(cols.iter().copied()),
                }
            }
            if !t.durable {
                args.push("durable: false".to_string());
            }
            if args.is_empty() {
                out.push_str("@table\n");
            } else {
                out.push_str(&format!("@table({})\n", args.join(", ")));
            }
        }
        out.push_str(&format!("class {} {{\n", info.name));
        for (i, f) in info.fields.iter().enumerate() {
            let mut line = format!("  {}: {}", f.name, self.field_tyname(c, &f.ty));
            if let Some(t) = &info.table {
                use wo_bytecode::image::ColumnDefault as D;
                if let Some((_, d)) = t.column_default.iter().find(|(k, _)| usize::from(*k) == i) {
                    let shown = match d {
                        D::Nil => "nil".to_string(),
                        D::Int(n) => n.to_string(),
                        D::Float(x) => format!("{x:?}"),
                        D::Bool(b) => b.to_string(),
                        D::Text(s) => text_literal(s),
                    };
                    line.push_str(&format!(" = {shown}"));
                }
                if unique.iter().any(|&k| usize::from(k) == i) {
                    line.push_str(" @unique");
                }
                if let Some((_, was)) = t.column_was.iter().find(|(k, _)| usize::from(*k) == i) {
                    line.push_str(&format!(" @was({})", text_literal(was)));
                }
            }
            out.push_str(&line);
            out.push('\n');
        }
        for (_, f) in &info.methods {
            let sig = facts.signature(*f);
            let short = sig.replacen(&format!("{}.", info.name), "", 1);
            out.push_str(&format!("  {short}\n"));
        }
        out.push('}');
        out
    }

    /// Where the name at `off` is declared.
    pub fn definition(&self, off: usize) -> Option<Span> {
        self.ref_at(off)?.def
    }

    /// The type of the expression that ends right before the `.` at `dot`.
    pub fn receiver_ty(&self, dot: usize) -> Option<Ty> {
        let exprs = &self.analysis.facts.exprs;
        exprs
            .iter()
            .filter(|(s, _)| s.file == self.file && s.hi as usize == dot)
            .min_by_key(|(s, _)| width(*s))
            .map(|(_, t)| t.clone())
            .filter(|t| *t != Ty::Unknown)
    }

    /// The declared type of the local named `name` whose declaration or use is the
    /// last one before `off`.
    pub fn local_before(&self, name: &str, off: usize) -> Option<Ty> {
        let refs = &self.analysis.facts.refs;
        refs.iter()
            .filter(|r| r.span.file == self.file && (r.span.hi as usize) <= off)
            .filter_map(|r| match &r.target {
                Target::Local { name: n, ty } if n == name => Some((r.span.lo, ty)),
                _ => None,
            })
            .max_by_key(|(lo, _)| *lo)
            .map(|(_, t)| t.clone())
    }

    /// Whether `name` is known not to be a local at `off`: `off` is in a function of
    /// the parsed file, and no local or parameter of that name is in scope there (a
    /// query's variable after its query, another function's local).
    pub fn out_of_scope(&self, name: &str, off: usize) -> bool {
        let Some(m) = self.analysis.modules.get(self.file.0 as usize) else {
            return false;
        };
        let mut locals = Vec::new();
        scope_at(m, off, &mut locals) && !locals.iter().any(|(n, _)| n == name)
    }

    /// The class named `name`.
    pub fn class_named(&self, name: &str) -> Option<usize> {
        let classes = &self.analysis.program.classes;
        classes.iter().position(|c| c.name == name)
    }

    /// What may follow `recv.` for a receiver of type `ty`.
    pub fn members(&self, ty: &Ty) -> Vec<Item> {
        let facts = &self.analysis.facts;
        let mut out = Vec::new();
        match ty.strip() {
            Ty::Class(c) => {
                let Some(info) = self.analysis.program.classes.get(*c) else {
                    return out;
                };
                if let Some(t) = &info.table {
                    out.push(
                        Item::new("id", Kind::Field, Some("Int".to_string()))
                            .with_doc(format!("the row's id in table `{}` (read-only)", t.name)),
                    );
                }
                for f in &info.fields {
                    let ty = self.field_tyname(*c, &f.ty);
                    out.push(Item::new(&f.name, Kind::Field, Some(ty)));
                }
                for (m, f) in &info.methods {
                    out.push(Item::new(m, Kind::Method, Some(facts.signature(*f))));
                }
            }
            Ty::Error => {
                for (name, ty) in ERROR_FIELDS {
                    out.push(Item::new(name, Kind::Field, Some(ty.to_string())));
                }
            }
            _ => {}
        }
        out
    }

    /// `find` of `T.find(…)` at `off`, for a table `T`: its signature and what it
    /// does, as completion shows them (helper-90: hover showed only the call's type,
    /// `?T`).
    fn table_find_at(&self, off: usize) -> Option<(String, Span)> {
        let src = &self.sources.files.get(self.file.0 as usize)?.src;
        let is_ident = super::world::is_ident;
        let (head, tail) = (src.get(..off)?, src.get(off..)?);
        let lo = head.trim_end_matches(is_ident).len();
        let hi = off + (tail.len() - tail.trim_start_matches(is_ident).len());
        // A word `find` in code, within an expression the checker typed (not in a
        // comment or a text).
        let typed = self
            .analysis
            .facts
            .exprs
            .iter()
            .any(|(s, _)| contains(*s, self.file, off));
        if src.get(lo..hi)? != "find" || !typed {
            return None;
        }
        let before = src[..lo].strip_suffix('.')?;
        let class = &before[before.trim_end_matches(is_ident).len()..];
        let item = self
            .class_members(self.class_named(class)?)
            .into_iter()
            .find(|i| i.label == "find")?;
        let mut text = code(item.detail.as_deref()?);
        if let Some(doc) = &item.doc {
            text.push_str("\n\n");
            text.push_str(doc);
        }
        Some((text, Span::new(self.file, lo, hi)))
    }

    /// What may follow `Class.`: a table's `find`.
    pub fn class_members(&self, c: usize) -> Vec<Item> {
        let info = self.analysis.program.classes.get(c);
        match info.and_then(|i| i.table.as_ref()) {
            Some(_) => {
                let name = &self.analysis.facts.class_names[c];
                let sig = format!("fn {name}.find(id: Int) -> ?{name}");
                vec![Item::new("find", Kind::Method, Some(sig))
                    .with_doc("the row with this id, or nil".to_string())]
            }
            None => Vec::new(),
        }
    }

    /// Everything a name may be at `off`: the locals in scope there, then the
    /// program's functions, classes and constants, builtins, modules, keywords.
    pub fn names(&self, off: usize) -> Vec<Item> {
        let facts = &self.analysis.facts;
        let mut out = Vec::new();
        let module = self.analysis.modules.get(self.file.0 as usize);
        let mut locals = Vec::new();
        if let Some(m) = module {
            scope_at(m, off, &mut locals);
        }
        let mut seen = std::collections::HashSet::new();
        for (name, span) in locals.iter().rev() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let ty = facts.refs.iter().find_map(|r| match &r.target {
                Target::Local { ty, .. } if r.span == *span => Some(self.tyname(ty)),
                _ => None,
            });
            out.push(Item::new(name, Kind::Local, ty));
        }
        for (f, func) in facts.funcs.iter().enumerate() {
            if func.def.is_some() && !func.name.contains('.') {
                out.push(Item::new(
                    &func.name,
                    Kind::Function,
                    Some(facts.signature(f)),
                ));
            }
        }
        for c in &self.analysis.program.classes {
            out.push(Item::new(&c.name, Kind::Class, None));
        }
        for t in TYPES {
            out.push(Item::new(t, Kind::Class, Some("built-in type".to_string())));
        }
        for r in &facts.refs {
            if let Target::Const { name, ty } = &r.target {
                if r.def == Some(r.span) && !name.contains('.') {
                    out.push(Item::new(name, Kind::Const, Some(self.tyname(ty))));
                }
            }
        }
        for name in CORE {
            let (sig, doc) = builtins::doc(name).unwrap_or(("", ""));
            out.push(
                Item::new(name, Kind::Function, Some(format!("fn {sig}")))
                    .with_doc(doc.to_string()),
            );
        }
        for m in MODULES {
            out.push(
                Item::new(m, Kind::Module, None).with_doc(builtins::module_doc(m).to_string()),
            );
        }
        for k in wo_compiler::lexer::KEYWORDS {
            out.push(Item::new(k, Kind::Keyword, None));
        }
        out
    }
}

/// The functions (and constants) of module `m`, for `m.`.
pub fn module_members(m: &str) -> Vec<Item> {
    let mut out: Vec<Item> = MODULE_FUNCTIONS
        .iter()
        .filter(|(module, _)| *module == m)
        .map(|(module, f)| {
            let (sig, doc) = builtins::doc(&format!("{module}.{f}")).unwrap_or(("", ""));
            Item::new(f, Kind::Function, Some(format!("fn {sig}"))).with_doc(doc.to_string())
        })
        .collect();
    if m == "math" {
        out.push(Item::new("PI", Kind::Const, Some("Float".to_string())));
    }
    out
}

/// The standard modules, for `use`.
pub fn modules() -> Vec<Item> {
    let m = MODULES.iter();
    m.map(|m| Item::new(m, Kind::Module, None).with_doc(builtins::module_doc(m).to_string()))
        .collect()
}

/// The annotations, for `@`.
pub fn annotations() -> Vec<Item> {
    [
        ("table", "a class whose values are rows of a table"),
        ("unique", "a column whose values differ in every row"),
        ("was", "the column's former name, for `wo db migrate`"),
    ]
    .iter()
    .map(|(n, d)| Item::new(n, Kind::Keyword, None).with_doc(d.to_string()))
    .collect()
}

/// What a completion item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Keyword,
    Local,
    Function,
    Method,
    Field,
    Class,
    Const,
    Module,
}

/// One completion.
#[derive(Debug, Clone)]
pub struct Item {
    pub label: String,
    pub kind: Kind,
    pub detail: Option<String>,
    pub doc: Option<String>,
}

impl Item {
    fn new(label: &str, kind: Kind, detail: Option<String>) -> Item {
        Item {
            label: label.to_string(),
            kind,
            detail,
            doc: None,
        }
    }

    fn with_doc(mut self, doc: String) -> Item {
        self.doc = (!doc.is_empty()).then_some(doc);
        self
    }
}

/// The locals visible at `off` (parameters, `let`s before it in enclosing blocks, loop,
/// query and `catch` variables), outermost first, as (name, declaring span).
/// Collects the locals in scope at `off`; whether `off` is in a function at all.
fn scope_at(m: &ast::Module, off: usize, out: &mut Vec<(String, Span)>) -> bool {
    let within = |lo: Span, hi: Span| (lo.lo as usize) <= off && off <= (hi.hi as usize);
    for item in &m.items {
        match item {
            ast::Item::Fn(f) if within(f.span, f.body.span) => {
                fn_scope(f, None, off, out);
                return true;
            }
            ast::Item::Class(c) => {
                for f in &c.methods {
                    if within(f.span, f.body.span) {
                        fn_scope(f, Some(c.name.span), off, out);
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

fn fn_scope(f: &ast::FnDecl, method: Option<Span>, off: usize, out: &mut Vec<(String, Span)>) {
    if method.is_some() {
        out.push(("self".to_string(), f.name.span));
    }
    for p in &f.params {
        out.push((p.name.name.clone(), p.name.span));
    }
    block_scope(&f.body, off, out);
}

fn inside(span: Span, off: usize) -> bool {
    (span.lo as usize) <= off && off <= (span.hi as usize)
}

fn push(out: &mut Vec<(String, Span)>, id: &ast::Ident) {
    out.push((id.name.clone(), id.span));
}

fn block_scope(b: &ast::Block, off: usize, out: &mut Vec<(String, Span)>) {
    for s in &b.stmts {
        if s.span.lo as usize >= off {
            break;
        }
        let here = inside(s.span, off);
        match &s.kind {
            S::Let { name, value, .. } => {
                if here {
                    expr_scope(value, off, out);
                } else {
                    push(out, name);
                }
            }
            _ if !here => {}
            S::Assign { target, value, .. } => {
                expr_scope(target, off, out);
                expr_scope(value, off, out);
            }
            S::Expr(e) | S::Delete(e) | S::Return(Some(e)) => expr_scope(e, off, out),
            S::Return(None) | S::Break | S::Continue => {}
            S::If { cond, then, els } => {
                expr_scope(cond, off, out);
                if inside(then.span, off) {
                    block_scope(then, off, out);
                }
                if let Some(e) = els.as_ref().filter(|e| inside(e.span, off)) {
                    block_scope(e, off, out);
                }
            }
            S::While { cond, body } => {
                expr_scope(cond, off, out);
                if inside(body.span, off) {
                    block_scope(body, off, out);
                }
            }
            S::For {
                var,
                var2,
                iter,
                body,
            } => {
                expr_scope(iter, off, out);
                if inside(body.span, off) {
                    push(out, var);
                    if let Some(v) = var2 {
                        push(out, v);
                    }
                    block_scope(body, off, out);
                }
            }
            S::Transaction(b) => block_scope(b, off, out),
            S::Try { body, err, handler } => {
                if inside(body.span, off) {
                    block_scope(body, off, out);
                } else if inside(handler.span, off) {
                    push(out, err);
                    block_scope(handler, off, out);
                }
            }
        }
    }
}

/// The query and `catch` variables of the expressions around `off`.
fn expr_scope(e: &ast::Expr, off: usize, out: &mut Vec<(String, Span)>) {
    if !inside(e.span, off) {
        return;
    }
    match &e.kind {
        A::Query(q) => {
            expr_scope(&q.source, off, out);
            if off > q.var.span.hi as usize && !inside(q.source.span, off) {
                push(out, &q.var);
            }
            let parts = q.wheres.iter().chain(q.order.iter().map(|k| &k.expr));
            for p in parts
                .chain([&q.select])
                .chain(q.skip.iter())
                .chain(q.take.iter())
            {
                expr_scope(p, off, out);
            }
        }
        A::Try { body, err, handler } => {
            expr_scope(body, off, out);
            if inside(handler.span, off) {
                push(out, err);
                expr_scope(handler, off, out);
            }
        }
        A::Call { args, .. } | A::List(args) => {
            for a in args {
                expr_scope(a, off, out);
            }
        }
        A::MethodCall { recv, args, .. } => {
            expr_scope(recv, off, out);
            for a in args {
                expr_scope(a, off, out);
            }
        }
        A::Field { recv, .. } => expr_scope(recv, off, out),
        A::Index { recv, index } => {
            expr_scope(recv, off, out);
            expr_scope(index, off, out);
        }
        A::Unary { expr, .. } => expr_scope(expr, off, out),
        A::Binary { lhs, rhs, .. } => {
            expr_scope(lhs, off, out);
            expr_scope(rhs, off, out);
        }
        A::Map(entries) => {
            for (k, v) in entries {
                expr_scope(k, off, out);
                expr_scope(v, off, out);
            }
        }
        A::Construct { fields, .. } | A::Insert { fields, .. } => {
            for f in fields {
                expr_scope(&f.value, off, out);
            }
        }
        A::Spawn { call } => expr_scope(call, off, out),
        A::Text(parts) => {
            for p in parts {
                if let ast::TextPart::Expr(e) = p {
                    expr_scope(e, off, out);
                }
            }
        }
        A::Int(_) | A::Float(_) | A::Bool(_) | A::Nil | A::Name(_) | A::TypeName(_) | A::Error => {}
    }
}

/// One entry of a file's outline.
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    pub detail: Option<String>,
    /// The whole declaration.
    pub span: Span,
    /// Its name.
    pub name_span: Span,
    pub children: Vec<Symbol>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    Function,
    Class,
    Table,
    Field,
    Method,
    Const,
}

impl<'a> At<'a> {
    /// The functions declared in this file, by the span of their name.
    fn declared_funcs(&self) -> HashMap<Span, usize> {
        let facts = &self.analysis.facts;
        let decls = facts.funcs.iter().enumerate();
        decls
            .filter_map(|(f, func)| func.def.filter(|d| d.file == self.file).map(|d| (d, f)))
            .collect()
    }

    fn text_of(&self, span: Span) -> Option<String> {
        let file = self.sources.files.get(span.file.0 as usize)?;
        file.src
            .get(span.lo as usize..span.hi as usize)
            .map(str::to_string)
    }

    fn fn_symbol(&self, f: &ast::FnDecl, kind: SymbolKind, funcs: &HashMap<Span, usize>) -> Symbol {
        let facts = &self.analysis.facts;
        Symbol {
            name: f.name.name.clone(),
            kind,
            detail: funcs.get(&f.name.span).map(|&id| facts.signature(id)),
            span: f.span.to(f.body.span),
            name_span: f.name.span,
            children: Vec::new(),
        }
    }

    /// The outline of this file: functions, classes (fields and methods), constants.
    pub fn symbols(&self) -> Vec<Symbol> {
        let Some(m) = self.analysis.modules.get(self.file.0 as usize) else {
            return Vec::new();
        };
        let funcs = self.declared_funcs();
        let mut out = Vec::new();
        for item in &m.items {
            match item {
                ast::Item::Fn(f) => out.push(self.fn_symbol(f, SymbolKind::Function, &funcs)),
                ast::Item::Class(c) => {
                    let table = c.annots.iter().any(|a| a.name.name == "table");
                    let mut children: Vec<Symbol> = c
                        .fields
                        .iter()
                        .map(|f| Symbol {
                            name: f.name.name.clone(),
                            kind: SymbolKind::Field,
                            detail: self.text_of(f.ty.span),
                            span: f.span,
                            name_span: f.name.span,
                            children: Vec::new(),
                        })
                        .collect();
                    let methods = c.methods.iter();
                    children.extend(methods.map(|f| self.fn_symbol(f, SymbolKind::Method, &funcs)));
                    out.push(Symbol {
                        name: c.name.name.clone(),
                        kind: if table {
                            SymbolKind::Table
                        } else {
                            SymbolKind::Class
                        },
                        detail: table.then(|| "@table".to_string()),
                        // The whole declaration, annotations to `}`: it encloses the
                        // members (clients rely on that for breadcrumbs).
                        span: c.annots.first().map_or(c.span, |a| a.span).to(c.body),
                        name_span: c.name.span,
                        children,
                    });
                }
                ast::Item::Const { name, span, .. } => out.push(Symbol {
                    name: name.name.clone(),
                    kind: SymbolKind::Const,
                    detail: None,
                    span: *span,
                    name_span: name.span,
                    children: Vec::new(),
                }),
                ast::Item::Use(_) => {}
            }
        }
        out
    }
}

/// `s` as a wo text literal.
fn text_literal(s: &str) -> String {
    format!("\"{}\"", crate::repl::escape(s))
}
