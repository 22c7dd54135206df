//! Classes: field access, constructor literals and field defaults.
use std::collections::HashMap;

use super::{builtin, did_you_mean, suggest, Checker, FnCtx};
use crate::ast::{self};
use crate::diag::{Diagnostic, Span};
use crate::facts::Target;
use crate::tir::{ClassId, Expr, ExprKind as E, Func, FuncId, Stmt, StmtKind as T, Ty};

impl<'a> Checker<'a> {
    /// Resolves `obj.name` to a field index and type.
    pub(super) fn field_of(
        &mut self,
        obj: &Expr,
        name: &ast::Ident,
        span: Span,
        for_write: bool,
    ) -> Option<(u16, Ty)> {
        match &obj.ty {
            Ty::Class(c) => {
                let class = &self.classes[*c];
                match class.fields.iter().position(|f| f.name == name.name) {
                    Some(i) => {
                        let res = (
                            u16::try_from(i).unwrap_or(u16::MAX),
                            class.fields[i].ty.clone(),
                        );
                        self.note_field(name.span, *c, i);
                        Some(res)
                    }
                    None => {
                        let cname = class.name.clone();
                        if class.methods.iter().any(|(m, _)| *m == name.name) {
                            self.err(
                                "name",
                                name.span,
                                format!(
                                    "`{}` is a method of `{cname}`; call it with `.{}(…)`",
                                    name.name, name.name
                                ),
                            );
                        } else if !self.broken_declaration(&format!("{cname}.{}", name.name)) {
                            self.err(
                                "name",
                                name.span,
                                format!(
                                    "class `{cname}` has no field `{}`{}",
                                    name.name,
                                    did_you_mean(
                                        &name.name,
                                        class.fields.iter().map(|f| f.name.as_str())
                                    )
                                ),
                            );
                        }
                        None
                    }
                }
            }
            Ty::Error => {
                if for_write {
                    self.err(
                        "assign",
                        name.span,
                        "the fields of an `Error` are read-only",
                    );
                    return None;
                }
                let (i, t) = match name.name.as_str() {
                    "kind" => (0, Ty::Text),
                    "code" => (1, Ty::Int),
                    "message" => (2, Ty::Text),
                    "line" => (3, Ty::Int),
                    _ => {
                        self.err(
                            "name",
                            name.span,
                            format!("`Error` has no field `{}` (it has `kind`, `code`, `message`, `line`)", name.name),
                        );
                        return None;
                    }
                };
                let target = Target::ErrorField {
                    name: name.name.clone(),
                    ty: t.clone(),
                };
                self.note_ref(name.span, None, target);
                Some((i, t))
            }
            Ty::Nullable(inner) if matches!(**inner, Ty::Class(_) | Ty::Error) => {
                let t = self.tyname(&obj.ty);
                let fallback = if matches!(obj.kind, E::Local(_)) {
                    "check `if x != nil { … }` first, or use `unwrap(…)`"
                } else {
                    "copy it to a local and check `if x != nil { … }` first, or use `unwrap(…)`"
                };
                let note = self.nil_note_of(obj, fallback);
                self.diags.push(
                    Diagnostic::error(
                        "nil",
                        span,
                        format!("this value has type {t} and may be nil"),
                    )
                    .with_note(note),
                );
                None
            }
            Ty::Unknown => None,
            t => {
                let is_map = matches!(t, Ty::Map(k, _) if **k == Ty::Text);
                let t = self.tyname(t);
                let mut d = Diagnostic::error(
                    "type",
                    name.span,
                    format!("a value of type {t} has no field `{}`", name.name),
                );
                if is_map {
                    // `m.size`, `m.keys`: the builtin first (helper-67), then the key.
                    // (Only builtins a map takes: `m.add`, `m.find` name none.)
                    let b = match name.name.as_str() {
                        b @ ("keys" | "values" | "len" | "text") => Some((b, "")),
                        b @ ("has" | "get" | "remove") => Some((b, ", k")),
                        "set" => Some(("set", ", k, v")),
                        other => builtin::habit(other)
                            .filter(|b| matches!(*b, "len" | "text"))
                            .map(|b| (b, "")),
                    };
                    if let Some((b, rest)) = b {
                        d = d.with_note(format!("`{b}` is a function: write `{b}(m{rest})`"));
                    }
                    d = d.with_note(format!(
                        "a map's values are reached by key: `m[\"{}\"]`",
                        name.name
                    ));
                } else if let Some(b) = builtin::habit(&name.name)
                    .or_else(|| builtin::is_builtin(&name.name).then_some(name.name.as_str()))
                {
                    // `s.size` and `s.len` alike (helper-80: the exact name had none).
                    d = d.with_note(format!("`{b}` is a function: write `{b}(…)`"));
                }
                self.diags.push(d);
                None
            }
        }
    }

