//! Type relations (assignability, unification) and resolving written types.

use super::{did_you_mean, other_language, Checker};
use crate::ast::{self, TypeKind};
use crate::diag::{Diagnostic, Span};
use crate::tir::{Expr, ExprKind as E, Ty, MAX_TYPE_DEPTH};

pub(super) fn ty_is_comparable_eq(t: &Ty) -> bool {
    matches!(
        t.strip(),
        Ty::Int | Ty::Float | Ty::Bool | Ty::Text | Ty::Nil | Ty::Unknown
    )
}

/// What two values of `t`, which `==` cannot compare, are called in the message that
/// says so ("cannot compare two lists").
pub(super) fn uncomparable_plural(t: &Ty) -> &'static str {
    match t.strip() {
        Ty::List(_) => "lists",
        Ty::Map(..) => "maps",
        Ty::Error => "errors",
        Ty::Task(_) => "tasks",
        _ => "objects",
    }
}

/// How to test a value that is not a `Bool` where another language tests its
/// truth (`if s`, `if not xs`: Python, JavaScript, Lua; helper-80): `x` is the
/// value's text, `negated` whether it stood under `not`. `None` where no test fits.
pub(super) fn truthiness_note(t: &Ty, x: &str, negated: bool) -> Option<String> {
    let (nil, empty, zero) = if negated {
        ("==", "==", "==")
    } else {
        ("!=", ">", "!=")
    };
    Some(match t {
        // A `?Bool`: `b != nil` would be true of `false` (helper-82).
        Ty::Nullable(inner) if **inner == Ty::Bool => {
            let want = if negated { "!=" } else { "==" };
            format!("a `?Bool` may be nil: write `{x} {want} true` (nil counts as false), or `{x} ?? false`")
        }
        Ty::Nullable(_) => format!("a condition is a `Bool`: test for nil with `{x} {nil} nil`"),
        Ty::Text | Ty::List(_) | Ty::Map(..) => {
            format!("a condition is a `Bool`: test for emptiness with `len({x}) {empty} 0`")
        }
        Ty::Int => format!("a condition is a `Bool`: write `{x} {zero} 0`"),
        _ => return None,
    })
}

impl Checker<'_> {
    /// [`nil_note`], or for a `?T` local that was assigned a value that is not nil
    /// (`st = Stat {}` after `if st == nil`, helper-80: "narrow it with `if x != nil`"
    /// on the line after the assignment read as nonsense), why it is still `?T`.
    pub(super) fn nil_note_of(&self, e: &Expr, fallback: &str) -> String {
        match e.kind {
            E::Local(id) if self.ctx.filled.contains(&id) => {
                let x = self.short_text(e.span, "x");
                let declared = &self.ctx.locals[id];
                // A default of the type, for the example (helper-96: `T { … }` for
                // an `?Int` parameter).
                let default = match declared.strip() {
                    Ty::Int => "0".to_string(),
                    Ty::Float => "0.0".to_string(),
                    Ty::Text => "\"\"".to_string(),
                    Ty::Bool => "false".to_string(),
                    // A row of a table is made by `insert` (helper-106: `Box { … }`
                    // on a table class is itself an error).
                    Ty::Class(c) if self.classes[*c].table.is_some() => {
                        format!("insert {} {{ … }}", self.class_names[*c])
                    }
                    Ty::Class(c) => format!("{} {{ … }}", self.class_names[*c]),
                    _ => "…".to_string(),
                };
                // A parameter (or a loop's variable) is given its value by the call.
                let fix = if self.ctx.lets.iter().any(|l| l.id == id) {
                    format!("give it its value where it is declared (`let {x} = … ?? {default}`)")
                } else {
                    format!(
                        "take it into a variable of the plain type (`let v = {x} ?? {default}`)"
                    )
                };
                format!(
                    "`{x}` keeps the type it was declared with, {}: assigning it a value does not narrow it; {fix}, or narrow it with `if {x} != nil {{ … }}`",
                    self.tyname(declared)
                )
            }
            _ => nil_note(e, fallback),
        }
    }
}

