//! `?T` narrowing (LANGUAGE.md §3): what a condition proves, and blocks that keep
//! or forget those facts.
use std::collections::{HashMap, HashSet};

use super::{assignable, truthiness_note, Checker};
use crate::ast::{self, ExprKind as A, StmtKind as S};
use crate::tir::{self, Expr, LocalId, Ty};
use crate::Diagnostic;

/// Names assigned anywhere in a block (for invalidating narrowing around loops).
pub(super) fn assigned_names(block: &[ast::Stmt], out: &mut HashSet<String>) {
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
    /// Checks a block in a new scope; narrowing established inside ends with it, and
    /// locals assigned inside lose any narrowing from outside.
    pub(super) fn block(&mut self, stmts: &[ast::Stmt]) -> tir::Block {
        self.block_with(stmts, &[])
    }

    pub(super) fn block_with(
        &mut self,
        stmts: &[ast::Stmt],
        facts: &[(LocalId, Ty)],
    ) -> tir::Block {
        let saved = self.ctx.narrowed.clone();
        let log_len = self.ctx.assigned_log.len();
        for (id, ty) in facts {
            self.ctx.narrowed.insert(*id, ty.clone());
        }
        // Only a block that declares a local needs a scope of its own (`for` and
        // `catch` open theirs): an `else if` chain of 20,000 arms then does not make
        // every name lookup walk 20,000 empty scopes.
        let declares = stmts.iter().any(|s| matches!(s.kind, S::Let { .. }));
        if declares {
            self.ctx.scopes.push(HashMap::new());
        }
        self.warn_unreachable(stmts);
        let mut out = Vec::new();
        for (i, s) in stmts.iter().enumerate() {
            self.ctx.value_follows = matches!(stmts.get(i + 1).map(|n| &n.kind), Some(S::Expr(_)));
            self.stmt(s, &mut out);
        }
        if declares {
            self.ctx.scopes.pop();
        }
        let mut restored = saved;
        for id in &self.ctx.assigned_log[log_len..] {
            restored.remove(id);
        }
        self.ctx.narrowed = restored;
        out
    }

    pub(super) fn note_assigned(&mut self, id: LocalId) {
        if let Some(w) = self.ctx.written.get_mut(id) {
            *w = true;
        }
        self.ctx.narrowed.remove(&id);
        self.ctx.assigned_log.push(id);
    }

    /// What a condition proves about nullable locals when it is true, and when false.
    pub(super) fn facts(&self, e: &ast::Expr) -> (Facts, Facts) {
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

    pub(super) fn with_facts<R>(
        &mut self,
        facts: &[(LocalId, Ty)],
        f: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let saved = self.ctx.narrowed.clone();
        for (id, ty) in facts {
            self.ctx.narrowed.insert(*id, ty.clone());
        }
        let r = f(self);
        self.ctx.narrowed = saved;
        r
    }

    pub(super) fn cond(&mut self, e: &ast::Expr) -> Expr {
        self.condition(e, false)
    }

    /// The left side of `or`: a condition, with a note for Lua's and Python's `x or
    /// d` (a default) when it may be nil.
    pub(super) fn logic_operand(&mut self, e: &ast::Expr) -> Expr {
        self.condition(e, true)
    }

    fn condition(&mut self, e: &ast::Expr, operand: bool) -> Expr {
        let c = self.expr(e, Some(&Ty::Bool));
        if !assignable(&c.ty, &Ty::Bool) || c.ty.is_nullable() {
            let t = self.tyname(&c.ty);
            let mut d = Diagnostic::error(
                "type",
                e.span,
                format!("a condition must be `Bool`, found {t}"),
            );
            // Lua's and Python's `x or d` for a default (helper-67).
            if operand && c.ty.is_nullable() && c.ty.strip() != &Ty::Bool {
                d = d.with_note(
                    "a default for a value that may be nil is given with `??`: `x ?? d`",
                );
            } else if !operand && !matches!(c.kind, tir::ExprKind::Text(_) | tir::ExprKind::Int(_))
            {
                // (Not for a literal: `x or "none"` is no test of the truth of "none".)
                let x = self.short_text(e.span, "x");
                if let Some(note) = truthiness_note(&c.ty, x, false) {
                    d = d.with_note(note);
                }
            }
            self.diags.push(d);
        }
        c
    }

    pub(super) fn forget_assigned_in(&mut self, body: &[ast::Stmt]) {
        let mut names = HashSet::new();
        assigned_names(body, &mut names);
        for n in names {
            if let Some(id) = self.lookup_local(&n) {
                self.ctx.narrowed.remove(&id);
            }
        }
    }
}
