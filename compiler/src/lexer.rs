//! The lexer: source text to the token stream the LALRPOP grammar reads. It has two
//! layers. `logos` recognises the raw tokens of LANGUAGE.md §2 (keywords, lower- and
//! upper-case identifiers as distinct tokens, numbers, text literals with their
//! escapes and `${…}` interpolations, operators). The token filter in [`tokenize`]
//! then inserts the automatic semicolons, turns `try {` into the statement token
//! [`Tok::TryBlock`], checks Int literal ranges (a `-` directly before a literal joins
//! it) and guards against input nested so deeply that later stages would overflow the
//! stack. Interpolations are parsed here, through the parser, as real expressions
//! whose spans point into the file.

use logos::Logos;

use crate::ast::{Expr, TextPart};
use crate::diag::{Diagnostic, FileId, Span};

/// A token located in the file: `(lo, token, hi)` in absolute byte offsets.
pub type Spanned = (usize, Tok, usize);

/// The deepest `( [ {` nesting the filter lets through.
const MAX_DEPTH: usize = 128;
/// The most operators one statement may contain (a guard against expression trees
/// too deep for the recursive stages after the parser).
const MAX_OPS_PER_STMT: usize = 1000;
/// The most `else if` arms one `if` may have (Lua's parser takes 20,000 `elseif`).
const MAX_ELSE_IF: usize = 20_000;
/// The deepest nesting of text literals inside interpolations.
const MAX_INTERP_DEPTH: usize = 8;
/// The most source one file may hold. The compiler keeps some 300 bytes per byte of
/// source (12 MB of `;` took 3.1 GB, helper-76), so a limit keeps a huge file an
/// error rather than the end of the machine's memory.
pub const MAX_SOURCE_BYTES: usize = 16 << 20;

/// The operators of a statement that can stand one above the other in its tree: for
/// each open bracket, and for the keys of an `order by`, those of the element being
/// read (`cur`) and the most of any element before it (`max`), its siblings — after
/// a `,`, a `;`, an `else` — being side by side, not nested. `path` (the sum of
/// `cur` over the open levels) bounds the depth of the tree at the token being
/// read, which is what the recursive stages after the parser need bounded; a list,
/// map or call of any length adds only its widest element. (The keys of an `order
/// by` are a level of their own, so their `,` cannot clear the count of the queries
/// around them: helper-75 nested 1,000 queries past the guard that way.)
#[derive(Debug)]
struct OpCount {
    /// `(cur, max, keys)`, the statement's level first; `keys` marks an `order by`'s.
    levels: Vec<(usize, usize, bool)>,
    path: usize,
}

impl Default for OpCount {
    fn default() -> Self {
        OpCount {
            levels: vec![(0, 0, false)],
            path: 0,
        }
    }
}

impl OpCount {
    fn op(&mut self) {
        if let Some(top) = self.levels.last_mut() {
            top.0 += 1;
            self.path += 1;
        }
    }

    /// An opening bracket, or `by` (`keys`).
    fn open(&mut self, keys: bool) {
        self.levels.push((0, 0, keys));
    }

    /// The end of a level: what stood under it counts at the level around it as its
    /// widest element.
    fn close(&mut self) {
        if self.levels.len() < 2 {
            return;
        }
        let Some((cur, max, _)) = self.levels.pop() else {
            return;
        };
        let inner = cur.max(max);
        self.path = self.path - cur + inner;
        if let Some(top) = self.levels.last_mut() {
            top.0 += inner;
        }
    }

    /// The keys of the `order by`s being read end (at `skip`, `take`, `select`, a
    /// `;` or a closing bracket).
    fn end_keys(&mut self) {
        while self.levels.last().is_some_and(|l| l.2) {
            self.close();
        }
    }

    /// A closing bracket: the keys inside it end, then its level.
    fn close_bracket(&mut self) {
        self.end_keys();
        self.close();
    }

    /// The next sibling begins: the one before it no longer stands above anything.
    /// (Not at a statement's own level, where a `,` separates no elements: `for k, v`.)
    fn sibling(&mut self) {
        if let Some(top) = self.levels.last_mut() {
            top.1 = top.1.max(top.0);
            self.path -= top.0;
            top.0 = 0;
        }
    }
}

/// State the logos callbacks need: where the slice being lexed sits in its file,
/// how deep in interpolations it is, and the diagnostics found so far.
#[derive(Debug, Default)]
pub struct LexCtx {
    pub file: FileId,
    /// The absolute offset of the slice being lexed (non-zero inside `${…}`).
    pub base: usize,
    /// How many interpolations enclose the slice being lexed.
    pub depth: usize,
    pub diags: Vec<Diagnostic>,
}

impl LexCtx {
    fn span(&self, lo: usize, hi: usize) -> Span {
        Span::new(self.file, self.base + lo, self.base + hi)
    }
}

/// The tokens of wo. `TryBlock`, `Interp` and automatic semicolons are produced by
/// the filter, never by logos.
#[derive(Logos, Debug, Clone)]
#[logos(extras = LexCtx)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip r"--[^\n]*")]
pub enum Tok {
    #[token("fn")]
    Fn,
    #[token("let")]
    Let,
    #[token("return")]
    Return,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("while")]
    While,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,
    #[token("class")]
    Class,
    #[token("const")]
    Const,
    #[token("use")]
    Use,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[token("nil")]
    Nil,
    #[token("and")]
    And,
    #[token("or")]
    Or,
    #[token("not")]
    Not,
    #[token("insert")]
    Insert,
    #[token("delete")]
    Delete,
    #[token("from")]
    From,
    #[token("where")]
    Where,
    #[token("order")]
    Order,
    #[token("by")]
    By,
    #[token("asc")]
    Asc,
    #[token("desc")]
    Desc,
    #[token("take")]
    Take,
    #[token("skip")]
    Skip,
    #[token("select")]
    Select,
    #[token("transaction")]
    Transaction,
    #[token("try")]
    Try,
    #[token("catch")]
    Catch,
    #[token("spawn")]
    Spawn,
    #[token("ref")]
    Ref,
    #[token("multi")]
    Multi,
    #[token("map")]
    Map,
    #[token("task")]
    Task,
    #[token("self")]
    SelfKw,

    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    /// An explicit `;`, or an automatic one (then its span is empty).
    #[token(";")]
    Semi,
    #[token(".")]
    Dot,
    #[token("..")]
    DotDot,
    #[token("=")]
    Assign,
    #[token("+=")]
    PlusEq,
    #[token("-=")]
    MinusEq,
    #[token("*=")]
    StarEq,
    #[token("/=")]
    SlashEq,
    #[token("%=")]
    PercentEq,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("??")]
    QQ,
    #[token("?")]
    Question,
    #[token("->")]
    Arrow,
    #[token("@")]
    At,

    /// A lower-case identifier (or one starting with `_`).
    #[regex("[a-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    LId(String),
    /// An upper-case identifier: a class, a type or a constant.
    #[regex("[A-Z][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    UId(String),
    /// The magnitude of an Int literal; the filter checks its range.
    #[regex("[0-9][0-9_]*", |lex| int_value(lex, 10, 0))]
    #[regex("0[xX][0-9a-fA-F_]+", |lex| int_value(lex, 16, 2))]
    #[regex("0[bB][01_]+", |lex| int_value(lex, 2, 2))]
    #[regex("0[xXbB]", |lex| int_value(lex, 2, 2))]
    Int(u128),
    #[regex(r"[0-9][0-9_]*\.[0-9][0-9_]*([eE][+-]?[0-9][0-9_]*)?", float_value)]
    #[regex(r"[0-9][0-9_]*[eE][+-]?[0-9][0-9_]*", float_value)]
    Float(f64),
    /// `#` to the end of the line: another language's comment, an error (with the
    /// fix) that takes the rest of the line with it, so its words are not read as
    /// code (not produced); or Lua's length operator, `#xs` where a value is
    /// expected: an error, and this token, with which the grammar makes the whole
    /// `#xs` an expression the checker says nothing of (no second error where a
    /// number or a condition is needed).
    #[token("#", hash_comment)]
    LenHash,
    /// A text literal with its escapes decoded and its interpolations parsed.
    #[token("\"", text_value)]
    #[regex(r"'[^'\n]*'", single_quoted)]
    #[regex(r"`[^`\n]*`", single_quoted)]
    Text(Vec<TextPart>),

    /// `try` directly followed by `{`: the statement form.
    TryBlock,
    /// A marker put before the tokens of an interpolation so the one grammar can
    /// parse a lone expression.
    Interp,
    /// What a second reading puts in the place of a block written after `catch (e)`
    /// in the expression form, once its error is reported (`parser::catch_blocks`),
    /// and the lexer in the place of a malformed number (`0b102`): an expression the
    /// checker says nothing more of.
    Skipped,
}

