//! Turning a PATH from the command line into an image: a `.wo` file or a directory is
//! compiled (diagnostics rendered on stderr), a bytecode image is read and verified.
//! Images are recognised by their magic bytes `WOB\0`, whatever the file is called; a
//! file named `*.wob` without them is an invalid image rather than a source file.

use std::io::Write;
use std::path::{Path, PathBuf};

use wo_bytecode::Image;
use wo_compiler::{LoadError, SourceMap};

use crate::exit::Failure;
use crate::render::{render_all, Tally};

/// The first bytes of every `.wob` image.
pub const MAGIC: &[u8; 4] = b"WOB\0";

/// A loaded program: its image, and its sources when it was compiled from source (for
/// `wo disasm`, which then shows source lines).
pub struct Program {
    pub image: Image,
    pub sources: Option<SourceMap>,
}

/// What PATH names.
enum Input {
    Program(Sources),
    Image(Vec<u8>),
}

/// Where a program's sources are.
enum Sources {
    /// A directory of `.wo` files.
    Dir,
    /// One source file, read (once: a pipe or a FIFO cannot be read again, as in `wo
    /// run /dev/stdin` or `wo run <(…)`).
    File(Vec<u8>),
}

impl Sources {
    /// The sources of the program at `path`.
    fn load(self, path: &Path) -> Result<SourceMap, Failure> {
        match self {
            Sources::Dir => wo_compiler::load_sources(path).map_err(load_error),
            Sources::File(bytes) => {
                wo_compiler::source_of_bytes(shown(path), bytes).map_err(load_error)
            }
        }
    }
}

/// The PATH `-`: the program is read from standard input (`wo check -`, `wo run -`:
/// an editor's linter sends its buffer so), and called `<stdin>` in messages.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Standard input can be read once: `-` named twice is refused (helper-107: `wo check
/// - -` read an empty program the second time).
pub fn stdin_once(paths: &[PathBuf]) -> Result<(), Failure> {
    if paths.iter().filter(|p| is_stdin(p)).count() > 1 {
        return Err(Failure::Refused(String::from(
            "`-` (standard input) is named more than once",
        )));
    }
    Ok(())
}

/// How PATH is named in messages: `<stdin>` for `-`.
pub fn shown(path: &Path) -> &Path {
    if is_stdin(path) {
        Path::new("<stdin>")
    } else {
        path
    }
}

fn classify(path: &Path) -> Result<Input, Failure> {
    if is_stdin(path) {
        let bytes =
            wo_compiler::read_program(std::io::stdin().lock(), shown(path)).map_err(load_error)?;
        return Ok(if bytes.starts_with(MAGIC) {
            Input::Image(bytes)
        } else {
            Input::Program(Sources::File(bytes))
        });
    }
    let meta = std::fs::metadata(path).map_err(|e| input_error(path, &e))?;
    if meta.is_dir() {
        return Ok(Input::Program(Sources::Dir));
    }
    let bytes = wo_compiler::read_program_file(path).map_err(load_error)?;
    if bytes.starts_with(MAGIC) {
        Ok(Input::Image(bytes))
    } else if path.extension().is_some_and(|e| e == "wob") {
        Err(Failure::invalid_image(path, "missing the `WOB\\0` magic"))
    } else {
        Ok(Input::Program(Sources::File(bytes)))
    }
}

/// Whether PATH is a file that starts with the image magic.
pub fn is_image(path: &Path) -> bool {
    let mut head = [0u8; 4];
    path.is_file()
        && std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok()
        && &head == MAGIC
}

fn input_error(path: &Path, e: &std::io::Error) -> Failure {
    Failure::Input(format!("cannot read `{}`: {e}", path.display()))
}

pub fn load_error(e: LoadError) -> Failure {
    match e {
        LoadError::NotUtf8 { .. } | LoadError::TooLarge { .. } => Failure::BadSource(e.to_string()),
        _ => Failure::Input(e.to_string()),
    }
}

/// Reads and verifies an image from bytes known to start with the magic.
pub fn read_image(path: &Path, bytes: &[u8]) -> Result<Image, Failure> {
    wo_bytecode::format::read_image(bytes).map_err(|e| Failure::invalid_image(shown(path), e))
}

/// Compiles a program's sources. Diagnostics (all of them: the errors, or the warnings
/// of a program that compiles) go to stderr; `tally` accumulates counts for callers
/// that compile several programs and print the summary line.
fn compile_sources(
    path: &Path,
    sources: SourceMap,
    tally: &mut Tally,
) -> Result<(Image, SourceMap), Failure> {
    match wo_compiler::compile_warned(&sources) {
        Ok((image, mut warnings)) => {
            report(&sources, &mut warnings, tally);
            Ok((image, sources))
        }
        Err(mut diags) => {
            report(&sources, &mut diags, tally);
            hint_compiled_alone(path, &diags);
            if tally.errors == 0 {
                // The compiler refused the program without saying why: still a failure.
                say!("wo: compilation failed without a diagnostic");
            }
            Err(Failure::Compile)
        }
    }
}

