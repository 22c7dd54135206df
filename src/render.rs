//! Rendering for people: compiler diagnostics and uncaught-trap reports. The compiler
//! hands over data (`Diagnostic` with byte spans); this module alone decides what a
//! diagnostic looks like:
//!
//! ```text
//! app.wo:2:14: error: expected `Int`, found `Text`
//!   |
//! 2 |   let x: Int = "a"
//!   |                ^^^
//! 1 | fn main() {
//!   |    ---- declared here
//!   = note: …
//! ```
//!
//! The first line is grep- and editor-friendly (`file:line:col`), columns count
//! characters. It is rendered by hand rather than with annotate-snippets, whose layout
//! puts the position on a second line.

use std::fmt::Write as _;
use std::io::Write as _;

use unicode_width::UnicodeWidthStr;
use wo_compiler::{Diagnostic, Severity, SourceMap, Span};
use wo_vm::{StackFrame, Trap};

/// Counts of rendered diagnostics, for the summary line.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub errors: usize,
    pub warnings: usize,
}

impl Tally {
    pub fn add(&mut self, diags: &[Diagnostic]) {
        for d in diags {
            match d.severity {
                Severity::Error => self.errors += 1,
                Severity::Warning => self.warnings += 1,
            }
        }
    }

    /// `wo: 3 errors`, `wo: 1 error, 2 warnings`; `None` when there is nothing to say.
    pub fn summary(&self) -> Option<String> {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        match (self.errors, self.warnings) {
            (0, 0) => None,
            (e, 0) => Some(format!("wo: {}", plural(e, "error"))),
            (0, w) => Some(format!("wo: {}", plural(w, "warning"))),
            (e, w) => Some(format!(
                "wo: {}, {}",
                plural(e, "error"),
                plural(w, "warning")
            )),
        }
    }
}

/// Renders every diagnostic, in the order given, as one text block.
pub fn render_all(sources: &SourceMap, diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&render(sources, d));
    }
    out
}

/// Renders one diagnostic: the position line, the primary snippet with carets, each
/// label as a snippet with dashes and its text, then the notes.
pub fn render(sources: &SourceMap, d: &Diagnostic) -> String {
    let severity = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let mut out = String::new();
    let Some(file) = sources.files.get(d.span.file.0 as usize) else {
        // A span into no known file: still say what is wrong.
        let _ = writeln!(out, "{severity}: {}", d.message);
        render_notes(&mut out, 1, &d.notes);
        return out;
    };
    let (line, col) = file.line_col(d.span.lo);
    let _ = writeln!(out, "{}:{line}:{col}: {severity}: {}", file.name, d.message);

    // The gutter is as wide as the largest line number shown.
    let mut max_line = line;
    for (span, _) in &d.labels {
        if let Some(f) = sources.files.get(span.file.0 as usize) {
            max_line = max_line.max(f.line_col(span.lo).0);
        }
    }
    let width = max_line.to_string().len();
    let _ = writeln!(out, "{:width$} |", "");
    snippet(&mut out, sources, d.span, '^', "", width);
    for (span, text) in &d.labels {
        let Some(f) = sources.files.get(span.file.0 as usize) else {
            let _ = writeln!(out, "{:width$} = note: {text}", "");
            continue;
        };
        if span.file != d.span.file {
            let (l, c) = f.line_col(span.lo);
            let _ = writeln!(out, "{:width$} --> {}:{l}:{c}", "", f.name);
        }
        snippet(&mut out, sources, *span, '-', text, width);
    }
    render_notes(&mut out, width, &d.notes);
    out
}

fn render_notes(out: &mut String, width: usize, notes: &[String]) {
    for note in notes {
        let _ = writeln!(out, "{:width$} = note: {note}", "");
    }
}

/// The most characters of one source line a snippet shows (LANGUAGE.md §12: a line
/// longer than 200 characters is shown as a window around the span).
const MAX_SHOWN: usize = 200;
/// How many characters before the marker a cut line keeps.
const CONTEXT_BEFORE: usize = 60;