/// The keywords of LANGUAGE.md §2, each the [`Tok::keyword`] spelling of one token
/// (offered by the REPL's and the language server's completion).
pub const KEYWORDS: &[&str] = &[
    "fn",
    "let",
    "return",
    "if",
    "else",
    "while",
    "for",
    "in",
    "break",
    "continue",
    "class",
    "const",
    "use",
    "true",
    "false",
    "nil",
    "and",
    "or",
    "not",
    "insert",
    "delete",
    "from",
    "where",
    "order",
    "by",
    "asc",
    "desc",
    "take",
    "skip",
    "select",
    "transaction",
    "try",
    "catch",
    "spawn",
    "ref",
    "multi",
    "map",
    "task",
    "self",
];

impl Tok {
    /// The source spelling of a keyword, or `None` for any other token.
    pub fn keyword(&self) -> Option<&'static str> {
        Some(match self {
            Tok::Fn => "fn",
            Tok::Let => "let",
            Tok::Return => "return",
            Tok::If => "if",
            Tok::Else => "else",
            Tok::While => "while",
            Tok::For => "for",
            Tok::In => "in",
            Tok::Break => "break",
            Tok::Continue => "continue",
            Tok::Class => "class",
            Tok::Const => "const",
            Tok::Use => "use",
            Tok::True => "true",
            Tok::False => "false",
            Tok::Nil => "nil",
            Tok::And => "and",
            Tok::Or => "or",
            Tok::Not => "not",
            Tok::Insert => "insert",
            Tok::Delete => "delete",
            Tok::From => "from",
            Tok::Where => "where",
            Tok::Order => "order",
            Tok::By => "by",
            Tok::Asc => "asc",
            Tok::Desc => "desc",
            Tok::Take => "take",
            Tok::Skip => "skip",
            Tok::Select => "select",
            Tok::Transaction => "transaction",
            Tok::Try | Tok::TryBlock => "try",
            Tok::Catch => "catch",
            Tok::Spawn => "spawn",
            Tok::Ref => "ref",
            Tok::Multi => "multi",
            Tok::Map => "map",
            Tok::Task => "task",
            Tok::SelfKw => "self",
            _ => return None,
        })
    }

    /// Whether a statement may end with this token (LANGUAGE.md §2).
    fn can_end_stmt(&self) -> bool {
        matches!(
            self,
            Tok::LId(_)
                | Tok::UId(_)
                | Tok::Int(_)
                | Tok::Float(_)
                | Tok::Text(_)
                | Tok::RParen
                | Tok::RBracket
                | Tok::RBrace
                | Tok::Return
                | Tok::Break
                | Tok::Continue
                | Tok::Nil
                | Tok::True
                | Tok::False
                | Tok::SelfKw
                | Tok::Skipped
        )
    }

    /// Whether this keyword reads like a name and cannot begin an expression
    /// (`order`, `by`, `map`, `task`, …).
    fn name_like(&self) -> bool {
        matches!(
            self,
            Tok::Order
                | Tok::By
                | Tok::Asc
                | Tok::Desc
                | Tok::Take
                | Tok::Skip
                | Tok::Select
                | Tok::Where
                | Tok::In
                | Tok::Map
                | Tok::Multi
                | Tok::Task
                | Tok::Ref
                | Tok::Use
                | Tok::Const
                | Tok::Class
                | Tok::Transaction
        )
    }

    /// Whether an expression (or a field's name) comes after this token: after it a
    /// name-like keyword stands where a name was meant.
    fn wants_operand(&self) -> bool {
        self.is_binary_only()
            || matches!(
                self,
                Tok::Assign
                    | Tok::PlusEq
                    | Tok::MinusEq
                    | Tok::StarEq
                    | Tok::SlashEq
                    | Tok::PercentEq
                    | Tok::LParen
                    | Tok::LBracket
                    | Tok::Comma
                    | Tok::Dot
                    | Tok::Minus
                    | Tok::Return
                    | Tok::Not
            )
    }

    /// Whether this token can end an operand, so that a `-` after it subtracts.
    fn ends_operand(&self) -> bool {
        self.can_end_stmt() && !matches!(self, Tok::Return | Tok::Break | Tok::Continue)
    }

    /// Whether a line starting with this token continues the previous one.
    fn continues_line(&self) -> bool {
        matches!(
            self,
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

    /// Whether this token is a binary operator that cannot start an expression (so a
    /// line starting with it cannot stand alone; `-` can, as a negation).
    pub(crate) fn is_binary_only(&self) -> bool {
        matches!(
            self,
            Tok::Plus
                | Tok::Star
                | Tok::Slash
                | Tok::Percent
                | Tok::DotDot
                | Tok::EqEq
                | Tok::NotEq
                | Tok::Lt
                | Tok::Le
                | Tok::Gt
                | Tok::Ge
                | Tok::And
                | Tok::Or
                | Tok::QQ
        )
    }

    /// Whether this token is an operator that adds a level to an expression tree.
    fn is_operator(&self) -> bool {
        self.is_binary_only()
            || matches!(
                self,
                Tok::Minus
                    | Tok::Not
                    | Tok::Dot
                    | Tok::LBracket
                    | Tok::LParen
                    | Tok::LBrace
                    | Tok::Try
                    | Tok::From
                    | Tok::If
                    | Tok::While
                    | Tok::For
                    | Tok::Multi
                    | Tok::Question
            )
    }
}

/// Which grammar entry the tokens are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A whole file: a final automatic `;` is added at the end.
    File,
    /// The inside of `${…}`: the tokens start with [`Tok::Interp`].
    Interp,
}

/// The output of [`tokenize`].
#[derive(Debug, Default)]
pub struct Lexed {
    pub toks: Vec<Spanned>,
    /// Lexical errors (and the nesting guard's), sorted by position.
    pub diags: Vec<Diagnostic>,
    /// Where the input was cut off by the nesting guard, if it was.
    pub cut: Option<usize>,
}

