//! The formatter behind `wo fmt` (and the language server's formatting): one
//! canonical layout for any program that parses. It works on the token stream, not
//! on the syntax tree, so nothing the tree forgets is lost: literals keep their
//! spelling (`0xFF`, `1_000`, escapes), and the comments the lexer skips are
//! collected from the gaps between tokens and put back where they were.
//!
//! The layout (docs/tools.md): two spaces per level of `{ ( [`; a continuation
//! line of a statement (a query's `where`, a line ending in an operator) one level
//! deeper; one space around binary operators, after `,` and `:`, none inside
//! `( )` and `[ ]` and map literals, one inside a block or constructor written on
//! one line; `} else {` and `} catch (e) {` joined; no `;` (a line per statement);
//! no trailing comma on one line (a list split over lines keeps its own, which the
//! language requires); at most one blank line, none after `{` or before `}`; the
//! author's line breaks are kept otherwise. Blocks that span lines open and close
//! on lines of their own.
//!
//! Safety net: the output must parse, and hold the same tokens as the input (up to
//! `;` and a trailing comma); otherwise [`format`] returns a diagnostic rather than a
//! changed program.

use crate::ast::{Block, Item, Module, StmtKind};
use crate::diag::{Diagnostic, FileId, SourceMap, Span};
use crate::lexer::{tokenize, Mode, Tok};
use crate::parser::parse;

/// Spaces per indentation level.
const INDENT: &str = "  ";

/// Formats one file. A leading byte order mark is dropped (as the loader does);
/// the spans of the diagnostics returned for a file that does not parse count from
/// the text after it.
pub fn format(source: &str) -> Result<String, Vec<Diagnostic>> {
    let src = source.strip_prefix('\u{feff}').unwrap_or(source);
    let (module, diags) = crate::parse_file(src, FileId(0));
    if !diags.is_empty() {
        return Err(diags);
    }
    let out = layout(src, &module);
    verify(src, &out)?;
    Ok(out)
}

/// What a text compiles to as a program of one file, where things stand aside: the
/// image with its source positions cleared, as the bytes of its `.wob` (so a Float
/// compares bit for bit: a NaN column default equals itself), or the diagnostics (code and message,
/// the numbers after `line ` in a message left out, since a message may name another
/// statement's line, which moves when a block is laid out over more lines). A text
/// and its formatted version must have the same meaning.
#[derive(Debug, PartialEq)]
pub enum Meaning {
    Image(Vec<u8>),
    Diagnostics(Vec<String>),
}

/// The [`Meaning`] of `source` compiled alone under the file name `name`.
pub fn meaning(name: &str, source: &str) -> Meaning {
    let mut sources = SourceMap::default();
    sources.add(name, source.strip_prefix('\u{feff}').unwrap_or(source));
    match crate::compile(&sources) {
        Ok(mut image) => {
            for f in &mut image.functions {
                f.pos.clear();
            }
            Meaning::Image(wo_bytecode::format::write_image(&image))
        }
        Err(diags) => Meaning::Diagnostics(
            diags
                .iter()
                .map(|d| format!("{}: {}", d.code, without_line_numbers(&d.message)))
                .collect(),
        ),
    }
}

/// `message` with each number after `line ` replaced by `N`.
fn without_line_numbers(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (head, tail) = rest.split_at(at + "line ".len());
        out.push_str(head);
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push('N');
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// [`format`], then the second safety net of `wo fmt` and the language server's
/// formatting: the formatted text, compiled alone as `name`, has the original's
/// [`Meaning`] (the same image or the same diagnostics). Otherwise the text is
/// refused with an `internal` diagnostic, as [`format`] refuses a change of tokens.
/// Compiling twice costs little beside the author's time a changed program would.
pub fn format_checked(name: &str, source: &str) -> Result<String, Vec<Diagnostic>> {
    let out = format(source)?;
    same_meaning(name, source, out)
}

/// `out` when it means what `source` does (or is the same text).
fn same_meaning(name: &str, source: &str, out: String) -> Result<String, Vec<Diagnostic>> {
    if out != source && meaning(name, source) != meaning(name, &out) {
        return Err(refusal(String::from(
            ": the formatted text would compile differently",
        )));
    }
    Ok(out)
}

/// A token as written: its kind, its text and where it is.
struct Token<'a> {
    tok: Tok,
    text: &'a str,
    lo: usize,
    hi: usize,
    /// Whether a `;`, written or automatic, comes right before it.
    after_semi: bool,
}

