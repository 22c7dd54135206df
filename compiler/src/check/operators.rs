//! Unary and binary operators, specialised by type (`AddInt` vs `AddFloat`).

use super::{assignable, diverging, truthiness_note, ty_is_comparable_eq, Checker};
use crate::ast::{self};
use crate::diag::{Diagnostic, Span};
use crate::tir::{BinOp, Expr, ExprKind as E, Ty, UnOp};
use wo_bytecode::Cmp;

impl<'a> Checker<'a> {
    pub(super) fn binary(&mut self, op: ast::BinOp, l: Expr, r: Expr, span: Span) -> Expr {
        use ast::BinOp as B;
        let (lt, rt) = (l.ty.clone(), r.ty.clone());
        if lt == Ty::Unknown || rt == Ty::Unknown {
            let ty = match op {
                B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge | B::And | B::Or => Ty::Bool,
                B::Concat => Ty::Text,
                _ => {
                    if lt == Ty::Unknown {
                        rt.clone()
                    } else {
                        lt.clone()
                    }
                }
            };
            return Expr::new(E::Binary(BinOp::Eq, Box::new(l), Box::new(r)), ty, span);
        }
        let mk = |bop: BinOp, ty: Ty, l: Expr, r: Expr| {
            Expr::new(E::Binary(bop, Box::new(l), Box::new(r)), ty, span)
        };
        let arith = |i: BinOp, f: BinOp| match (&lt, &rt) {
            (Ty::Int, Ty::Int) => Some((i, Ty::Int)),
            (Ty::Float, Ty::Float) => Some((f, Ty::Float)),
            _ => None,
        };
        let found = match op {
            B::Add => arith(BinOp::AddInt, BinOp::AddFloat),
            B::Sub => arith(BinOp::SubInt, BinOp::SubFloat),
            B::Mul => arith(BinOp::MulInt, BinOp::MulFloat),
            B::Div => arith(BinOp::DivInt, BinOp::DivFloat),
            B::Rem => arith(BinOp::RemInt, BinOp::RemFloat),
            B::Concat => (lt == Ty::Text && rt == Ty::Text).then_some((BinOp::Concat, Ty::Text)),
            B::Lt | B::Le | B::Gt | B::Ge => {
                let c = match op {
                    B::Lt => Cmp::Lt,
                    B::Le => Cmp::Le,
                    B::Gt => Cmp::Gt,
                    _ => Cmp::Ge,
                };
                match (&lt, &rt) {
                    (Ty::Int, Ty::Int) => Some((BinOp::CmpInt(c), Ty::Bool)),
                    (Ty::Float, Ty::Float) => Some((BinOp::CmpFloat(c), Ty::Bool)),
                    (Ty::Text, Ty::Text) => Some((BinOp::CmpText(c), Ty::Bool)),
                    // In a `where`, `t.due < d` over a `?Int` column: as SQL's WHERE.
                    (a, b)
                        if self.ctx.in_where > 0
                            && a.strip() == b.strip()
                            && matches!(a.strip(), Ty::Int | Ty::Float | Ty::Text) =>
                    {
                        Some((BinOp::CmpOrNil(c), Ty::Bool))
                    }
                    _ => None,
                }
            }
            B::Eq | B::Ne => {
                let eq = op == B::Eq;
                let same = lt.strip() == rt.strip() || lt == Ty::Nil || rt == Ty::Nil;
                let row = |t: &Ty| self.table_of(t.strip()).is_some();
                let comparable = (ty_is_comparable_eq(&lt) || row(&lt))
                    && (ty_is_comparable_eq(&rt) || row(&rt));
                let either_nil = lt == Ty::Nil || rt == Ty::Nil;
                if same && (comparable || either_nil) {
                    match (&lt, &rt) {
                        (Ty::Int, Ty::Int) => {
                            Some((BinOp::CmpInt(if eq { Cmp::Eq } else { Cmp::Ne }), Ty::Bool))
                        }
                        _ => Some((if eq { BinOp::Eq } else { BinOp::Ne }, Ty::Bool)),
                    }
                } else if same {
                    let what = super::types::uncomparable_plural(&lt);
                    self.err(
                        "type",
                        span,
                        format!("cannot compare two {what} with `{}`", op.symbol()),
                    );
                    return mk(BinOp::Eq, Ty::Bool, l, r);
                } else {
                    None
                }
            }
            B::And | B::Or | B::Coalesce => None,
        };
        match found {
            Some((bop, ty)) => mk(bop, ty, l, r),
            None => {
                let (ls, rs) = (self.tyname(&lt), self.tyname(&rt));
                let mut d = Diagnostic::error(
                    "type",
                    span,
                    format!("cannot apply `{}` to {ls} and {rs}", op.symbol()),
                );
                if matches!(
                    (lt.strip(), rt.strip()),
                    (Ty::Int, Ty::Float) | (Ty::Float, Ty::Int)
                ) {
                    d = d
                        .with_note("Int and Float do not mix: convert with `float(…)` or `int(…)`");
                }
                if op == B::Add && lt == Ty::Text && rt == Ty::Text {
                    d = d.with_note(
                        "Text is joined with `..`: `a .. b` (for `s += t`, write `s = s .. t`)",
                    );
                } else if op == B::Add
                    && (lt == Ty::Text || rt == Ty::Text)
                    && !lt.is_nullable()
                    && !rt.is_nullable()
                {
                    // JavaScript's `"total: " + n`: `..` would be the next error
                    // (helper-80), so the whole fix at once.
                    let (t, v) = if lt == Ty::Text { (&l, &r) } else { (&r, &l) };
                    let shown = |e: &Expr, or: &'static str| self.short_text(e.span, or);
                    // The literal as written (a constant is inlined where it is
                    // used: its value may be megabytes, helper-82), when it is one
                    // a `${…}` can go into as it stands.
                    let written = self.short_text(t.span, "");
                    let lit = written
                        .strip_prefix('"')
                        .and_then(|w| w.strip_suffix('"'))
                        .filter(|w| !w.contains(['"', '\\', '$']));
                    let n = shown(v, "n");
                    d = d.with_note(match (lit, lt == Ty::Text) {
                        (Some(s), true) => format!(
                            "a value goes into a Text by interpolation: `\"{s}${{{n}}}\"`"
                        ),
                        (Some(s), false) => format!(
                            "a value goes into a Text by interpolation: `\"${{{n}}}{s}\"`"
                        ),
                        (None, true) => format!(
                            "Text is joined with `..`, and only with Text: `{} .. text({n})`, or interpolate: `\"…${{{n}}}\"`",
                            shown(t, "a")
                        ),
                        (None, false) => format!(
                            "Text is joined with `..`, and only with Text: `text({n}) .. {}`, or interpolate: `\"${{{n}}}…\"`",
                            shown(t, "b")
                        ),
                    });
                }
                // Python's `"-" * 10` (helper-80).
                if op == B::Mul && matches!((&lt, &rt), (Ty::Text, Ty::Int) | (Ty::Int, Ty::Text)) {
                    let (t, n) = if lt == Ty::Text { (&l, &r) } else { (&r, &l) };
                    d = d.with_note(format!(
                        "a Text is repeated with `repeat`: `repeat({}, {})`",
                        self.short_text(t.span, "t"),
                        self.short_text(n.span, "n")
                    ));
                }
                // Python's `"count: %d" % n` (helper-67).
                if op == B::Rem && lt == Ty::Text {
                    d = d.with_note("a Text is built by interpolation: `\"count: ${n}\"`");
                }
                let text = |t: &Ty| *t == Ty::Text;
                if op == B::Concat
                    && text(&lt) != text(&rt)
                    && !lt.is_nullable()
                    && !rt.is_nullable()
                {
                    d = d.with_note(
                        "`..` joins Text only: convert with `text(n)`, or interpolate: `\"n=${n}\"`",
                    );
                }
                // `for i in 0..10`: a range of other languages.
                if op == B::Concat && lt == Ty::Int && rt == Ty::Int {
                    d = d.with_note(
                        "`..` joins texts; the numbers from a to b - 1 are `range(a, b)`: `for i in range(0, 10) { … }`",
                    );
                }
                let relational = matches!(op, B::Lt | B::Le | B::Gt | B::Ge);
                let fallback = "a `?T` may be nil: narrow it first, or use `??`";
                if relational && (lt == Ty::Nil || rt == Ty::Nil) {
                    // `where t.due < nil` (helper-111): no order has nil in it.
                    d = d.with_note("nil is neither less nor greater than a value: test for it with `== nil` or `!= nil`");
                } else if relational && self.ctx.in_where > 0 {
                    // A `where` takes a `?T` in `<`: the types are what differ, and
                    // the nil note would send the user the wrong way (helper-111).
                } else if lt.is_nullable() {
                    d = d.with_note(self.nil_note_of(&l, fallback));
                } else if rt.is_nullable() {
                    d = d.with_note(self.nil_note_of(&r, fallback));
                }
                self.diags.push(d);
                let ty = match op {
                    B::Lt | B::Le | B::Gt | B::Ge | B::Eq | B::Ne => Ty::Bool,
                    _ => Ty::Unknown,
                };
                mk(BinOp::Eq, ty, l, r)
            }
        }
    }

