//! Names and scopes: locals, name lookup, module members, "did you mean" hints.

use super::{builtin, Checker, MODULES};
use crate::ast::{self};
use crate::diag::Span;
use crate::facts::Target;
use crate::tir::{ClassId, Expr, ExprKind as E, LocalId, Ty};

/// How many candidates the "did you mean" hints of one check may weigh in all. Each
/// unknown name is weighed against every name in scope: 8,000 unknown names among
/// 8,000 locals took 14 s, and 16,000 never finished (helper-76). Past this budget
/// (some 0.1 s of work) the hints stop, the errors go on.
const SUGGESTION_BUDGET: usize = 500_000;

thread_local! {
    static SUGGESTIONS_LEFT: std::cell::Cell<usize> = const { std::cell::Cell::new(SUGGESTION_BUDGET) };
}

/// A new check begins: the budget of its hints is whole again.
pub(super) fn reset_suggestion_budget() {
    SUGGESTIONS_LEFT.with(|left| left.set(SUGGESTION_BUDGET));
}

/// `items` joined with `, `: a list of more than 12 keeps its first 8 and last 2
/// around how many it leaves out, so that one message stays a line (helper-76: the
/// fields missing from a literal of a class of 60,000 made a line of 588 KB).
pub(super) fn listed(items: &[String]) -> String {
    const FIRST: usize = 8;
    const LAST: usize = 2;
    if items.len() <= FIRST + LAST + 2 {
        return items.join(", ");
    }
    let left_out = items.len() - FIRST - LAST;
    format!(
        "{}, … {left_out} more …, {}",
        items[..FIRST].join(", "),
        items[items.len() - LAST..].join(", ")
    )
}

/// `"; did you mean `x`?"` for the closest candidate, or nothing.
pub(super) fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    suggest(name, candidates)
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default()
}

impl Checker<'_> {
    /// Whether `name` is declared at the top of a file the parser could not read
    /// whole (`ast::Module::broken`): where its declaration was skipped, a use of it
    /// is not reported again as unknown.
    pub(super) fn broken_declaration(&self, name: &str) -> bool {
        self.broken.contains(name)
    }

    /// Whether `name`, used at `span`, was declared another language's way (`local
    /// x = 1`, Lua's `for i = 1, 10`) in the function `span` is in: reported there.
    pub(super) fn broken_local(&self, name: &str, span: Span) -> bool {
        self.broken
            .iter()
            .any(|entry| crate::parser::broken_local(entry, name, span))
    }

    /// In a method: the class of its object.
    fn self_class(&self) -> Option<ClassId> {
        match self.local_ty(self.lookup_local("self")?) {
            Ty::Class(c) => Some(c),
            _ => None,
        }
    }

    /// In a method of a class with a field `name`: how to reach it (`self.bal`; a
    /// bare `bal` is a local, as in Python, not as in Java).
    pub(super) fn self_field(&self, name: &str) -> Option<String> {
        let fields = &self.classes.get(self.self_class()?)?.fields;
        fields
            .iter()
            .any(|f| f.name == name)
            .then(|| format!("a method reaches its object's fields through `self`: `self.{name}`"))
    }

    /// In a method, the note for `name` called bare when it is a method of the
    /// object: it is called through `self`.
    pub(super) fn self_method(&self, name: &str) -> Option<String> {
        self.classes
            .get(self.self_class()?)?
            .methods
            .iter()
            .any(|(m, _)| m == name)
            .then(|| {
                format!(
                    "a method calls its object's other methods through `self`: `self.{name}(…)`"
                )
            })
    }

    /// The source text at `span`, for a note's example, where it is short and on one
    /// line; else `or`.
    pub(super) fn short_text<'s>(&'s self, span: Span, or: &'s str) -> &'s str {
        self.sources
            .text(span)
            .filter(|t| t.len() <= 40 && !t.contains('\n'))
            .unwrap_or(or)
    }

    /// `; did you mean `T`?` for a misspelt table name, among the `@table` classes.
    pub(super) fn table_hint(&self, name: &str) -> String {
        let tables = self
            .table_classes
            .iter()
            .filter_map(|&c| self.class_names.get(c).map(String::as_str));
        did_you_mean(name, tables)
    }
}

