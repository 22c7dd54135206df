//! Tab completion for the line editor: keywords, builtins, the session's variables
//! and declarations, modules, dot-commands at the start of a line, and after a `.` the
//! fields and methods of a class (the class of a variable, or of a query's `from x in
//! T` binding; every class's when the name is unknown) or a module's functions.

use std::cell::RefCell;
use std::rc::Rc;

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use super::session::Names;

/// The standard modules (`use time`, …).
pub const MODULES: &[&str] = &["time", "math", "env", "fs", "random", "io"];

/// The dot-commands, for completion and `.help`.
pub const COMMANDS: &[(&str, &str)] = &[
    (".help", "list these commands"),
    (".tables", "the tables, with their class and number of rows"),
    (
        ".schema [NAME]",
        "the declaration of every table, or of NAME (a table, class, function, constant)",
    ),
    (".timer on|off", "show how long each input takes"),
    (
        ".load FILE",
        "declare the functions, classes and constants of a .wo file",
    ),
    (".quit", "end the session (also .exit, Ctrl-D)"),
];

pub struct ReplHelper {
    pub names: Rc<RefCell<Names>>,
}

/// The names builtins are called by (`abs`, not `abs_int`), from their documentation.
fn builtin_names() -> Vec<String> {
    let mut out: Vec<String> = wo_bytecode::builtins::BUILTINS
        .iter()
        .filter_map(|b| {
            let name = b.doc.split(['(', ':', ' ']).next()?;
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier ending at byte `end` of `line`.
fn word_before(line: &str, end: usize) -> &str {
    let start = line[..end]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_name_char(*c))
        .last()
        .map_or(end, |(i, _)| i);
    &line[start..end]
}

impl ReplHelper {
    /// The candidates for the word at `pos` and where that word starts.
    pub fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let word = word_before(line, pos);
        let start = pos - word.len();
        let names = self.names.borrow();
        let mut all: Vec<String> = Vec::new();
        let typed = line[..pos].trim_start();
        if typed.starts_with('.') && !typed.contains(char::is_whitespace) {
            let start = pos - typed.len();
            let cmds = COMMANDS
                .iter()
                .map(|(c, _)| c.split(' ').next().unwrap_or(c).to_string())
                .chain(std::iter::once(".exit".to_string()))
                .filter(|c| c.starts_with(typed))
                .collect();
            return (start, cmds);
        }
        if start > 0 && line[..start].ends_with('.') {
            let owner = word_before(line, start - 1);
            if MODULES.contains(&owner) {
                let prefix = format!("{owner}.");
                all = builtin_names()
                    .into_iter()
                    .filter_map(|b| b.strip_prefix(&prefix).map(str::to_string))
                    .collect();
            } else {
                let class = names
                    .vars
                    .iter()
                    .find(|(n, _)| n == owner)
                    .map(|(_, ty)| ty.trim_start_matches('?').to_string())
                    .or_else(|| query_binding(line, owner));
                let members = names
                    .classes
                    .iter()
                    .filter(|(c, _)| match &class {
                        Some(k) => k == c,
                        None => true,
                    })
                    .flat_map(|(_, m)| m.iter().cloned());
                all.extend(members);
            }
        } else {
            all.extend(wo_compiler::lexer::KEYWORDS.iter().map(|k| k.to_string()));
            all.extend(builtin_names().into_iter().filter(|b| !b.contains('.')));
            all.extend(names.vars.iter().map(|(n, _)| n.clone()));
            all.extend(names.decls.iter().cloned());
            all.extend(MODULES.iter().map(|m| m.to_string()));
        }
        all.retain(|c| c.starts_with(word));
        all.sort();
        all.dedup();
        (start, all)
    }
}

/// The class `x` ranges over in a `from x in T` of the line.
fn query_binding(line: &str, var: &str) -> Option<String> {
    let words: Vec<&str> = line
        .split(|c: char| !is_name_char(c))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(4)
        .rev()
        .find(|w| w[0] == "from" && w[1] == var && w[2] == "in")
        .map(|w| w[3].to_string())
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, words) = self.candidates(line, pos);
        let pairs = words
            .into_iter()
            .map(|w| Pair {
                display: w.clone(),
                replacement: w,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {}

impl Validator for ReplHelper {}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper() -> ReplHelper {
        let names = Names {
            vars: vec![
                ("note".into(), "Note".into()),
                ("count_x".into(), "Int".into()),
            ],
            decls: vec!["Note".into(), "shout".into()],
            classes: vec![
                (
                    "Note".into(),
                    vec!["title".into(), "body".into(), "id".into()],
                ),
                ("Tag".into(), vec!["label".into()]),
            ],
            modules: vec![],
        };
        ReplHelper {
            names: Rc::new(RefCell::new(names)),
        }
    }

    #[test]
    fn names_keywords_and_columns() {
        let h = helper();
        assert_eq!(
            h.candidates("sel", 3),
            (0, vec!["select".to_string(), "self".to_string()])
        );
        assert_eq!(h.candidates("print(cou", 9).1, ["count", "count_x"]);
        assert_eq!(h.candidates("sh", 2).1, ["shout"]);
        assert_eq!(h.candidates("note.ti", 7), (5, vec!["title".to_string()]));
        assert_eq!(h.candidates("from n in Tag select n.l", 24).1, ["label"]);
        assert_eq!(h.candidates("time.ti", 7).1, ["ticks"]);
        assert_eq!(h.candidates(".ta", 3), (0, vec![".tables".to_string()]));
    }
}