    pub(super) fn unary(&mut self, op: ast::UnOp, expr: &ast::Expr, span: Span) -> Expr {
        let v = self.expr(expr, None);
        match (op, v.ty.clone()) {
            // A negated literal is a literal (`x == -1.5` compares with a constant).
            (ast::UnOp::Neg, Ty::Int) if matches!(v.kind, E::Int(i) if i != i64::MIN) => {
                let E::Int(i) = v.kind else { unreachable!() };
                Expr::new(E::Int(-i), Ty::Int, span)
            }
            (ast::UnOp::Neg, Ty::Float) if matches!(v.kind, E::Float(_)) => {
                let E::Float(x) = v.kind else { unreachable!() };
                Expr::new(E::Float(-x), Ty::Float, span)
            }
            (ast::UnOp::Neg, Ty::Int) => {
                Expr::new(E::Unary(UnOp::NegInt, Box::new(v)), Ty::Int, span)
            }
            (ast::UnOp::Neg, Ty::Float) => {
                Expr::new(E::Unary(UnOp::NegFloat, Box::new(v)), Ty::Float, span)
            }
            (ast::UnOp::Not, Ty::Bool) => {
                Expr::new(E::Unary(UnOp::Not, Box::new(v)), Ty::Bool, span)
            }
            (_, Ty::Unknown) => self.unknown(span),
            (op, ty) => {
                let t = self.tyname(&ty);
                let (sym, want) = match op {
                    ast::UnOp::Neg => ("-", "`Int` or `Float`"),
                    ast::UnOp::Not => ("not", "`Bool`"),
                };
                let mut d =
                    Diagnostic::error("type", span, format!("`{sym}` needs {want}, found {t}"));
                if op == ast::UnOp::Not {
                    let x = self.short_text(expr.span, "x");
                    if let Some(note) = truthiness_note(&ty, x, true) {
                        d = d.with_note(note);
                    }
                }
                self.diags.push(d);
                self.unknown(span)
            }
        }
    }

