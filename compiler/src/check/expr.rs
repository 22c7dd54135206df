//! Expressions: literals, names of constants, fields, indexing, interpolation.
use std::collections::HashMap;

use super::{did_you_mean, diverging, other_language, unify, Checker, MODULES};
use crate::ast::{self, ExprKind as A};
use crate::diag::{Diagnostic, Span};
use crate::facts::Target;
use crate::tir::{Expr, ExprKind as E, Ty, UnOp};

impl<'a> Checker<'a> {
    pub(super) fn expr(&mut self, e: &ast::Expr, expect: Option<&Ty>) -> Expr {
        let v = self.expr_kind(e, expect);
        if let Some(f) = self.facts.as_mut() {
            f.exprs.push((e.span, v.ty.clone()));
        }
        v
    }

    fn expr_kind(&mut self, e: &ast::Expr, expect: Option<&Ty>) -> Expr {
        let span = e.span;
        match &e.kind {
            A::Int(v) => Expr::new(E::Int(*v), Ty::Int, span),
            A::Float(v) => Expr::new(E::Float(*v), Ty::Float, span),
            A::Bool(b) => Expr::new(E::Bool(*b), Ty::Bool, span),
            A::Nil => Expr::new(E::Nil, Ty::Nil, span),
            A::Text(parts) => self.text(parts, span),
            A::Name(n) => self.name(n, span),
            A::TypeName(n) => self.const_ref(n, span),
            A::Call { callee, args } => self.call(callee, args, span, expect),
            A::MethodCall { recv, method, args } => {
                self.method_call(recv, method, args, span, expect)
            }
            A::Field { recv, name } => self.field_expr(recv, name, span),
            A::Index { recv, index } => self.index_expr(recv, index, span),
            A::Unary { op, expr } => self.unary(*op, expr, span),
            A::Binary { op, lhs, rhs } => match op {
                ast::BinOp::And | ast::BinOp::Or => self.logic(*op, lhs, rhs, span),
                ast::BinOp::Coalesce => self.coalesce(lhs, rhs, span, expect),
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
            A::Spawn { call } => self.spawn(call, span),
            A::Query(q) => self.query_expr(q, span),
            A::Try { body, err, handler } => self.try_expr(body, err, handler, span, expect),
            A::Error => self.unknown(span),
        }
    }

    pub(super) fn unknown(&self, span: Span) -> Expr {
        Expr::new(E::Nil, Ty::Unknown, span)
    }

    pub(super) fn text(&mut self, parts: &[ast::TextPart], span: Span) -> Expr {
        self.warn_dollar_names(span);
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

    pub(super) fn list(&mut self, items: &[ast::Expr], span: Span, expect: Option<&Ty>) -> Expr {
        // (A context whose type was an error, `-> Strng`, types `[]` silently; a list
        // with elements still has them checked against each other.)
        let elem_expect = match expect.map(Ty::strip) {
            Some(Ty::List(t)) => Some((**t).clone()),
            Some(Ty::Unknown) if items.is_empty() => Some(Ty::Unknown),
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
        let ty = self.within_depth(Ty::List(Box::new(elem)), span, "the type of this list");
        Expr::new(E::List(out), ty, span)
    }

    pub(super) fn map(
        &mut self,
        entries: &[(ast::Expr, ast::Expr)],
        span: Span,
        expect: Option<&Ty>,
    ) -> Expr {
        let (kx, vx) = match expect.map(Ty::strip) {
            Some(Ty::Map(k, v)) => (Some((**k).clone()), Some((**v).clone())),
            Some(Ty::Unknown) if entries.is_empty() => (Some(Ty::Unknown), Some(Ty::Unknown)),
            _ => (None, None),
        };
        let fixed = kx.is_some();
        let (mut kt, mut vt) = (kx, vx);
        let mut out = Vec::new();
        for (k, v) in entries {
            let before = self.diags.len();
            let ke = self.expr(k, kt.as_ref());
            // `{a: 1}`: JavaScript's and Lua's bare key is a variable here.
            if let A::Name(n) = &k.kind {
                if let Some(d) = self.diags[before..]
                    .iter_mut()
                    .find(|d| d.message.starts_with("unknown variable `"))
                {
                    d.notes = vec![format!(
                        "a map's key is a value: a Text key is quoted, `{{\"{n}\": …}}`"
                    )];
                }
            }
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
        if !fixed && v == Ty::Nil {
            // As for a list of only `nil`: `nil` is only a value of `?T`.
            self.err(
                "type",
                span,
                "cannot infer the value type of a map whose values are all `nil`; annotate it, e.g. `let m: map<Text, ?Int> = {\"a\": nil}`",
            );
            return Expr::new(E::Map(out), Ty::Unknown, span);
        }
        // A key type that came from the context was already reported there.
        if !fixed && !matches!(k, Ty::Int | Ty::Text | Ty::Bool | Ty::Unknown) {
            let t = self.tyname(&k);
            self.err(
                "type",
                span,
                format!("map keys must be `Int`, `Text` or `Bool`, not {t}"),
            );
        }
        let ty = self.within_depth(
            Ty::Map(Box::new(k), Box::new(v)),
            span,
            "the type of this map",
        );
        Expr::new(E::Map(out), ty, span)
    }

    /// A capitalised name in an expression: a constant.
    fn const_ref(&mut self, n: &str, span: Span) -> Expr {
        if let Some(&g) = self.global_index.get(n) {
            let ty = self.ensure_global(g, Some(span));
            if self.facts.is_some() {
                let def = Some(self.const_span(g));
                let target = Target::Const {
                    name: n.to_string(),
                    ty: ty.clone(),
                };
                self.note_ref(span, def, target);
            }
            // A constant whose value is a literal is that literal where it is used:
            // no global is read, and code generation sees the literal (an immediate
            // compare, a constant compared in place). Constants are never assigned.
            match self.global_out[g].as_ref().map(|c| &c.value.kind) {
                Some(k @ (E::Int(_) | E::Float(_) | E::Text(_) | E::Bool(_))) => {
                    Expr::new(k.clone(), ty, span)
                }
                _ => Expr::new(E::Global(g), ty, span),
            }
        } else if let Some(&cid) = self.class_index.get(n) {
            let v = n
                .chars()
                .next()
                .map_or("x".to_string(), |c| c.to_lowercase().collect());
            // `if x == P { x: 1 }.x {`: the `{` began the block, and the parser
            // already said so; "construct one with `P { … }`" would be what was written.
            let brace_follows = self
                .sources
                .files
                .get(span.file.0 as usize)
                .and_then(|f| f.src.get(span.hi as usize..))
                .and_then(|rest| rest.trim_start_matches([' ', '\t']).strip_prefix('{'))
                .is_some_and(|inside| {
                    // The shape of a constructor: `{ name:`.
                    let inside = inside.trim_start();
                    let name_end = inside
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(inside.len());
                    name_end > 0 && inside[name_end..].trim_start().starts_with(':')
                });
            let msg = if self.table_classes.contains(&cid) {
                format!("table `{n}` is not a value; its rows are a query: `from {v} in {n} select {v}`")
            } else if brace_follows {
                format!("class `{n}` is not a value, and the `{{` after it began a block: in the header of an `if`, `while` or `for`, write the constructor in parentheses, `({n} {{ … }})`")
            } else {
                format!("class `{n}` is not a value; construct one with `{n} {{ … }}`")
            };
            self.err("name", span, msg);
            self.unknown(span)
        } else {
            let hint = match other_language(n) {
                Some(h) => h.to_string(),
                None => {
                    let names = self.globals.iter().map(|g| g.name.as_str());
                    did_you_mean(n, names.chain(self.class_names.iter().map(String::as_str)))
                }
            };
            if !self.broken_declaration(n) {
                self.err("name", span, format!("unknown constant `{n}`{hint}"));
            }
            self.unknown(span)
        }
    }

    /// `x.f`: a module constant, a row column or `id`, or an object field.
    fn field_expr(&mut self, recv: &ast::Expr, name: &ast::Ident, span: Span) -> Expr {
        if let A::Name(m) = &recv.kind {
            if self.lookup_local(m).is_none() && MODULES.contains(&m.as_str()) {
                self.note_ref(recv.span, None, Target::Module(m.clone()));
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

    /// `xs[i]` and `m[k]` (the latter is `?V`).
    fn index_expr(&mut self, recv: &ast::Expr, index: &ast::Expr, span: Span) -> Expr {
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
                let mut d = Diagnostic::error(
                    "type",
                    recv.span,
                    format!("cannot index into a value of type {}", self.tyname(&t)),
                );
                if t == Ty::Text {
                    d = d.with_note("a Text is not indexed: its character at `i` is `substr(s, i, 1)`, and `for c in s { … }` walks its characters");
                }
                if let Some(note) = nullable_container_note(recv, &t) {
                    d = d.with_note(note);
                }
                self.diags.push(d);
                self.expr(index, None);
                self.unknown(span)
            }
        }
    }

    /// `try e catch err h` used as a statement: its value is thrown away, so its
    /// sides need not agree (`try log(x) catch (e) print("…")`, both without a
    /// value, or one with and one without).
    pub(super) fn try_stmt(&mut self, e: &ast::Expr) -> Expr {
        let A::Try { body, err, handler } = &e.kind else {
            return self.expr(e, None);
        };
        let b = self.expr(body, None);
        let (eid, h) = self.try_handler(err, handler, None);
        Expr::new(
            E::Try {
                body: Box::new(b),
                err: eid,
                handler: Box::new(h),
            },
            Ty::Void,
            e.span,
        )
    }

    /// The handler of a `try`, in a scope with the error variable.
    fn try_handler(
        &mut self,
        err: &ast::Ident,
        handler: &ast::Expr,
        expect: Option<&Ty>,
    ) -> (usize, Expr) {
        self.ctx.scopes.push(HashMap::new());
        let eid = self.new_local(&err.name, err.span, Ty::Error);
        let h = self.expr(handler, expect);
        self.ctx.scopes.pop();
        (eid, h)
    }

    /// `try e catch err { h }` as an expression.
    fn try_expr(
        &mut self,
        body: &ast::Expr,
        err: &ast::Ident,
        handler: &ast::Expr,
        span: Span,
        expect: Option<&Ty>,
    ) -> Expr {
        let b = self.expr(body, expect);
        let (eid, h) = self.try_handler(err, handler, expect.or(Some(&b.ty)));
        // A side that cannot produce a value (`fail(…)`, `exit(…)`) takes the
        // other side's type, as `!` does in Rust.
        let ty = match (diverging(&b), diverging(&h)) {
            (false, true) if b.ty != Ty::Void => Some(b.ty.clone()),
            (true, false) if h.ty != Ty::Void => Some(h.ty.clone()),
            _ => unify(&b.ty, &h.ty),
        };
        let ty = match ty {
            Some(t) if t != Ty::Void => t,
            // `let r = try print(1) catch (e) print(2)`: there is no value to differ.
            _ if b.ty == Ty::Void && h.ty == Ty::Void => {
                self.err(
                    "type",
                    span,
                    "this expression has no value: both sides of `try … catch` give none; as a statement, `try f() catch (e) g()` needs no `let`",
                );
                Ty::Unknown
            }
            _ => {
                let (bt, ht) = (self.tyname(&b.ty), self.tyname(&h.ty));
                self.err(
                    "type",
                    span,
                    format!("the two sides of `try … catch` have different types: {bt} and {ht}"),
                );
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
}

/// The note for indexing the `?map<…>` or `?multi …` that an index gave (`mm["a"]["b"]`:
/// the inner `m[k]` is nil when `k` is absent).
pub(super) fn nullable_container_note(recv: &ast::Expr, t: &Ty) -> Option<&'static str> {
    match t {
        Ty::Nullable(inner)
            if matches!(recv.kind, A::Index { .. })
                && matches!(**inner, Ty::Map(..) | Ty::List(_)) =>
        {
            Some(
            "`m[k]` is nil when `k` is absent: read an entry that must be there with `get(m, k)` (it traps `KEY` otherwise), as in `get(mm, \"a\")[\"b\"] = 5`, or narrow it first (`let inner = mm[\"a\"]`, then `if inner != nil { … }`)",
            )
        }
        _ => None,
    }
}
