//! Typing of the built-in functions (LANGUAGE.md §11). Each call is checked here and
//! resolved to one entry of the builtin catalogue (`wo_bytecode::builtins`), picking the
//! typed variant (`len_text`, `len_list`, `len_map` …) so the VM never dispatches on a
//! static type; `int`, `float` and `unwrap` become instructions.

use super::{assignable, did_you_mean, suggest, Checker};
use crate::ast;
use crate::diag::{Diagnostic, Span};
use crate::tir::{Expr, ExprKind as E, Ty, UnOp};

/// Core functions callable without `use`.
pub const CORE: &[&str] = &[
    "print",
    "print_err",
    "len",
    "text",
    "int",
    "float",
    "parse_int",
    "parse_float",
    "abs",
    "min",
    "max",
    "unwrap",
    "fail",
    "assert",
    "exit",
    "substr",
    "index_of",
    "contains",
    "starts_with",
    "ends_with",
    "split",
    "join",
    "trim",
    "to_upper",
    "to_lower",
    "replace",
    "repeat",
    "chars",
    "ord",
    "chr",
    "pad_left",
    "pad_right",
    "to_fixed",
    "push",
    "pop",
    "remove_at",
    "insert_at",
    "slice",
    "sort",
    "reverse",
    "has",
    "get",
    "set",
    "remove",
    "keys",
    "values",
    "count",
    "exists",
    "sum",
    "avg",
    "first",
    "yield",
    "range",
];

pub(crate) fn is_builtin(name: &str) -> bool {
    CORE.contains(&name)
}

fn list_of(t: Ty) -> Ty {
    Ty::List(Box::new(t))
}

/// The expected type of argument `i` given the arguments checked before it, so that
/// `push(xs, [])` or `set(m, k, {})` can type their literals.
fn expected(name: &str, i: usize, prev: &[Expr]) -> Option<Ty> {
    let first = prev.first().map(|e| e.ty.strip().clone());
    match (name, i, first) {
        ("push" | "contains", 1, Some(Ty::List(t))) => Some(*t),
        ("insert_at", 2, Some(Ty::List(t))) => Some(*t),
        ("has" | "get" | "remove" | "set", 1, Some(Ty::Map(k, _))) => Some(*k),
        ("set", 2, Some(Ty::Map(_, v))) => Some(*v),
        ("substr" | "remove_at" | "insert_at" | "slice" | "repeat", 1.., _) => Some(Ty::Int),
        ("pad_left" | "pad_right" | "to_fixed", 1, _) | ("chr", 0, _) => Some(Ty::Int),
        ("to_fixed", 0, _) => Some(Ty::Float),
        ("join", 0, _) => Some(list_of(Ty::Text)),
        (_, _, _) => None,
    }
}

fn builtin(name: &'static str, args: Vec<Expr>, ty: Ty, span: Span) -> Expr {
    Expr::new(E::Builtin { name, args }, ty, span)
}

/// The builtin that other languages' name for it means (Python's `str`, `upper`,
/// `startswith`, `append`; JavaScript's `toUpperCase`, `indexOf`, `includes`; Lua's
/// `tostring`), for a note on an unknown function, method or field.
pub(crate) fn habit(name: &str) -> Option<&'static str> {
    Some(match name {
        "str" | "string" | "tostring" | "toString" | "to_string" | "String" => "text",
        "upper" | "uppercase" | "toUpperCase" | "toupper" => "to_upper",
        "lower" | "lowercase" | "toLowerCase" | "tolower" => "to_lower",
        "strip" | "trim_space" => "trim",
        "startswith" | "startsWith" | "hasPrefix" => "starts_with",
        "endswith" | "endsWith" | "hasSuffix" => "ends_with",
        "find" | "indexOf" | "index" => "index_of",
        "includes" => "contains",
        "append" | "add" => "push",
        "length" | "size" | "count" => "len",
        "parseInt" | "parseint" | "atoi" => "parse_int",
        "parseFloat" | "parsefloat" | "atof" => "parse_float",
        "println" | "puts" | "echo" | "printf" => "print",
        "substring" => "substr",
        _ => return None,
    })
}