/// What other languages call a name that wo spells differently.
pub(super) fn other_language(name: &str) -> Option<&'static str> {
    Some(match name {
        "null" | "nil" | "None" | "NULL" | "Null" | "undefined" | "nullptr" => {
            "; wo's absent value is `nil`"
        }
        "True" | "TRUE" => "; the Bool literals are `true` and `false`",
        "False" | "FALSE" => "; the Bool literals are `true` and `false`",
        "this" => "; inside a method the receiver is `self`",
        "String" | "Str" | "str" => "; wo's text type is `Text`",
        // Lua's `string.upper(s)` too (helper-96).
        "string" => "; wo's text type is `Text`, and its functions are builtins: Lua's `string.upper(s)` is `to_upper(s)` (likewise `len`, `substr`, `replace`)",
        "Integer" | "Long" | "I64" | "i64" | "int" => "; wo's integer type is `Int`",
        "Double" | "F64" | "f64" | "double" => "; wo's floating-point type is `Float`",
        "Boolean" | "bool" | "boolean" => "; wo's boolean type is `Bool`",
        "List" | "Vec" | "Array" => "; a list of `T` is written `multi T`",
        "Map" | "HashMap" | "Dict" => "; a map is written `map<K, V>`",
        _ => return None,
    })
}

/// The first of `candidates` that is no word of any of `texts`, else `each_one`: a
/// variable for a suggested query that hides no name the suggestion repeats.
pub(super) fn unused_name(candidates: &[&'static str], texts: &[&str]) -> &'static str {
    let used = |v: &str| {
        texts.iter().any(|t| {
            t.split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == v)
        })
    };
    candidates
        .iter()
        .copied()
        .find(|v| !used(v))
        .unwrap_or("each_one")
}

/// Python's, Lua's, Ruby's and the shell's block and error words, for an unknown name
/// that is no misspelling of a name in scope (helper-80: `pass` was told "did you
/// mean the function `abs(…)`?"; helper-82: a variable `edn` is what `end` meant).
fn block_word(name: &str) -> Option<String> {
    Some(match name {
        "pass" => "; wo has no `pass`: an empty block is `{ }`".to_string(),
        "elif" | "elsif" | "elseif" => "; wo writes `else if`".to_string(),
        "end" | "endif" | "done" | "fi" => "; a block ends with its `}`".to_string(),
        "raise" | "throw" => format!("; {}", crate::diag::RAISE_HOW),
        _ => return None,
    })
}

/// The closest of `candidates` to a misspelt `name` (edit distance at most 2, and less
/// than half the name), for "did you mean" hints. Ties go to the first name in
/// alphabetical order: candidates often come from hash maps, whose order differs
/// from one run to the next, and a diagnostic must not.
pub(super) fn suggest<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    // Edits of one character, two neighbours swapped counting as one (`pirnt` is one
    // edit from `print`, as `first` is two): the optimal string alignment distance.
    fn distance(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        let mut before: Vec<usize> = Vec::new();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for i in 0..a.len() {
            let mut cur = vec![i + 1; b.len() + 1];
            for j in 0..b.len() {
                let mut d = (prev[j] + usize::from(a[i] != b[j]))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
                if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                    d = d.min(before[j - 1] + 1);
                }
                cur[j + 1] = d;
            }
            before = std::mem::replace(&mut prev, cur);
        }
        prev[b.len()]
    }
    // A one- or two-letter name is too short to guess from.
    if name.chars().count() <= 2 {
        return None;
    }
    let limit = (name.chars().count() / 2).clamp(1, 2);
    let len = name.chars().count();
    // All of them or none: the candidates come in a hash map's order, which changes
    // from run to run, so weighing a part would hint differently each time
    // (helper-78).
    let candidates: Vec<&str> = candidates.collect();
    let within = SUGGESTIONS_LEFT.with(|left| {
        let n = left.get();
        left.set(n.saturating_sub(candidates.len()));
        n >= candidates.len()
    });
    if !within {
        return None;
    }
    candidates
        .into_iter()
        // (Lengths further apart than the limit are further apart than it.)
        .filter(|c| {
            c.len().abs_diff(name.len()) <= 4 * limit && c.chars().count().abs_diff(len) <= limit
        })
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