/// What lies between two tokens, besides spaces.
#[derive(Clone, Copy)]
enum Ev<'a> {
    Newline,
    /// A `--` comment, without the spaces after it.
    Comment(&'a str),
}

/// The tokens of `src` as written (no automatic `;`).
fn tokens(src: &str) -> Vec<Token<'_>> {
    let lexed = tokenize(src, FileId(0), 0, 0, Mode::File);
    let mut out = Vec::with_capacity(lexed.toks.len());
    let mut after_semi = false;
    for (lo, tok, hi) in lexed.toks {
        let is_semi = matches!(tok, Tok::Semi);
        if !(is_semi && lo == hi) {
            out.push(Token {
                tok,
                text: src.get(lo..hi).unwrap_or(""),
                lo,
                hi,
                after_semi,
            });
        }
        after_semi = is_semi;
    }
    out
}

/// The newlines and comments of a gap between tokens.
fn gap_events(gap: &str) -> Vec<Ev<'_>> {
    let mut evs = Vec::new();
    let mut rest = gap;
    while let Some(c) = rest.chars().next() {
        if c == '\n' {
            evs.push(Ev::Newline);
            rest = &rest[1..];
        } else if rest.starts_with("--") {
            let end = rest.find('\n').unwrap_or(rest.len());
            evs.push(Ev::Comment(rest[..end].trim_end()));
            rest = &rest[end..];
        } else {
            rest = &rest[c.len_utf8()..];
        }
    }
    evs
}

fn is_open(t: &Tok) -> bool {
    matches!(t, Tok::LParen | Tok::LBracket | Tok::LBrace)
}

fn is_close(t: &Tok) -> bool {
    matches!(t, Tok::RParen | Tok::RBracket | Tok::RBrace)
}

/// A token after which a binary operator can follow (the end of an operand).
fn ends_operand(t: &Tok) -> bool {
    matches!(
        t,
        Tok::LId(_)
            | Tok::UId(_)
            | Tok::Int(_)
            | Tok::Float(_)
            | Tok::Text(_)
            | Tok::RParen
            | Tok::RBracket
            | Tok::RBrace
            | Tok::Nil
            | Tok::True
            | Tok::False
            | Tok::SelfKw
    )
}

/// Whether a statement may end with this token (the lexer's §2 rule).
fn can_end_stmt(t: &Tok) -> bool {
    ends_operand(t) || matches!(t, Tok::Return | Tok::Break | Tok::Continue)
}

/// Whether a line starting with this token continues the previous one (§2).
fn continues_line(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Where
            | Tok::Order
            | Tok::Skip
            | Tok::Take
            | Tok::Select
            | Tok::Asc
            | Tok::Desc
            | Tok::Else
            | Tok::Catch
    )
}

/// The three kinds of `{`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Brace {
    /// A block of statements or a class body.
    Block,
    /// `Point { x: 1 }`, `insert T { … }`.
    Construct,
    /// `{"a": 1}`.
    Map,
}

/// The byte offsets of every `{` that opens a block or a class body.
fn block_braces(module: &Module, toks: &[Token]) -> std::collections::HashSet<usize> {
    fn block(b: &Block, out: &mut std::collections::HashSet<usize>) {
        out.insert(b.span.lo as usize);
        for s in &b.stmts {
            match &s.kind {
                StmtKind::If { then, els, .. } => {
                    block(then, out);
                    if let Some(e) = els {
                        block(e, out);
                    }
                }
                StmtKind::While { body, .. } | StmtKind::For { body, .. } => block(body, out),
                StmtKind::Transaction(b) => block(b, out),
                StmtKind::Try { body, handler, .. } => {
                    block(body, out);
                    block(handler, out);
                }
                _ => {}
            }
        }
    }
    let mut out = std::collections::HashSet::new();
    for item in &module.items {
        match item {
            Item::Fn(f) => block(&f.body, &mut out),
            Item::Class(c) => {
                let after_name = c.name.span.hi as usize;
                let idx = toks.partition_point(|t| t.lo < after_name);
                if let Some(t) = toks.get(idx) {
                    out.insert(t.lo);
                }
                for m in &c.methods {
                    block(&m.body, &mut out);
                }
            }
            Item::Use(_) | Item::Const { .. } => {}
        }
    }
    out
}