    /// `and` / `or`: the right side sees what the left side proves.
    pub(super) fn logic(
        &mut self,
        op: ast::BinOp,
        lhs: &ast::Expr,
        rhs: &ast::Expr,
        span: Span,
    ) -> Expr {
        // Lua's `c and a or b`, a value chosen by a condition: one error for it.
        if let (
            ast::BinOp::Or,
            ast::ExprKind::Binary {
                op: ast::BinOp::And,
                lhs: c,
                rhs: a,
            },
        ) = (op, &lhs.kind)
        {
            let literal = |e: &ast::Expr| {
                matches!(
                    e.kind,
                    ast::ExprKind::Text(_) | ast::ExprKind::Int(_) | ast::ExprKind::Float(_)
                )
            };
            if literal(a) || literal(rhs) {
                // `a` is read where `c` holds (`p != nil and p.name or "anon"`).
                self.cond(c);
                let (holds, _) = self.facts(c);
                let a = self.with_facts(&holds, |s| s.expr(a, None));
                let b = self.expr(rhs, None);
                let d = Diagnostic::error(
                    "type",
                    span,
                    "`and` and `or` take and give `Bool`s: Lua's `c and a or b` chooses no value in wo",
                )
                .with_note("choose in an `if`: `let s = b`, then `if c { s = a }`");
                self.diags.push(d);
                // Of one type (`"a"` or `"b"`): the variable it gives keeps that type,
                // so what is done with it later is still checked.
                return if a.ty == b.ty && a.ty != Ty::Unknown {
                    Expr { span, ..a }
                } else {
                    self.unknown(span)
                };
            }
        }
        // (The left side of `or` is where `x or d` puts a value that may be nil.)
        let l = if op == ast::BinOp::Or {
            self.logic_operand(lhs)
        } else {
            self.cond(lhs)
        };
        let (tf, ff) = self.facts(lhs);
        let facts = if op == ast::BinOp::And { tf } else { ff };
        let r = self.with_facts(&facts, |c| c.cond(rhs));
        let bop = if op == ast::BinOp::And {
            BinOp::And
        } else {
            BinOp::Or
        };
        Expr::new(E::Binary(bop, Box::new(l), Box::new(r)), Ty::Bool, span)
    }

    /// `x ?? default`.
    pub(super) fn coalesce(
        &mut self,
        lhs: &ast::Expr,
        rhs: &ast::Expr,
        span: Span,
        expect: Option<&Ty>,
    ) -> Expr {
        let l = self.expr(lhs, expect);
        let inner = l.ty.strip().clone();
        let r = self.expr(rhs, Some(&inner));
        if l.ty == Ty::Nil {
            return Expr::new(
                E::Binary(BinOp::Coalesce, Box::new(l), Box::new(r.clone())),
                r.ty,
                span,
            );
        }
        if diverging(&r) {
            // `x ?? fail("…")`: the value is `x`, known not nil.
            return Expr::new(
                E::Binary(BinOp::Coalesce, Box::new(l), Box::new(r)),
                inner,
                span,
            );
        }
        if !assignable(&r.ty, &l.ty) && !(inner == Ty::Unknown) {
            let (it, rt) = (self.tyname(&inner), self.tyname(&r.ty));
            let msg = if l.ty == inner {
                format!("the default of `??` must be {it}, found {rt}")
            } else {
                // The value the `??` gives when the left is nil: a `T` (or a `?T`).
                let lt = self.tyname(&l.ty);
                format!("the default of `??` must be {it} (or {lt}), found {rt}")
            };
            self.err("type", rhs.span, msg);
        }
        let ty = r.ty.clone();
        Expr::new(
            E::Binary(BinOp::Coalesce, Box::new(l), Box::new(r)),
            ty,
            span,
        )
    }
}