impl<'a> Checker<'a> {
    /// Declares a local `name` (written at `span`) in the innermost scope.
    pub(super) fn new_local(&mut self, name: &str, span: Span, ty: Ty) -> LocalId {
        let id = self.ctx.locals.len();
        if self.facts.is_some() {
            let target = Target::Local {
                name: name.to_string(),
                ty: ty.clone(),
            };
            self.note_ref(span, Some(span), target);
        }
        self.ctx.locals.push(ty);
        self.ctx.local_spans.push(span);
        self.ctx.read.push(false);
        self.ctx.written.push(false);
        if let Some(scope) = self.ctx.scopes.last_mut() {
            scope.insert(name.to_string(), id);
        }
        id
    }

    /// A local the checker adds (`o.f += v` evaluates `o` once, into one), named
    /// nowhere and in no scope; `span` is the expression it holds.
    pub(super) fn temp_local(&mut self, ty: Ty, span: Span) -> LocalId {
        let id = self.ctx.locals.len();
        self.ctx.locals.push(ty);
        self.ctx.local_spans.push(span);
        self.ctx.read.push(true);
        self.ctx.written.push(true);
        id
    }

    pub(super) fn lookup_local(&self, name: &str) -> Option<LocalId> {
        self.ctx
            .scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name).copied())
    }

    pub(super) fn local_ty(&self, id: LocalId) -> Ty {
        self.ctx
            .narrowed
            .get(&id)
            .cloned()
            .unwrap_or_else(|| self.ctx.locals[id].clone())
    }

    pub(super) fn name(&mut self, n: &str, span: Span) -> Expr {
        if let Some(id) = self.lookup_local(n) {
            if let Some(read) = self.ctx.read.get_mut(id) {
                *read = true;
            }
            if self.facts.is_some() {
                let def = self.ctx.local_spans.get(id).copied();
                let target = Target::Local {
                    name: n.to_string(),
                    ty: self.ctx.locals[id].clone(),
                };
                self.note_ref(span, def, target);
            }
            return Expr::new(E::Local(id), self.local_ty(id), span);
        }
        if MODULES.contains(&n) {
            self.err(
                "name",
                span,
                format!("module `{n}` is not a value; call its functions as `{n}.name(…)`"),
            );
        } else if self.func_index.contains_key(n) || builtin::is_builtin(n) {
            // `yield`, a function of no parameters: `yield()` (helper-89: "call it
            // with `yield(…)`").
            let none = match self.func_index.get(n) {
                Some(&f) => self.funcs[f].params.is_empty(),
                None => matches!(n, "yield"),
            };
            let call = if none { "()" } else { "(…)" };
            self.err(
                "name",
                span,
                format!("function `{n}` is not a value; call it with `{n}{call}`"),
            );
        } else if n == "self" {
            self.err("name", span, "`self` is only defined inside methods");
        } else if self.broken_declaration(n) || self.broken_local(n, span) {
            // `const maxItems = 10`: the declaration was reported (helper-80).
        } else {
            let ended = self.ctx.ended_queries.iter().any(|(v, q)| {
                // Only right after the query and a comma: `select t.a, t.b`.
                v == n
                    && q.file == span.file
                    && self
                        .sources
                        .files
                        .get(span.file.0 as usize)
                        .and_then(|f| f.src.get(q.hi as usize..span.lo as usize))
                        .is_some_and(|between| between.trim() == ",")
            });
            let hint = match other_language(n) {
                Some(h) => h.to_string(),
                None if self.self_field(n).is_some() => {
                    format!("; {}", self.self_field(n).unwrap_or_default())
                }
                None if self.class_stored_as(n).is_some() => {
                    let class = self.class_stored_as(n).unwrap_or_default();
                    format!(
                        "; `{n}` is the name table `{class}` is stored under (what `.tables` and `wo db` show): in a program a table is named by its class, `from x in {class}`"
                    )
                }
                None if ended => format!(
                    "; `{n}` belongs to the query before it, which ends with its `select` value: to select two values, select the row (`select {n}`) or a text (`select \"${{{n}.a}} ${{{n}.b}}\"`)"
                ),
                None => {
                    // (Not copied: the names of the scopes were cloned for each
                    // unknown name, helper-76.)
                    let values = self.ctx.scopes.iter().flat_map(|s| s.keys().map(String::as_str));
                    let local = did_you_mean(n, values);
                    // Another language's word (`end`, `pass`) before a module's
                    // name (`env`, which is no value).
                    let hint = match block_word(n) {
                        Some(word) if local.is_empty() => word,
                        _ if local.is_empty() => did_you_mean(n, MODULES.iter().copied()),
                        _ => local,
                    };
                    if hint.is_empty() {
                        // A misspelt function, written without its call.
                        let funcs = self.func_index.keys().map(String::as_str);
                        suggest(n, funcs.chain(builtin::CORE.iter().copied()))
                            .map(|f| format!("; did you mean the function `{f}(…)`?"))
                            .unwrap_or_default()
                    } else {
                        hint
                    }
                }
            };
            self.err("name", span, format!("unknown variable `{n}`{hint}"));
        }
        self.unknown(span)
    }

    /// The class of the table stored under `name`, when that is not its class's name
    /// (`@table(name: "items") class Item`, a data directory's `items` in `wo repl`).
    fn class_stored_as(&self, name: &str) -> Option<String> {
        self.classes
            .iter()
            .find(|c| c.name != name && c.table.as_ref().is_some_and(|t| t.name == name))
            .map(|c| c.name.clone())
    }

    pub(super) fn module_member(&mut self, m: &str, name: &ast::Ident, span: Span) -> Expr {
        if !self.uses.contains(m) {
            self.err(
                "use",
                span,
                format!("`{m}.{}` needs `use {m}` at the top of the file", name.name),
            );
        }
        if m == "math" && name.name == "PI" {
            let target = Target::Const {
                name: "math.PI".to_string(),
                ty: Ty::Float,
            };
            self.note_ref(name.span, None, target);
            return Expr::new(E::Float(std::f64::consts::PI), Ty::Float, span);
        }
        self.err(
            "name",
            name.span,
            format!(
                "module `{m}` has no constant `{}`{}",
                name.name,
                if m == "math" && name.name.eq_ignore_ascii_case("pi") {
                    // Python's and Go's `math.pi` (helper-80).
                    "; did you mean `math.PI`?".to_string()
                } else if m == "math" {
                    did_you_mean(&name.name, ["PI"].into_iter())
                } else {
                    String::new()
                }
            ),
        );
        self.unknown(span)
    }
}