    pub(super) fn construct(
        &mut self,
        class: &ast::Ident,
        inits: &[ast::FieldInit],
        span: Span,
    ) -> Expr {
        let Some(&cid) = self.class_index.get(&class.name) else {
            if !self.broken_declaration(&class.name) {
                let hint = did_you_mean(&class.name, self.class_names.iter().map(String::as_str));
                self.err(
                    "name",
                    class.span,
                    format!("unknown class `{}`{hint}", class.name),
                );
            }
            for f in inits {
                self.expr(&f.value, None);
            }
            return self.unknown(span);
        };
        self.note_class(class.span, cid);
        if self.table_classes.contains(&cid) {
            self.err(
                "table",
                span,
                format!(
                    "`{}` is a table: rows are created with `insert {} {{ … }}`",
                    class.name, class.name
                ),
            );
            return self.unknown(span);
        }
        match self.construct_fields(cid, &class.name, inits, span) {
            Some((fields, order)) => Expr::new(
                E::New {
                    class: cid,
                    fields,
                    order,
                },
                Ty::Class(cid),
                span,
            ),
            None => self.unknown(span),
        }
    }

    /// The field values of a constructor literal or an `insert`, in declaration
    /// order, and the order to evaluate them in.
    pub(super) fn construct_fields(
        &mut self,
        cid: ClassId,
        class_name: &str,
        inits: &[ast::FieldInit],
        span: Span,
    ) -> Option<(Vec<Expr>, Vec<usize>)> {
        let class = ast::Ident {
            name: class_name.to_string(),
            span,
        };
        let n = self.classes[cid].fields.len();
        let mut fields: Vec<Option<Expr>> = vec![None; n];
        let mut order = Vec::new();
        // A field the parser could not read (`ast::FieldInit` with no name) was
        // reported; which fields are missing is then unknown.
        let broken = inits.iter().any(|f| f.name.name.is_empty());
        // A literal of many fields looks them up (60,000 took 9 s, helper-76).
        let index: Option<HashMap<String, usize>> = (inits.len() > 16).then(|| {
            let fields = &self.classes[cid].fields;
            // (The first of a name repeated, as a search finds it, helper-78.)
            fields
                .iter()
                .enumerate()
                .rev()
                .map(|(i, f)| (f.name.clone(), i))
                .collect()
        });
        for init in inits {
            if init.name.name.is_empty() {
                continue;
            }
            let found = match &index {
                Some(index) => index.get(&init.name.name).copied(),
                None => self.classes[cid]
                    .fields
                    .iter()
                    .position(|f| f.name == init.name.name),
            };
            let Some(i) = found else {
                let is_table = self.table_classes.contains(&cid);
                let msg = if is_table && init.name.name == "id" {
                    format!(
                        "`id` is assigned by the database; `insert {}` cannot set it",
                        class.name
                    )
                } else {
                    let names = self.classes[cid].fields.iter().map(|f| f.name.as_str());
                    let hint = suggest(&init.name.name, names)
                        .map(|s| format!("; did you mean `{s}`?"))
                        .unwrap_or_default();
                    format!(
                        "class `{}` has no field `{}`{hint}",
                        class.name, init.name.name
                    )
                };
                // (A member whose declaration has a syntax error: reported there.)
                let is_method = self.classes[cid]
                    .methods
                    .iter()
                    .any(|(m, _)| *m == init.name.name);
                if is_method
                    || !self.broken_declaration(&format!("{}.{}", class.name, init.name.name))
                {
                    self.err("name", init.name.span, msg);
                }
                self.expr(&init.value, None);
                continue;
            };
            self.note_field(init.name.span, cid, i);
            let fty = self.classes[cid].fields[i].ty.clone();
            let v = self.expr(&init.value, Some(&fty));
            self.expect_assignable(&v, &fty, init.value.span);
            if fields[i].is_some() {
                self.err(
                    "name",
                    init.name.span,
                    format!("field `{}` is given more than once", init.name.name),
                );
                continue;
            }
            fields[i] = Some(v);
            order.push(i);
        }
        let mut missing = Vec::new();
        let (mi, ii) = self.class_decls[cid];
        let ast::Item::Class(decl) = &self.modules[mi].items[ii] else {
            return None;
        };
        for (i, (slot, fdecl)) in fields.iter_mut().zip(&decl.fields).enumerate() {
            if slot.is_some() {
                continue;
            }
            let fty = self.classes[cid].fields[i].ty.clone();
            if let Some(&f) = self.default_fns.get(&(cid, i)) {
                // The default is a function of its own, checked once (`check_default`).
                let call = E::Call {
                    func: f,
                    args: Vec::new(),
                };
                *slot = Some(Expr::new(call, fty, span));
                order.push(i);
            } else if let Some(def) = &fdecl.default {
                // A literal or a constant is checked in place, in a scope that sees no locals.
                let scopes = std::mem::replace(&mut self.ctx.scopes, vec![HashMap::new()]);
                let narrowed = std::mem::take(&mut self.ctx.narrowed);
                // (Its warnings are said once, by `warn_default_texts`, not at each
                // literal: helper-97.)
                self.quiet = true;
                let v = self.expr(def, Some(&fty));
                self.quiet = false;
                self.ctx.scopes = scopes;
                self.ctx.narrowed = narrowed;
                self.expect_assignable(&v, &fty, def.span);
                *slot = Some(v);
                order.push(i);
            } else if fty.is_nullable() {
                *slot = Some(Expr::new(E::Nil, fty, span));
            } else {
                missing.push(format!("`{}`", self.classes[cid].fields[i].name));
            }
        }
        if !missing.is_empty() && !broken {
            let s = if missing.len() == 1 { "" } else { "s" };
            self.err(
                "name",
                span,
                format!(
                    "missing field{s} {} in `{}` literal",
                    super::names::listed(&missing),
                    class.name
                ),
            );
        }
        let fields = fields
            .into_iter()
            .map(|f| f.unwrap_or_else(|| Expr::new(E::Nil, Ty::Unknown, span)))
            .collect();
        Some((fields, order))
    }

    /// The function that computes the default of field `i` of class `cid`: the
    /// default expression, checked in a scope that sees no locals.
    pub(super) fn check_default(&mut self, f: FuncId, cid: ClassId, i: usize) -> Func {
        let name = self.funcs[f].name.clone();
        let fty = self.funcs[f].ret.clone();
        self.ctx = FnCtx {
            ret: Some(fty.clone()),
            ..FnCtx::default()
        };
        self.tx_depth = 0;
        self.ctx.scopes.push(HashMap::new());
        let (mi, ii) = self.class_decls[cid];
        let def = match &self.modules[mi].items[ii] {
            ast::Item::Class(c) => c.fields.get(i).and_then(|fd| fd.default.as_ref()),
            _ => None,
        };
        let (body, span) = match def {
            Some(def) => {
                let v = self.expr(def, Some(&fty));
                self.expect_assignable(&v, &fty, def.span);
                let ret = Stmt {
                    kind: T::Return(Some(v)),
                    span: def.span,
                };
                (vec![ret], def.span)
            }
            None => (Vec::new(), Span::default()),
        };
        Func {
            name,
            params: Vec::new(),
            ret: fty,
            body,
            span,
            n_locals: self.ctx.locals.len(),
        }
    }
}