/// One level of bracket nesting while laying out.
struct Frame {
    /// The indentation of lines inside.
    indent: usize,
    /// The base of the line it was opened on (see `line_base`).
    open_base: usize,
    /// Whether statements live here (a block, a class body, the file), where a
    /// line that continues a statement is indented one level more.
    stmts: bool,
    /// A class body: members need no separator, so a line break after a type is
    /// not a continuation.
    class: bool,
}

/// The output, a line at a time.
struct Out {
    text: String,
    line: String,
    indent: usize,
    /// Lines written so far (blank ones too).
    n_lines: usize,
    /// Whether the last written line ends with an opening bracket (no blank line
    /// may follow it).
    after_open: bool,
}

impl Out {
    fn finish_line(&mut self) {
        if self.line.is_empty() {
            return;
        }
        for _ in 0..self.indent {
            self.text.push_str(INDENT);
        }
        self.text.push_str(self.line.trim_end());
        self.text.push('\n');
        self.after_open = self.line.ends_with(['{', '(', '[']);
        self.line.clear();
        self.n_lines += 1;
    }

    fn blank(&mut self) {
        if self.n_lines > 0 && !self.after_open && !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
    }

    fn start(&mut self, indent: usize) {
        self.finish_line();
        self.indent = indent;
    }
}

