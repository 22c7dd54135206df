//! `wo fmt [--check] PATH…`: rewrites `.wo` files in the canonical layout of
//! `wo_compiler::fmt` (docs/tools.md). A PATH is a file or a directory (every `.wo`
//! file under it, as a program's sources are found). A file that does not parse is
//! reported with its diagnostics and left as it is (exit 65); with `--check` nothing
//! is written, the files that would change are listed on stdout and the status is 1.
//! A PATH of `-` is standard input, formatted to standard output (for editors and
//! pipes); with `--check` nothing is printed but its name, `<stdin>`, when it would
//! change.

use std::io::Write;
use std::path::{Path, PathBuf};

use wo_compiler::SourceMap;

use crate::exit::{Failure, DATAERR};
use crate::render::{render_all, Tally};

/// The files a PATH names: itself, or the `.wo` files under a directory.
fn files_of(path: &Path) -> Result<Vec<PathBuf>, Failure> {
    if !path.is_dir() {
        std::fs::metadata(path)
            .map_err(|e| Failure::Input(format!("cannot read `{}`: {e}", path.display())))?;
        return Ok(vec![path.to_path_buf()]);
    }
    let sources = wo_compiler::load_sources(path).map_err(crate::program::load_error)?;
    Ok(sources
        .files
        .iter()
        .map(|f| PathBuf::from(&f.name))
        .collect())
}

/// The source `bytes` of `name` and its formatted text; a source that does not
/// parse is reported with its diagnostics.
fn format_source(
    name: &Path,
    bytes: Vec<u8>,
    tally: &mut Tally,
) -> Result<(String, String), Failure> {
    if bytes.starts_with(crate::program::MAGIC) {
        return Err(Failure::Refused(format!(
            "`{}` is a bytecode image, not a source file",
            name.display()
        )));
    }
    let src =
        wo_compiler::decode_source(name, bytes).map_err(|e| Failure::BadSource(e.to_string()))?;
    match wo_compiler::fmt::format_checked(&name.display().to_string(), &src) {
        Ok(text) => Ok((src, text)),
        Err(diags) => {
            let mut sources = SourceMap::default();
            let body = src.strip_prefix('\u{feff}').unwrap_or(&src);
            sources.add(name.display().to_string(), body);
            tally.add(&diags);
            let _ = std::io::stderr()
                .lock()
                .write_all(render_all(&sources, &diags).as_bytes());
            say!("wo: `{}` not formatted", name.display());
            Err(Failure::Reported(DATAERR))
        }
    }
}

/// Formats one file; `Ok(true)` when it is (or would be) changed.
fn fmt_file(path: &Path, check: bool, tally: &mut Tally) -> Result<bool, Failure> {
    let bytes = wo_compiler::read_program_file(path).map_err(crate::program::load_error)?;
    let (src, formatted) = format_source(path, bytes, tally)?;
    if formatted == src {
        return Ok(false);
    }
    if check {
        out!("{}", path.display());
    } else {
        // Whole or not at all: a failed write truncated the program to what fitted
        // (`ulimit -f 2` kept 2 KiB of a 4 KiB program).
        crate::save::write_whole(path, formatted.as_bytes()).map_err(|source| Failure::Output {
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(true)
}

/// Formats standard input to standard output (with `--check`, prints nothing but
/// its name when it would change); `Ok(true)` when it is (or would be) changed.
/// Standard output gets the text only when all of it is formatted: on an error
/// nothing, so `wo fmt - < a.wo > b.wo` leaves no half a program.
fn fmt_stdin(check: bool, tally: &mut Tally) -> Result<bool, Failure> {
    // Read as every command reads a program on standard input: bounded, and named
    // `<stdin>`.
    let name = crate::program::shown(Path::new("-"));
    let bytes = wo_compiler::read_program(std::io::stdin().lock(), name)
        .map_err(crate::program::load_error)?;
    let (src, formatted) = format_source(name, bytes, tally)?;
    if check {
        if formatted != src {
            out!("{}", name.display());
        }
    } else {
        out_part!("{formatted}");
    }
    Ok(formatted != src)
}

/// `wo fmt [--check] PATH…`. Every file is tried; the status is the worst failure
/// (an unreadable input 66, a file that does not parse 65), else 1 when `--check`
/// found a file to change, else 0.
pub fn fmt(paths: &[PathBuf], check: bool) -> Result<(), Failure> {
    let mut tally = Tally::default();
    let mut worst = 0u8;
    let mut n_changed = 0usize;
    let mut note = |failure: Failure| {
        if !failure.reported() {
            say!("wo: {failure}");
        }
        worst = worst.max(failure.status());
    };
    crate::program::stdin_once(paths)?;
    for path in paths {
        if crate::program::is_stdin(path) {
            match fmt_stdin(check, &mut tally) {
                Ok(changed) => n_changed += usize::from(changed),
                Err(failure) => note(failure),
            }
            continue;
        }
        let files = match files_of(path) {
            Ok(files) => files,
            Err(failure) => {
                note(failure);
                continue;
            }
        };
        for file in files {
            match fmt_file(&file, check, &mut tally) {
                Ok(changed) => n_changed += usize::from(changed),
                Err(failure) => note(failure),
            }
        }
    }
    if let Some(summary) = tally.summary() {
        say!("{summary}");
    }
    if worst == 0 && check && n_changed > 0 {
        say!(
            "wo: {n_changed} file{} not formatted (run `wo fmt` on {})",
            if n_changed == 1 { " is" } else { "s are" },
            if n_changed == 1 { "it" } else { "them" }
        );
        worst = 1;
    }
    match worst {
        0 => Ok(()),
        status => Err(Failure::Reported(status)),
    }
}
