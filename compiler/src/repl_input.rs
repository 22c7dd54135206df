//! When a REPL input is complete (`wo repl`, src/repl/): by the compiler's own lexer and parser, so an
//! input goes on exactly where a program's statement would (LANGUAGE.md §2): inside an
//! open bracket, after a token that cannot end a statement (an operator, `=`, `,`,
//! `.`), and while the parser still expects more (a query without its `select`, an
//! annotation without its class, `try { … }` without `catch`). An `if` without `else`
//! is complete but may go on: a next line starting with `else` continues it, as in a
//! file. A lexical error (an unterminated `"…`) makes the input complete at once, so
//! it is reported instead of swallowing the lines that follow.
//!
//! It lives here, not in the `wo` binary, so the `repl` fuzz target can reach it.

use crate::ast::{self, StmtKind};
use crate::lexer::{tokenize_any as tokenize, Mode, Spanned, Tok};
use crate::FileId;

/// What the REPL does with the text read so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completeness {
    /// Run it.
    Complete,
    /// Read another line (continuation prompt).
    Incomplete,
    /// Complete, but a next line starting with `else` (or `catch`) belongs to it.
    MayContinue,
}

/// The header put around a statement input to parse it as the body of a function.
pub const PARSE_HEADER: &str = "fn __repl() {\n";

/// Whether `text` is a declaration (`fn`, `class`, `const`, `use`, an annotation)
/// rather than statements.
pub fn is_declaration(text: &str) -> bool {
    declaration(&tokenize(text, FileId(0), 0, 0, Mode::File).toks)
}

/// [`is_declaration`], of the text's tokens.
fn declaration(toks: &[Spanned]) -> bool {
    matches!(
        toks.first(),
        Some((_, Tok::Fn | Tok::Class | Tok::Const | Tok::Use | Tok::At, _))
    )
}

/// Classifies the text read so far.
pub fn completeness(text: &str) -> Completeness {
    let user_end = text.trim_end().len();
    if user_end == 0 {
        return Completeness::Complete;
    }
    let lexed = tokenize(text, FileId(0), 0, 0, Mode::File);
    if !lexed.diags.is_empty() || lexed.cut.is_some() {
        return Completeness::Complete;
    }
    // (`try {` is `TryBlock` then `{`: the brace alone opens. A `try { … }` without
    // its `catch` is incomplete by the parser's rule below.) A closer of the wrong
    // kind or with nothing open ends the input: the error is reported, not carried
    // into the lines after it.
    // The text is read once for the brackets, where the code ends and what kind of
    // input it is (the `repl` fuzz target classifies every line's prefix).
    match brackets_of(&lexed.toks) {
        Brackets::Open(_) => return Completeness::Incomplete,
        Brackets::Stray(_) | Brackets::Mismatch => return Completeness::Complete,
        Brackets::Balanced => {}
    }
    // Where the user's code ends: after its last token, so that a comment after it
    // (`from x in xs -- all`, or a line of comment alone) is not taken for more code.
    let code_end = code_end_of(&lexed.toks);
    if code_end == 0 {
        return Completeness::Complete;
    }
    let (module, diags, offset) = parse_as(text, declaration(&lexed.toks));
    // An error where the user's code ends means the parser wanted more.
    let at_end = |d: &crate::Diagnostic| d.span.lo as usize >= offset + code_end;
    if let Some(first) = diags.iter().min_by_key(|d| d.span.lo) {
        return if at_end(first) {
            Completeness::Incomplete
        } else {
            Completeness::Complete
        };
    }
    if offset > 0 {
        if let Some(ast::Item::Fn(f)) = module.items.first() {
            if f.body.stmts.last().is_some_and(open_if) {
                return Completeness::MayContinue;
            }
        }
    }
    Completeness::Complete
}

/// Why an input that is [`Completeness::Incomplete`] is not complete, for the message
/// when the input ends there: the last bracket still open (its byte range and its
/// text), or `None` when the parser wants more after closed brackets (a trailing
/// operator, a query without `select`).
pub fn unclosed(text: &str) -> Option<Bracket> {
    match brackets(text) {
        Brackets::Open(mut open) => open.pop(),
        _ => None,
    }
}

