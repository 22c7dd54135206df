//! Fibers (LANGUAGE.md §9): `spawn` of a function or method call, the `task<T>` and
//! `task` types, and `join(t)`. Cut here so the fiber rules read in one place: what
//! `spawn` accepts (a call of a script function or method, nothing else), the type of
//! the task it gives, and the type `join` gives back.

use super::Checker;
use crate::ast::{self, ExprKind as A};
use crate::diag::Span;
use crate::tir::{Expr, ExprKind as E, Ty};

impl<'a> Checker<'a> {
    /// `spawn f(…)` or `spawn obj.m(…)`: a `task<R>` (`task` when `f` has no result).
    pub(super) fn spawn(&mut self, call: &ast::Expr, span: Span) -> Expr {
        let what = match &call.kind {
            A::Call { callee, .. } if !self.func_index.contains_key(&callee.name) => {
                if super::builtin::is_builtin(&callee.name) {
                    format!(
                        "`{}` is a built-in function: spawn a function of your own that calls it",
                        callee.name
                    )
                } else if self.lookup_local(&callee.name).is_some() {
                    format!("`{}` is a variable, not a function", callee.name)
                } else {
                    String::new()
                }
            }
            // A block written after `spawn`, reported by the parser.
            A::Call { .. } | A::MethodCall { .. } | A::Error => String::new(),
            // `spawn work`, the call's parentheses left out: one error, which says so
            // (helper-89: a second said `work` is not a value).
            A::Name(n) if self.func_index.contains_key(n) && self.lookup_local(n).is_none() => {
                let f = self.func_index[n];
                let args = if self.funcs[f].params.is_empty() { "" } else { "…" };
                self.err(
                    "spawn",
                    call.span,
                    format!("`spawn` takes a call, with its parentheses: `spawn {n}({args})`"),
                );
                return self.unknown(span);
            }
            _ => "`spawn` takes a call of a function or method, like `spawn f(x)` or `spawn obj.m(x)`"
                .to_string(),
        };
        if !what.is_empty() {
            self.err("spawn", call.span, what);
            // Check what is inside, without reporting the call itself again.
            match &call.kind {
                A::Call { args, .. } => {
                    for a in args {
                        self.expr(a, None);
                    }
                }
                _ => {
                    self.expr(call, None);
                }
            }
            return self.unknown(span);
        }
        let checked = self.expr(call, None);
        match checked.kind {
            E::Call { func, args } => {
                let ty = Ty::Task(Box::new(checked.ty));
                let ty = self.within_depth(ty, span, "the type of this task");
                Expr::new(E::Spawn { func, args }, ty, span)
            }
            _ if checked.ty == Ty::Unknown => self.unknown(span),
            _ => {
                self.err(
                    "spawn",
                    call.span,
                    "`spawn` takes a call of a function or method of this program, not of a module",
                );
                self.unknown(span)
            }
        }
    }

    /// `join(t)`: the task's result (no value for a `task`).
    pub(super) fn join(&mut self, arg: &ast::Expr, span: Span) -> Expr {
        let t = self.expr(arg, None);
        match t.ty.clone() {
            Ty::Task(r) => Expr::new(E::Join(Box::new(t)), *r, span),
            Ty::Unknown => self.unknown(span),
            other => {
                let ts = self.tyname(&other);
                let mut d = crate::diag::Diagnostic::error(
                    "type",
                    arg.span,
                    format!("`join` of one argument takes a task (from `spawn`), found {ts}"),
                );
                if other == Ty::List(Box::new(Ty::Text)) {
                    d = d.with_note("to join texts, give the separator: `join(xs, \", \")`");
                } else if matches!(&other, Ty::Nullable(inner) if matches!(**inner, Ty::Task(_))) {
                    let fallback = "a `?T` may be nil: narrow it first (`if t != nil { join(t) }`), or use `unwrap(t)`";
                    d = d.with_note(self.nil_note_of(&t, fallback));
                }
                self.diags.push(d);
                self.unknown(span)
            }
        }
    }
}