/// The error for a carriage return alone (not before a line feed) outside a text
/// literal, at the first one: wo's lines end in `\n` or `\r\n` (`\r\r\n` too). On the
/// first line it means a file whose lines end in `\r` (classic Mac OS): read as blank
/// space, such line ends would make the file one line, every statement after the
/// first a syntax error or, after a `--` comment, nothing at all (the comment runs to
/// the end of the file). Anywhere else it is a stray one, refused too: in a comment
/// it would be harmless, but a rule that looked at the first line only would make
/// `wo fmt`, which drops leading blank lines, turn a file that compiles into one that
/// does not. A `\r` in a text literal is the literal's; blank space at the end of the
/// file is not looked at.
pub fn lone_carriage_return(src: &str, file: FileId) -> Option<Diagnostic> {
    let bytes = src.as_bytes();
    let end = src.trim_end().len();
    let lone =
        |&at: &usize| bytes.get(at + 1) != Some(&b'\n') && !bytes[at + 1..].starts_with(b"\r\n");
    let returns = || src[..end].match_indices('\r').map(|(at, _)| at);
    // Most files have no lone `\r`: no need to lex them.
    returns().find(lone)?;
    let texts: Vec<(usize, usize)> = tokenize(src, file, 0, 0, Mode::File)
        .toks
        .iter()
        .filter(|(_, t, _)| matches!(t, Tok::Text(_)))
        .map(|&(lo, _, hi)| (lo, hi))
        .collect();
    let in_text = |at: usize| texts.iter().any(|&(lo, hi)| lo <= at && at < hi);
    let at = returns().filter(lone).find(|&at| !in_text(at))?;
    let span = Span::new(file, at, at + 1);
    let first_line = !src[..at].contains('\n');
    Some(if first_line {
        let msg = "a carriage return alone is not a line break: this file's lines end in `\\r` (classic Mac OS)";
        let note = "save the file with `\\n` line ends (`\\r\\n` works too)";
        Diagnostic::error("lex", span, msg).with_note(note)
    } else {
        let msg = "a carriage return alone is not a line break: lines end in `\\n` or `\\r\\n`";
        let note = "delete the stray `\\r` (in a text, write `\\r`)";
        Diagnostic::error("lex", span, msg).with_note(note)
    })
}

/// Lexes `src` (which starts at absolute offset `base` of `file`, inside `depth`
/// interpolations) and applies the token filter.
pub fn tokenize(src: &str, file: FileId, base: usize, depth: usize, mode: Mode) -> Lexed {
    if mode == Mode::File {
        if let Some(d) = too_large(src, file) {
            return Lexed {
                toks: Vec::new(),
                diags: vec![d],
                cut: Some(base),
            };
        }
    }
    tokenize_any(src, file, base, depth, mode)
}

/// The error of a file past [`MAX_SOURCE_BYTES`], if it is.
pub fn too_large(src: &str, file: FileId) -> Option<Diagnostic> {
    (src.len() > MAX_SOURCE_BYTES).then(|| {
        let msg = format!(
            "this file is {} bytes of source; wo reads at most 16 MiB ({MAX_SOURCE_BYTES} bytes) in one file (keep large data in a file the program reads, or split the program into files)",
            src.len()
        );
        Diagnostic::error("syntax", Span::new(file, 0, 0), msg)
    })
}