/// A closing bracket written where no bracket is open (its byte range and its text).
/// The REPL reports it where the user wrote it: parsed inside the wrapper a statement
/// input runs in, it would close the wrapper instead. A closer of the wrong kind is
/// left to the parser, which names the one expected.
pub fn unmatched_closer(text: &str) -> Option<Bracket> {
    match brackets(text) {
        Brackets::Stray(b) => Some(b),
        _ => None,
    }
}

/// Whether the parser finds an error before the end of `text`: then that error, not
/// "the input ended", is what to report for an input cut short.
pub fn error_before_end(text: &str) -> bool {
    let code_end = code_end(text);
    let (_, diags, offset) = parse_input(text);
    diags
        .iter()
        .min_by_key(|d| d.span.lo)
        .is_some_and(|d| (d.span.lo as usize) < offset + code_end)
}

/// Where the code of `text` ends: after its last token (a comment after it is not
/// code), 0 for none.
pub fn code_end(text: &str) -> usize {
    code_end_of(&tokenize(text, FileId(0), 0, 0, Mode::File).toks)
}

/// [`code_end`], of the text's tokens.
fn code_end_of(toks: &[Spanned]) -> usize {
    toks.iter()
        .filter(|t| t.0 != t.2)
        .map(|t| t.2)
        .max()
        .unwrap_or(0)
}

