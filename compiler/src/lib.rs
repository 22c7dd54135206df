//! `wo-compiler`: source text to a bytecode image. Stages, each a module: `lexer`
//! (logos tokens, automatic semicolons, interpolation), `parser` (LALRPOP, behind the
//! one [`parse`] seam), `check` (names and static types, producing typed IR), `codegen`
//! (typed IR to register bytecode). Diagnostics are data (`diag`); the CLI renders them.

pub mod ast;
pub mod check;
pub mod codegen;
pub mod diag;
pub mod lexer;
pub mod parser;
pub mod sources;
pub mod tir;

pub use diag::{Diagnostic, FileId, Severity, SourceFile, SourceMap, Span};
pub use parser::parse;
pub use sources::{load_sources, LoadError};

use wo_bytecode::Image;

/// Compiles a whole program (all files in `sources` share one namespace). Returns the
/// image, or every diagnostic found.
pub fn compile(sources: &SourceMap) -> Result<Image, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut modules = Vec::new();
    for (i, f) in sources.files.iter().enumerate() {
        let (m, d) = parse(&f.src, FileId(i as u32));
        diags.extend(d);
        modules.push(m);
    }
    let program = check::check(&modules, sources, &mut diags);
    if diags.iter().any(|d| d.severity == Severity::Error) {
        return Err(diags);
    }
    codegen::generate(&program, sources).map_err(|d| vec![d])
}
