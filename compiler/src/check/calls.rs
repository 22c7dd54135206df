//! Calls of functions and methods.

use super::{builtin, did_you_mean, Checker, MODULES};
use crate::ast::{self, ExprKind as A};
use crate::diag::{Diagnostic, Span};
use crate::facts::Target;
use crate::tir::{Expr, ExprKind as E, Ty};

impl<'a> Checker<'a> {
    pub(super) fn call(
        &mut self,
        callee: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
        expect: Option<&Ty>,
    ) -> Expr {
        if let Some(&f) = self.func_index.get(&callee.name) {
            self.note_func(callee.span, f);
            let params: Vec<Ty> = self.funcs[f]
                .params
                .iter()
                .map(|(_, t)| t.clone())
                .collect();
            let ret = self.funcs[f].ret.clone();
            let args = self.call_args(&callee.name, &params, args, span);
            return Expr::new(E::Call { func: f, args }, ret, span);
        }
        // A call names a function, never a local (no local can be called): a built-in
        // is called whatever local shares its name, as a function of the program is.
        if callee.name == "join" && args.len() == 1 {
            self.note_ref(callee.span, None, Target::Builtin("join".to_string()));
            return self.join(&args[0], span);
        }
        if self.lookup_local(&callee.name).is_some() && !builtin::is_builtin(&callee.name) {
            self.err(
                "name",
                callee.span,
                format!("`{}` is a variable, not a function", callee.name),
            );
            for a in args {
                self.expr(a, None);
            }
            return self.unknown(span);
        }
        if builtin::is_builtin(&callee.name) {
            let target = Target::Builtin(callee.name.clone());
            self.note_ref(callee.span, None, target);
        }
        builtin::call(self, &callee.name, callee.span, args, span, expect)
    }

    /// Checks call arguments against parameter types.
    pub(super) fn call_args(
        &mut self,
        name: &str,
        params: &[Ty],
        args: &[ast::Expr],
        span: Span,
    ) -> Vec<Expr> {
        if params.len() != args.len() {
            let s = if params.len() == 1 { "" } else { "s" };
            self.err(
                "arity",
                span,
                format!(
                    "`{name}` takes {} argument{s}, found {}",
                    params.len(),
                    args.len()
                ),
            );
        }
        let mut out = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let want = params.get(i);
            let v = self.expr(a, want);
            if let Some(t) = want {
                self.expect_assignable(&v, t, a.span);
            }
            out.push(v);
        }
        out
    }

    pub(super) fn method_call(
        &mut self,
        recv: &ast::Expr,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
        expect: Option<&Ty>,
    ) -> Expr {
        if let A::Name(m) = &recv.kind {
            if self.lookup_local(m).is_none() && MODULES.contains(&m.as_str()) {
                self.note_ref(recv.span, None, Target::Module(m.clone()));
                let target = Target::Builtin(format!("{m}.{}", method.name));
                self.note_ref(method.span, None, target);
                if !self.uses.contains(m) {
                    self.err(
                        "use",
                        recv.span,
                        format!(
                            "`{m}.{}` needs `use {m}` at the top of the file",
                            method.name
                        ),
                    );
                }
                return builtin::module_call(self, m, method, args, span, expect);
            }
        }
        // A constant's name is capitalized as a class's is: `NAMES.push(x)` calls a
        // method on the constant's value (helper: it said "unknown class `NAMES`").
        let constant = matches!(&recv.kind, A::TypeName(t) if self.global_index.contains_key(t));
        if let (A::TypeName(t), false) = (&recv.kind, constant) {
            if let Some(&cid) = self.class_index.get(t) {
                self.note_class(recv.span, cid);
                return self.find(t, method, args, span);
            } else {
                if !self.broken_declaration(t) {
                    // `BOXE.get()` may be a misspelt constant as well as a class.
                    let names = self.class_names.iter().map(String::as_str);
                    let lower = t.to_ascii_lowercase();
                    let hint = if MODULES.contains(&lower.as_str()) {
                        // JavaScript's `Math.floor(x)` (helper-80).
                        format!("; did you mean the module `{lower}` (with `use {lower}`)?")
                    } else {
                        did_you_mean(t, names.chain(self.global_index.keys().map(String::as_str)))
                    };
                    self.err(
                        "name",
                        recv.span,
                        format!("unknown class or constant `{t}`{hint}"),
                    );
                }
            }
            for a in args {
                self.expr(a, None);
            }
            return self.unknown(span);
        }
        let obj = self.expr(recv, None);
        match obj.ty.clone() {
            Ty::Class(c) => {
                let Some(&(_, f)) = self.classes[c]
                    .methods
                    .iter()
                    .find(|(n, _)| *n == method.name)
                else {
                    let cname = self.classes[c].name.clone();
                    if self.classes[c].fields.iter().any(|f| f.name == method.name) {
                        self.err(
                            "name",
                            method.span,
                            format!("`{}` is a field of `{cname}`, not a method", method.name),
                        );
                    } else if !self.broken_declaration(&format!("{cname}.{}", method.name)) {
                        self.err(
                            "name",
                            method.span,
                            format!(
                                "class `{cname}` has no method `{}`{}",
                                method.name,
                                did_you_mean(
                                    &method.name,
                                    self.classes[c].methods.iter().map(|(m, _)| m.as_str())
                                )
                            ),
                        );
                    }
                    for a in args {
                        self.expr(a, None);
                    }
                    return self.unknown(span);
                };
                self.note_func(method.span, f);
                let params: Vec<Ty> = self.funcs[f].params[1..]
                    .iter()
                    .map(|(_, t)| t.clone())
                    .collect();
                let ret = self.funcs[f].ret.clone();
                let name = self.funcs[f].name.clone();
                let mut all = vec![obj];
                all.extend(self.call_args(&name, &params, args, span));
                Expr::new(E::Call { func: f, args: all }, ret, span)
            }
            Ty::Unknown => {
                for a in args {
                    self.expr(a, None);
                }
                self.unknown(span)
            }
            t => {
                let ts = self.tyname(&t);
                let mut d = Diagnostic::error(
                    "type",
                    method.span,
                    format!("a value of type {ts} has no method `{}`", method.name),
                );
                if matches!(t, Ty::Nullable(_)) {
                    d = d.with_note(self.nil_note_of(
                        &obj,
                        "a `?T` may be nil: narrow it with `if x != nil { … }` first",
                    ));
                } else if let Some(m) = builtin::is_builtin(&method.name)
                    .then_some(method.name.as_str())
                    .or_else(|| builtin::habit(&method.name))
                {
                    let x = self.short_text(obj.span, "x");
                    let arg =
                        |i: usize| args.get(i).map_or("…", |a| self.short_text(a.span, "…"));
                    if let Some(note) = method_note(&t, &method.name, m, x, args.len(), arg) {
                        d = d.with_note(note);
                    }
                }
                self.diags.push(d);
                for a in args {
                    self.expr(a, None);
                }
                self.unknown(span)
            }
        }
    }
}

