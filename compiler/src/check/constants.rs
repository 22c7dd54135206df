//! Constants: checked on first use, in dependency order.
use std::collections::HashMap;

use super::{Checker, GlobalState};
use crate::ast::{self};
use crate::diag::Span;
use crate::tir::{Global, Ty};

impl<'a> Checker<'a> {
    pub(super) fn ensure_global(&mut self, g: usize, use_span: Option<Span>) -> Ty {
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
}
