//! Diagnostics as data, and the source map that turns byte spans into lines and
//! columns. Only the CLI renders diagnostics; every stage of the compiler just pushes
//! `Diagnostic` values.

/// How a trap is raised and caught, for the notes on other languages' `throw` and
/// `raise` (the parser's, an unknown function's, an unknown name's).
pub(crate) const RAISE_HOW: &str =
    "a trap is raised with `fail(\"message\")`, and caught with `try … catch`";

/// Which source file a span belongs to (an index into [`SourceMap::files`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FileId(pub u32);

/// A byte range `lo..hi` in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    pub fn new(file: FileId, lo: usize, hi: usize) -> Span {
        Span {
            file,
            lo: u32::try_from(lo).unwrap_or(u32::MAX),
            hi: u32::try_from(hi).unwrap_or(u32::MAX),
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One compiler message: a stable code, a lowercase message, the primary span, extra
/// labelled spans and free-standing notes.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub severity: Severity,
    /// A stable short code such as `syntax`, `type`, `name`; listed in `docs/errors.md`.
    pub code: &'static str,
    pub message: String,
    pub span: Span,
    pub labels: Vec<(Span, String)>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span,
            labels: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A warning: the program compiles and runs, but this is likely a mistake.
    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    pub fn with_label(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.labels.push((span, text.into()));
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

/// One source file: its display name, its text and where each line starts.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub src: String,
    line_starts: Vec<usize>,
    /// For each line, the offset of its first byte that is not ASCII (or its end):
    /// a column before it is a byte count, so positions on a long ASCII line (a list
    /// literal of 200,000 elements) cost no walk over the line.
    first_wide: Vec<usize>,
    /// How many lines come before this text's first in the file the user wrote (a
    /// declaration of `wo repl` kept from line 40 of an input has 39): the lines
    /// this file reports are counted from there. (The REPL padded each such text
    /// with that many newlines, and compiled them all for each input: a `.load` of
    /// 16,000 functions took 4.5 GB, helper-76.)
    lines_before: u32,
}

impl SourceFile {
    /// Whether only blanks come before byte offset `offset` on its line.
    pub fn starts_line(&self, offset: u32) -> bool {
        let offset = (offset as usize).min(self.src.len());
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1) - 1;
        self.src
            .get(self.line_starts[line]..offset)
            .is_some_and(|before| before.chars().all(|c| c == ' ' || c == '\t'))
    }

    pub fn new(name: impl Into<String>, src: impl Into<String>) -> SourceFile {
        let src = src.into();
        let mut line_starts = vec![0];
        line_starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        let bytes = src.as_bytes();
        let first_wide = line_starts
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let end = line_starts.get(i + 1).copied().unwrap_or(bytes.len());
                bytes[start..end]
                    .iter()
                    .position(|b| !b.is_ascii())
                    .map_or(end, |p| start + p)
            })
            .collect();
        SourceFile {
            name: name.into(),
            src,
            line_starts,
            first_wide,
            lines_before: 0,
        }
    }

    /// A text that stands in its file after `lines_before` lines: line 1 of `src`
    /// is reported as line `lines_before + 1`.
    pub fn after_lines(
        name: impl Into<String>,
        src: impl Into<String>,
        lines_before: u32,
    ) -> SourceFile {
        SourceFile {
            lines_before,
            ..SourceFile::new(name, src)
        }
    }

    /// How many bytes of its line come before byte offset `offset`.
    pub fn byte_in_line(&self, offset: u32) -> usize {
        let offset = (offset as usize).min(self.src.len());
        let idx = self.line_starts.partition_point(|&s| s <= offset).max(1) - 1;
        offset - self.line_starts[idx]
    }

    /// The 1-based line of a byte offset (cheaper than [`SourceFile::line_col`]).
    pub fn line(&self, offset: u32) -> u32 {
        let offset = (offset as usize).min(self.src.len());
        let idx = self.line_starts.partition_point(|&s| s <= offset);
        u32::try_from(idx.max(1))
            .unwrap_or(u32::MAX)
            .saturating_add(self.lines_before)
    }

    /// 1-based line and column (the column counts characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let offset = (offset as usize).min(self.src.len());
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line_idx];
        let wide = self.first_wide[line_idx];
        let col = if offset <= wide {
            offset - start
        } else {
            (wide - start)
                + self
                    .src
                    .get(wide..offset)
                    .map(|s| s.chars().count())
                    .unwrap_or(offset - wide)
        };
        let line = u32::try_from(line_idx + 1).unwrap_or(u32::MAX);
        (line.saturating_add(self.lines_before), col as u32 + 1)
    }

    /// The text of 1-based line `line` (as [`SourceFile::line`] counts), without its
    /// newline.
    pub fn line_text(&self, line: u32) -> &str {
        if self.lines_before > 0 && line <= self.lines_before {
            return "";
        }
        let line = line - self.lines_before;
        let idx = (line as usize).saturating_sub(1);
        let start = self.line_starts.get(idx).copied().unwrap_or(self.src.len());
        let end = self
            .line_starts
            .get(idx + 1)
            .map(|e| e - 1)
            .unwrap_or(self.src.len());
        self.src
            .get(start..end)
            .unwrap_or("")
            .trim_end_matches('\r')
    }
}

