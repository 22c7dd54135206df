//! Code generation. (Being written.)
use crate::{diag::SourceMap, tir};
pub fn generate(_p: &tir::Program, _s: &SourceMap) -> wo_bytecode::Image { wo_bytecode::Image::default() }