/// [`tokenize`] of a text of any size: for the REPL's splitter, which classifies the
/// input read so far (the whole input is compiled, and refused once, when it ends).
pub fn tokenize_any(src: &str, file: FileId, base: usize, depth: usize, mode: Mode) -> Lexed {
    let ctx = LexCtx {
        file,
        base,
        depth,
        diags: Vec::new(),
    };
    let mut lex = Tok::lexer_with_extras(src, ctx);
    let mut out: Vec<Spanned> = Vec::new();
    let mut errs: Vec<Diagnostic> = Vec::new();
    if mode == Mode::Interp {
        out.push((base, Tok::Interp, base));
    }
    // The end of the previous token or error, relative to `src`.
    let mut prev_end = 0usize;
    // The span of the bad characters seen since the last good token.
    let mut bad: Option<(usize, usize)> = None;
    let mut n_depth = 0usize;
    let mut ops = OpCount::default();
    // `else if` arms of the chain open at each bracket depth.
    let mut n_else_if: Vec<usize> = vec![0];
    // The `<` of `map<…>` and `task<…>` types open, and whether the last token is the
    // `>` that closed the outermost: a type's end, which can end a statement
    // (`let m: map<Text, Int>` then a line break), where a `>` that compares cannot.
    let mut type_angles = 0usize;
    let mut ends_type = false;
    while let Some(res) = lex.next() {
        let mut r = lex.span();
        let tok = match res {
            Ok(tok) => tok,
            Err(()) => {
                bad = match bad {
                    Some((lo, hi)) if hi == r.start => Some((lo, r.end)),
                    Some((lo, hi)) => {
                        errs.push(bad_chars(src, file, base, lo, hi));
                        Some((r.start, r.end))
                    }
                    None => Some((r.start, r.end)),
                };
                continue;
            }
        };
        if let Some((lo, hi)) = bad.take() {
            errs.push(bad_chars(src, file, base, lo, hi));
        }
        // A number run into letters or digits that cannot continue it (`0b102`,
        // `1.5e`, `10px`): one error for the whole run, which becomes one `Skipped`
        // token (an expression the checker says nothing more of).
        let mut tok = tok;
        if matches!(tok, Tok::Int(_) | Tok::Float(_)) {
            let word = |from: usize| {
                src.as_bytes()[from..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                    .count()
            };
            let mut run = word(r.end);
            // An exponent's sign with no digits after it (`1.5e+`, `1e-x`) is part
            // of the run.
            let after = src.as_bytes().get(r.end + run).copied();
            if run == 1 && matches!(after, Some(b'+' | b'-')) && has_no_exponent(&src[r.clone()]) {
                let e = src.as_bytes()[r.end];
                if e == b'e' || e == b'E' {
                    run += 1 + word(r.end + 2);
                }
            }
            if run > 0 {
                lex.bump(run);
                // (`0xg`: the literal's own "has no digits" goes, for this one error.)
                let lo = u32::try_from(base + r.start).unwrap_or(u32::MAX);
                lex.extras.diags.retain(|d| d.span.lo != lo);
                errs.push(malformed_number(src, file, base, r.clone(), r.end + run));
                r.end += run;
                tok = Tok::Skipped;
            }
        }
        let gap = src.get(prev_end..r.start).unwrap_or("");
        prev_end = r.end;
        if let Some((_, last, last_hi)) = out.last() {
            // A name-like keyword where a name was meant (`let copy = order`) ends its
            // line as the name would: its error is the one error, where the next line
            // was read into the statement and thrown away (helper-96).
            let misnamed =
                last.name_like() && out.len() >= 2 && out[out.len() - 2].1.wants_operand();
            let can_end = last.can_end_stmt() || ends_type || misnamed;
            if gap.contains('\n') && can_end && !tok.continues_line() {
                let at = *last_hi;
                out.push((at, Tok::Semi, at));
                type_angles = 0;
                ops.sibling();
                if let Some(n) = n_else_if.get_mut(n_depth) {
                    *n = 0;
                }
            }
        }
        let (lo, hi) = (base + r.start, base + r.end);
        match &tok {
            Tok::Int(v) => {
                let n = out.len();
                let prev = &out[n.saturating_sub(2)..];
                check_int(&mut errs, src, file, base, r.clone(), *v, prev);
            }
            // Each arm of an `if … else if` chain has a condition of its own: the
            // operators of a 250-arm chain on one line are not one expression.
            // (And the elements of a list, the arguments of a call: each its own.)
            Tok::Else => ops.sibling(),
            // (Not the `,` of a `map<K, V>`, whose value type nests in it: 50,000
            // `map<Text, ` in a row.)
            Tok::Comma if ops.levels.len() > 1 && type_angles == 0 => ops.sibling(),
            Tok::Skip | Tok::Take | Tok::Select => ops.end_keys(),
            Tok::Semi => {
                ops.end_keys();
                ops.sibling();
                if let Some(n) = n_else_if.get_mut(n_depth) {
                    *n = 0;
                }
            }
            Tok::If if matches!(out.last(), Some((_, Tok::Else, _))) => {
                if let Some(n) = n_else_if.get_mut(n_depth) {
                    *n += 1;
                }
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                n_depth = n_depth.saturating_sub(1);
                ops.close_bracket();
            }
            _ => {}
        }
        if tok.is_operator() {
            ops.op();
        }
        if matches!(tok, Tok::LParen | Tok::LBracket | Tok::LBrace) {
            n_depth += 1;
            ops.open(false);
        }
        if matches!(tok, Tok::By) {
            ops.open(true);
        }
        // Whether this token nests a type in a type, for the guard's message: not
        // the first of a type (`: ?Int` after a long condition, helper-77).
        let nests_type = match &tok {
            Tok::Multi | Tok::Question => true,
            Tok::Lt => matches!(out.last(), Some((_, Tok::Map | Tok::Task, _))),
            Tok::Gt => type_angles > 0,
            _ => false,
        } && !matches!(out.last(), Some((_, Tok::Colon | Tok::Arrow, _)));
        ends_type = false;
        match tok {
            Tok::Lt if matches!(out.last(), Some((_, Tok::Map | Tok::Task, _))) => {
                type_angles += 1;
            }
            Tok::Gt if type_angles > 0 => {
                type_angles -= 1;
                ends_type = type_angles == 0;
            }
            // (What no type holds: an unclosed `map<` ends with its statement.)
            Tok::Semi | Tok::LBrace | Tok::RBrace | Tok::Assign => type_angles = 0,
            _ => {}
        }
        n_else_if.resize(n_depth + 1, 0);
        // (Summed over the open brackets: a chain in the last `else { … }` of another
        // nests in it, helper-75.)
        let long_chain = n_else_if.iter().sum::<usize>() > MAX_ELSE_IF;
        if n_depth > MAX_DEPTH || ops.path > MAX_OPS_PER_STMT || long_chain {
            let what = if n_depth > MAX_DEPTH {
                format!("brackets are nested too deeply (at most {MAX_DEPTH} levels of `(`, `[` and `{{`, a function's own `{{` counted)")
            } else if long_chain {
                let nested = n_else_if.iter().filter(|&&n| n > 0).count() > 1;
                let around = if nested {
                    " with those of the chains it is nested in"
                } else {
                    ""
                };
                format!("this `if` has more than {MAX_ELSE_IF} `else if` arms{around}; look the value up in a `map` instead")
            } else if nests_type {
                // (A type of 300,000 `multi` overflowed the stack of `wo check`.)
                format!(
                    "type is nested too deeply (about {MAX_OPS_PER_STMT} levels of `multi` or `?`, {} of `map<…>` or `task<…>`)",
                    MAX_OPS_PER_STMT / 2
                )
            } else {
                format!("statement is too complex (about {MAX_OPS_PER_STMT} operators one inside another; split it over `let`s)")
            };
            errs.push(Diagnostic::error("syntax", Span::new(file, lo, hi), what));
            // The rest of the input is dropped; the parser reports nothing past here.
            let mut diags = std::mem::take(&mut lex.extras.diags);
            diags.extend(errs);
            diags.sort_by_key(|d| d.span.lo);
            return Lexed {
                toks: out,
                diags,
                cut: Some(lo),
            };
        }
        if matches!(tok, Tok::LBrace) {
            if let Some((_, last @ Tok::Try, _)) = out.last_mut() {
                *last = Tok::TryBlock;
            }
        }
        out.push((lo, tok, hi));
    }
    if let Some((lo, hi)) = bad.take() {
        errs.push(bad_chars(src, file, base, lo, hi));
    }
    if mode == Mode::File {
        if let Some((_, last, last_hi)) = out.last() {
            if last.can_end_stmt() || ends_type {
                let at = *last_hi;
                out.push((at, Tok::Semi, at));
            }
        }
    }
    let mut diags = std::mem::take(&mut lex.extras.diags);
    diags.extend(errs);
    diags.sort_by_key(|d| d.span.lo);
    Lexed {
        toks: out,
        diags,
        cut: None,
    }
}

/// The diagnostic for characters that start no token.
fn bad_chars(src: &str, file: FileId, base: usize, lo: usize, hi: usize) -> Diagnostic {
    let text = src.get(lo..hi).unwrap_or("?");
    let msg = if text.chars().count() == 1 {
        format!("unexpected character `{}`", text.escape_debug())
    } else {
        format!("unexpected characters `{}`", text.escape_debug())
    };
    let d = Diagnostic::error("lex", Span::new(file, base + lo, base + hi), msg);
    // Habits from other languages.
    let hint = match text.trim() {
        "!" => Some("wo negates a `Bool` with `not`: `not x`"),
        "&&" | "&" => Some("wo writes logical and as `and`: `a and b`"),
        "||" | "|" => Some("wo writes logical or as `or`: `a or b`"),
        "'" => Some("text is written in double quotes: `\"…\"`"),
        "`" => Some(
            "text is written in double quotes, and values go in with `${…}`: `\"total: ${n}\"`",
        ),
        // Lua's `~=`; C's bitwise not and exclusive or, or a power.
        "~" if src.get(hi..).is_some_and(|r| r.starts_with('=')) => Some("wo's not-equal is `!=`"),
        "~" => Some("wo has no bitwise operators"),
        "^" => Some(
            "wo has no `^`: a power is `math.pow(x, y)` (of Floats, `use math`), and there are no bitwise operators",
        ),
        t if t.chars().next().is_some_and(|c| c.is_alphabetic()) => {
            Some("names are made of ASCII letters, digits and `_` (a Text may hold any character)")
        }
        _ => None,
    };
    match hint {
        Some(h) => d.with_note(h),
        None => d,
    }
}

/// The error for a number literal (`lit`, of `src`) that letters or digits follow
/// up to `hi` with no space between: a digit its base does not have, an exponent
/// without digits, Python's octal prefix, or a name that begins with a digit.
fn malformed_number(
    src: &str,
    file: FileId,
    base: usize,
    lit: std::ops::Range<usize>,
    hi: usize,
) -> Diagnostic {
    let span = Span::new(file, base + lit.start, base + hi);
    let whole = src.get(lit.start..hi).unwrap_or("?");
    let rest = src.get(lit.end..hi).unwrap_or("");
    let number = src.get(lit).unwrap_or("");
    let first = rest.chars().next().unwrap_or('?');
    let prefix = number.get(..2).map(str::to_ascii_lowercase);
    match prefix.as_deref() {
        Some("0b") => {
            let msg = format!("`{first}` is not a binary digit, in `{whole}`");
            return Diagnostic::error("lex", span, msg)
                .with_note("a binary literal has the digits `0` and `1`: `0b1010`");
        }
        Some("0x") => {
            let msg = format!("`{first}` is not a hexadecimal digit, in `{whole}`");
            return Diagnostic::error("lex", span, msg)
                .with_note("a hexadecimal literal has the digits `0`–`9` and `a`–`f`: `0xFF`");
        }
        _ => {}
    }
    if number == "0" && (rest.starts_with('o') || rest.starts_with('O')) {
        let msg = format!("wo has no octal literals: `{whole}`");
        let digits: String = rest[1..].chars().filter(|&c| c != '_').collect();
        let note = match i64::from_str_radix(&digits, 8) {
            Ok(v) => format!("write it in decimal, `{v}`, or in hexadecimal, `{v:#x}`"),
            Err(_) => "write it in decimal or in hexadecimal (`0xFF`)".to_string(),
        };
        return Diagnostic::error("lex", span, msg).with_note(note);
    }
    if has_no_exponent(number) && (rest.starts_with('e') || rest.starts_with('E')) {
        let sign = rest[1..].starts_with(['+', '-']);
        let digits = &rest[1 + usize::from(sign)..];
        let msg = if digits.is_empty() {
            format!("the exponent of `{whole}` has no digits")
        } else {
            format!("the exponent of `{whole}` is not a number")
        };
        return Diagnostic::error("lex", span, msg).with_note(
            "an exponent is a power of ten, its digits after `e` and an optional sign: `1.5e3`, `2e-9`",
        );
    }
    let msg = format!("`{whole}` is not a number, and a name cannot begin with a digit");
    Diagnostic::error("lex", span, msg)
}

/// Whether the decimal number literal `number` could still take an exponent: no
/// `e` of its own, and no `0x` or `0b` prefix (whose `e` would be a digit or not one).
fn has_no_exponent(number: &str) -> bool {
    let prefixed = number.len() > 1 && matches!(number.as_bytes()[1], b'x' | b'X' | b'b' | b'B');
    !prefixed && !number.contains(['e', 'E'])
}

/// Checks that an Int literal fits in 64 bits; a `-` directly before it joins it.
fn check_int(
    errs: &mut Vec<Diagnostic>,
    src: &str,
    file: FileId,
    base: usize,
    r: std::ops::Range<usize>,
    v: u128,
    prev: &[Spanned],
) {
    let max = i64::MAX as u128;
    if v <= max {
        return;
    }
    // `-9223372036854775808` is `Int`'s least value when the `-` touching the
    // literal is a sign: not after an operand (`t-9223372036854775808` subtracts).
    let (before, minus) = match prev {
        [b, m] => (Some(b), Some(m)),
        [m] => (None, Some(m)),
        _ => (None, None),
    };
    let sign = !before.is_some_and(|(_, t, _)| t.ends_operand());
    let joined = sign && matches!(minus, Some((_, Tok::Minus, hi)) if *hi == base + r.start);
    if joined && v == max + 1 {
        return;
    }
    let text = src.get(r.clone()).unwrap_or("?");
    let shown = if joined {
        format!("-{text}")
    } else {
        text.to_string()
    };
    errs.push(Diagnostic::error(
        "lex",
        Span::new(file, base + r.start, base + r.end),
        format!("integer literal `{shown}` is out of range for `Int`"),
    ));
}

/// The value of an Int literal in `radix` after a `prefix`-byte prefix; saturates at
/// `u128::MAX` (the filter then reports the range error).
fn int_value(lex: &mut logos::Lexer<Tok>, radix: u32, prefix: usize) -> u128 {
    let slice = lex.slice();
    let digits = slice.get(prefix..).unwrap_or("");
    let mut v: u128 = 0;
    let mut n_digits = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else {
            continue;
        };
        n_digits += 1;
        v = v
            .checked_mul(u128::from(radix))
            .and_then(|v| v.checked_add(u128::from(d)))
            .unwrap_or(u128::MAX);
    }
    if n_digits == 0 {
        let span = lex.extras.span(lex.span().start, lex.span().end);
        let msg = format!("integer literal `{slice}` has no digits");
        lex.extras.diags.push(Diagnostic::error("lex", span, msg));
    }
    v
}