/// Whether `b`, a builtin of [`habit`], takes a first argument of type `first` (`None`:
/// no argument; an unknown type fits anything).
fn habit_fits(b: &str, first: Option<&Ty>) -> bool {
    let Some(t) = first else {
        return true;
    };
    let t = match t {
        Ty::Nullable(inner) => inner,
        t => t,
    };
    match (b, t) {
        (_, Ty::Unknown | Ty::Error) => true,
        ("push", t) => matches!(t, Ty::List(_)),
        ("len", t) => matches!(t, Ty::Text | Ty::List(_) | Ty::Map(..)),
        ("index_of" | "contains", t) => matches!(t, Ty::Text | Ty::List(_)),
        (
            "to_upper" | "to_lower" | "trim" | "starts_with" | "ends_with" | "parse_int"
            | "parse_float" | "substr",
            t,
        ) => matches!(t, Ty::Text),
        _ => true,
    }
}

pub(crate) fn call(
    c: &mut Checker<'_>,
    name: &str,
    name_span: Span,
    args: &[ast::Expr],
    span: Span,
    _expect: Option<&Ty>,
) -> Expr {
    if !is_builtin(name) && c.broken_declaration(name) {
        for a in args {
            c.expr(a, None);
        }
        return c.unknown(span);
    }
    if !is_builtin(name) {
        // The arguments first: another language's name is told only when the first
        // argument is what wo's builtin takes (helper-90: `add(1, 2)` was told `push`).
        // The diagnostic goes before theirs, in source order.
        let at = c.diags.len();
        let first = args
            .iter()
            .map(|a| c.expr(a, None).ty)
            .reduce(|first, _| first);
        let mut d = Diagnostic::error("name", name_span, format!("unknown function `{name}`"));
        if let Some(how) = c.self_method(name) {
            // A method of the object, called bare from another method (helper-96).
            d = d.with_note(how);
        } else if let Some(m) = module_of(name) {
            d = d.with_note(format!("did you mean `{m}.{name}(…)` (with `use {m}`)?"));
        } else if matches!(name, "throw" | "raise") {
            // `throw(1)`, `raise(ValueError(…))` (helper-82).
            d = d.with_note(format!(
                "wo has no `throw` or `raise`: {}",
                crate::diag::RAISE_HOW
            ));
        } else if matches!(name, "await" | "wait") {
            d = d.with_note("a task is waited for with `join`: `join(t)` gives its result");
        } else if matches!(name, "go" | "async" | "thread" | "start") {
            d = d.with_note("a task is started with `spawn`: `let t = spawn f(x)`");
        } else if matches!(name, "tonumber" | "Number" | "number") {
            // Lua's and JavaScript's (helper-67).
            d = d.with_note(
                "a number is read from a Text with `parse_int(t)` or `parse_float(t)` (nil when it is not one)",
            );
        } else if matches!(name, "sorted" | "reversed") {
            // Python's, which return a new list; wo's sort and reverse in place.
            let inplace = if name == "sorted" { "sort" } else { "reverse" };
            d = d.with_note(format!(
                "`{inplace}(xs)` changes the list in place and gives nothing: for a new list, copy it first, `let ys = slice(xs, 0, len(xs))`, then `{inplace}(ys)`"
            ));
        } else if matches!(name, "pairs" | "ipairs" | "enumerate" | "items") {
            d = d.with_note(
                "a map is walked with `for k, v in m { … }`; a list with its indexes with `for i in range(len(xs)) { … }`",
            );
        } else {
            // The program's own functions first (`add` with an `ad` declared), then
            // other languages' names for builtins, then the builtins.
            let own = suggest(name, c.func_index.keys().map(String::as_str));
            if let Some(s) = own {
                d = d.with_note(format!("did you mean `{s}`?"));
            } else if let Some(b) = habit(name) {
                // Not fitting, not a misspelling of another builtin either.
                if habit_fits(b, first.as_ref()) {
                    d = d.with_note(format!("wo's name for it is `{b}`: `{b}(…)`"));
                }
            } else if let Some(s) = suggest(name, CORE.iter().copied()) {
                d = d.with_note(format!("did you mean `{s}`?"));
            }
        }
        c.diags.insert(at, d);
        return c.unknown(span);
    }
    let mut checked: Vec<Expr> = Vec::new();
    if let (
        ["count" | "exists" | "sum" | "min" | "max" | "avg" | "first"],
        [ast::Expr {
            kind: ast::ExprKind::Query(q),
            span: qspan,
        }],
    ) = (&[name][..], args)
    {
        match c.aggregate_arg(name, q, *qspan) {
            super::table::AggArg::Engine(mut agg) => {
                agg.span = span;
                return agg;
            }
            super::table::AggArg::List(list) => checked.push(list),
        }
    }
    for (i, a) in args.iter().enumerate().skip(checked.len()) {
        let want = expected(name, i, &checked);
        let v = c.expr(a, want.as_ref());
        if v.ty == Ty::Void {
            c.err("type", a.span, "this expression has no value");
        }
        checked.push(v);
    }
    if checked.iter().any(|e| e.ty.has_unknown()) {
        return c.unknown(span);
    }
    // A `?T` argument where a `T` would do (`len(io.read_line())`, helper-89) gets the
    // note a `let s: Text = …` gets; the arguments are kept for that question only
    // when one may be nil.
    let nullable = checked
        .iter()
        .any(|e| matches!(e.ty, Ty::Nullable(_)))
        .then(|| checked.clone());
    match resolve(c, name, checked, span) {
        Ok(e) => e,
        Err(msg) => {
            let mut d = Diagnostic::error("type", span, msg);
            if let Some(note) = nullable.and_then(|args| nil_would_do(c, name, args, span)) {
                d = d.with_note(note);
            }
            // Python's and Lua's `print(a, b)`.
            if matches!(name, "print" | "print_err") && args.len() > 1 {
                d = d.with_note(format!(
                    "`{name}` takes one value; to print several on a line, interpolate them: `{name}(\"${{a}} ${{b}}\")`"
                ));
            }
            c.diags.push(d);
            c.unknown(span)
        }
    }
}

