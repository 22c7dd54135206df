//! Function bodies and statements.
use std::collections::HashMap;

use super::{diverges, Checker, FnCtx};
use crate::ast::{self, ExprKind as A, StmtKind as S};
use crate::diag::{Diagnostic, Severity, Span};
use crate::tir::{self, ExprKind as E, Func, FuncId, Stmt, StmtKind as T, Ty};

/// Why a line that starts with `-` stands alone.
const LINE_BREAK: &str = "a line break ended the statement before this one, so this line stands alone; to continue an expression over two lines, end the first line with its operator (`x -`)";

/// Whether an expression may stand as a statement (LANGUAGE.md §5): a call, `insert`,
/// `spawn`, or `try … catch (e) …` whose two sides are such. Anything else is a
/// mistake (`x == 2` for `x = 2`), `a or b` and `a ?? b` around a call included: the
/// contract keeps effects in statements that say so (`if not a { b }`).
fn has_effect(e: &ast::Expr) -> bool {
    match &e.kind {
        A::Call { .. } | A::MethodCall { .. } | A::Insert { .. } | A::Spawn { .. } | A::Error => {
            true
        }
        A::Try { body, handler, .. } => has_effect(body) && has_effect(handler),
        _ => false,
    }
}

/// The statement that says what `a and b`, `a or b` or `a ?? b` standing alone does
/// when its right side calls something: `if a { b }`, `if not a { b }`, `if a == nil {
/// b }`; the sides as written when short.
fn conditional_hint(op: ast::BinOp, lhs: &str, rhs: &str) -> Option<String> {
    let (l, r) = if lhs.len() + rhs.len() <= 60 && !lhs.contains('\n') && !rhs.contains('\n') {
        (lhs, rhs)
    } else {
        ("a", "b")
    };
    let form = match op {
        ast::BinOp::And => format!("if {l} {{ {r} }}"),
        ast::BinOp::Or if l.contains(' ') => format!("if not ({l}) {{ {r} }}"),
        ast::BinOp::Or => format!("if not {l} {{ {r} }}"),
        ast::BinOp::Coalesce => format!("if {l} == nil {{ {r} }}"),
        _ => return None,
    };
    let word = match op {
        ast::BinOp::And => "and",
        ast::BinOp::Or => "or",
        _ => "??",
    };
    Some(format!(
        "`{word}` gives a value; a statement is a call, an assignment, `insert`, `delete` or a declaration. To call the right side only when it applies, write `{form}`"
    ))
}

impl<'a> Checker<'a> {
    /// Whether `sp` begins its line (after blanks): a statement there may be the rest
    /// of the line before, cut off by the line break's automatic `;`.
    fn starts_line(&self, sp: Span) -> bool {
        self.sources
            .files
            .get(sp.file.0 as usize)
            .is_some_and(|f| f.starts_line(sp.lo))
    }

    /// Whether `block` would end the function if each bare `return` whose value went
    /// to the next line (`ctx.bare_returns`) had that value: the function's own
    /// error (its end reached, or a statement after a `return` at its end) would
    /// only repeat theirs (helper-112: one in each branch of an `if`).
    fn diverges_but_for_bare_returns(&self, block: &[ast::Stmt]) -> bool {
        let noted = |s: &ast::Stmt| {
            matches!(s.kind, S::Return(None)) && self.ctx.bare_returns.contains(&s.span)
        };
        if block.iter().any(noted) {
            return true;
        }
        let both = |a: &[ast::Stmt], b: &[ast::Stmt]| {
            self.diverges_but_for_bare_returns(a) && self.diverges_but_for_bare_returns(b)
        };
        match block.last().map(|s| &s.kind) {
            Some(S::If {
                then,
                els: Some(els),
                ..
            }) => both(&then.stmts, &els.stmts),
            Some(S::Try { body, handler, .. }) => both(&body.stmts, &handler.stmts),
            Some(S::Transaction(b)) => self.diverges_but_for_bare_returns(&b.stmts),
            Some(_) => diverges(block),
            None => false,
        }
    }