/// The value of a Float literal; one too large (it would be infinite) or too small
/// (not zero, but it would be 0.0: below the least subnormal, about 4.9e-324) is an
/// error, not a silent change of value.
fn float_value(lex: &mut logos::Lexer<Tok>) -> f64 {
    let slice = lex.slice();
    let clean: String = slice.chars().filter(|&c| c != '_').collect();
    let v = clean.parse::<f64>().unwrap_or(f64::INFINITY);
    let mantissa = clean.split(['e', 'E']).next().unwrap_or_default();
    let underflows = v == 0.0 && mantissa.bytes().any(|b| matches!(b, b'1'..=b'9'));
    if v.is_finite() && !underflows {
        return v;
    }
    let span = lex.extras.span(lex.span().start, lex.span().end);
    let msg = if underflows {
        format!("float literal `{slice}` is too small for `Float`: it would be 0.0")
    } else {
        format!("float literal `{slice}` is out of range for `Float`")
    };
    lex.extras.diags.push(Diagnostic::error("lex", span, msg));
    0.0
}

/// Scans the body of a text literal (`s` starts after the opening quote). Returns
/// the length consumed (including the closing quote) and whether the literal was
/// closed. Stops before a raw newline.
fn scan_text(s: &[u8], depth: usize) -> (usize, bool) {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'"' => return (i + 1, true),
            b'\n' => return (i, false),
            b'\\' => {
                i += 1;
                if i < s.len() && s[i] != b'\n' {
                    i += 1;
                }
            }
            b'$' if s.get(i + 1) == Some(&b'{') => {
                // Past the nesting limit the interpolation is skipped whole, without
                // recursion, so its literal ends where it ends and the limit is what
                // gets reported (not an unterminated literal).
                let (n, closed) = if depth >= MAX_INTERP_DEPTH {
                    skip_interp(&s[i + 2..])
                } else {
                    scan_interp(&s[i + 2..], depth + 1)
                };
                i += 2 + n;
                if !closed {
                    return (i, false);
                }
            }
            _ => i += 1,
        }
    }
    (i, false)
}

/// Where `$name` stands in a text literal written `literal` (from its opening quote):
/// the byte range of each `$` followed by a name that is not escaped (`\$name`) and
/// not inside a `${…}` (whose texts are literals of their own).
pub(crate) fn dollar_names(literal: &str) -> Vec<(usize, usize)> {
    let s = literal.as_bytes();
    let mut found = Vec::new();
    if s.first() != Some(&b'"') {
        return found;
    }
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'"' | b'\n' => break,
            b'\\' => i += 2,
            b'$' if s.get(i + 1) == Some(&b'{') => {
                let (n, closed) = skip_interp(&s[i + 2..]);
                if !closed {
                    break;
                }
                i += 2 + n;
            }
            b'$' if s
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') =>
            {
                let end = s[i + 1..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                    .map_or(s.len(), |n| i + 1 + n);
                found.push((i, end));
                i = end;
            }
            _ => i += 1,
        }
    }
    found
}

/// Skips the inside of `${…}` (`s` starts after `${`) however deeply texts and
/// interpolations nest in it, with an explicit stack. Returns what [`scan_interp`] does.
fn skip_interp(s: &[u8]) -> (usize, bool) {
    // For each open interpolation, its unclosed braces; `None` for an open text.
    let mut stack: Vec<Option<usize>> = vec![Some(1)];
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'\n' {
            return (i, false);
        }
        match stack.last_mut() {
            Some(Some(n)) => match c {
                b'{' => *n += 1,
                b'}' => {
                    *n -= 1;
                    if *n == 0 {
                        stack.pop();
                        if stack.is_empty() {
                            return (i + 1, true);
                        }
                    }
                }
                b'"' => stack.push(None),
                _ => {}
            },
            Some(None) => match c {
                b'"' => {
                    stack.pop();
                }
                b'\\' if s.get(i + 1).is_some_and(|&c| c != b'\n') => i += 1,
                b'$' if s.get(i + 1) == Some(&b'{') => {
                    stack.push(Some(1));
                    i += 1;
                }
                _ => {}
            },
            None => break,
        }
        i += 1;
    }
    (i, false)
}

/// Scans the inside of `${…}` (`s` starts after `${`), counting braces and skipping
/// nested text literals. Returns the length consumed (including the closing `}`)
/// and whether the closing `}` was found.
fn scan_interp(s: &[u8], depth: usize) -> (usize, bool) {
    let mut i = 0;
    let mut n_open = 1usize;
    while i < s.len() {
        match s[i] {
            b'{' => n_open += 1,
            b'}' => {
                n_open -= 1;
                if n_open == 0 {
                    return (i + 1, true);
                }
            }
            b'"' => {
                let (n, closed) = scan_text(&s[i + 1..], depth);
                i += 1 + n;
                if !closed {
                    return (i, false);
                }
                continue;
            }
            b'\n' => return (i, false),
            _ => {}
        }
        i += 1;
    }
    (i, false)
}