/// When the builtin `name` would take `args` with their `?` types made plain, the
/// note on the first that may be nil.
fn nil_would_do(
    c: &mut Checker<'_>,
    name: &str,
    mut args: Vec<Expr>,
    span: Span,
) -> Option<String> {
    let first = args.iter().position(|e| matches!(e.ty, Ty::Nullable(_)))?;
    let note = c.nil_note_of(
        &args[first],
        "a `?T` may be nil: narrow it with `if x != nil { … }`, or use `x ?? default` or `unwrap(x)`",
    );
    for e in &mut args {
        if let Ty::Nullable(inner) = &e.ty {
            e.ty = (**inner).clone();
        }
    }
    let before = c.diags.len();
    let fits = resolve(c, name, args, span).is_ok();
    c.diags.truncate(before);
    fits.then_some(note)
}

/// Every function of the standard modules, for "did you mean" hints.
pub const MODULE_FUNCTIONS: &[(&str, &str)] = &[
    ("time", "ticks"),
    ("time", "now"),
    ("time", "sleep"),
    ("math", "sqrt"),
    ("math", "floor"),
    ("math", "ceil"),
    ("math", "round"),
    ("math", "pow"),
    ("env", "get"),
    ("fs", "read_text"),
    ("fs", "write_text"),
    ("fs", "exists"),
    ("random", "seed"),
    ("random", "int"),
    ("random", "float"),
    ("io", "read_line"),
    ("io", "read_all"),
    ("io", "write"),
];

