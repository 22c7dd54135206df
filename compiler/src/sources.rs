//! Finding a program's source files: one `.wo` file, or every `.wo` file under a
//! directory (recursively, sorted by path, skipping names that start with `.`, each
//! directory once however many links lead to it). A leading UTF-8 byte order mark is
//! dropped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::diag::SourceMap;

/// Why the program's sources could not be read (the CLI exits 66).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{path}` is not valid UTF-8: line {line}, column {column} holds the byte 0x{byte:02X} (save the file as UTF-8)")]
    NotUtf8 {
        path: PathBuf,
        /// Where the first byte that is not UTF-8 is (1-based; the column counts the
        /// characters before it on its line).
        line: usize,
        column: usize,
        byte: u8,
    },
    #[error("no .wo files under `{path}`")]
    Empty { path: PathBuf },
    #[error("`{path}` is over {} MiB: wo reads programs (source files of at most 16 MiB, and their images) up to that size", MAX_PROGRAM_FILE >> 20)]
    TooLarge { path: PathBuf },
}

/// The most bytes a program file is read to: an image of a large program, or a
/// source file (the compiler takes 16 MiB, and says so). A longer file, or one that
/// never ends (`wo run /dev/zero` read until memory ran out: helper-95), is refused
/// without reading it all.
pub const MAX_PROGRAM_FILE: u64 = 256 << 20;

/// Reads a program file (source or image) whole, up to [`MAX_PROGRAM_FILE`] bytes.
pub fn read_program_file(path: &Path) -> Result<Vec<u8>, LoadError> {
    let file = std::fs::File::open(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read_program(file, path)
}

/// [`read_program_file`] of an open reader (standard input, for `wo check -`), named
/// `path` in errors.
pub fn read_program(input: impl std::io::Read, path: &Path) -> Result<Vec<u8>, LoadError> {
    use std::io::Read;
    let io = |source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    input
        .take(MAX_PROGRAM_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_PROGRAM_FILE {
        return Err(LoadError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// Collects the `.wo` files under `dir`. Names starting with `.` (files and
/// directories) are skipped; a directory reached twice (a symlink loop, or two links
/// to one directory) is read once.
fn collect(
    dir: &Path,
    seen: &mut HashSet<PathBuf>,
    out: &mut Vec<PathBuf>,
) -> Result<(), LoadError> {
    let real = std::fs::canonicalize(dir).map_err(|source| LoadError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if !seen.insert(real) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|source| LoadError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| LoadError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect(&path, seen, out)?;
        } else if path.extension().is_some_and(|e| e == "wo") {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads a `.wo` file, or all `.wo` files below a directory, into a source map.
pub fn load_sources(path: &Path) -> Result<SourceMap, LoadError> {
    let mut paths = Vec::new();
    if path.is_dir() {
        collect(path, &mut HashSet::new(), &mut paths)?;
        paths.sort();
        if paths.is_empty() {
            return Err(LoadError::Empty {
                path: path.to_path_buf(),
            });
        }
    } else {
        paths.push(path.to_path_buf());
    }
    let mut map = SourceMap::default();
    for p in paths {
        let bytes = read_program_file(&p)?;
        add_source(&mut map, &p, bytes)?;
    }
    Ok(map)
}

/// The program of one file whose bytes are already read (a pipe or a FIFO can be read
/// only once: `wo run /dev/stdin`, `wo run <(…)`).
pub fn source_of_bytes(path: &Path, bytes: Vec<u8>) -> Result<SourceMap, LoadError> {
    let mut map = SourceMap::default();
    add_source(&mut map, path, bytes)?;
    Ok(map)
}

/// The text of source file `path` whose content is `bytes`, or where its first byte
/// that is not UTF-8 is.
pub fn decode_source(path: &Path, bytes: Vec<u8>) -> Result<String, LoadError> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let before = &bytes[..at];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let mut line_text = &before[line_start..];
        // A byte order mark is no column (editors do not show it).
        if line_start == 0 {
            line_text = line_text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line_text);
        }
        let column = String::from_utf8_lossy(line_text).chars().count() + 1;
        LoadError::NotUtf8 {
            path: path.to_path_buf(),
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            column,
            byte: bytes[at],
        }
    })
}

/// Adds the file `path` whose content is `bytes` to `map`.
fn add_source(map: &mut SourceMap, path: &Path, bytes: Vec<u8>) -> Result<(), LoadError> {
    let mut src = decode_source(path, bytes)?;
    // A byte order mark some editors write is not part of the program.
    if src.starts_with('\u{feff}') {
        src.drain(..'\u{feff}'.len_utf8());
    }
    map.add(path.display().to_string(), src);
    Ok(())
}