/// After the errors of a program that is one file: when a name it uses is unknown
/// and the file's directory holds other `.wo` files, says that the file was
/// compiled alone and a directory is one program (helper-101: `wo test
/// todo/todo_test.wo` gave nine "unknown" errors where `wo lsp`, which compiles the
/// file with its directory, showed none).
pub fn hint_compiled_alone(path: &Path, diags: &[wo_compiler::Diagnostic]) {
    const UNKNOWN: [&str; 5] = [
        "unknown function",
        "unknown table",
        "unknown class",
        "unknown type",
        "unknown constant",
    ];
    let unknown = diags.iter().any(|d| {
        d.severity == wo_compiler::Severity::Error
            && UNKNOWN.iter().any(|u| d.message.starts_with(u))
    });
    if !unknown {
        return;
    }
    if let Some((dir, others)) = program_around(path) {
        let files = if others == 1 { "file" } else { "files" };
        say!(
            "wo: note: `{}` was compiled alone; its directory holds {others} more `.wo` {files}, \
             and a directory is one program: name `{}` to compile them together",
            path.display(),
            dir.display()
        );
    }
}

/// When the file at `path` is one of a directory program's files: the directory and
/// how many other `.wo` files it holds. Only a directory that is one program: at most
/// one `main` in all its files (a directory of programs, each with its own, is not).
pub fn program_around(path: &Path) -> Option<(PathBuf, usize)> {
    // (`-` is standard input, whatever file of that name the directory holds.)
    if is_stdin(path) || !path.is_file() {
        return None;
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let others: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wo") && p.file_name() != path.file_name())
        .collect();
    let mains = std::iter::once(path)
        .chain(others.iter().map(|p| p.as_path()))
        .filter(|p| has_main(p))
        .count();
    (!others.is_empty() && mains <= 1).then(|| (dir.to_path_buf(), others.len()))
}

/// Whether the source file at `path` declares `fn main` (unreadable: no).
fn has_main(path: &Path) -> bool {
    let Ok(src) = std::fs::read_to_string(path) else {
        return false;
    };
    let (module, _) = wo_compiler::parse(&src, wo_compiler::FileId(0));
    module
        .items
        .iter()
        .any(|i| matches!(i, wo_compiler::ast::Item::Fn(f) if f.name.name == "main"))
}

/// Writes `diags` to stderr in source order ([`SourceMap::sort`]), and counts them
/// in `tally`.
pub fn report(sources: &SourceMap, diags: &mut [wo_compiler::Diagnostic], tally: &mut Tally) {
    if diags.is_empty() {
        return;
    }
    sources.sort(diags);
    tally.add(diags);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(render_all(sources, diags).as_bytes());
}

/// Loads PATH as a program: compiles a source file or directory, or reads an image.
/// On a compile error the diagnostics and summary line are already on stderr.
pub fn load(path: &Path) -> Result<Program, Failure> {
    load_with(path, false)
}

/// [`load`], a program of tests alone taken with a stand-in `main` when
/// `tests_alone` (`wo disasm`, as `wo check` takes it; helper-90: refused for its
/// want of a `main`).
pub fn load_with(path: &Path, tests_alone: bool) -> Result<Program, Failure> {
    match classify(path)? {
        Input::Image(bytes) => Ok(Program {
            image: read_image(path, &bytes)?,
            sources: None,
        }),
        Input::Program(sources) => {
            let mut sources = sources.load(path)?;
            if tests_alone {
                crate::test::stand_in_main(&mut sources);
            }
            let mut tally = Tally::default();
            let res = compile_sources(path, sources, &mut tally);
            if let Some(summary) = tally.summary() {
                say!("{summary}");
            }
            let (image, sources) = res?;
            Ok(Program {
                image,
                sources: Some(sources),
            })
        }
    }
}

/// Checks PATH without running it: a source program is compiled, an image is read and
/// verified. Used by `wo check`, which reports on several programs at once.
pub fn check(path: &Path, tally: &mut Tally) -> Result<(), Failure> {
    match classify(path)? {
        Input::Image(bytes) => read_image(path, &bytes).map(drop),
        Input::Program(sources) => {
            let mut sources = sources.load(path)?;
            // A program of tests alone (`wo test` runs it) needs no `main`.
            crate::test::stand_in_main(&mut sources);
            compile_sources(path, sources, tally).map(drop)
        }
    }
}