/// Lays out a file that parsed.
fn layout(src: &str, module: &Module) -> String {
    let toks = tokens(src);
    let n = toks.len();
    // The gaps: gaps[i] lies before toks[i]; gaps[n] after the last token.
    let mut gaps: Vec<Vec<Ev>> = Vec::with_capacity(n + 1);
    let mut prev_hi = 0;
    for t in &toks {
        gaps.push(gap_events(src.get(prev_hi..t.lo).unwrap_or("")));
        prev_hi = t.hi;
    }
    gaps.push(gap_events(src.get(prev_hi..).unwrap_or("")));

    // Which tokens are written: no `;` at all, no `,` directly before a closing
    // bracket on the same line.
    let keep: Vec<bool> = (0..n)
        .map(|i| match toks[i].tok {
            Tok::Semi => false,
            Tok::Comma => !(i + 1 < n && is_close(&toks[i + 1].tok) && gaps[i + 1].is_empty()),
            _ => true,
        })
        .collect();

    // Matching brackets.
    let mut partner = vec![usize::MAX; n];
    let mut stack = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if is_open(&t.tok) {
            stack.push(i);
        } else if is_close(&t.tok) {
            if let Some(o) = stack.pop() {
                partner[o] = i;
                partner[i] = o;
            }
        }
    }
    let blocks = block_braces(module, &toks);
    let brace_kind = |i: usize| -> Brace {
        if blocks.contains(&toks[i].lo) {
            Brace::Block
        } else if i > 0 && matches!(toks[i - 1].tok, Tok::UId(_)) && !toks[i].after_semi {
            // `Point {`, but not a statement that starts with `{` after one that ends
            // in a class name (`let s = Stack` then `{"a": 1}` on the next line):
            // a `;`, written or automatic, lies between them.
            Brace::Construct
        } else {
            Brace::Map
        }
    };

    // The events before each written token (those of dropped tokens merged in), and
    // whether a `;` was dropped there.
    let mut evs: Vec<Vec<Ev>> = vec![Vec::new(); n];
    let mut semi_before = vec![false; n];
    let mut prev_kept: Vec<Option<usize>> = vec![None; n];
    {
        let mut acc: Vec<Ev> = Vec::new();
        let mut semi = false;
        let mut last: Option<usize> = None;
        for i in 0..n {
            acc.extend(gaps[i].iter().copied());
            if keep[i] {
                evs[i] = std::mem::take(&mut acc);
                semi_before[i] = semi;
                semi = false;
                prev_kept[i] = last;
                last = Some(i);
            } else if matches!(toks[i].tok, Tok::Semi) {
                semi = true;
                // A `;` alone on its line goes with its line (helper-90: the line
                // stayed, blank). Only alone: `-- c⏎;fn main()` kept `fn` on the
                // comment's line, inside the comment (the fuzz run of December 5).
                let alone = gaps
                    .get(i + 1)
                    .is_none_or(|g| matches!(g.first(), None | Some(Ev::Newline)));
                let after_comment = acc.len() >= 2 && matches!(acc[acc.len() - 2], Ev::Comment(_));
                if alone && !after_comment && matches!(acc.last(), Some(Ev::Newline)) {
                    acc.pop();
                }
            }
        }
    }
    let has_nl = |i: usize| evs[i].iter().any(|e| matches!(e, Ev::Newline));
    let has_comment = |i: usize| evs[i].iter().any(|e| matches!(e, Ev::Comment(_)));

    // Line breaks before each written token: the author's, one where a `;` joined
    // two statements, none between `}` and `else`/`catch`.
    let mut brk = vec![false; n];
    for i in (0..n).filter(|&i| keep[i]) {
        let p = prev_kept[i];
        brk[i] = has_nl(i);
        if semi_before[i] {
            let after_open = p.is_some_and(|p| is_open(&toks[p].tok));
            if p.is_some() && !after_open && !matches!(toks[i].tok, Tok::RBrace) {
                brk[i] = true;
            }
        }
        if matches!(toks[i].tok, Tok::Else | Tok::Catch)
            && p.is_some_and(|p| matches!(toks[p].tok, Tok::RBrace))
            && !has_comment(i)
        {
            brk[i] = false;
        }
        // `} else` and its `{` on the next line (the parser takes it): a block opens
        // at the end of its first line.
        if matches!(toks[i].tok, Tok::LBrace)
            && p.is_some_and(|p| matches!(toks[p].tok, Tok::Else))
            && !has_comment(i)
        {
            brk[i] = false;
        }
    }
    // A block that spans lines opens and closes on lines of its own. Empty brackets
    // of any kind are `{}`, `[]`, `()` (unless a comment lies inside). Prefix counts
    // of breaks answer "a break inside?" per block.
    let mut n_brk = vec![0usize; n + 1];
    for i in 0..n {
        n_brk[i + 1] = n_brk[i] + usize::from(brk[i] && keep[i]);
    }
    for o in 0..n {
        if !is_open(&toks[o].tok) || partner[o] == usize::MAX {
            continue;
        }
        let c = partner[o];
        if prev_kept[c] == Some(o) {
            brk[c] = has_comment(c);
            continue;
        }
        if !matches!(toks[o].tok, Tok::LBrace) || brace_kind(o) != Brace::Block {
            continue;
        }
        if n_brk[c + 1] - n_brk[o + 1] > 0 {
            if let Some(first) = (o + 1..c).find(|&i| keep[i]) {
                brk[first] = true;
            }
            brk[c] = true;
        }
    }

    let mut out = Out {
        text: String::with_capacity(src.len() + src.len() / 8),
        line: String::new(),
        indent: 0,
        n_lines: 0,
        after_open: false,
    };
    let mut frames = vec![Frame {
        indent: 0,
        open_base: 0,
        stmts: true,
        class: false,
    }];
    // The indentation brackets opened on the current line build on: the line's own,
    // or less once a bracket opened on an earlier line closes on it, so the body of
    // `fn f(a: Int,\n  b: Int) {` is one level in, not two.
    let mut line_base = 0usize;
    // Open generic `<` of `map<…>` / `task<…>`.
    let mut n_generic = 0usize;
    for i in (0..n).filter(|&i| keep[i]) {
        let t = &toks[i];
        let p = prev_kept[i];
        // The indentation of a line starting with this token, and of comments on
        // their own lines before it.
        let (tok_indent, comment_indent) = {
            let top = frames.last().expect("the file's frame is never popped");
            if is_close(&t.tok) {
                (top.indent.saturating_sub(1), top.indent)
            } else {
                let boundary = match p {
                    None => true,
                    Some(p) => {
                        let pt = &toks[p].tok;
                        // A `,` at statement level (between `order by` keys, or
                        // `for k, v`) continues the statement; inside brackets it
                        // separates items.
                        is_open(pt)
                            || (matches!(pt, Tok::Comma) && !top.stmts)
                            || semi_before[i]
                            || (can_end_stmt(pt) && !continues_line(&t.tok))
                            || (top.class && matches!(pt, Tok::Gt | Tok::Task))
                            || (matches!(pt, Tok::RBrace)
                                && matches!(t.tok, Tok::Else | Tok::Catch))
                            // `} else -- a comment⏎ if c {`: the `if` is written as
                            // `else if` is, not as a continuation (helper-90: it went
                            // one level in while its block stayed).
                            || (matches!(pt, Tok::Else) && matches!(t.tok, Tok::If))
                            // `} else -- a comment⏎ {`: the `{` where the `}` is
                            // (helper-101: it went one level in as a continuation).
                            || (matches!(pt, Tok::Else) && matches!(t.tok, Tok::LBrace))
                    }
                };
                let cont = top.stmts && !boundary;
                let ind = top.indent + usize::from(cont);
                (ind, ind)
            }
        };

        // Comments and blank lines before the token.
        let mut n_nl = 0usize;
        for ev in &evs[i] {
            match ev {
                Ev::Newline => n_nl += 1,
                Ev::Comment(c) => {
                    if n_nl == 0 && out.n_lines + usize::from(!out.line.is_empty()) > 0 {
                        // After code on the same line.
                        if !out.line.is_empty() {
                            out.line.push(' ');
                        }
                        out.line.push_str(c);
                    } else {
                        out.finish_line();
                        if n_nl >= 2 {
                            out.blank();
                        }
                        out.start(comment_indent);
                        out.line.push_str(c);
                    }
                    n_nl = 0;
                }
            }
        }

        if out.line.is_empty() && out.n_lines == 0 {
            out.start(tok_indent);
            line_base = tok_indent;
        } else if brk[i] {
            out.finish_line();
            if n_nl >= 2 && !is_close(&t.tok) {
                out.blank();
            }
            out.start(tok_indent);
            line_base = tok_indent;
        } else if let Some(p) = p {
            if space_between(&toks, p, i, n_generic > 0, &brace_kind, &partner) {
                out.line.push(' ');
            }
        }
        out.line.push_str(t.text);

        // Nesting after the token.
        match &t.tok {
            Tok::Lt if p.is_some_and(|p| matches!(toks[p].tok, Tok::Map | Tok::Task)) => {
                n_generic += 1;
            }
            Tok::Gt if n_generic > 0 => n_generic -= 1,
            tok if is_open(tok) => {
                let is_block = matches!(tok, Tok::LBrace) && brace_kind(i) == Brace::Block;
                let class = is_block
                    && i >= 2
                    && matches!(toks[i - 2].tok, Tok::Class)
                    && matches!(toks[i - 1].tok, Tok::UId(_));
                // A block opened where statements live is one level in from the
                // statement, even when its header went on over continuation lines
                // (`if a and\n  b {`): its body and `}` line up with the keyword.
                let top = frames.last().expect("the file's frame is never popped");
                let base = if is_block && top.stmts {
                    top.indent
                } else {
                    line_base
                };
                frames.push(Frame {
                    indent: base + 1,
                    open_base: base,
                    stmts: is_block,
                    class,
                });
            }
            tok if is_close(tok) && frames.len() > 1 => {
                if let Some(f) = frames.pop() {
                    line_base = line_base.min(f.open_base);
                }
            }
            _ => {}
        }
    }
    // Comments after the last token.
    let mut n_nl = 0usize;
    for ev in &gaps[n] {
        match ev {
            Ev::Newline => n_nl += 1,
            Ev::Comment(c) => {
                if n_nl == 0 && !out.line.is_empty() {
                    out.line.push(' ');
                    out.line.push_str(c);
                } else {
                    out.finish_line();
                    if n_nl >= 2 {
                        out.blank();
                    }
                    out.start(0);
                    out.line.push_str(c);
                }
                n_nl = 0;
            }
        }
    }
    out.finish_line();
    out.text
}