/// The note for a `?T` value used where a `T` is needed: `fallback`, unless the value
/// is a field, which no `!= nil` check narrows.
fn nil_note(e: &Expr, fallback: &str) -> String {
    if matches!(e.kind, E::Field(..) | E::RowField(..)) {
        "the field may be nil: copy it to a local, `let v = x.f`, check `if v != nil { … }` and use `v` (a check on `x.f` itself narrows nothing: fields never narrow); or give a default, `x.f ?? d`, or `unwrap(x.f)`".to_string()
    } else {
        fallback.to_string()
    }
}

/// Whether a value of type `from` may be stored where `to` is expected.
pub(super) fn assignable(from: &Ty, to: &Ty) -> bool {
    if same(from, to) {
        return true;
    }
    match to {
        Ty::Nullable(inner) => *from == Ty::Nil || assignable(from, inner),
        _ => false,
    }
}

/// Structural equality where `Unknown` (an already reported error) matches anything.
pub(super) fn same(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Unknown, _) | (_, Ty::Unknown) => true,
        (Ty::Nullable(x), Ty::Nullable(y))
        | (Ty::List(x), Ty::List(y))
        | (Ty::Task(x), Ty::Task(y)) => same(x, y),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => same(k1, k2) && same(v1, v2),
        _ => a == b,
    }
}

/// The common type of two values (list elements, branches), if any.
pub(super) fn unify(a: &Ty, b: &Ty) -> Option<Ty> {
    if a == b {
        return Some(a.clone());
    }
    match (a, b) {
        (Ty::Unknown, t) | (t, Ty::Unknown) => Some(t.clone()),
        (Ty::Nil, t) | (t, Ty::Nil) if *t != Ty::Void => Some(Ty::nullable(t.clone())),
        (Ty::Nullable(x), y) | (y, Ty::Nullable(x)) if **x == *y => Some(Ty::Nullable(x.clone())),
        _ => None,
    }
}