/// One source line with a marker line under `span` (clipped to the first line of a
/// span that covers several; at least one marker for an empty span).
fn snippet(
    out: &mut String,
    sources: &SourceMap,
    span: Span,
    mark: char,
    text: &str,
    width: usize,
) {
    let file = sources.file(span.file);
    let (line, col) = file.line_col(span.lo);
    let (end_line, end_col) = file.line_col(span.hi.max(span.lo));
    let whole = file.line_text(line);
    let span_chars = if end_line == line {
        end_col.saturating_sub(col) as usize
    } else {
        usize::MAX
    };
    // On a line of many bytes, only those around the marker are looked at (enough
    // for the window below, whatever the characters' sizes): each of 80,000
    // diagnostics on a line of 1.2 MB walked the whole line (helper-76: 11.8 s).
    let (src, start, cut_before, cut_after) = if whole.len() > 8 * MAX_SHOWN {
        let at = file.byte_in_line(span.lo).min(whole.len());
        let mut a = at.saturating_sub(4 * MAX_SHOWN);
        while !whole.is_char_boundary(a) {
            a -= 1;
        }
        let mut b = (at + 4 * MAX_SHOWN).min(whole.len());
        while !whole.is_char_boundary(b) {
            b += 1;
        }
        let start = whole.get(a..at).map_or(0, |s| s.chars().count());
        (&whole[a..b], start, a > 0, b < whole.len())
    } else {
        (whole, (col as usize).saturating_sub(1), false, false)
    };
    let n_chars = src.chars().count();
    let end = start.saturating_add(span_chars).min(n_chars.max(start));
    // A long line is shown as a window around the marker, `…` marking what is cut,
    // so a diagnostic never reprints a whole 16 KB line (issue 13 H3).
    let (first, last) = if n_chars <= MAX_SHOWN {
        (0, n_chars)
    } else {
        let first = start
            .saturating_sub(CONTEXT_BEFORE)
            .min(n_chars - MAX_SHOWN);
        (first, first + MAX_SHOWN)
    };
    let shown: String = src
        .chars()
        .skip(first)
        .take(last - first)
        .map(visible)
        .collect();
    let (head, tail) = (
        if first > 0 || cut_before { "…" } else { "" },
        if last < n_chars || cut_after {
            "…"
        } else {
            ""
        },
    );
    // Columns in a terminal, not characters: a wide character (CJK, most emoji)
    // takes two, a combining mark none.
    // (Measured on runs of characters, so an emoji sequence, `❤️` or one joined with
    // U+200D, counts as the terminal shows it.)
    let marked_end = end.min(last.max(start + 1));
    let span_text: String = src
        .chars()
        .skip(start)
        .take(marked_end.saturating_sub(start))
        .map(|c| if c == '\t' { ' ' } else { visible(c) })
        .collect();
    let n_marks = UnicodeWidthStr::width(span_text.as_str()).max(1);
    // Reproduce tabs in the padding so the markers line up in any tab width.
    let mut pad = String::from(if head.is_empty() { "" } else { " " });
    let before: String = src
        .chars()
        .skip(first)
        .chain(std::iter::repeat(' '))
        .take(start - first)
        .map(visible)
        .collect();
    for (i, run) in before.split('\t').enumerate() {
        if i > 0 {
            pad.push('\t');
        }
        pad.extend(std::iter::repeat_n(' ', UnicodeWidthStr::width(run)));
    }
    let marks = mark.to_string().repeat(n_marks);
    let _ = writeln!(out, "{line:>width$} | {head}{shown}{tail}");
    let sep = if text.is_empty() { "" } else { " " };
    let _ = writeln!(out, "{:width$} | {pad}{marks}{sep}{text}", "");
}

/// A control character of a source line as its picture (`\r` as `␍`), and one the
/// terminal would act on or that reorders text (C1 controls, bidirectional overrides
/// and isolates) as `�`, so that showing the line cannot move the cursor or hide
/// what it says; a tab stays a tab.
fn visible(c: char) -> char {
    match c {
        '\t' => c,
        '\0'..='\x1f' => char::from_u32(0x2400 + c as u32).unwrap_or('?'),
        '\x7f' => '\u{2421}',
        '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => '\u{fffd}',
        _ => c,
    }
}