fn module_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "ticks" | "now" | "sleep" => "time",
        "sqrt" | "floor" | "ceil" | "round" | "pow" => "math",
        "read_text" | "write_text" => "fs",
        "seed" => "random",
        "read_line" | "read_all" | "write" => "io",
        _ => return None,
    })
}

/// Describes the argument types for an error message.
fn sig(c: &Checker<'_>, args: &[Expr]) -> String {
    args.iter()
        .map(|a| c.tyname(&a.ty))
        .collect::<Vec<_>>()
        .join(", ")
}

fn resolve(c: &mut Checker<'_>, name: &str, mut a: Vec<Expr>, span: Span) -> Result<Expr, String> {
    use Ty::*;
    let n = a.len();
    let tys: Vec<Ty> = a.iter().map(|e| e.ty.clone()).collect();
    let arity = |want: usize| -> Result<(), String> {
        if n == want {
            Ok(())
        } else {
            let s = if want == 1 { "" } else { "s" };
            Err(format!("`{name}` takes {want} argument{s}, found {n}"))
        }
    };
    let bad =
        |c: &Checker<'_>, a: &[Expr]| -> String { format!("`{name}` cannot take ({})", sig(c, a)) };
    let elem = |t: &Ty| -> Option<Ty> {
        match t {
            List(e) => Some((**e).clone()),
            _ => None,
        }
    };
    let r = |bname: &'static str, a: Vec<Expr>, ty: Ty| Ok(builtin(bname, a, ty, span));
    match name {
        "print" | "print_err" | "text" => {
            arity(1)?;
            let (b, ty) = match name {
                "print" => ("print", Void),
                "print_err" => ("print_err", Void),
                _ => ("text", Text),
            };
            r(b, a, ty)
        }
        "len" => {
            arity(1)?;
            match &tys[0] {
                Text => r("len_text", a, Int),
                List(_) => r("len_list", a, Int),
                Map(..) => r("len_map", a, Int),
                _ => Err(format!(
                    "`len` takes Text, a list or a map, found {}",
                    c.tyname(&tys[0])
                )),
            }
        }
        "int" | "float" => {
            arity(1)?;
            let (from, op, to) = if name == "int" {
                (Float, UnOp::FloatToInt, Int)
            } else {
                (Int, UnOp::IntToFloat, Float)
            };
            if tys[0] != from {
                // Python's `int("42")` (helper-80).
                // A `?Text` too: `int(io.read_line())` (helper-89).
                let hint = if tys[0] == Text || tys[0] == Ty::nullable(Text) {
                    format!("; a number is read from a Text with `parse_{name}(t)`, nil when it is not one: `parse_{name}(t) ?? 0`")
                } else {
                    String::new()
                };
                return Err(format!(
                    "`{name}` takes {}, found {}{hint}",
                    c.tyname(&from),
                    c.tyname(&tys[0])
                ));
            }
            let arg = a.pop().ok_or("missing argument")?;
            Ok(Expr::new(E::Unary(op, Box::new(arg)), to, span))
        }
        "unwrap" => {
            arity(1)?;
            let arg = a.pop().ok_or("missing argument")?;
            let ty = match &arg.ty {
                Nil => return Err("`unwrap(nil)` always traps".into()),
                t => t.strip().clone(),
            };
            Ok(Expr::new(E::Unary(UnOp::Unwrap, Box::new(arg)), ty, span))
        }
        "parse_int" | "parse_float" => {
            arity(1)?;
            if tys[0] != Text {
                return Err(bad(c, &a));
            }
            if name == "parse_int" {
                r("parse_int", a, Ty::nullable(Int))
            } else {
                r("parse_float", a, Ty::nullable(Float))
            }
        }
        "abs" => {
            arity(1)?;
            match tys[0] {
                Int => r("abs_int", a, Int),
                Float => r("abs_float", a, Float),
                _ => Err(bad(c, &a)),
            }
        }
        "min" | "max" => {
            let is_min = name == "min";
            match n {
                1 => match elem(&tys[0]).map(|t| t.strip().clone()) {
                    Some(t @ (Int | Float | Text)) => {
                        r(if is_min { "min_list" } else { "max_list" }, a, Ty::nullable(t))
                    }
                    _ => Err(format!(
                        "`{name}` of one argument takes a list of Int, Float or Text, found {}",
                        c.tyname(&tys[0])
                    )),
                },
                2 => match (&tys[0], &tys[1]) {
                    (Int, Int) => r(if is_min { "min_int" } else { "max_int" }, a, Int),
                    (Float, Float) => r(if is_min { "min_float" } else { "max_float" }, a, Float),
                    (Text, Text) => r(if is_min { "min_text" } else { "max_text" }, a, Text),
                    _ => Err(format!("`{name}` takes two values of the same type (Int, Float or Text), found ({})", sig(c, &a))),
                },
                _ => Err(format!("`{name}` takes 1 or 2 arguments, found {n}")),
            }
        }
        "fail" => {
            arity(1)?;
            if tys[0] != Text {
                return Err(bad(c, &a));
            }
            r("fail", a, Void)
        }
        "assert" => match n {
            1 if tys[0] == Bool => r("assert", a, Void),
            2 if tys[0] == Bool && tys[1] == Text => r("assert_msg", a, Void),
            1 | 2 => Err(format!(
                "`assert` takes (Bool) or (Bool, Text), found ({})",
                sig(c, &a)
            )),
            _ => Err(format!("`assert` takes 1 or 2 arguments, found {n}")),
        },
        "exit" => {
            arity(1)?;
            if tys[0] != Int {
                return Err(bad(c, &a));
            }
            r("exit", a, Void)
        }
        "substr" => {
            arity(3)?;
            if tys != [Text, Int, Int] {
                return Err(format!(
                    "`substr` takes (Text, Int, Int), found ({})",
                    sig(c, &a)
                ));
            }
            r("substr", a, Text)
        }
        "index_of" | "starts_with" | "ends_with" => {
            arity(2)?;
            if tys != [Text, Text] {
                return Err(format!(
                    "`{name}` takes (Text, Text), found ({})",
                    sig(c, &a)
                ));
            }
            match name {
                "index_of" => r("index_of", a, Int),
                "starts_with" => r("starts_with", a, Bool),
                _ => r("ends_with", a, Bool),
            }
        }
        "contains" => {
            arity(2)?;
            match &tys[0] {
                Text if tys[1] == Text => r("contains_text", a, Bool),
                List(e) if assignable(&tys[1], e) => {
                    // `contains` finds an element equal to the value, by `==`: what
                    // `==` refuses to compare, `contains` refuses to look for.
                    if !(super::types::ty_is_comparable_eq(e) || c.table_of(e.strip()).is_some()) {
                        let what = super::types::uncomparable_plural(e);
                        return Err(format!(
                            "`contains` compares elements with `==`, which cannot compare two \
                             {what}; look for the element by what makes it the one you want \
                             (`for x in xs {{ if x.name == name {{ … }} }}`)"
                        ));
                    }
                    r("contains_list", a, Bool)
                }
                Map(..) => Err(format!(
                    "`contains` takes (Text, Text) or (multi T, T), found ({}); a map's keys are tested with `has(m, k)`",
                    sig(c, &a)
                )),
                _ => Err(format!(
                    "`contains` takes (Text, Text) or (multi T, T), found ({})",
                    sig(c, &a)
                )),
            }
        }
        "split" => {
            arity(2)?;
            if tys != [Text, Text] {
                return Err(format!(
                    "`split` takes (Text, Text), found ({})",
                    sig(c, &a)
                ));
            }
            r("split", a, list_of(Text))
        }
        "join" => {
            arity(2)?;
            if tys[0] != list_of(Text) || tys[1] != Text {
                // `join(xs, ", ")` of numbers (helper-80): their texts first.
                let texts = match &tys[0] {
                    List(e) if tys[1] == Text && matches!(**e, Int | Float | Bool) => {
                        let (xs, sep) = (
                            c.short_text(a[0].span, "xs"),
                            c.short_text(a[1].span, "sep"),
                        );
                        // The query's variable differs from every name in the list's
                        // text (`from x in x` would compile, but reads badly), and a
                        // query as the source is parenthesized (LANGUAGE.md §6).
                        let xs = if xs.starts_with("from ") {
                            format!("({xs})")
                        } else {
                            xs.to_owned()
                        };
                        let v = super::names::unused_name(&["x", "v", "item"], &[&xs]);
                        format!(
                            "; join their texts: `join(from {v} in {xs} select text({v}), {sep})`"
                        )
                    }
                    _ => String::new(),
                };
                return Err(format!(
                    "`join` takes (multi Text, Text), or one task, found ({}){texts}",
                    sig(c, &a)
                ));
            }
            r("join", a, Text)
        }
        "trim" | "to_upper" | "to_lower" => {
            arity(1)?;
            if tys[0] != Text {
                return Err(bad(c, &a));
            }
            let b = match name {
                "trim" => "trim",
                "to_upper" => "to_upper",
                _ => "to_lower",
            };
            r(b, a, Text)
        }
        "replace" => {
            arity(3)?;
            if tys != [Text, Text, Text] {
                return Err(format!(
                    "`replace` takes (Text, Text, Text), found ({})",
                    sig(c, &a)
                ));
            }
            r("replace", a, Text)
        }
        "repeat" => {
            arity(2)?;
            if tys != [Text, Int] {
                return Err(format!(
                    "`repeat` takes (Text, Int), found ({})",
                    sig(c, &a)
                ));
            }
            r("repeat", a, Text)
        }
        "chars" | "ord" => {
            arity(1)?;
            if tys[0] != Text {
                return Err(bad(c, &a));
            }
            if name == "chars" {
                r("chars", a, list_of(Text))
            } else {
                r("ord", a, Int)
            }
        }
        "chr" => {
            arity(1)?;
            if tys[0] != Int {
                return Err(bad(c, &a));
            }
            r("chr", a, Text)
        }
        "pad_left" | "pad_right" => {
            arity(2)?;
            if tys != [Text, Int] {
                return Err(format!(
                    "`{name}` takes (Text, Int), found ({})",
                    sig(c, &a)
                ));
            }
            r(
                if name == "pad_left" {
                    "pad_left"
                } else {
                    "pad_right"
                },
                a,
                Text,
            )
        }
        "to_fixed" => {
            arity(2)?;
            if tys != [Float, Int] {
                return Err(format!(
                    "`to_fixed` takes (Float, Int), found ({})",
                    sig(c, &a)
                ));
            }
            r("to_fixed", a, Text)
        }
        "push" | "pop" | "remove_at" | "insert_at" | "slice" | "sort" | "reverse" | "count"
        | "exists" | "first" | "sum" | "avg" => {
            let want = match name {
                "push" | "remove_at" => 2,
                "insert_at" | "slice" => 3,
                _ => 1,
            };
            arity(want)?;
            let Some(e) = elem(&tys[0]) else {
                let what = if matches!(name, "count" | "exists" | "first" | "sum" | "avg") {
                    "a list or a query"
                } else {
                    "a list as its first argument"
                };
                return Err(format!(
                    "`{name}` takes {what}, found {}",
                    c.tyname(&tys[0])
                ));
            };
            let int_args_ok = |from: usize, to: usize| tys[from..to].iter().all(|t| *t == Int);
            match name {
                "push" if assignable(&tys[1], &e) => r("push", a, Void),
                "pop" => r("pop", a, Ty::nullable(e)),
                "remove_at" if int_args_ok(1, 2) => r("remove_at", a, e),
                "insert_at" if int_args_ok(1, 2) && assignable(&tys[2], &e) => {
                    r("insert_at", a, Void)
                }
                "slice" if int_args_ok(1, 3) => r("slice", a, tys[0].clone()),
                "sort" if matches!(e, Int | Float | Text) => r("sort", a, Void),
                "sort" => Err(format!(
                    "`sort` sorts lists of Int, Float or Text, found {}",
                    c.tyname(&tys[0])
                )),
                "reverse" => r("reverse", a, Void),
                "count" => r("count", a, Int),
                "exists" => r("exists", a, Bool),
                "first" => r("first", a, Ty::nullable(e)),
                // nil elements (`multi ?Int`) are skipped, as SQL's aggregates skip NULL.
                "sum" if *e.strip() == Int => r("sum_int", a, Int),
                "sum" if *e.strip() == Float => r("sum_float", a, Float),
                "avg" if *e.strip() == Int => r("avg_int", a, Ty::nullable(Float)),
                "avg" if *e.strip() == Float => r("avg_float", a, Ty::nullable(Float)),
                "sum" | "avg" => Err(format!(
                    "`{name}` takes a list of Int or Float, found {}",
                    c.tyname(&tys[0])
                )),
                _ => Err(bad(c, &a)),
            }
        }
        "has" | "get" | "set" | "remove" | "keys" | "values" => {
            let want = match name {
                "set" => 3,
                "keys" | "values" => 1,
                _ => 2,
            };
            arity(want)?;
            let (k, v) = match &tys[0] {
                Map(k, v) => ((**k).clone(), (**v).clone()),
                _ => {
                    return Err(format!(
                        "`{name}` takes a map first, found {}",
                        c.tyname(&tys[0])
                    ))
                }
            };
            if want >= 2 && !assignable(&tys[1], &k) {
                return Err(format!(
                    "`{name}` needs a key of type {}, found {}",
                    c.tyname(&k),
                    c.tyname(&tys[1])
                ));
            }
            match name {
                "has" => r("has", a, Bool),
                "get" => r("get", a, v),
                "set" if assignable(&tys[2], &v) => r("set", a, Void),
                "set" => Err(format!(
                    "`set` needs a value of type {}, found {}",
                    c.tyname(&v),
                    c.tyname(&tys[2])
                )),
                "remove" => r("remove", a, Void),
                "keys" => r("keys", a, list_of(k)),
                _ => r("values", a, list_of(v)),
            }
        }
        "range" => {
            if !(1..=3).contains(&n) {
                return Err(format!("`range` takes 1 to 3 arguments, found {n}"));
            }
            if tys.iter().any(|t| *t != Int) {
                let hint = match &tys[..] {
                    [List(_) | Map(..) | Text] => {
                        "; to go over the elements of a list, a map or a text, write `for x in …` without `range`"
                    }
                    _ => "",
                };
                return Err(format!(
                    "`range` takes Int arguments, found ({}){hint}",
                    sig(c, &a)
                ));
            }
            let int = |v: i64| Expr::new(E::Int(v), Int, span);
            if n == 1 {
                a.insert(0, int(0));
            }
            if a.len() == 2 {
                a.push(int(1));
            }
            r("range", a, list_of(Int))
        }
        "yield" => {
            arity(0)?;
            r("yield", a, Void)
        }
        _ => Err(format!("unknown function `{name}`")),
    }
}

