//! `wo-compiler`: source text to a bytecode image. Stages, each a module: `lexer`
//! (logos tokens, automatic semicolons, interpolation), `parser` (LALRPOP, behind the
//! one [`parse`] seam), `check` (names and static types, producing typed IR), `codegen`
//! (typed IR to register bytecode). Diagnostics are data (`diag`); the CLI renders them.

pub mod ast;
pub mod check;
pub mod codegen;
pub mod diag;
pub mod facts;
pub mod fmt;
pub mod lexer;
pub mod parser;
pub mod repl_input;
pub mod sources;
pub mod tir;

/// The names of the built-in types, which no class may take.
pub const BUILTIN_TYPES: [&str; 5] = ["Int", "Float", "Bool", "Text", "Error"];

pub use diag::{Diagnostic, FileId, Severity, SourceFile, SourceMap, Span};
pub use parser::parse;
pub use sources::{
    decode_source, load_sources, read_program, read_program_file, source_of_bytes, LoadError,
};

use wo_bytecode::Image;

/// The stack of the thread that compiles: the checker and codegen recurse over the
/// program's nesting (an `if` with 20,000 `else if` arms is 20,000 levels deep), far
/// beyond a main thread's 8 MB. Only the pages actually used are touched.
const COMPILER_STACK: usize = 1 << 30;

/// Programs up to this many bytes are compiled on the caller's thread.
const SMALL_PROGRAM: usize = 4096;

/// Compiles a whole program (all files in `sources` share one namespace). Returns the
/// image, or every error found ([`compile_warned`] also returns the warnings).
pub fn compile(sources: &SourceMap) -> Result<Image, Vec<Diagnostic>> {
    compile_warned(sources).map(|(image, _)| image)
}

/// Compiles a whole program: the image and the warnings (in the order found), or the
/// errors alone (a warning beside an error would only distract from it). A program
/// larger than a few KB is compiled on a thread with a large stack (when one can be
/// started; otherwise on the caller's).
pub fn compile_warned(sources: &SourceMap) -> Result<(Image, Vec<Diagnostic>), Vec<Diagnostic>> {
    // A small program cannot nest deeply enough to need it (each `else if` arm takes
    // a dozen bytes): it is compiled where it is, without the cost of a thread.
    let size: usize = sources.files.iter().map(|f| f.src.len()).sum();
    if size <= SMALL_PROGRAM {
        return compile_here(sources);
    }
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("wo-compiler".to_string())
            .stack_size(COMPILER_STACK)
            .spawn_scoped(s, || compile_here(sources));
        match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => compile_here(sources),
        }
    })
}

/// Everything the compiler knows about a program short of its image: the parsed files,
/// every diagnostic `compile_warned` would report (and the warnings beside errors,
/// which it leaves out), the checked program and the checker's
/// notes on names and types ([`facts::Facts`]). For tools (the language server), which
/// ask about positions. Runs on the caller's thread: a caller that analyses large or
/// deeply nested programs gives that thread a large stack, as [`compile`] does.
pub struct Analysis {
    pub modules: Vec<ast::Module>,
    pub diags: Vec<Diagnostic>,
    pub program: tir::Program,
    pub facts: facts::Facts,
}

/// Parses and checks `sources` (and generates code, for its diagnostics, when checking
/// found no error), recording [`facts::Facts`].
pub fn analyze(sources: &SourceMap) -> Analysis {
    let (modules, mut diags) = parse_files(sources);
    let (program, facts) = check::check_with_facts(&modules, sources, &mut diags);
    if !diags.iter().any(|d| d.severity == Severity::Error) {
        if let Err(d) = codegen::generate(&program, sources) {
            diags.push(d);
        }
    }
    Analysis {
        modules,
        diags,
        program,
        facts,
    }
}

/// Parses every file of `sources` ([`parse_file`]).
pub fn parse_files(sources: &SourceMap) -> (Vec<ast::Module>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut modules = Vec::new();
    for (i, f) in sources.files.iter().enumerate() {
        let (m, d) = parse_file(&f.src, FileId(i as u32));
        diags.extend(d);
        modules.push(m);
    }
    (modules, diags)
}

/// Parses one whole file. A file whose lines end in `\r` alone gets that one error
/// instead of what reading it as one line gives ([`lexer::lone_carriage_return`]):
/// syntax errors, or, after a `--` comment, a file that parses and holds nothing.
pub fn parse_file(src: &str, file: FileId) -> (ast::Module, Vec<Diagnostic>) {
    let (module, diags) = parse(src, file);
    match lexer::lone_carriage_return(src, file) {
        Some(cr) => (module, vec![cr]),
        None => (module, diags),
    }
}

fn compile_here(sources: &SourceMap) -> Result<(Image, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (modules, mut diags) = parse_files(sources);
    let program = check::check(&modules, sources, &mut diags);
    if diags.iter().any(|d| d.severity == Severity::Error) {
        diags.retain(|d| d.severity == Severity::Error);
        return Err(diags);
    }
    let image = codegen::generate(&program, sources).map_err(|d| vec![d])?;
    // Warnings in the order they stand (an `unused` one is found at its function's
    // end, after those inside it: helper-96 saw 2:22 before 2:7).
    diags.sort_by_key(|d| (d.span.file.0, d.span.lo));
    Ok((image, diags))
}
