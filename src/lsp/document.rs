//! One open document: its text, where its lines start, and the conversions between the
//! protocol's positions (line and column, the column counted in UTF-16 code units or in
//! bytes, as negotiated) and the byte offsets the compiler's spans use. Edits are
//! applied in place (incremental sync), each one rebuilding the line index.

use lsp_types::{Position, Range, TextDocumentContentChangeEvent};

/// How the client counts columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

#[derive(Debug, Clone)]
pub struct Document {
    pub text: String,
    pub version: i32,
    line_starts: Vec<usize>,
}

impl Document {
    pub fn new(text: String, version: i32) -> Document {
        let mut d = Document {
            text,
            version,
            line_starts: Vec::new(),
        };
        d.index();
        d
    }

    fn index(&mut self) {
        self.line_starts.clear();
        self.line_starts.push(0);
        let nl = self.text.match_indices('\n').map(|(i, _)| i + 1);
        self.line_starts.extend(nl);
    }

    /// Applies one change: a range replaced, or the whole text when there is no range.
    pub fn apply(&mut self, change: TextDocumentContentChangeEvent, enc: Encoding) {
        match change.range {
            Some(range) => {
                let lo = self.offset(range.start, enc);
                let hi = self.offset(range.end, enc).max(lo);
                self.text.replace_range(lo..hi, &change.text);
            }
            None => self.text = change.text,
        }
        self.index();
    }

    /// The byte offset of a position; past the end of a line is its end, past the last
    /// line the end of the text.
    pub fn offset(&self, pos: Position, enc: Encoding) -> usize {
        let Some(&start) = self.line_starts.get(pos.line as usize) else {
            return self.text.len();
        };
        let end = self
            .line_starts
            .get(pos.line as usize + 1)
            .map_or(self.text.len(), |e| e - 1);
        let line = &self.text[start..end];
        let want = pos.character as usize;
        let mut units = 0;
        for (i, c) in line.char_indices() {
            if units >= want {
                return start + i;
            }
            units += match enc {
                Encoding::Utf8 => c.len_utf8(),
                Encoding::Utf16 => c.len_utf16(),
            };
        }
        end
    }

    /// The position of a byte offset (clamped to the text, and to a character boundary).
    pub fn position(&self, offset: usize, enc: Encoding) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let before = &self.text[start..offset];
        let character = match enc {
            Encoding::Utf8 => before.len(),
            Encoding::Utf16 => before.chars().map(char::len_utf16).sum(),
        };
        Position {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            character: u32::try_from(character).unwrap_or(u32::MAX),
        }
    }

    pub fn range(&self, lo: usize, hi: usize, enc: Encoding) -> Range {
        Range {
            start: self.position(lo, enc),
            end: self.position(hi, enc),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        range: Option<((u32, u32), (u32, u32))>,
        text: &str,
    ) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: range.map(|((l0, c0), (l1, c1))| Range {
                start: Position::new(l0, c0),
                end: Position::new(l1, c1),
            }),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn positions_count_utf16_units_or_bytes() {
        let d = Document::new("let é = \"😀x\"\nfn f()".to_string(), 1);
        // `x` is after `let é = "` (9 chars, 10 bytes) and an emoji (2 units, 4 bytes).
        let x = d.text.find('x').expect("x");
        assert_eq!(d.position(x, Encoding::Utf16), Position::new(0, 11));
        assert_eq!(d.position(x, Encoding::Utf8), Position::new(0, 14));
        assert_eq!(d.offset(Position::new(0, 11), Encoding::Utf16), x);
        assert_eq!(d.offset(Position::new(0, 14), Encoding::Utf8), x);
        assert_eq!(
            d.offset(Position::new(1, 3), Encoding::Utf16),
            d.text.find('f').expect("f") + 3
        );
        // Past the end of a line, and past the last line.
        assert_eq!(
            d.offset(Position::new(0, 99), Encoding::Utf16),
            d.text.find('\n').expect("nl")
        );
        assert_eq!(d.offset(Position::new(9, 0), Encoding::Utf16), d.text.len());
    }

    #[test]
    fn incremental_edits_apply_in_order() {
        let mut d = Document::new("fn main() {\n  print(1)\n}\n".to_string(), 1);
        d.apply(change(Some(((1, 8), (1, 9))), "42"), Encoding::Utf16);
        d.apply(
            change(Some(((1, 2), (1, 2))), "let x = 1\n  "),
            Encoding::Utf16,
        );
        assert_eq!(d.text, "fn main() {\n  let x = 1\n  print(42)\n}\n");
        assert_eq!(
            d.position(d.text.find("print").expect("print"), Encoding::Utf16),
            Position::new(2, 2)
        );
        d.apply(change(None, "fn main() {}"), Encoding::Utf16);
        assert_eq!(d.text, "fn main() {}");
    }
}