/// Where a `--` starts in the inside of a closed `${…}`, outside the text literals
/// nested in it (LANGUAGE.md §2: a comment runs to the end of the line, so one here
/// would swallow the `}` and the rest of the literal).
fn comment_at(inner: &[u8], depth: usize) -> Option<usize> {
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            b'"' => i += 1 + scan_text(&inner[i + 1..], depth).0,
            b'-' if inner.get(i + 1) == Some(&b'-') => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The logos callback for `#`: an error at the `#`. Lua's `#xs`, where a value is
/// expected (after `(`, `=`, an operator, `return` …, and before a name or a
/// bracket, no other word after it), is the token [`Tok::LenHash`], which stands in
/// for an expression (helper-80: it was "does not start a comment", then an error on
/// the next line; then, skipped, a second error where a number is needed said `xs`
/// is a list). Any
/// other `#` starts another language's comment, and the rest of its line is skipped.
fn hash_comment(lex: &mut logos::Lexer<Tok>) -> logos::Filter<()> {
    let start = lex.span().start;
    let span = lex.extras.span(start, start + 1);
    let rest = lex.remainder();
    // What stands before it on its line (its last few bytes are enough, and looking
    // no further keeps a long line of `#`s linear).
    let window = &lex.source().as_bytes()[start.saturating_sub(16)..start];
    let before = window
        .rsplit(|&b| b == b'\n')
        .next()
        .unwrap_or(&[])
        .trim_ascii_end();
    // (Not after `{`: `if x > 0 { #positive` is a comment, helper-82; but the start of
    // a `${…}` is a value's place.)
    let value_expected = (before.is_empty() && lex.extras.depth > 0)
        || before.last().is_some_and(|b| b"([,=+-*/%<>!:".contains(b))
        || before.ends_with(b"..")
        || ["return", "if", "while", "and", "or", "not", "in"]
            .iter()
            .any(|kw| {
                before.strip_suffix(kw.as_bytes()).is_some_and(|b| {
                    !b.last()
                        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
                })
            });
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let operand_len = rest.find(|c: char| !word(c)).unwrap_or(rest.len());
    let operand: String = rest[..operand_len].chars().take(40).collect();
    // Another word after the operand, and this is a comment: `( #first items`.
    // (Lua's `do` and `then` are not words of a comment: `for i = 1, #xs do`.)
    let words_follow = operand_len > 0
        && rest[operand_len..]
            .strip_prefix([' ', '\t'])
            .map(|after| after.trim_start_matches([' ', '\t']))
            .is_some_and(|after| {
                let next = &after[..after.find(|c: char| !word(c)).unwrap_or(after.len())];
                !next.is_empty() && next != "do" && next != "then"
            });
    if value_expected && !words_follow && (operand_len > 0 || rest.starts_with(['(', '[', '"'])) {
        // `#"abc"`: the text, when it is short and closes on the line.
        let quoted = rest
            .strip_prefix('"')
            .and_then(|r| r.get(..r.find(['"', '\\', '\n'])?))
            .filter(|t| t.chars().count() <= 40 && rest.as_bytes().get(t.len() + 1) == Some(&b'"'))
            .map(|t| format!("\"{t}\""));
        let xs = match (&quoted, operand.is_empty()) {
            (Some(q), _) => q.as_str(),
            (None, true) => "xs",
            (None, false) => operand.as_str(),
        };
        let d = Diagnostic::error("lex", span, "wo has no `#` length operator").with_note(format!(
            "a length is `len({xs})` (of a Text, a list or a map)"
        ));
        lex.extras.diags.push(d);
        return logos::Filter::Emit(());
    }
    lex.bump(rest.find('\n').unwrap_or(rest.len()));
    let note = if start + lex.extras.base == 0 && rest.starts_with('!') {
        "wo has no `#!` line: run the file with `wo run FILE`; a comment starts with `--`"
    } else {
        "a comment starts with `--` and runs to the end of the line: `-- like this`"
    };
    let d = Diagnostic::error("lex", span, "`#` does not start a comment in wo").with_note(note);
    lex.extras.diags.push(d);
    logos::Filter::Skip
}

/// The logos callback for `'…'` and `` `…` ``, which are not wo: an error with the
/// fix, and the text it most likely meant, so parsing goes on.
fn single_quoted(lex: &mut logos::Lexer<Tok>) -> Vec<TextPart> {
    let slice = lex.slice();
    let inner = slice.get(1..slice.len() - 1).unwrap_or("");
    let span = lex.extras.span(lex.span().start, lex.span().end);
    let msg = format!("text is written in double quotes: `\"{inner}\"`");
    let note = if slice.starts_with('`') {
        "a template's values go in a double-quoted text with `${…}`: `\"total: ${n}\"`"
    } else {
        "wo has no separate character type; a character is a one-character `Text`"
    };
    let d = Diagnostic::error("lex", span, msg).with_note(note);
    lex.extras.diags.push(d);
    vec![TextPart::Lit(inner.to_string())]
}

/// The logos callback for `"`: scans the literal, decodes it and parses its
/// interpolations.
fn text_value(lex: &mut logos::Lexer<Tok>) -> Vec<TextPart> {
    let start = lex.span().start;
    let (n, closed) = scan_text(lex.remainder().as_bytes(), lex.extras.depth);
    lex.bump(n);
    let body_end = if closed {
        start + 1 + n - 1
    } else {
        start + 1 + n
    };
    let src = lex.source();
    let body = src.get(start + 1..body_end).unwrap_or("");
    if !closed {
        let span = lex.extras.span(start, start + 1 + n);
        let at_newline = src.as_bytes().get(start + 1 + n) == Some(&b'\n');
        let msg = if at_newline {
            "unterminated text literal: a raw newline cannot appear inside `\"…\"` (write `\\n`)"
        } else {
            "unterminated text literal"
        };
        lex.extras.diags.push(Diagnostic::error("lex", span, msg));
    }
    decode_text(body, start + 1, &mut lex.extras)
}

/// Decodes escapes and parses interpolations of a literal body that starts at
/// relative offset `off`.
fn decode_text(body: &str, off: usize, ctx: &mut LexCtx) -> Vec<TextPart> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < body.len() {
        let Some(c) = body.get(i..).and_then(|s| s.chars().next()) else {
            break;
        };
        if c == '\\' {
            let (len, decoded) = decode_escape(body, i);
            match decoded {
                Ok(ch) => lit.push(ch),
                Err(msg) => {
                    let span = ctx.span(off + i, off + i + len);
                    ctx.diags.push(Diagnostic::error("lex", span, msg));
                }
            }
            i += len;
        } else if c == '$' && bytes.get(i + 1) == Some(&b'{') {
            let (n, closed) = scan_interp(&bytes[i + 2..], ctx.depth + 1);
            let inner_lo = i + 2;
            let inner_hi = if closed { i + 2 + n - 1 } else { i + 2 + n };
            let inner = body.get(inner_lo..inner_hi).unwrap_or("");
            if !lit.is_empty() {
                parts.push(TextPart::Lit(std::mem::take(&mut lit)));
            }
            if closed {
                let abs = ctx.base + off + inner_lo;
                if inner.trim().is_empty() {
                    let span = ctx.span(off + i, off + inner_hi + 1);
                    let msg = "empty interpolation `${}`: write an expression inside";
                    ctx.diags.push(Diagnostic::error("syntax", span, msg));
                } else if let Some(at) = comment_at(inner.as_bytes(), ctx.depth + 1) {
                    let span = ctx.span(off + inner_lo + at, off + inner_lo + at + 2);
                    let msg = "a comment cannot be inside `${…}`: `--` would run to the end of the line, past the `}`";
                    let d = Diagnostic::error("syntax", span, msg).with_note(
                        "to subtract a negative number, put a space between the minus signs: `a - -1`",
                    );
                    ctx.diags.push(d);
                } else if ctx.depth + 1 > MAX_INTERP_DEPTH {
                    let span = ctx.span(off + i, off + inner_hi + 1);
                    let msg = format!("interpolations are nested too deeply (at most {MAX_INTERP_DEPTH} levels of `${{…}}`)");
                    let d = Diagnostic::error("syntax", span, msg)
                        .with_note("compute the inner text in a `let` first");
                    ctx.diags.push(d);
                } else {
                    let (e, d) = crate::parser::parse_interp(inner, ctx.file, abs, ctx.depth + 1);
                    ctx.diags.extend(d);
                    parts.push(TextPart::Expr(e));
                }
            } else {
                let span = ctx.span(off + i, off + i + 2);
                let msg = "unterminated interpolation: `${` has no matching `}`";
                ctx.diags.push(Diagnostic::error("lex", span, msg));
                let abs = Span::new(ctx.file, ctx.base + off + i, ctx.base + off + inner_hi);
                parts.push(TextPart::Expr(Expr {
                    kind: crate::ast::ExprKind::Error,
                    span: abs,
                }));
            }
            i = if closed { inner_hi + 1 } else { inner_hi };
        } else {
            lit.push(c);
            i += c.len_utf8();
        }
    }
    if !lit.is_empty() || parts.is_empty() {
        parts.push(TextPart::Lit(lit));
    }
    parts
}