/// Whether one space separates written tokens `p` and `i` on one line.
fn space_between(
    toks: &[Token],
    p: usize,
    i: usize,
    in_generic: bool,
    brace_kind: &dyn Fn(usize) -> Brace,
    partner: &[usize],
) -> bool {
    let (a, b) = (&toks[p].tok, &toks[i].tok);
    // The `)` of `catch (e)`, which ends no operand: `catch (e) -1`, `catch (e) (4)`
    // and `catch (e) [0]` are no subtraction, call or index.
    let catch_close = |j: usize| {
        matches!(toks[j].tok, Tok::RParen)
            && partner[j] != usize::MAX
            && partner[j] > 0
            && matches!(toks[partner[j] - 1].tok, Tok::Catch)
    };
    // A unary `-`: one that starts a statement or follows no operand.
    let unary_minus = |k: usize| {
        if !matches!(toks[k].tok, Tok::Minus) {
            return false;
        }
        if toks[k].after_semi {
            return true;
        }
        let Some(j) = k.checked_sub(1) else {
            return true;
        };
        !ends_operand(&toks[j].tok) || catch_close(j)
    };
    match b {
        Tok::RParen | Tok::RBracket | Tok::Comma | Tok::Colon | Tok::Dot | Tok::Semi => {
            return false
        }
        Tok::RBrace => {
            let o = partner[i];
            return !(o == p || (o != usize::MAX && brace_kind(o) == Brace::Map));
        }
        Tok::Gt if in_generic => return false,
        Tok::Lt if matches!(a, Tok::Map | Tok::Task) => return false,
        _ => {}
    }
    match a {
        Tok::LParen | Tok::LBracket | Tok::Dot | Tok::At | Tok::Question => return false,
        Tok::Lt if in_generic => return false,
        Tok::LBrace => return brace_kind(p) != Brace::Map,
        Tok::Minus if unary_minus(p) => {
            // `-5` is one literal and `- 5` a negation: keep the author's choice
            // there, and never write `--`, which starts a comment.
            return match b {
                Tok::Int(_) => toks[p].hi != toks[i].lo,
                Tok::Minus => true,
                _ => false,
            };
        }
        _ => {}
    }
    match b {
        Tok::LParen | Tok::LBracket if catch_close(p) => true,
        Tok::LParen => !matches!(a, Tok::LId(_) | Tok::UId(_) | Tok::RParen | Tok::RBracket),
        Tok::LBracket => !ends_operand(a),
        _ => true,
    }
}

