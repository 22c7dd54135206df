//! Control-flow facts about statements: whether a block can complete normally.

use crate::ast::{self, ExprKind as A, StmtKind as S};
use crate::tir::{Expr, ExprKind as E};

/// Whether evaluating `e` can never produce a value: a call of `fail` or `exit`.
pub(super) fn diverging(e: &Expr) -> bool {
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
pub(super) fn diverges(block: &[ast::Stmt]) -> bool {
    match block.last() {
        None => false,
        Some(s) => stmt_diverges(s),
    }
}

pub(super) fn stmt_diverges(s: &ast::Stmt) -> bool {
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
        // Leaving a transaction by `return`, `break` or `continue` commits it (§8).
        S::Transaction(b) => diverges(&b.stmts),
        S::While { cond, body } => matches!(cond.kind, A::Bool(true)) && !has_break(&body.stmts),
        _ => false,
    }
}

/// Whether a `break` in `block` targets the enclosing loop.
pub(super) fn has_break(block: &[ast::Stmt]) -> bool {
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