/// A bracket: its byte range and its text.
pub type Bracket = (std::ops::Range<usize>, &'static str);

/// The brackets of an input, matched by kind.
enum Brackets {
    Balanced,
    /// Left open, outermost first.
    Open(Vec<Bracket>),
    /// A closer with nothing open.
    Stray(Bracket),
    /// A closer of another kind than the bracket open (`(]`): the parser reports it.
    Mismatch,
}

fn brackets(text: &str) -> Brackets {
    brackets_of(&tokenize(text, FileId(0), 0, 0, Mode::File).toks)
}

fn brackets_of(toks: &[Spanned]) -> Brackets {
    let mut open: Vec<Bracket> = Vec::new();
    for (lo, tok, hi) in toks {
        let (opens, closes) = match tok {
            Tok::LParen => ("(", None),
            Tok::LBracket => ("[", None),
            Tok::LBrace => ("{", None),
            Tok::RParen => (")", Some("(")),
            Tok::RBracket => ("]", Some("[")),
            Tok::RBrace => ("}", Some("{")),
            _ => continue,
        };
        match closes {
            None => open.push((*lo..*hi, opens)),
            Some(partner) => match open.pop() {
                None => return Brackets::Stray((*lo..*hi, opens)),
                Some((_, o)) if o != partner => return Brackets::Mismatch,
                Some(_) => {}
            },
        }
    }
    if open.is_empty() {
        Brackets::Balanced
    } else {
        Brackets::Open(open)
    }
}

/// Parses an input as the REPL runs it (a declaration alone, statements inside the
/// wrapper): the module, its diagnostics, and where the user's text starts in what
/// was parsed.
fn parse_input(text: &str) -> (ast::Module, Vec<crate::Diagnostic>, usize) {
    parse_as(text, is_declaration(text))
}

/// [`parse_input`], knowing whether the text is a declaration.
fn parse_as(text: &str, declaration: bool) -> (ast::Module, Vec<crate::Diagnostic>, usize) {
    if declaration {
        let (m, d) = crate::parse(text, FileId(0));
        (m, d, 0)
    } else {
        let src = format!("{PARSE_HEADER}{text}\n}}\n");
        let (m, d) = crate::parse(&src, FileId(0));
        (m, d, PARSE_HEADER.len())
    }
}

/// Whether a statement is an `if` (or `else if` chain) without a final `else`.
fn open_if(stmt: &ast::Stmt) -> bool {
    match &stmt.kind {
        StmtKind::If { els: None, .. } => true,
        StmtKind::If { els: Some(b), .. } => {
            b.stmts.len() == 1
                && matches!(b.stmts[0].kind, StmtKind::If { .. })
                && open_if(&b.stmts[0])
        }
        _ => false,
    }
}

/// Whether a line continues an input that may continue ([`Completeness::MayContinue`]).
pub fn continues(line: &str) -> bool {
    let lexed = tokenize(line, FileId(0), 0, 0, Mode::File);
    matches!(lexed.toks.first(), Some((_, Tok::Else | Tok::Catch, _)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Completeness::*;

    #[test]
    fn a_carriage_return_alone_before_blank_space_changes_nothing() {
        for text in ["print(\r", "1 + 1\r", "x\r  \n\n"] {
            let verdict = completeness(text);
            for tail in ["\n", "  \n\n", "\r \r"] {
                assert_eq!(
                    completeness(&format!("{text}{tail}")),
                    verdict,
                    "{text:?}{tail:?}"
                );
            }
        }
    }

    #[test]
    fn the_compilers_rule_decides() {
        assert_eq!(completeness("1 + 1\n"), Complete);
        assert_eq!(completeness("let x = 1 +\n"), Incomplete);
        assert_eq!(completeness("let x = [1,\n"), Incomplete);
        assert_eq!(completeness("fn f() -> Int {\n"), Incomplete);
        assert_eq!(completeness("let a = from p in P\n"), Incomplete);
        assert_eq!(
            completeness("let a = from p in P\n  where p.age >= 18\n"),
            Incomplete
        );
        assert_eq!(
            completeness("let a = from p in P\n  where p.age >= 18\n  select p.name\n"),
            Complete
        );
        assert_eq!(completeness("@table\n"), Incomplete);
        assert_eq!(completeness("@table\nclass T { v: Int }\n"), Complete);
        assert_eq!(completeness("if x > 1 {\n  print(1)\n}\n"), MayContinue);
        assert_eq!(completeness("if x > 1 {\n} else {\n}\n"), Complete);
        assert_eq!(completeness("if x {\n} else if y {\n}\n"), MayContinue);
        assert_eq!(completeness("try {\n  f()\n}\n"), Incomplete);
        // A whole `try { … } catch … { … }` is complete: a declaration on the next
        // line was taken into it (the `try` counted as one more open bracket).
        assert_eq!(
            completeness("try {\n  f()\n} catch (e) {\n  g()\n}\n"),
            Complete
        );
        assert_eq!(completeness("try {\n  f()\n} catch (e) {\n"), Incomplete);
        assert_eq!(
            completeness("let v = try {\n  1\n} catch (e) 2\n"),
            Complete
        );
        assert_eq!(completeness("x.\n"), Incomplete);
        assert!(continues("else {"));
        assert!(continues("  catch (e) {"));
        assert!(!continues("print(1)"));
    }

    /// A comment after the code, or a line of comment alone, is not more code: the
    /// input goes on as without it (it ended the input: found by trying wo from the
    /// outside).
    #[test]
    fn a_comment_after_unfinished_code_does_not_finish_it() {
        assert_eq!(completeness("from x in [1, 2] -- all\n"), Incomplete);
        assert_eq!(completeness("from x in xs\n-- c\n"), Incomplete);
        assert_eq!(completeness("@table -- note\n"), Incomplete);
        assert_eq!(completeness("try { f() } -- t\n"), Incomplete);
        assert_eq!(completeness("let x = 1 + -- c\n"), Incomplete);
        assert_eq!(completeness("print(1) -- done\n"), Complete);
        assert_eq!(completeness("-- only a comment\n"), Complete);
        assert_eq!(completeness("let x = 1 1 -- c\n"), Complete);
        assert_eq!(
            completeness("if x > 1 {\n  print(1)\n} -- c\n"),
            MayContinue
        );
    }

    #[test]
    fn errors_are_complete() {
        assert_eq!(completeness("print(\"abc\n"), Complete);
        assert_eq!(completeness("let x = 1 1\n"), Complete);
        assert_eq!(completeness("}\n"), Complete);
        assert_eq!(completeness("let x = 1 # 2\n"), Complete);
    }
}