/// The formatter's safety net: the output parses, and holds the input's tokens (up
/// to `;` and a comma before a closing bracket).
fn verify(src: &str, out: &str) -> Result<(), Vec<Diagnostic>> {
    // (Formatting can grow a file past what one file may hold: not a bug of the
    // formatter, helper-78.)
    if out.len() > crate::lexer::MAX_SOURCE_BYTES {
        let msg = format!(
            "formatted, this file would be {} bytes, past the 16 MiB ({} bytes) one file may hold; the file is left as it is (split the program into files)",
            out.len(),
            crate::lexer::MAX_SOURCE_BYTES
        );
        return Err(vec![Diagnostic::error(
            "syntax",
            Span::new(FileId(0), 0, 0),
            msg,
        )]);
    }
    let (_, diags) = parse(out, FileId(0));
    let same = diags.is_empty() && significant(&tokens(src)) == significant(&tokens(out));
    if same {
        return Ok(());
    }
    let detail = diags
        .first()
        .map(|d| format!(": {}", d.message))
        .unwrap_or_default();
    Err(refusal(detail))
}

/// The diagnostic of a formatting the safety nets refused.
fn refusal(detail: String) -> Vec<Diagnostic> {
    vec![Diagnostic::error(
        "internal",
        Span::new(FileId(0), 0, 0),
        format!("the formatter would change this program (a bug in wo fmt){detail}; the file is left as it is"),
    )]
}