/// `time.ticks()`, `math.sqrt(x)` …: fixed signatures.
pub(crate) fn module_call(
    c: &mut Checker<'_>,
    module: &str,
    method: &ast::Ident,
    args: &[ast::Expr],
    span: Span,
    _expect: Option<&Ty>,
) -> Expr {
    use Ty::*;
    let f = Float;
    let sig: Option<(&'static str, Vec<Ty>, Ty)> = match (module, method.name.as_str()) {
        ("time", "ticks") => Some(("time.ticks", vec![], Int)),
        ("time", "now") => Some(("time.now", vec![], Int)),
        ("time", "sleep") => Some(("time.sleep", vec![Int], Void)),
        ("math", "sqrt") => Some(("math.sqrt", vec![f.clone()], f.clone())),
        ("math", "floor") => Some(("math.floor", vec![f.clone()], f.clone())),
        ("math", "ceil") => Some(("math.ceil", vec![f.clone()], f.clone())),
        ("math", "round") => Some(("math.round", vec![f.clone()], f.clone())),
        ("math", "pow") => Some(("math.pow", vec![f.clone(), f.clone()], f.clone())),
        ("env", "get") => Some(("env.get", vec![Text], Ty::nullable(Text))),
        ("fs", "read_text") => Some(("fs.read_text", vec![Text], Text)),
        ("fs", "write_text") => Some(("fs.write_text", vec![Text, Text], Void)),
        ("fs", "exists") => Some(("fs.exists", vec![Text], Bool)),
        ("random", "seed") => Some(("random.seed", vec![Int], Void)),
        ("random", "int") => Some(("random.int", vec![Int, Int], Int)),
        ("random", "float") => Some(("random.float", vec![], f)),
        ("io", "read_line") => Some(("io.read_line", vec![], Ty::nullable(Text))),
        ("io", "read_all") => Some(("io.read_all", vec![], Text)),
        ("io", "write") => {
            // Like `print`: a value of any type.
            if args.len() != 1 {
                let n = args.len();
                c.err(
                    "arity",
                    span,
                    format!("`io.write` takes 1 argument, found {n}"),
                );
                for a in args {
                    c.expr(a, None);
                }
                return c.unknown(span);
            }
            let v = c.expr(&args[0], None);
            if v.ty == Ty::Void {
                c.err("type", args[0].span, "this expression has no value");
            }
            return builtin("io.write", vec![v], Void, span);
        }
        _ => None,
    };
    let Some((bname, params, ret)) = sig else {
        c.err(
            "name",
            method.span,
            format!(
                "module `{module}` has no function `{}`{}",
                method.name,
                match (module, method.name.as_str()) {
                    // Lua's `io.lines`, `io.read`; Python's `readline`, `input`
                    // (helper-67).
                    ("io", "lines" | "read" | "readline" | "readlines" | "input" | "stdin") => {
                        "; a line is read with `io.read_line()` (nil at the end of the input), all of the input with `io.read_all()`".to_string()
                    }
                    // JavaScript's `Math.max`, Python's `math.fabs` (helper-80).
                    ("math", f @ ("abs" | "max" | "min" | "fabs")) => {
                        let core = if f == "fabs" { "abs" } else { f };
                        format!("; `{core}` is a core function, used without a module: `{core}(…)`")
                    }
                    // Lua's `io.write` has a `print` beside it; Python's `print` is not
                    // in a module (helper-89).
                    ("io", "print" | "println" | "puts" | "printf") => {
                        "; `print(x)` is a core function, used without a module (it ends the line); `io.write(t)` writes a Text as it is".to_string()
                    }
                    // Python's `time.time()`.
                    ("time", "time" | "clock" | "monotonic" | "perf_counter" | "millis") => {
                        "; the clock is read with `time.now()` (milliseconds since 1970) or `time.ticks()` (microseconds, monotonic)".to_string()
                    }
                    _ => did_you_mean(
                        &method.name,
                        MODULE_FUNCTIONS
                            .iter()
                            .filter(|(m, _)| *m == module)
                            .map(|(_, f)| *f),
                    ),
                }
            ),
        );
        for a in args {
            c.expr(a, None);
        }
        return c.unknown(span);
    };
    let a = c.call_args(bname, &params, args, span);
    builtin(bname, a, ret, span)
}