    /// Whether only blank space and comments lie between `a` and `b`, in one file.
    fn only_blank_between(&self, a: Span, b: Span) -> bool {
        a.file == b.file
            && self
                .sources
                .files
                .get(a.file.0 as usize)
                .and_then(|f| f.src.get(a.hi as usize..b.lo as usize))
                .is_some_and(|gap| {
                    gap.lines()
                        .all(|l| l.split("--").next().unwrap_or("").trim().is_empty())
                })
    }

    /// Whether `sp` ends its line (blank space or a comment after it) and a line
    /// other than a closing `}` comes next: a bare `return` whose value went there.
    fn value_on_next_line(&self, sp: Span) -> bool {
        let Some(rest) = self
            .sources
            .files
            .get(sp.file.0 as usize)
            .and_then(|f| f.src.get(sp.hi as usize..))
        else {
            return false;
        };
        let mut lines = rest.lines();
        let line = lines.next().unwrap_or("");
        let line = line.split("--").next().unwrap_or("");
        // The next line with code on it (blank and comment lines skipped).
        let next = lines
            .map(str::trim_start)
            .find(|l| !l.is_empty() && !l.starts_with("--"));
        // (The statement after it must be an expression, not `let y = 2` or `x = 3`:
        // `ctx.value_follows`, from the block.)
        self.ctx.value_follows
            && line.trim().is_empty()
            && next.is_some_and(|l| !l.starts_with('}'))
    }

    /// Whether a comment (`--`) follows `sp` with no space between (`x--`).
    fn followed_by_comment(&self, sp: Span) -> bool {
        self.sources
            .files
            .get(sp.file.0 as usize)
            .and_then(|f| f.src.get(sp.hi as usize..))
            .is_some_and(|rest| rest.starts_with("--"))
    }

    /// Reports an expression statement whose value is thrown away and that does
    /// nothing else, with a hint for the likely intent.
    fn no_effect(&mut self, e: &ast::Expr) {
        let sp = e.span;
        // (An error only: a warning there, `unreachable`, hid this error: helper-97.)
        let overlaps = |d: &Diagnostic| {
            d.severity == Severity::Error
                && d.span.file == sp.file
                && d.span.lo < sp.hi
                && sp.lo < d.span.hi
        };
        if self.diags.iter().any(overlaps) {
            return; // what is left of a token the lexer already refused
        }
        // The value of a bare `return` on the line before, refused with a note
        // saying where its value went.
        let bare = &self.ctx.bare_returns;
        if bare.iter().any(|&r| self.only_blank_between(r, sp)) {
            return;
        }
        // A word alone that names nothing (`end`, `pass`): the unknown name is the
        // error, with its hint.
        if matches!(&e.kind, A::Name(n) if self.lookup_local(n).is_none()) {
            return;
        }
        let mut d = Diagnostic::error(
            "effect",
            e.span,
            "this expression does nothing: its value is not used",
        );
        match &e.kind {
            A::Binary {
                op: ast::BinOp::Eq,
                lhs,
                rhs,
            } => {
                let note = match (&lhs.kind, &rhs.kind) {
                    (A::Name(n), A::Int(v)) => format!("`==` compares; did you mean `{n} = {v}`?"),
                    (A::Name(n), A::Name(m)) => format!("`==` compares; did you mean `{n} = {m}`?"),
                    _ => "`==` compares; did you mean `=`, which assigns?".to_string(),
                };
                d = d.with_note(note);
            }
            A::Binary {
                op: op @ (ast::BinOp::And | ast::BinOp::Or | ast::BinOp::Coalesce),
                lhs,
                rhs,
            } if has_effect(rhs) => {
                let text = |e: &ast::Expr| self.sources.text(e.span).unwrap_or("a").to_string();
                if let Some(note) = conditional_hint(*op, &text(lhs), &text(rhs)) {
                    d = Diagnostic::error(
                        "effect",
                        e.span,
                        "this expression's value is not used, and it cannot stand as a statement",
                    )
                    .with_note(note);
                }
            }
            A::Try { body, handler, .. } => {
                let side = if has_effect(body) { handler } else { body };
                d = Diagnostic::error(
                    "effect",
                    side.span,
                    "this side of the `try … catch` statement does nothing: its value is not used",
                )
                .with_note("as a statement, each side of `try … catch` is a call, `insert` or `spawn`; to keep a value, assign it: `x = try f() catch (e) 0`");
            }
            A::Query(_) => {
                d = d.with_note("a query gives a list; to do something with each row, write `for r in from … select r { … }`");
            }
            // `x--`: the `--` began a comment (§2), leaving `x` alone. Only what can
            // be assigned to gets the hint (`a + b--` cannot become `a + b -= 1`).
            A::Name(_) | A::Field { .. } | A::Index { .. } if self.followed_by_comment(sp) => {
                let name = self.sources.text(sp).unwrap_or("x");
                d = d.with_note(format!(
                    "`--` begins a comment in wo, so `{name}--` is `{name}` alone; to subtract one, write `{name} -= 1`"
                ));
            }
            A::Unary {
                op: ast::UnOp::Neg, ..
            } if self.starts_line(sp) => d = d.with_note(LINE_BREAK),
            A::Int(v) if *v < 0 && self.starts_line(sp) => d = d.with_note(LINE_BREAK),
            A::Float(v) if *v < 0.0 && self.starts_line(sp) => d = d.with_note(LINE_BREAK),
            _ => {
                d = d.with_note(
                    "a statement is a call, an assignment, `insert`, `delete`, or a declaration",
                );
            }
        }
        self.diags.push(d);
    }

