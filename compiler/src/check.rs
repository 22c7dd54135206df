//! Name resolution and type checking. (Being written.)
use crate::{ast::Module, diag::{Diagnostic, SourceMap}, tir};
pub fn check(_m: &[Module], _s: &SourceMap, _d: &mut Vec<Diagnostic>) -> tir::Program { tir::Program }