/// The note for a method call `x.name(args)` on a value of type `t` that wo writes as
/// the function `m` (`name` itself, or another language's name for it): how to write
/// it, where the function takes the value first, or what does the job where it does
/// not (helper-80: `" ".join(xs)` was told `join(" ", …)`, `s.count("a")`
/// `count(s, …)`, and following either was another error). `arg(i)` is the text of
/// argument `i`.
fn method_note<'a>(
    t: &Ty,
    name: &str,
    m: &str,
    x: &str,
    n_args: usize,
    arg: impl Fn(usize) -> &'a str,
) -> Option<String> {
    let rest = if n_args == 0 { "" } else { ", …" };
    // `count` counts a query's rows: `xs.count()` is a length (Java's `count()`).
    let m = if name == "count" { "len" } else { m };
    Some(match (t, m) {
        // A map takes neither `push` nor `contains` (helper-71).
        (Ty::Map(..), "push") => format!("a map's entry is set with `{x}[k] = v`"),
        (Ty::Map(..), "contains") => format!("a map's keys are tested with `has({x}, k)`"),
        // Python's `d.get(k, default)`; `get(m, k)` traps where `d.get(k)` gives None.
        (Ty::Map(..), "get") if n_args >= 2 => format!(
            "`{x}[{}] ?? {}` is the value, or the default when the key is absent",
            arg(0),
            arg(1)
        ),
        (Ty::Map(..), "get") => format!(
            "`{x}[{}]` is the value, or nil when the key is absent (`get({x}, k)` traps `KEY` then)",
            arg(0)
        ),
        // Python's `sep.join(xs)`: the list comes first.
        (Ty::Text, "join") if n_args == 1 => {
            format!("`join` takes the list first: write `join({}, {x})`", arg(0))
        }
        // Python's `s.count(t)` and `xs.count(v)`, where `count` is not a length.
        (Ty::Text, "len") if name == "count" && n_args == 1 => format!(
            "wo has no count of a Text's occurrences: `len(split({x}, {})) - 1` counts them",
            arg(0)
        ),
        (Ty::List(_), "len") if name == "count" && n_args == 1 => {
            // The query's variable must not hide a name of the argument (helper-82:
            // `xs.count(v)` was told `from v in xs where v == v`, which counts all).
            let v = super::names::unused_name(&["v", "e", "item", "elem"], &[x, arg(0)]);
            format!(
                "`count` counts a query's rows: `count(from {v} in {x} where {v} == {} select {v})`",
                arg(0)
            )
        }
        (Ty::List(_), "index_of") => format!(
            "`index_of` finds a Text in a Text; `contains({x}, v)` tells whether a list holds a value"
        ),
        (_, "len") if n_args > 0 => return None,
        _ => format!("`{m}` is a function: write `{m}({x}{rest})`"),
    })
}