impl<'a> Checker<'a> {
    pub(super) fn resolve_params(&mut self, params: &[ast::Param]) -> Vec<(String, Ty)> {
        let mut out: Vec<(String, Ty)> = Vec::new();
        // (The first of each name, looked up, not searched: 80,000 parameters took
        // 14 s, helper-76.)
        let mut first: std::collections::HashMap<&str, Span> = std::collections::HashMap::new();
        for p in params {
            match first.entry(p.name.name.as_str()) {
                std::collections::hash_map::Entry::Occupied(at) => {
                    let msg = format!("parameter `{}` is declared more than once", p.name.name);
                    self.duplicate(p.name.span, *at.get(), msg);
                }
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(p.name.span);
                }
            }
            let ty = self.resolve_type(&p.ty);
            out.push((p.name.name.clone(), ty));
        }
        out
    }

    /// The type a program wrote, nested at most [`MAX_TYPE_DEPTH`] levels (deeper is
    /// an error, and `unknown`).
    pub(super) fn resolve_type(&mut self, t: &ast::TypeExpr) -> Ty {
        let ty = self.resolve_type_parts(t);
        self.within_depth(ty, t.span, "this type")
    }

    /// `ty`, the type of what `span` holds, if it nests at most [`MAX_TYPE_DEPTH`]
    /// levels; otherwise an error naming `what` and `unknown`. A chain of `let a1 =
    /// [a0]` reports once, at its first link too deep: the links after it hold that
    /// `unknown`, and reach the limit again silently (helper-77: 312 errors for a
    /// chain of 20,000).
    pub(super) fn within_depth(&mut self, ty: Ty, span: Span, what: &str) -> Ty {
        let depth = ty.depth();
        if depth <= MAX_TYPE_DEPTH {
            return ty;
        }
        if ty.has_unknown() {
            return Ty::Unknown;
        }
        self.err(
            "type",
            span,
            format!(
                "{what} nests {depth} levels deep (`multi`, `map<…>` and `task<…>` one inside another); a type may nest at most {MAX_TYPE_DEPTH} levels"
            ),
        );
        Ty::Unknown
    }

    fn resolve_type_parts(&mut self, t: &ast::TypeExpr) -> Ty {
        match &t.kind {
            TypeKind::Named(n) => match n.as_str() {
                "Int" => Ty::Int,
                "Float" => Ty::Float,
                "Bool" => Ty::Bool,
                "Text" => Ty::Text,
                "Error" => Ty::Error,
                _ => match self.class_index.get(n) {
                    Some(&c) => {
                        self.note_class(t.span, c);
                        Ty::Class(c)
                    }
                    None => {
                        let hint = match other_language(n) {
                            Some(h) => h.to_string(),
                            None => {
                                let builtin = ["Int", "Float", "Bool", "Text", "Error"];
                                let classes = self.class_names.iter().map(String::as_str);
                                did_you_mean(n, builtin.into_iter().chain(classes))
                            }
                        };
                        if !self.broken_declaration(n) {
                            self.err("type", t.span, format!("unknown type `{n}`{hint}"));
                        }
                        Ty::Unknown
                    }
                },
            },
            TypeKind::Nullable(inner) => {
                let i = self.resolve_type_parts(inner);
                if i.is_nullable() {
                    self.err(
                        "type",
                        t.span,
                        "`??T` is not a type: `?` applies to a non-nullable type",
                    );
                    return i;
                }
                Ty::nullable(i)
            }
            TypeKind::Multi(inner) => Ty::List(Box::new(self.resolve_type_parts(inner))),
            TypeKind::Map(k, v) => {
                let kt = self.resolve_type_parts(k);
                let vt = self.resolve_type_parts(v);
                if !matches!(kt, Ty::Int | Ty::Text | Ty::Bool | Ty::Unknown) {
                    self.err(
                        "type",
                        k.span,
                        format!(
                            "map keys must be `Int`, `Text` or `Bool`, not {}",
                            self.tyname(&kt)
                        ),
                    );
                }
                Ty::Map(Box::new(kt), Box::new(vt))
            }
            TypeKind::Task(inner) => {
                let r = inner
                    .as_ref()
                    .map_or(Ty::Void, |i| self.resolve_type_parts(i));
                Ty::Task(Box::new(r))
            }
            TypeKind::Ref(name) => {
                match self.class_index.get(&name.name) {
                    Some(&c) if self.table_classes.contains(&c) => {
                        self.note_class(name.span, c);
                        if !self.in_table {
                            self.err(
                            "type",
                            t.span,
                            format!("`ref {}` is a table column type; elsewhere a row is written `{}`", name.name, name.name),
                        );
                        }
                        Ty::Class(c)
                    }
                    Some(_) => {
                        self.err(
                            "type",
                            t.span,
                            format!(
                                "`ref` points to a table, and `{}` is not a `@table` class",
                                name.name
                            ),
                        );
                        Ty::Unknown
                    }
                    None if matches!(
                        name.name.as_str(),
                        "Int" | "Float" | "Bool" | "Text" | "Error"
                    ) =>
                    {
                        self.err(
                            "type",
                            t.span,
                            format!(
                                "`ref` points to a table, and `{}` is not a `@table` class",
                                name.name
                            ),
                        );
                        Ty::Unknown
                    }
                    None => {
                        let classes = self.class_names.iter().map(String::as_str);
                        let hint = did_you_mean(&name.name, classes);
                        let msg = format!("unknown type `{}`{hint}", name.name);
                        if !self.broken_declaration(&name.name) {
                            self.err("type", name.span, msg);
                        }
                        Ty::Unknown
                    }
                }
            }
        }
    }

    pub(super) fn expect_assignable(&mut self, e: &Expr, to: &Ty, span: Span) {
        if e.ty == Ty::Void {
            self.err("type", span, "this expression has no value");
        } else if !assignable(&e.ty, to) {
            let (f, t) = (self.tyname(&e.ty), self.tyname(to));
            let mut d = Diagnostic::error("type", span, format!("expected {t}, found {f}"));
            if let Ty::Nullable(inner) = &e.ty {
                if assignable(inner, to) {
                    d = d.with_note(self.nil_note_of(e, "a `?T` may be nil: narrow it with `if x != nil { … }`, or use `x ?? default` or `unwrap(x)`"));
                }
            }
            if e.ty == Ty::Nil && !to.is_nullable() {
                // `let c: C = nil`, for "nothing yet" (helper-96).
                d = d.with_note(format!(
                    "only a `?` type holds nil: `?{}` is {t} or nil",
                    t.trim_matches('`')
                ));
            }
            if matches!((&e.ty, to), (Ty::Int, Ty::Float)) {
                d = d.with_note("there is no implicit conversion: use `float(…)`");
            }
            if matches!((&e.ty, to), (Ty::Float, Ty::Int)) {
                d = d.with_note("there is no implicit conversion: use `int(…)`");
            }
            self.diags.push(d);
        }
    }
}