/// Prints an uncaught trap on stderr: `trap DIV0: division by zero`, then one
/// `  at function (file:line:col)` line per frame, innermost first. Runs of identical
/// frames (deep recursion) are folded into one line and a count, and a very long stack
/// keeps only its two ends, so a `STACK` trap does not print 100 000 lines.
pub fn report_trap(trap: &Trap, stack: &[StackFrame]) {
    // A durability failure's report is an uncaught `IO` trap's as any other's (§10:
    // the kind, the message, the position), its message beginning with `durability
    // failure: ` (helper-89: it began `wo: durability failure:`, so a search of
    // stderr for `trap IO` missed it).
    let mut text = format!("trap {}: {}\n", trap.kind.name(), trap.message);
    for line in stack_lines(stack) {
        text.push_str(&line);
        text.push('\n');
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// At most this many frame lines are printed; the innermost ones first, then the
/// outermost ones.
const MAX_FRAME_LINES: usize = 40;

/// The lines of a trap's stack, shortened: a run of one frame once, with how many
/// times it repeats, and at most `MAX_FRAME_LINES` lines (`wo run`, `wo test`).
pub(crate) fn stack_lines(stack: &[StackFrame]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut i = 0;
    while i < stack.len() {
        let frame = &stack[i];
        let mut n_same = 1;
        while stack.get(i + n_same) == Some(frame) {
            n_same += 1;
        }
        lines.push(match frame.left_out() {
            Some(_) => format!("  {}", frame.function),
            None => format!(
                "  at {} ({}:{}:{})",
                frame.function, frame.file, frame.line, frame.col
            ),
        });
        if n_same > 1 {
            let times = if n_same == 2 { "time" } else { "times" };
            lines.push(format!("  … the frame above {} more {times}", n_same - 1));
        }
        i += n_same;
    }
    if lines.len() > MAX_FRAME_LINES {
        let keep_tail = MAX_FRAME_LINES / 4;
        let keep_head = MAX_FRAME_LINES - keep_tail;
        let n_omitted = lines.len() - keep_head - keep_tail;
        let tail = lines.split_off(lines.len() - keep_tail);
        lines.truncate(keep_head);
        lines.push(format!("  … {n_omitted} more lines"));
        lines.extend(tail);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use wo_compiler::FileId;

    fn map() -> SourceMap {
        let mut m = SourceMap::default();
        m.add("app.wo", "fn main() {\n\tlet x: Int = \"é\"\n}\n");
        m
    }

    #[test]
    fn carets_under_the_span_in_characters() {
        let m = map();
        // The span of `"é"`: byte 26..30 (é is two bytes).
        let lo = m.files[0].src.find('"').unwrap();
        let d = Diagnostic::error(
            "type",
            Span::new(FileId(0), lo, lo + 4),
            "expected `Int`, found `Text`",
        )
        .with_label(Span::new(FileId(0), 3, 7), "in this function")
        .with_note("write `parse_int(…)` to convert");
        let text = render(&m, &d);
        let expected = "app.wo:2:15: error: expected `Int`, found `Text`\n  |\n2 | \tlet x: Int = \"é\"\n  | \t             ^^^\n1 | fn main() {\n  |    ---- in this function\n  = note: write `parse_int(…)` to convert\n";
        assert_eq!(text, expected);
    }

    /// Wide characters take two columns and a combining mark none, before the span
    /// and in it (helper-57: the carets landed 44 columns left of the span).
    #[test]
    fn carets_count_terminal_columns() {
        let mut m = SourceMap::default();
        m.add(
            "w.wo",
            "fn main() {\n  let s = \"日本🙂e\u{301}\" .. 1\n}\n",
        );
        let src = &m.files[0].src;
        let lo = src.find('"').unwrap();
        let hi = src.rfind('"').unwrap() + 1;
        let d = Diagnostic::error("type", Span::new(FileId(0), lo, hi), "wide");
        let text = render(&m, &d);
        assert!(text.contains("\n  |           ^^^^^^^^^\n"), "{text}");
        let at = src.find("..").unwrap();
        let d = Diagnostic::error("type", Span::new(FileId(0), at, at + 2), "after");
        let text = render(&m, &d);
        assert!(text.contains("\n  |                     ^^\n"), "{text}");
    }

    #[test]
    fn empty_span_gets_one_caret() {
        let m = map();
        let end = m.files[0].src.len();
        let d = Diagnostic::error(
            "syntax",
            Span::new(FileId(0), end, end),
            "unexpected end of file",
        );
        let text = render(&m, &d);
        assert!(
            text.starts_with("app.wo:4:1: error: unexpected end of file\n"),
            "{text}"
        );
        assert!(text.ends_with("  | ^\n"), "{text}");
    }

    #[test]
    fn summary_counts() {
        let mut t = Tally::default();
        assert_eq!(t.summary(), None);
        t.errors = 1;
        assert_eq!(t.summary().as_deref(), Some("wo: 1 error"));
        t.errors = 3;
        t.warnings = 1;
        assert_eq!(t.summary().as_deref(), Some("wo: 3 errors, 1 warning"));
    }

    fn frame(function: &str, line: u32) -> StackFrame {
        StackFrame {
            function: function.into(),
            file: "app.wo".into(),
            line,
            col: 3,
        }
    }

    #[test]
    fn repeated_frames_are_folded() {
        let mut stack = vec![frame("down", 2); 1000];
        stack.push(frame("main", 6));
        assert_eq!(
            stack_lines(&stack),
            [
                "  at down (app.wo:2:3)",
                "  … the frame above 999 more times",
                "  at main (app.wo:6:3)",
            ]
        );
    }

    #[test]
    fn long_stacks_keep_both_ends() {
        // Mutual recursion: no two neighbours are equal.
        let stack: Vec<StackFrame> = (0..100)
            .map(|i| frame(if i % 2 == 0 { "even" } else { "odd" }, i))
            .collect();
        let lines = stack_lines(&stack);
        assert_eq!(lines.len(), MAX_FRAME_LINES + 1);
        assert_eq!(lines[0], "  at even (app.wo:0:3)");
        assert_eq!(lines[30], "  … 60 more lines");
        assert_eq!(lines[MAX_FRAME_LINES], "  at odd (app.wo:99:3)");
    }
}
