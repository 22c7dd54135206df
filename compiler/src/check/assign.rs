//! Assignment statements, including compound assignment (`x.f += 1`).

use super::Checker;
use crate::ast::{self, AssignOp, ExprKind as A};
use crate::diag::{Diagnostic, Span};
use crate::tir::{self, Expr, ExprKind as E, Stmt, StmtKind as T, Ty};

impl<'a> Checker<'a> {
    pub(super) fn arith_op(op: AssignOp) -> Option<ast::BinOp> {
        match op {
            AssignOp::Set => None,
            AssignOp::Add => Some(ast::BinOp::Add),
            AssignOp::Sub => Some(ast::BinOp::Sub),
            AssignOp::Mul => Some(ast::BinOp::Mul),
            AssignOp::Div => Some(ast::BinOp::Div),
            AssignOp::Rem => Some(ast::BinOp::Rem),
        }
    }

    pub(super) fn assign(
        &mut self,
        target: &ast::Expr,
        op: AssignOp,
        value: &ast::Expr,
        span: Span,
        out: &mut tir::Block,
    ) {
        let bin = Self::arith_op(op);
        match &target.kind {
            A::Name(n) => self.assign_local(n, target, value, bin, span, out),
            A::TypeName(n) => {
                self.err(
                    "assign",
                    target.span,
                    format!("cannot assign to constant `{n}`"),
                );
                self.expr(value, None);
            }
            A::Field { recv, name } => self.assign_field(recv, name, target, value, bin, span, out),
            A::Index { recv, index } => {
                self.assign_index(recv, index, target, value, bin, span, out)
            }
            _ => {
                self.err(
                    "assign",
                    target.span,
                    "cannot assign to this expression; assign to a variable, a field `x.f` or an element `xs[i]`",
                );
                self.expr(value, None);
            }
        }
    }

    /// `x = v` and `x op= v` on a local.
    fn assign_local(
        &mut self,
        n: &str,
        target: &ast::Expr,
        value: &ast::Expr,
        bin: Option<ast::BinOp>,
        span: Span,
        out: &mut tir::Block,
    ) {
        if n == "self" {
            // `self` is the method's receiver; rebinding it would change only the local.
            let msg = if self.lookup_local(n).is_some() {
                "cannot assign to `self`: a method changes its object through the fields \
                 (`self.x = …`); to replace the object, return a new one"
            } else {
                "`self` is only defined inside methods"
            };
            self.err("assign", target.span, msg);
            self.expr(value, None);
            return;
        }
        let Some(id) = self.lookup_local(n) else {
            if self.broken_declaration(n) || self.broken_local(n, target.span) {
                // `const total = 0` refused by the parser, then `total = total + 1`.
            } else if self.func_index.contains_key(n) {
                self.err(
                    "assign",
                    target.span,
                    format!("cannot assign to function `{n}`"),
                );
            } else {
                let note = self
                    .self_field(n)
                    .unwrap_or_else(|| format!("declare it with `let {n} = …`"));
                let d = Diagnostic::error("name", target.span, format!("unknown variable `{n}`"))
                    .with_note(note);
                self.diags.push(d);
            }
            self.expr(value, None);
            return;
        };
        let declared = self.ctx.locals[id].clone();
        // A read of `x` only to compute its own next value (`total = total + i`) is no
        // use of it, as `total += i` is none (helper-101: the two were told apart).
        let read_before = self.ctx.read.get(id).copied();
        let v = match bin {
            None => self.expr(value, Some(&declared)),
            Some(b) => {
                let cur = Expr::new(E::Local(id), self.local_ty(id), target.span);
                let rhs = self.expr(value, Some(&declared));
                self.binary(b, cur, rhs, span)
            }
        };
        if read_before == Some(false) {
            self.ctx.read[id] = false;
        }
        self.expect_assignable(&v, &declared, value.span);
        if declared.is_nullable() && !v.ty.is_nullable() && !matches!(v.ty, Ty::Nil | Ty::Unknown) {
            self.ctx.filled.insert(id);
        }
        self.note_assigned(id);
        out.push(Stmt {
            kind: T::SetLocal(id, v),
            span,
        });
    }