/// All files of one program.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    pub files: Vec<SourceFile>,
}

impl SourceMap {
    /// Puts `diags` in source order (file, then line), whatever stage found them.
    /// Within a line the compiler's order stands (the sort is stable): it reports a
    /// cause before the errors that follow from it.
    pub fn sort(&self, diags: &mut [Diagnostic]) {
        diags.sort_by_key(|d| {
            let line = self
                .files
                .get(d.span.file.0 as usize)
                .map_or(0, |f| f.line(d.span.lo));
            (d.span.file.0, line)
        });
    }

    pub fn add(&mut self, name: impl Into<String>, src: impl Into<String>) -> FileId {
        self.add_file(SourceFile::new(name, src))
    }

    pub fn add_file(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        FileId(self.files.len() as u32 - 1)
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn line_col(&self, span: Span) -> (u32, u32) {
        self.file(span.file).line_col(span.lo)
    }

    /// The source text a span covers, when it is within one known file.
    pub fn text(&self, span: Span) -> Option<&str> {
        let f = self.files.get(span.file.0 as usize)?;
        f.src.get(span.lo as usize..span.hi as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::SourceFile;

    /// Columns count characters: bytes up to a line's first non-ASCII one, characters
    /// after it.
    #[test]
    fn columns_count_characters_on_ascii_and_wide_lines() {
        let f = SourceFile::new("t.wo", "ab cd\naé 日x\n\nz");
        let col = |needle: &str| f.line_col(f.src.find(needle).unwrap() as u32);
        assert_eq!(col("cd"), (1, 4));
        assert_eq!(col("é"), (2, 2));
        assert_eq!(col("日"), (2, 4));
        assert_eq!(col("x"), (2, 5));
        assert_eq!(col("z"), (4, 1));
        assert_eq!(f.line_col(f.src.len() as u32), (4, 2));
        assert_eq!(f.line_col(u32::MAX), (4, 2));
    }

    /// A text that stands after other lines of its file reports its lines from there.
    #[test]
    fn lines_count_from_where_the_text_stands() {
        let f = SourceFile::after_lines(
            "t.wo",
            "  fn f() {
  x
}",
            39,
        );
        assert_eq!(f.line_col(f.src.find('x').unwrap() as u32), (41, 3));
        assert_eq!(f.line(0), 40);
        assert_eq!(f.line_text(41), "  x");
        assert_eq!(f.line_text(40), "  fn f() {");
        assert_eq!(f.line_text(39), "");
    }
}