    pub(super) fn check_fn(&mut self, f: FuncId) -> Func {
        if let Some((cid, i)) = self.funcs[f].default {
            return self.check_default(f, cid, i);
        }
        let decl = self.fn_decl(f);
        let sig_ret = self.funcs[f].ret.clone();
        let name = self.funcs[f].name.clone();
        self.ctx = FnCtx {
            ret: Some(sig_ret.clone()),
            ..FnCtx::default()
        };
        self.tx_depth = 0;
        self.ctx.scopes.push(HashMap::new());
        let diags_before = self.diags.len();
        let mut params = Vec::new();
        // The written parameters, after a method's `self` (which is written nowhere:
        // it points at the method's name).
        let written: Vec<Span> = decl
            .map(|d| d.params.iter().map(|p| p.name.span).collect())
            .unwrap_or_default();
        let n_self = self.funcs[f].params.len().saturating_sub(written.len());
        for (k, (pname, pty)) in self.funcs[f].params.clone().into_iter().enumerate() {
            let span = match k.checked_sub(n_self) {
                Some(w) => written.get(w).copied().unwrap_or_default(),
                None => decl.map(|d| d.name.span).unwrap_or_default(),
            };
            let id = self.new_local(&pname, span, pty);
            params.push(id);
        }
        let (body, span) = match decl {
            Some(d) => {
                let body = self.block(&d.body.stmts);
                // Where the parser had to skip part of the body (`print(x) return x`
                // on one line), the missing `return` may be what it skipped.
                let skipped = self.diags.iter().any(|x| {
                    x.code == "syntax"
                        && x.span.file == d.body.span.file
                        && d.body.span.lo <= x.span.lo
                        && x.span.lo <= d.body.span.hi
                });
                if sig_ret != Ty::Void
                    && !skipped
                    && !diverges(&d.body.stmts)
                    && !self.diverges_but_for_bare_returns(&d.body.stmts)
                {
                    // `return 1; print(x)`: the statement after the `return` is why.
                    let stmts = &d.body.stmts;
                    match stmts.iter().position(crate::check::flow::stmt_diverges) {
                        Some(i) if i + 1 < stmts.len() => {
                            // The error says it; the warning would say it again.
                            let at = stmts[i + 1].span;
                            if let Some(p) = self.diags[diags_before..]
                                .iter()
                                .position(|d| d.code == "unreachable" && d.span == at)
                            {
                                self.diags.remove(diags_before + p);
                            }
                            self.err(
                            "return",
                            at,
                            format!(
                                "unreachable: the statement on line {} ends function `{name}`, so this one can never run; remove it",
                                self.sources.line_col(stmts[i].span).0
                            ),
                        );
                        }
                        _ => self.err(
                            "return",
                            d.span,
                            format!(
                                "function `{name}` may reach its end without returning a value"
                            ),
                        ),
                    }
                }
                self.warn_unread_lets();
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

    pub(super) fn stmt(&mut self, s: &ast::Stmt, out: &mut tir::Block) {
        let span = s.span;
        let push = |out: &mut tir::Block, kind| out.push(Stmt { kind, span });
        match &s.kind {
            S::Let { name, ty, value } => self.let_stmt(name, ty.as_ref(), value, span, out),
            S::Assign { target, op, value } => self.assign(target, *op, value, span, out),
            S::Expr(e) => {
                if !has_effect(e) {
                    self.no_effect(e);
                }
                let e = self.try_stmt(e);
                push(out, T::Expr(e));
            }
            S::Return(v) => self.return_stmt(v.as_ref(), span, out),
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
            S::Delete(e) => self.delete_stmt(e, span, out),
            S::If { cond, then, els } => self.if_stmt(cond, then, els.as_ref(), span, out),
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
            } => self.for_stmt(var, var2.as_ref(), iter, body, span, out),
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
                let eid = self.new_local(&err.name, err.span, Ty::Error);
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

    /// `let name: T = value`.
    fn let_stmt(
        &mut self,
        name: &ast::Ident,
        ty: Option<&ast::TypeExpr>,
        value: &ast::Expr,
        span: Span,
        out: &mut tir::Block,
    ) {
        let push = |out: &mut tir::Block, kind| out.push(Stmt { kind, span });
        let declared = ty.as_ref().map(|t| self.resolve_type(t));
        let v = self.expr(value, declared.as_ref());
        let ty = match declared {
            Some(d) => {
                self.expect_assignable(&v, &d, value.span);
                d
            }
            None => {
                match &v.ty {
                    Ty::Nil => {
                        self.err(
                        "type",
                        value.span,
                        format!("cannot infer the type of `{}` from `nil`; write `let {}: ?T = nil`", name.name, name.name),
                    );
                        Ty::Unknown
                    }
                    Ty::Void => {
                        let mut d =
                            Diagnostic::error("type", value.span, "this expression has no value");
                        if let ast::ExprKind::Call { callee, .. } = &value.kind {
                            d = d.with_note(if callee.name == "join" {
                                "the task is of a function without a result: `join(t)` waits for it, as a statement".to_string()
                            } else {
                                format!("`{}` returns no result: call it as a statement", callee.name)
                            });
                        }
                        self.diags.push(d);
                        Ty::Unknown
                    }
                    t => t.clone(),
                }
            }
        };
        // `_` alone is a value let go of, as in Rust and Go: `let _ = f()` may come
        // again (helper-96).
        let earlier = self
            .ctx
            .scopes
            .last()
            .and_then(|sc| sc.get(&name.name))
            .map(|&id| self.ctx.local_spans[id]);
        if let Some(first) = earlier.filter(|_| name.name != "_") {
            let d = Diagnostic::error(
                "name",
                name.span,
                format!("`{}` is already defined in this block", name.name),
            )
            .with_label(first, "first defined here")
            .with_note(format!(
                "to give it a new value, assign it: `{} = …` (a `let` in an inner block may hide it)",
                name.name
            ));
            self.diags.push(d);
        }
        let id = self.new_local(&name.name, name.span, ty);
        self.note_let(id, &name.name, value);
        push(out, T::Let(id, v));
    }

    fn return_stmt(&mut self, v: Option<&ast::Expr>, span: Span, out: &mut tir::Block) {
        let push = |out: &mut tir::Block, kind| out.push(Stmt { kind, span });
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
                    let mut d = Diagnostic::error(
                        "return",
                        span,
                        format!("this function must return a value of type {t}"),
                    );
                    if self.value_on_next_line(span) {
                        self.ctx.bare_returns.push(span);
                        d = d.with_note("a line break ends the `return`: the value on the next line is a statement of its own; write it on the line of `return` (`return x`)");
                    }
                    self.diags.push(d);
                }
                push(out, T::Return(None));
            }
        }
    }

    /// `delete row`.
    fn delete_stmt(&mut self, e: &ast::Expr, span: Span, out: &mut tir::Block) {
        let push = |out: &mut tir::Block, kind| out.push(Stmt { kind, span });
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
                if matches!(&row.ty, Ty::Nullable(inner) if self.table_of(inner).is_some()) {
                    d = d.with_note("the row may be nil: narrow it with `if r != nil { … }` first");
                }
                self.diags.push(d);
            }
        }
    }

    fn if_stmt(
        &mut self,
        cond: &ast::Expr,
        then: &ast::Block,
        els: Option<&ast::Block>,
        span: Span,
        out: &mut tir::Block,
    ) {
        let push = |out: &mut tir::Block, kind| out.push(Stmt { kind, span });
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

    fn for_stmt(
        &mut self,
        var: &ast::Ident,
        var2: Option<&ast::Ident>,
        iter: &ast::Expr,
        body: &ast::Block,
        span: Span,
        out: &mut tir::Block,
    ) {
        let push = |out: &mut tir::Block, kind| out.push(Stmt { kind, span });
        self.forget_assigned_in(&body.stmts);
        if let (A::Query(q), None) = (&iter.kind, var2) {
            self.for_query(var, q, iter.span, body, span, out);
            return;
        }
        let it = self.expr(iter, None);
        self.ctx.scopes.push(HashMap::new());
        self.ctx.loop_depth += 1;
        let range = match (&it.kind, var2) {
            (
                E::Builtin {
                    name: "range",
                    args,
                },
                None,
            ) => match &args[..] {
                [start, stop, step] => Some((start.clone(), stop.clone(), step.clone())),
                _ => None,
            },
            _ => None,
        };
        if let Some((start, stop, step)) = range {
            let v = self.new_local(&var.name, var.span, Ty::Int);
            let b = self.block(&body.stmts);
            push(
                out,
                T::ForRange {
                    var: v,
                    start,
                    stop,
                    step,
                    body: b,
                },
            );
            self.ctx.loop_depth -= 1;
            self.ctx.scopes.pop();
            return;
        }
        match (it.ty.clone(), var2) {
            (Ty::List(_), Some(v2)) if matches!(&it.kind, E::Builtin { name: "range", .. }) => {
                self.err(
                    "type",
                    v2.span,
                    "a counted loop takes one variable: `for i in range(…)`",
                );
            }
            (Ty::List(elem), None) => {
                let v = self.new_local(&var.name, var.span, *elem);
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
            (Ty::Text, None) => {
                // `for c in t`: each character, as `chars(t)` gives them, without
                // making that list.
                let v = self.new_local(&var.name, var.span, Ty::Text);
                let b = self.block(&body.stmts);
                push(
                    out,
                    T::ForText {
                        var: v,
                        text: it,
                        body: b,
                    },
                );
            }
            (Ty::Text, Some(v2)) => {
                self.err(
                    "type",
                    v2.span,
                    "iterating a text takes one variable: `for c in t`",
                );
            }
            (Ty::Map(k, v), Some(var2)) => {
                let kid = self.new_local(&var.name, var.span, *k);
                let vid = self.new_local(&var2.name, var2.span, *v);
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
                let d = Diagnostic::error(
                    "type",
                    v2.span,
                    "iterating a list takes one variable: `for x in xs`",
                )
                .with_note(
                    "for the position too, count it: `for i in range(len(xs)) { let x = xs[i] … }`",
                );
                self.diags.push(d);
            }
            (Ty::Unknown, _) => {
                self.new_local(&var.name, var.span, Ty::Unknown);
                if let Some(v2) = var2 {
                    self.new_local(&v2.name, v2.span, Ty::Unknown);
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

    /// `for x in from … select …`: a loop over the query's rows that skips a row deleted
    /// before the loop reaches it, when the query reads a table or a list of rows; else
    /// a loop over the query's list.
    fn for_query(
        &mut self,
        var: &ast::Ident,
        q: &ast::Query,
        iter_span: Span,
        body: &ast::Block,
        span: Span,
        out: &mut tir::Block,
    ) {
        let push = |out: &mut tir::Block, kind| out.push(Stmt { kind, span });
        let c = self.query(q, iter_span);
        if c.query.rows {
            self.ctx.scopes.push(HashMap::new());
            self.ctx.loop_depth += 1;
            let v = self.new_local(&var.name, var.span, c.select_ty.clone());
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
        let it = c
            .query
            .into_read_only(Ty::List(Box::new(c.select_ty)), iter_span);
        self.ctx.scopes.push(HashMap::new());
        self.ctx.loop_depth += 1;
        let v_ty = match &it.ty {
            Ty::List(t) => (**t).clone(),
            _ => Ty::Unknown,
        };
        let v = self.new_local(&var.name, var.span, v_ty);
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
    }
}