    /// `o.f = v` and `o.f op= v`, on an object or a row.
    #[allow(clippy::too_many_arguments)] // the parts of one assignment statement
    fn assign_field(
        &mut self,
        recv: &ast::Expr,
        name: &ast::Ident,
        target: &ast::Expr,
        value: &ast::Expr,
        bin: Option<ast::BinOp>,
        span: Span,
        out: &mut tir::Block,
    ) {
        let obj = self.expr(recv, None);
        let row_table = self.table_of(&obj.ty);
        if row_table.is_some() && name.name == "id" {
            self.err("assign", name.span, "a row's `id` is read-only");
            self.expr(value, None);
            return;
        }
        let Some((idx, fty)) = self.field_of(&obj, name, recv.span, true) else {
            self.expr(value, None);
            return;
        };
        let set = |obj: Expr, value: Expr| match row_table {
            Some(table) => T::SetRowField {
                row: obj,
                table,
                col: idx,
                value,
            },
            None => T::SetField {
                obj,
                field: idx,
                value,
            },
        };
        let get = |obj: Expr| match row_table {
            Some(table) => E::RowField(Box::new(obj), table, idx),
            None => E::Field(Box::new(obj), idx),
        };
        match bin {
            None => {
                let v = self.expr(value, Some(&fty));
                self.expect_assignable(&v, &fty, value.span);
                out.push(Stmt {
                    kind: set(obj, v),
                    span,
                });
            }
            Some(b) if matches!(obj.kind, E::Local(_)) => {
                // A local receiver is read twice in place: no expression can assign a
                // local, so `o` is the same object for the read and the write, and the
                // temporary copy (a reference count up and down) is not needed.
                let cur = Expr::new(get(obj.clone()), fty.clone(), target.span);
                let rhs = self.expr(value, Some(&fty));
                let v = self.binary(b, cur, rhs, span);
                self.expect_assignable(&v, &fty, value.span);
                out.push(Stmt {
                    kind: set(obj, v),
                    span,
                });
            }
            Some(b) => {
                // `o.f op= v` evaluates `o` once: `{ let t = o; t.f = t.f op v }`.
                let tmp = self.temp_local(obj.ty.clone(), recv.span);
                let t_ref = Expr::new(E::Local(tmp), obj.ty.clone(), recv.span);
                let cur = Expr::new(get(t_ref.clone()), fty.clone(), target.span);
                let rhs = self.expr(value, Some(&fty));
                let v = self.binary(b, cur, rhs, span);
                self.expect_assignable(&v, &fty, value.span);
                out.push(Stmt {
                    kind: T::Block(vec![
                        Stmt {
                            kind: T::Let(tmp, obj),
                            span,
                        },
                        Stmt {
                            kind: set(t_ref, v),
                            span,
                        },
                    ]),
                    span,
                });
            }
        }
    }

    /// `xs[i] = v`, `m[k] = v` and their compound forms.
    #[allow(clippy::too_many_arguments)] // the parts of one assignment statement
    fn assign_index(
        &mut self,
        recv: &ast::Expr,
        index: &ast::Expr,
        target: &ast::Expr,
        value: &ast::Expr,
        bin: Option<ast::BinOp>,
        span: Span,
        out: &mut tir::Block,
    ) {
        let coll = self.expr(recv, None);
        let (is_list, key_ty, val_ty) = match &coll.ty {
            Ty::List(t) => (true, Ty::Int, (**t).clone()),
            Ty::Map(k, v) => (false, (**k).clone(), (**v).clone()),
            Ty::Unknown => (true, Ty::Unknown, Ty::Unknown),
            t => {
                let note = super::expr::nullable_container_note(recv, t);
                let t = self.tyname(t);
                let mut d = Diagnostic::error(
                    "type",
                    recv.span,
                    format!("cannot index into a value of type {t}"),
                );
                if let Some(note) = note {
                    d = d.with_note(note);
                }
                self.diags.push(d);
                (true, Ty::Unknown, Ty::Unknown)
            }
        };
        let key = self.expr(index, Some(&key_ty));
        self.expect_assignable(&key, &key_ty, index.span);
        let mk = |is_list: bool, c: Expr, k: Expr, v: Expr| {
            if is_list {
                T::SetList {
                    list: c,
                    index: k,
                    value: v,
                }
            } else {
                T::SetMap {
                    map: c,
                    key: k,
                    value: v,
                }
            }
        };
        match bin {
            None => {
                let v = self.expr(value, Some(&val_ty));
                self.expect_assignable(&v, &val_ty, value.span);
                out.push(Stmt {
                    kind: mk(is_list, coll, key, v),
                    span,
                });
            }
            Some(b) => {
                let tc = self.temp_local(coll.ty.clone(), recv.span);
                let tk = self.temp_local(key.ty.clone(), index.span);
                let c_ref = Expr::new(E::Local(tc), coll.ty.clone(), recv.span);
                let k_ref = Expr::new(E::Local(tk), key.ty.clone(), index.span);
                let cur = if is_list {
                    Expr::new(
                        E::ListIndex(Box::new(c_ref.clone()), Box::new(k_ref.clone())),
                        val_ty.clone(),
                        target.span,
                    )
                } else {
                    // A compound assignment on a map entry requires it to exist.
                    Expr::new(
                        E::Builtin {
                            name: "get",
                            args: vec![c_ref.clone(), k_ref.clone()],
                        },
                        val_ty.clone(),
                        target.span,
                    )
                };
                let rhs = self.expr(value, Some(&val_ty));
                let v = self.binary(b, cur, rhs, span);
                self.expect_assignable(&v, &val_ty, value.span);
                out.push(Stmt {
                    kind: T::Block(vec![
                        Stmt {
                            kind: T::Let(tc, coll),
                            span,
                        },
                        Stmt {
                            kind: T::Let(tk, key),
                            span,
                        },
                        Stmt {
                            kind: mk(is_list, c_ref, k_ref, v),
                            span,
                        },
                    ]),
                    span,
                });
            }
        }
    }
}