/// The texts of the tokens that carry meaning: no `;`, no `,` before a closer.
fn significant<'a>(toks: &[Token<'a>]) -> Vec<&'a str> {
    toks.iter()
        .enumerate()
        .filter(|(i, t)| match t.tok {
            Tok::Semi => false,
            Tok::Comma => !toks.get(i + 1).is_some_and(|n| is_close(&n.tok)),
            _ => true,
        })
        .map(|(_, t)| t.text)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{format, format_checked, meaning, same_meaning, Meaning};

    #[test]
    fn a_change_of_meaning_that_keeps_the_tokens_is_refused() {
        // The same tokens: the second text ends the `return` at the line break.
        let src = "fn f(a: Int) -> Int {\n  return a - 1\n}\nfn main() {}\n";
        let out = "fn f(a: Int) -> Int {\n  return a\n  - 1\n}\nfn main() {}\n";
        assert!(matches!(meaning("t.wo", src), Meaning::Image(_)));
        assert_ne!(meaning("t.wo", src), meaning("t.wo", out));
        let refused = same_meaning("t.wo", src, out.to_string()).unwrap_err();
        assert_eq!(refused[0].code, "internal");
        assert!(
            refused[0].message.contains("would compile differently"),
            "{}",
            refused[0].message
        );
        // Layout alone (and a message naming a line that moved) keeps the meaning.
        let messy = "fn f( a:Int )->Int{ return a-1 }\nfn main(){ let x:Int=\"\" }\n";
        let tidy = format_checked("t.wo", messy).unwrap();
        assert_eq!(meaning("t.wo", messy), meaning("t.wo", &tidy));
        // A NaN column default compares bit for bit.
        let nan = "@table(name: \"t\")\nclass T {\n  x: Float = 1e308 * 10.0 - 1e308 * 10.0\n}\nfn main() {\nprint(1)\n}\n";
        assert!(matches!(meaning("t.wo", nan), Meaning::Image(_)));
        assert!(format_checked("t.wo", nan).is_ok());
        let moved = "fn g() -> Int { return 1; print(2) }\nfn main() {}\n";
        assert!(matches!(meaning("t.wo", moved), Meaning::Diagnostics(_)));
        assert!(format_checked("t.wo", moved).unwrap().lines().count() > 2);
    }

    fn fmt(src: &str) -> String {
        match format(src) {
            Ok(s) => s,
            Err(d) => panic!("does not format: {:?}", d),
        }
    }

    #[test]
    fn spacing_and_indentation() {
        let src = "fn  main( ) {\nlet x=1+2*-3\n    if x>=2{print( x )}else{print(\"no\")}\n}\n";
        assert_eq!(
            fmt(src),
            "fn main() {\n  let x = 1 + 2 * -3\n  if x >= 2 { print(x) } else { print(\"no\") }\n}\n"
        );
    }

    #[test]
    fn semicolons_become_lines_and_blocks_open() {
        let src = "fn main() { let x = 1; let y = 2; print(x + y); }\n";
        assert_eq!(
            fmt(src),
            "fn main() {\n  let x = 1\n  let y = 2\n  print(x + y)\n}\n"
        );
    }

    #[test]
    fn comments_stay_where_they_were() {
        let src = "-- head\n\n\n\nfn main() { -- opens\n    -- inside\n  print(1)   -- after\n\n\n  -- last\n}\n-- tail\n";
        assert_eq!(
            fmt(src),
            "-- head\n\nfn main() { -- opens\n  -- inside\n  print(1) -- after\n\n  -- last\n}\n-- tail\n"
        );
    }

    #[test]
    fn queries_continue_one_level_deeper() {
        let src = "fn main() {\nlet a = from p in Person\nwhere p.age >= 18\n      select p.name\nprint(a)\n}\n";
        assert_eq!(
            fmt(src),
            "fn main() {\n  let a = from p in Person\n    where p.age >= 18\n    select p.name\n  print(a)\n}\n"
        );
    }

    /// A block whose header goes on over continuation lines (a condition split after
    /// an operator, a query's clauses) has its body one level in from the statement,
    /// and its `}` under the keyword.
    #[test]
    fn a_header_over_continuation_lines_keeps_its_block_one_level_in() {
        let src = "fn main() {\nif a and\nb {\nprint(1)\n} else {\nprint(2)\n}\nwhile a or\nb {\nprint(3)\n}\nfor y in from z in xs\nwhere z > 0\nselect z {\nprint(y)\n}\n}\n";
        let want = "fn main() {\n  if a and\n    b {\n    print(1)\n  } else {\n    print(2)\n  }\n  while a or\n    b {\n    print(3)\n  }\n  for y in from z in xs\n    where z > 0\n    select z {\n    print(y)\n  }\n}\n";
        assert_eq!(fmt(src), want);
        assert_eq!(fmt(want), want);
    }

    #[test]
    fn literals_and_types() {
        let src = "class P { m: map<Text,?Int>\nt: task<Int>; n: Int = 0x1F }\nfn main() { let m: map<Text, Int> = { \"a\": 1, } ; print(P { m: {}, t: spawn f(), n: 1, }) ; print(m[\"a\"], [1,2,], -x, - 5, a - -b) }\n";
        assert_eq!(
            fmt(src),
            "class P {\n  m: map<Text, ?Int>\n  t: task<Int>\n  n: Int = 0x1F\n}\nfn main() {\n  let m: map<Text, Int> = {\"a\": 1}\n  print(P { m: {}, t: spawn f(), n: 1 })\n  print(m[\"a\"], [1, 2], -x, - 5, a - -b)\n}\n"
        );
    }

    #[test]
    fn else_and_catch_join_the_brace() {
        let src = "fn main() {\n  if a {\n    f()\n  }\n  else {\n    g()\n  }\n  try {\n    f()\n  }\n  catch (e) {\n  }\n}\n";
        assert_eq!(
            fmt(src),
            "fn main() {\n  if a {\n    f()\n  } else {\n    g()\n  }\n  try {\n    f()\n  } catch (e) {}\n}\n"
        );
        // `else` with its `{` on the next line (helper-51: it stayed there, the
        // brace indented as a continuation).
        let src = "fn main() {\n  if a {\n    f()\n  } else\n  {\n    g()\n  }\n}\n";
        let want = "fn main() {\n  if a {\n    f()\n  } else {\n    g()\n  }\n}\n";
        assert_eq!(fmt(src), want);
        // A `;` alone on its line goes with the line (helper-90: a blank line).
        let src = "fn main() {\n  let n = 1\n  ;\n  print(n);;\n\n  ;\n  print(n)\n}\n";
        let want = "fn main() {\n  let n = 1\n  print(n)\n\n  print(n)\n}\n";
        assert_eq!(fmt(src), want);
        // `else`, a comment, and the `if` on the next line: the `if` where its
        // block's `}` is (helper-90: it went one level in, as a continuation).
        let src = "fn main() {\n  if a {\n    f()\n  } else -- b\n  if b {\n    g()\n  }\n}\n";
        assert_eq!(fmt(src), src);
        // `else`, a comment, and its `{` on the next line: the `{` where the `}` is
        // (helper-101: it went one level in, as a continuation).
        let src = "fn main() {\n  if a {\n    f()\n  } else -- b\n  {\n    g()\n  }\n}\n";
        assert_eq!(fmt(src), src);
        let messy =
            "fn main() {\n    if a {\n        f()\n    } else -- b\n        {\n    g()\n    }\n}\n";
        assert_eq!(fmt(messy), src);
    }

    #[test]
    fn multi_line_lists_keep_their_trailing_comma() {
        let src = "fn main() {\n  print(\n  1,\n     2,\n  )\n  let l = [\n1,\n]\n}\n";
        assert_eq!(
            fmt(src),
            "fn main() {\n  print(\n    1,\n    2,\n  )\n  let l = [\n    1,\n  ]\n}\n"
        );
    }

    #[test]
    fn empty_brackets_close_on_their_line_unless_a_comment_is_inside() {
        let src = "fn main() {\n  let m: map<Text, Int> = {\n  }\n  let xs: multi Int = [\n  ]\n  f(\n  )\n  let ys: multi Int = [\n    -- none yet\n  ]\n}\n";
        assert_eq!(
            fmt(src),
            "fn main() {\n  let m: map<Text, Int> = {}\n  let xs: multi Int = []\n  f()\n  let ys: multi Int = [\n    -- none yet\n  ]\n}\n"
        );
    }

    #[test]
    fn order_by_keys_split_over_lines_stay_at_clause_level() {
        let src = "fn main() {\n  let q = from x in xs\n    order by x desc,\n      x asc\n    select x\n  for k,\n  v in m {}\n}\n";
        assert_eq!(
            fmt(src),
            "fn main() {\n  let q = from x in xs\n    order by x desc,\n    x asc\n    select x\n  for k,\n    v in m {}\n}\n"
        );
    }

    #[test]
    fn a_minus_that_starts_a_statement_or_follows_a_catch_is_no_operator() {
        let src = "fn main() {\n  let z = 1\n  -1\n  let v = try f() catch (e) -1\n  let c = try f() catch (e) (4)\n  let xs = try [f()] catch (e) [0]\n}\n";
        assert_eq!(fmt(src), src);
    }

    #[test]
    fn a_block_after_a_split_signature_is_one_level_in() {
        let src = "fn f(a: Int,\n  b: Int) -> Int {\n  return foo(bar(\n    a,\n  ))\n}\n";
        assert_eq!(fmt(src), src);
    }

    #[test]
    fn crlf_line_ends_become_lf() {
        let src = "-- note\r\nfn main() {\r\n  print(1) -- one\r\n}\r\n";
        assert_eq!(fmt(src), "-- note\nfn main() {\n  print(1) -- one\n}\n");
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused() {
        let diags = format("fn main( {\n").expect_err("must not format");
        assert!(!diags.is_empty());
    }

    #[test]
    fn idempotent_on_tricky_input() {
        let src = "@table(name: \"t\") ; class T { a: Int @unique; b: ?ref T }\nconst X = -9223372036854775808\nfn f(a: Int,\n  b: Int) -> map<Text, Int> { return {} }\n";
        let once = fmt(src);
        assert_eq!(fmt(&once), once);
    }
}