/// Decodes the escape starting at byte `i` of `body` (which holds a `\`). Returns
/// its length in bytes and the character, or an error message.
fn decode_escape(body: &str, i: usize) -> (usize, Result<char, String>) {
    let rest = body.get(i + 1..).unwrap_or("");
    let Some(c) = rest.chars().next() else {
        return (1, Err("text literal ends in a lone `\\`".to_string()));
    };
    let simple = match c {
        'n' => Some('\n'),
        't' => Some('\t'),
        'r' => Some('\r'),
        '\\' => Some('\\'),
        '"' => Some('"'),
        '$' => Some('$'),
        _ => None,
    };
    if let Some(ch) = simple {
        return (2, Ok(ch));
    }
    if c != 'u' {
        let len = 1 + c.len_utf8();
        let msg = format!(
            "unknown escape `\\{}` (escapes are \\n \\t \\r \\\\ \\\" \\$ \\u{{…}})",
            c.escape_debug()
        );
        return (len, Err(msg));
    }
    // `\u{…}` with 1 to 6 hex digits naming a Unicode scalar value.
    let after_u = rest.get(1..).unwrap_or("");
    if !after_u.starts_with('{') {
        return (
            2,
            Err("`\\u` must be followed by `{hex digits}`".to_string()),
        );
    }
    let Some(close) = after_u.find('}') else {
        return (3, Err("unterminated `\\u{…}` escape".to_string()));
    };
    let len = 2 + close + 1;
    let hex = after_u.get(1..close).unwrap_or("");
    let ok = !hex.is_empty() && hex.len() <= 6 && hex.chars().all(|c| c.is_ascii_hexdigit());
    let ch = if ok {
        u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
    } else {
        None
    };
    match ch {
        Some(ch) => (len, Ok(ch)),
        None => (
            len,
            Err(format!(
                "`\\u{{{hex}}}` is not a valid Unicode scalar value"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<String> {
        let lexed = tokenize(src, FileId(0), 0, 0, Mode::File);
        assert!(lexed.diags.is_empty(), "{:?}", lexed.diags);
        lexed
            .toks
            .iter()
            .map(|(lo, t, hi)| match t {
                Tok::Semi if lo == hi => "AUTO;".to_string(),
                Tok::LId(s) | Tok::UId(s) => s.clone(),
                Tok::Int(v) => v.to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn automatic_semicolons_follow_the_rule() {
        assert_eq!(kinds("a\nb"), ["a", "AUTO;", "b", "AUTO;"]);
        assert_eq!(kinds("a +\nb"), ["a", "Plus", "b", "AUTO;"]);
        assert_eq!(kinds("}\nelse"), ["RBrace", "Else"]);
        assert_eq!(kinds("x\n  where y"), ["x", "Where", "y", "AUTO;"]);
        assert_eq!(kinds("return\nx"), ["Return", "AUTO;", "x", "AUTO;"]);
        assert_eq!(
            kinds("f( -- c\n1)"),
            ["f", "LParen", "1", "RParen", "AUTO;"]
        );
    }

    #[test]
    fn keywords_are_keyword_tokens() {
        for &k in KEYWORDS {
            let lexed = tokenize(k, FileId(0), 0, 0, Mode::File);
            let spelled: Vec<_> = lexed
                .toks
                .iter()
                .filter_map(|(_, t, _)| t.keyword())
                .collect();
            assert_eq!(spelled, [k]);
        }
    }

    #[test]
    fn try_before_brace_is_the_statement_token() {
        assert_eq!(kinds("try {"), ["TryBlock", "LBrace"]);
        assert_eq!(kinds("try f()"), ["Try", "f", "LParen", "RParen", "AUTO;"]);
    }

    #[test]
    fn numbers() {
        assert_eq!(
            kinds("1_000_000 0xFF 0b1010"),
            ["1000000", "255", "10", "AUTO;"]
        );
        let toks = tokenize("1.0e-3 2e9 1..2", FileId(0), 0, 0, Mode::File).toks;
        assert!(matches!(toks[0].1, Tok::Float(v) if v == 1.0e-3));
        assert!(matches!(toks[1].1, Tok::Float(v) if v == 2e9));
        assert!(matches!(toks[2].1, Tok::Int(1)));
        assert!(matches!(toks[3].1, Tok::DotDot));
    }

    #[test]
    fn a_type_closing_angle_can_end_a_statement() {
        assert_eq!(
            kinds("let m: map<Text, map<Text, Int>>\nm"),
            [
                "Let", "m", "Colon", "Map", "Lt", "Text", "Comma", "Map", "Lt", "Text", "Comma",
                "Int", "Gt", "Gt", "AUTO;", "m", "AUTO;"
            ]
        );
        assert_eq!(
            kinds("let t: task<Int>"),
            ["Let", "t", "Colon", "Task", "Lt", "Int", "Gt", "AUTO;"]
        );
        // A `>` that compares goes on to the next line, also after a type's.
        assert_eq!(kinds("a >\nb"), ["a", "Gt", "b", "AUTO;"]);
        assert_eq!(
            kinds("let m: map<Text, Int> = f(a >\nb)"),
            [
                "Let", "m", "Colon", "Map", "Lt", "Text", "Comma", "Int", "Gt", "Assign", "f",
                "LParen", "a", "Gt", "b", "RParen", "AUTO;"
            ]
        );
    }

    #[test]
    fn a_number_run_into_letters_or_digits_is_one_error() {
        let cases = [
            ("0b102", "`2` is not a binary digit, in `0b102`"),
            ("0xFG", "`G` is not a hexadecimal digit, in `0xFG`"),
            ("1.5e", "the exponent of `1.5e` has no digits"),
            ("2E", "the exponent of `2E` has no digits"),
            ("0o17", "wo has no octal literals: `0o17`"),
            (
                "10px",
                "`10px` is not a number, and a name cannot begin with a digit",
            ),
            ("1.5x2", "`1.5x2` is not a number"),
            ("1e5e", "`1e5e` is not a number"),
            ("1e_3", "the exponent of `1e_3` is not a number"),
            ("1.5e+", "the exponent of `1.5e+` has no digits"),
            ("1.5e+_3", "the exponent of `1.5e+_3` is not a number"),
            ("1e-x", "the exponent of `1e-x` is not a number"),
            ("0xFz", "`z` is not a hexadecimal digit, in `0xFz`"),
            ("0xg", "`g` is not a hexadecimal digit, in `0xg`"),
        ];
        for (text, msg) in cases {
            let lexed = tokenize(&format!("f({text})"), FileId(0), 0, 0, Mode::File);
            assert_eq!(lexed.diags.len(), 1, "{text}: {:?}", lexed.diags);
            let d = &lexed.diags[0];
            assert!(d.message.starts_with(msg), "{text}: {}", d.message);
            assert_eq!((d.span.lo, d.span.hi), (2, 2 + text.len() as u32), "{text}");
            // One token in its place: the call still reads as `f(<expression>)`.
            assert!(
                matches!(lexed.toks[2].1, Tok::Skipped) && matches!(lexed.toks[3].1, Tok::RParen),
                "{text}"
            );
        }
        let no_digits = tokenize("0b", FileId(0), 0, 0, Mode::File);
        assert_eq!(no_digits.diags.len(), 1);
        assert_eq!(
            no_digits.diags[0].message,
            "integer literal `0b` has no digits"
        );
        let octal = tokenize("0o17", FileId(0), 0, 0, Mode::File);
        assert_eq!(
            octal.diags[0].notes,
            ["write it in decimal, `15`, or in hexadecimal, `0xf`"]
        );
        // Underscores group the exponent's digits as they do the rest.
        let toks = tokenize("1e1_0 2.5E+0_1", FileId(0), 0, 0, Mode::File);
        assert!(toks.diags.is_empty(), "{:?}", toks.diags);
        assert!(matches!(toks.toks[0].1, Tok::Float(v) if v == 1e10));
        assert!(matches!(toks.toks[1].1, Tok::Float(v) if v == 25.0));
        // What may touch a number: an operator, a bracket, `..`, a field's dot.
        let fine = tokenize("1+2 (3) [4] 1..2 1.e5 x1 _2", FileId(0), 0, 0, Mode::File);
        assert!(fine.diags.is_empty(), "{:?}", fine.diags);
    }

    #[test]
    fn int_range_joins_a_minus() {
        let ok = tokenize("-9223372036854775808", FileId(0), 0, 0, Mode::File);
        assert!(ok.diags.is_empty());
        let bad = tokenize("9223372036854775808", FileId(0), 0, 0, Mode::File);
        assert_eq!(bad.diags.len(), 1);
        assert!(bad.diags[0].message.contains("out of range"));
        let spaced = tokenize("- 9223372036854775808", FileId(0), 0, 0, Mode::File);
        assert_eq!(spaced.diags.len(), 1);
        // A `-` after an operand subtracts: the literal stands alone, out of range
        // (found by the fuzz target `compile`: `t-9223372036854775808` compiled as
        // `t - (-9223372036854775808)`, which `wo fmt` then spaced into an error).
        for minus in [
            "t-9223372036854775808",
            "f(1)-9223372036854775808",
            "xs[0]-9223372036854775808",
            "2-9223372036854775808",
        ] {
            let toks = tokenize(minus, FileId(0), 0, 0, Mode::File);
            assert_eq!(toks.diags.len(), 1, "{minus}");
        }
        for sign in [
            "(-9223372036854775808)",
            "x = -9223372036854775808",
            "return -9223372036854775808",
            "f(1, -9223372036854775808)",
            "2 * -9223372036854775808",
        ] {
            let toks = tokenize(sign, FileId(0), 0, 0, Mode::File);
            assert!(toks.diags.is_empty(), "{sign}: {:?}", toks.diags);
        }
        let float = tokenize("1e999", FileId(0), 0, 0, Mode::File);
        assert_eq!(float.diags.len(), 1);
    }

    #[test]
    fn float_literals_that_would_round_to_zero_are_errors() {
        for fine in ["0.0", "0e-400", "0.000e5", "5e-324", "1e-310", "1.5e-323"] {
            let lexed = tokenize(fine, FileId(0), 0, 0, Mode::File);
            assert!(lexed.diags.is_empty(), "{fine}: {:?}", lexed.diags);
            assert!(matches!(lexed.toks[0].1, Tok::Float(_)), "{fine}");
        }
        for small in ["1e-400", "2e-324", "0.000_1e-320", "9E-999"] {
            let lexed = tokenize(small, FileId(0), 0, 0, Mode::File);
            assert_eq!(lexed.diags.len(), 1, "{small}");
            let msg = &lexed.diags[0].message;
            assert!(msg.contains("too small") && msg.contains(small), "{msg}");
        }
    }

    #[test]
    fn text_escapes() {
        let lexed = tokenize(r#""a\n\t\"\$\u{1F600}$x""#, FileId(0), 0, 0, Mode::File);
        assert!(lexed.diags.is_empty(), "{:?}", lexed.diags);
        match &lexed.toks[0].1 {
            Tok::Text(parts) => {
                assert!(matches!(&parts[..], [TextPart::Lit(s)] if s == "a\n\t\"$\u{1F600}$x"))
            }
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn dollar_names_are_found_outside_escapes_and_interpolations() {
        let lit = r#""$a \$b ${c + "$d"} $E_1x $ $5 \\$f""#;
        let found: Vec<&str> = dollar_names(lit)
            .into_iter()
            .map(|(lo, hi)| &lit[lo..hi])
            .collect();
        assert_eq!(found, ["$a", "$E_1x", "$f"]);
        assert!(dollar_names("x").is_empty());
        assert_eq!(
            dollar_names("\"${\"$g"),
            Vec::new(),
            "an unclosed `${{` ends the scan"
        );
    }

    #[test]
    fn raw_newline_in_text_is_an_error() {
        let diags = tokenize("\"abc\nx", FileId(0), 0, 0, Mode::File).diags;
        assert_eq!(diags.len(), 1);
        assert!(diags[0].message.contains("raw newline"));
    }

    #[test]
    fn lone_carriage_returns_are_a_files_line_ends_or_nothing() {
        let lone = |src: &str| lone_carriage_return(src, FileId(0)).map(|d| d.span.lo);
        // Line ends of classic Mac OS, a comment first (which would take the file).
        assert_eq!(lone("-- c\rfn f() {}\r"), Some(4));
        assert_eq!(lone("fn f() {\r  g()\r}\r"), Some(8));
        // A stray one later, in a comment too (once `wo fmt` dropped the blank line
        // before it, it would be on the first line); `\r\r\n`; a `\r` in a text; one
        // with only blank space after it.
        assert_eq!(lone("fn f() {\n  g() -- a\rb\n}\n"), Some(19));
        assert_eq!(lone("\n--.\t\r\0}\x0c"), Some(5));
        assert_eq!(lone("fn f() {\r\r\n}\r\r\n"), None);
        assert_eq!(lone("print(\"a\rb\")\r\n-- c\r\n"), None);
        assert_eq!(lone("print(\"a\rb\")\n"), None);
        assert_eq!(lone("f()\r  \r"), None);
        assert_eq!(lone(""), None);
    }

    #[test]
    fn unknown_characters_are_errors() {
        let diags = tokenize("a ~ b ~~ c", FileId(0), 0, 0, Mode::File).diags;
        assert_eq!(diags.len(), 2);
        assert_eq!(diags[0].message, "unexpected character `~`");
        assert_eq!(diags[1].message, "unexpected characters `~~`");
        assert_eq!(diags[1].code, "lex");
        // `#` takes the rest of its line: one error, and `b ~~ c` is not read.
        let lexed = tokenize("a # b ~~ c\nd", FileId(0), 0, 0, Mode::File);
        assert_eq!(lexed.diags.len(), 1);
        assert_eq!(lexed.diags[0].message, "`#` does not start a comment in wo");
        assert_eq!(
            lexed
                .toks
                .iter()
                .filter(|t| matches!(t.1, Tok::LId(_)))
                .count(),
            2
        );
    }
}
