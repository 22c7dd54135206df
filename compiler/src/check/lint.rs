//! Warnings: what compiles and runs but is most likely a mistake (docs/errors.md,
//! "Warnings"). A warning never stops a program; `compile_warned` returns warnings
//! only for a program without errors (`analyze`, for the editor, returns both). Each is silenced by writing what is meant: a name that
//! starts with `_` for a variable kept on purpose, `\$` for a dollar sign, and no
//! statement after the one that leaves the block.

use crate::ast::{self, ExprKind as A, StmtKind as S};
use crate::diag::{Diagnostic, Span};
use crate::lexer::dollar_names;
use crate::tir::LocalId;

use super::flow::stmt_diverges;
use super::Checker;

/// A `let` of the function being checked: its local and name, and whether its value
/// is worked for its effect (a call, `insert`, `spawn`), which a statement can do
/// without the variable.
pub(super) struct Let {
    pub id: LocalId,
    pub name: String,
    pub effect: bool,
}

impl<'a> Checker<'a> {
    /// The `$name`s of the literal field defaults that are texts, once each (they
    /// are checked again at each object literal that leaves the field out, quietly).
    pub(super) fn warn_default_texts(&mut self) {
        for cid in 0..self.class_decls.len() {
            let (mi, ii) = self.class_decls[cid];
            let ast::Item::Class(c) = &self.modules[mi].items[ii] else {
                continue;
            };
            for f in &c.fields {
                if let Some(
                    def @ ast::Expr {
                        kind: A::Text(_), ..
                    },
                ) = &f.default
                {
                    if super::collect::simple_default(def) {
                        self.warn_dollar_names(def.span);
                    }
                }
            }
        }
    }

    fn warn(&mut self, code: &'static str, span: Span, msg: impl Into<String>) -> &mut Diagnostic {
        self.diags.push(Diagnostic::warning(code, span, msg));
        self.diags.last_mut().expect("just pushed")
    }

    /// Notes a `let` of local `id`, for [`Checker::warn_unread_lets`].
    pub(super) fn note_let(&mut self, id: LocalId, name: &str, value: &ast::Expr) {
        // (A builtin such as `len` or `parse_int` does nothing but give its value:
        // the note would leave a statement that does nothing: helper-97.)
        let effect = match &value.kind {
            A::Call { callee, .. } => self.func_index.contains_key(&callee.name),
            A::MethodCall { .. } | A::Insert { .. } | A::Spawn { .. } => true,
            _ => false,
        };
        self.ctx.lets.push(Let {
            id,
            name: name.to_string(),
            effect,
        });
    }

    /// After a function's body: each `let` whose variable is never read (`unused`).
    /// A value only assigned again (`n += 1`) is not read either.
    pub(super) fn warn_unread_lets(&mut self) {
        for l in std::mem::take(&mut self.ctx.lets) {
            if l.name.starts_with('_') || self.ctx.read.get(l.id).copied().unwrap_or(true) {
                continue;
            }
            let span = self.ctx.local_spans[l.id];
            let assigned = self.ctx.written.get(l.id).copied().unwrap_or(false);
            let name = &l.name;
            let msg = if assigned {
                format!("`{name}` is assigned, but its value is never read")
            } else {
                format!("`{name}` is never used")
            };
            let d = self.warn("unused", span, msg);
            if l.effect && !assigned {
                d.notes.push(format!(
                    "if only what it does is wanted, write it as a statement, without `let {name} =`"
                ));
            }
            d.notes.push(format!(
                "a variable kept on purpose is named with a leading `_`: `_{name}`"
            ));
        }
    }

    /// The first statement of `stmts` after one that always leaves the block
    /// (`return`, `break`, `continue`, `fail(…)`, `exit(…)`, an `if` whose every
    /// branch leaves): it can never run (`unreachable`).
    pub(super) fn warn_unreachable(&mut self, stmts: &[ast::Stmt]) {
        // (The last statement has nothing after it: not walking it keeps a long
        // `else if` chain, each `else` a block of one `if`, linear: helper-97.)
        let before_last = &stmts[..stmts.len().saturating_sub(1)];
        let Some(i) = before_last.iter().position(stmt_diverges) else {
            return;
        };
        let next = &stmts[i + 1];
        let line = self.sources.line_col(stmts[i].span).0;
        let how = match &stmts[i].kind {
            S::Return(_) => "`return`".to_string(),
            S::Break => "`break`".to_string(),
            S::Continue => "`continue`".to_string(),
            S::Expr(ast::Expr {
                kind: A::Call { callee, .. },
                ..
            }) => format!("`{}(…)`", callee.name),
            S::If { .. } => "each of its branches does".to_string(),
            S::Try { .. } => "its body and its `catch` both do".to_string(),
            S::While { .. } => "a `while true` without `break`".to_string(),
            _ => "its block does".to_string(),
        };
        self.warn(
            "unreachable",
            next.span,
            format!("unreachable: this can never run, since the statement on line {line} leaves the block ({how})"),
        );
    }

    /// Each `$name` in the text literal at `span` where `name` is a variable or a
    /// constant (`text`): the text holds the dollar sign and the name, not the value.
    pub(super) fn warn_dollar_names(&mut self, span: Span) {
        if self.quiet {
            return;
        }
        let Some(literal) = self
            .sources
            .files
            .get(span.file.0 as usize)
            .and_then(|f| f.src.get(span.lo as usize..span.hi as usize))
        else {
            return;
        };
        for (lo, hi) in dollar_names(literal) {
            let name = &literal[lo + 1..hi];
            let local = self.lookup_local(name);
            if local.is_none() && !self.global_index.contains_key(name) {
                continue;
            }
            // A variable the text meant to put in is not also "never used": one
            // mistake, one warning (helper-101).
            if let Some(read) = local.and_then(|id| self.ctx.read.get_mut(id)) {
                *read = true;
            }
            let at = Span::new(span.file, span.lo as usize + lo, span.lo as usize + hi);
            let d = self.warn(
                "text",
                at,
                format!("`${name}` is text as written: the value of `{name}` is put in with `${{{name}}}`"),
            );
            d.notes.push(format!(
                "a dollar sign meant as one is written `\\$`: `\\${name}`"
            ));
        }
    }
}