#[cfg(test)]
mod tests {
    use super::{reset_suggestion_budget, suggest, SUGGESTION_BUDGET};

    #[test]
    fn a_tie_goes_to_the_same_name_whatever_the_order() {
        let names = ["ops", "bob", "ada"];
        for rotation in 0..names.len() {
            let mut order = names.to_vec();
            order.rotate_left(rotation);
            assert_eq!(suggest("boss", order.iter().copied()), Some("bob"));
            order.reverse();
            assert_eq!(suggest("boss", order.iter().copied()), Some("bob"));
        }
        assert_eq!(suggest("bxb", ["bob"].into_iter()), Some("bob"));
        assert_eq!(suggest("zz", ["zzz"].into_iter()), None);
    }

    #[test]
    fn two_letters_swapped_are_one_edit() {
        // By plain edits `print` and `first` are both two from `pirnt`, and the tie
        // went to `first`.
        let names = ["first", "print"];
        assert_eq!(suggest("pirnt", names.iter().copied()), Some("print"));
        assert_eq!(
            suggest("lenght", ["length", "left"].into_iter()),
            Some("length")
        );
        assert_eq!(suggest("ab", ["ba"].into_iter()), None);
        let items: Vec<String> = (0..60_000).map(|i| format!("`f{i}`")).collect();
        assert_eq!(
            super::listed(&items),
            "`f0`, `f1`, `f2`, `f3`, `f4`, `f5`, `f6`, `f7`, … 59990 more …, `f59998`, `f59999`"
        );
        assert_eq!(super::listed(&items[..12]), items[..12].join(", "));
        // Past the budget of a check, no more hints; a new check has it whole again.
        reset_suggestion_budget();
        let many: Vec<String> = (0..SUGGESTION_BUDGET - 1)
            .map(|i| format!("v{i}"))
            .collect();
        assert_eq!(suggest("zzzzz", many.iter().map(String::as_str)), None);
        // One left: a list of two is weighed not at all, not in part.
        assert_eq!(suggest("pirnt", names.iter().copied()), None);
        assert_eq!(suggest("pirnt", names.iter().copied()), None);
        reset_suggestion_budget();
        assert_eq!(suggest("pirnt", names.iter().copied()), Some("print"));
    }
}
