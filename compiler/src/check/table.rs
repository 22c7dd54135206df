//! Checking the database side of the language (LANGUAGE.md §7): `@table(…)`
//! arguments, `insert`, `T.find`, queries and their planning. Planning decides what
//! the engine does by itself — predicates of the form `x.col OP value` (where `value`
//! does not mention the query variable), `order by` on columns, and `skip`/`take` when
//! nothing is left to filter in bytecode — and what stays in bytecode.

use std::collections::HashMap;

use super::Checker;
use crate::ast::{self, ExprKind as A};
use crate::diag::Span;
use crate::tir::{self, BinOp, Expr, ExprKind as E, QuerySource, TableInfo, Ty, UnOp};
use wo_bytecode::image::IndexKind;
use wo_bytecode::{Cmp, QueryAgg, QueryCol, QueryDesc, QueryPred};

/// A checked query before it becomes an expression.
pub(crate) struct Checked {
    pub query: tir::Query,
    /// The type of one selected value.
    pub select_ty: Ty,
    /// The table the rows come from, if any.
    pub table: Option<usize>,
}

/// An aggregate's argument after planning.
pub(crate) enum AggArg {
    /// The engine computes the whole aggregate.
    Engine(Expr),
    /// The query as a list, for the ordinary builtin.
    List(Expr),
}

/// Whether `e` reads local `id` anywhere.
pub(crate) fn mentions(e: &Expr, id: usize) -> bool {
    let m = |x: &Expr| mentions(x, id);
    match &e.kind {
        E::Local(l) => *l == id,
        E::Int(_) | E::Float(_) | E::Text(_) | E::Bool(_) | E::Nil | E::Global(_) => false,
        E::Call { args, .. } | E::Builtin { args, .. } | E::Spawn { args, .. } => {
            args.iter().any(m)
        }
        E::Unary(_, x) | E::Field(x, _) | E::RowField(x, ..) | E::RowId(x) | E::Join(x) => m(x),
        E::Find { id: x, .. } => m(x),
        E::Binary(_, l, r) | E::ListIndex(l, r) | E::MapIndex(l, r) => m(l) || m(r),
        E::Concat(xs) | E::List(xs) => xs.iter().any(m),
        E::New { fields, .. } | E::Insert { fields, .. } => fields.iter().any(m),
        E::Map(kv) => kv.iter().any(|(k, v)| m(k) || m(v)),
        E::Try { body, handler, .. } => m(body) || m(handler),
        E::DbAggregate { args, .. } => args.iter().any(m),
        E::Query(q) => {
            let src = match &q.source {
                QuerySource::Table { args, .. } => args.iter().any(m),
                QuerySource::List(l) => m(l),
            };
            src || q.residual.iter().any(m)
                || q.values.iter().any(|(_, v)| m(v))
                || q.order.iter().any(|(k, _)| m(k))
                || q.skip.as_ref().is_some_and(m)
                || q.take.as_ref().is_some_and(m)
                || q.select.as_ref().is_some_and(m)
        }
    }
}

/// Whether evaluating a value compared in `where` does work that could trap or have
/// an effect: anything but a literal, a local or a constant.
fn does_work(e: &Expr) -> bool {
    !matches!(
        e.kind,
        E::Int(_) | E::Float(_) | E::Text(_) | E::Bool(_) | E::Nil | E::Local(_) | E::Global(_)
    )
}

fn mirror(c: Cmp) -> Cmp {
    match c {
        Cmp::Lt => Cmp::Gt,
        Cmp::Gt => Cmp::Lt,
        Cmp::Le => Cmp::Ge,
        Cmp::Ge => Cmp::Le,
        c => c,
    }
}

/// The column `e` reads from the query variable, if it is exactly `x.col` or `x.id`.
fn column_of(e: &Expr, var: usize) -> Option<QueryCol> {
    match &e.kind {
        E::RowField(r, _, col) if matches!(r.kind, E::Local(l) if l == var) => {
            Some(QueryCol::Col(*col))
        }
        E::RowId(r) if matches!(r.kind, E::Local(l) if l == var) => Some(QueryCol::Id),
        _ => None,
    }
}

fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e.kind {
        E::Binary(BinOp::And, l, r) => {
            split_and(*l, out);
            split_and(*r, out);
        }
        _ => out.push(e),
    }
}

/// `x.col OP value` → the predicate (without its argument slot) and the value.
fn pushable(e: &Expr, var: usize) -> Option<(QueryCol, Cmp, Expr)> {
    match &e.kind {
        E::Binary(op, l, r) => {
            let c = match op {
                BinOp::CmpInt(c) | BinOp::CmpFloat(c) | BinOp::CmpText(c) => *c,
                // The engine's range predicates match no nil, either side.
                BinOp::CmpOrNil(c) => *c,
                BinOp::Eq => Cmp::Eq,
                BinOp::Ne => Cmp::Ne,
                _ => return None,
            };
            if l.ty == Ty::Unknown || r.ty == Ty::Unknown {
                return None;
            }
            if let Some(col) = column_of(l, var) {
                if !mentions(r, var) {
                    return Some((col, c, (**r).clone()));
                }
            }
            if let Some(col) = column_of(r, var) {
                if !mentions(l, var) {
                    return Some((col, mirror(c), (**l).clone()));
                }
            }
            None
        }
        E::RowField(..) if e.ty == Ty::Bool => {
            let col = column_of(e, var)?;
            Some((col, Cmp::Eq, Expr::new(E::Bool(true), Ty::Bool, e.span)))
        }
        E::Unary(UnOp::Not, x) if x.ty == Ty::Bool => {
            let col = column_of(x, var)?;
            Some((col, Cmp::Eq, Expr::new(E::Bool(false), Ty::Bool, e.span)))
        }
        _ => None,
    }
}

fn arg_slot(args: &mut Vec<Expr>, e: Expr) -> u16 {
    args.push(e);
    u16::try_from(args.len() - 1).unwrap_or(u16::MAX)
}

/// The text of a literal without interpolation (`"old"`), or `None`; empty texts too.
pub(crate) fn text_literal(e: &ast::Expr) -> Option<String> {
    match &e.kind {
        A::Text(parts) if parts.len() <= 1 => {
            let name = match parts.first() {
                Some(ast::TextPart::Lit(s)) => s.clone(),
                _ => String::new(),
            };
            (!name.is_empty()).then_some(name)
        }
        _ => None,
    }
}

impl Checker<'_> {
    /// Reads the arguments of `@table(…)` into `t`.
    pub(super) fn table_args(
        &mut self,
        a: &ast::Annotation,
        fields: &[tir::FieldInfo],
        t: &mut TableInfo,
    ) {
        let Some(args) = &a.args else { return };
        let class_name = t.name.clone();
        let col_of = |this: &mut Self, e: &ast::Expr| -> Option<u16> {
            match &e.kind {
                A::Name(n) => match fields.iter().position(|f| f.name == *n) {
                    Some(i) => u16::try_from(i).ok(),
                    None => {
                        this.err(
                            "table",
                            e.span,
                            format!("`{class_name}` has no column `{n}`"),
                        );
                        None
                    }
                },
                _ => {
                    this.err("table", e.span, "expected a column name");
                    None
                }
            }
        };
        for arg in args {
            match arg.name.name.as_str() {
                "name" => match &arg.value.kind {
                    A::Text(parts) if parts.len() <= 1 => {
                        let name = match parts.first() {
                            Some(ast::TextPart::Lit(s)) => s.clone(),
                            _ => String::new(),
                        };
                        if name.is_empty() {
                            self.err("table", arg.value.span, "a table name cannot be empty");
                        } else if name.contains('\0') {
                            // No file format, export or database it goes to keeps one.
                            self.err(
                                "table",
                                arg.value.span,
                                "a table name cannot contain the character U+0000",
                            );
                        } else {
                            t.name = name;
                        }
                    }
                    _ => self.err("table", arg.value.span, "`name:` takes a text literal"),
                },
                "index" | "sorted" => {
                    let A::List(items) = &arg.value.kind else {
                        self.err("table", arg.value.span, format!("`{}:` takes a list of columns, e.g. `[dept]`", arg.name.name));
                        continue;
                    };
                    let cols: Vec<u16> = items.iter().filter_map(|e| col_of(self, e)).collect();
                    if cols.len() != items.len() {
                        continue;
                    }
                    if cols.is_empty() {
                        self.err("table", arg.value.span, "an index needs at least one column");
                        continue;
                    }
                    if arg.name.name == "sorted" {
                        if cols.len() != 1 {
                            self.err("table", arg.value.span, "a sorted index has exactly one column");
                            continue;
                        }
                        let ty = fields[usize::from(cols[0])].ty.strip().clone();
                        if !matches!(ty, Ty::Int | Ty::Float | Ty::Text | Ty::Bool | Ty::Class(_) | Ty::Unknown) {
                            self.err("table", arg.value.span, "this column cannot be sorted");
                        }
                        t.indexes.push((cols, IndexKind::Sorted));
                    } else {
                        let mut sorted = cols.clone();
                        sorted.sort_unstable();
                        sorted.dedup();
                        if sorted.len() != cols.len() {
                            self.err("table", arg.value.span, "an index names a column twice");
                            continue;
                        }
                        // An `index:` on a `@unique` column is merged into the unique index.
                        if cols.len() == 1 && t.indexes.iter().any(|(c, k)| *k == IndexKind::Unique && *c == cols) {
                            continue;
                        }
                        if t.indexes.iter().any(|(c, k)| *k == IndexKind::Hash && *c == cols) {
                            continue;
                        }
                        t.indexes.push((cols, IndexKind::Hash));
                    }
                }
                "was" => match text_literal(&arg.value) {
                    Some(old) => t.was = Some(old),
                    None => self.err(
                        "table",
                        arg.value.span,
                        "`was:` takes the table's former name as a text literal",
                    ),
                },
                "" => self.err(
                    "table",
                    arg.value.span,
                    "`@table` takes named arguments (`name:`, `index:`, `sorted:`, `durable:`, `was:`)",
                ),
                "durable" => match arg.value.kind {
                    A::Bool(b) => t.durable = b,
                    _ => self.err("table", arg.value.span, "`durable:` takes `true` or `false`"),
                },
                other => self.err(
                    "table",
                    arg.name.span,
                    format!("unknown table argument `{other}` (the arguments are `name`, `index`, `sorted`, `durable`, `was`)"),
                ),
            }
        }
        // A table in memory alone has no stored table to take the rows of (helper-95:
        // the `was:` was ignored, and the stored rows stayed where they were).
        if let (Some(w), false) = (&t.was, t.durable) {
            let at = args
                .iter()
                .find(|a| a.name.name == "was")
                .map_or(a.span, |a| a.value.span);
            self.err(
                "table",
                at,
                format!("`was: \"{w}\"` renames a stored table, but a table with `durable: false` is not stored: remove one of them"),
            );
        }
    }

    pub(super) fn table_of(&self, t: &Ty) -> Option<usize> {
        match t {
            Ty::Class(c) => self.classes.get(*c)?.table.as_ref().map(|t| t.index),
            _ => None,
        }
    }

    /// `insert T { … }`.
    pub(super) fn insert(
        &mut self,
        table: &ast::Ident,
        inits: &[ast::FieldInit],
        span: Span,
    ) -> Expr {
        let cid = match self.class_index.get(&table.name) {
            Some(&c) if self.table_classes.contains(&c) => {
                self.note_class(table.span, c);
                c
            }
            Some(_) => {
                self.err(
                    "table",
                    table.span,
                    format!(
                        "`{}` is not a `@table` class; create objects with `{} {{ … }}`",
                        table.name, table.name
                    ),
                );
                return self.unknown(span);
            }
            None => {
                if !self.broken_declaration(&table.name) {
                    let hint = self.table_hint(&table.name);
                    self.err(
                        "name",
                        table.span,
                        format!("unknown table `{}`{hint}", table.name),
                    );
                }
                return self.unknown(span);
            }
        };
        let built = self.construct_fields(cid, &table.name, inits, span);
        let t = self.table_of(&Ty::Class(cid)).unwrap_or(0);
        match built {
            Some((fields, order)) => Expr::new(
                E::Insert {
                    table: t,
                    fields,
                    order,
                },
                Ty::Class(cid),
                span,
            ),
            None => self.unknown(span),
        }
    }

    /// `T.find(id)`.
    pub(super) fn find(
        &mut self,
        class: &str,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Expr {
        let cid = self.class_index[class];
        let Some(t) = self.table_of(&Ty::Class(cid)) else {
            let mut d = crate::diag::Diagnostic::error(
                "table",
                span,
                format!(
                    "`{class}.{}(…)`: only `@table` classes have class functions",
                    method.name
                ),
            );
            // A method called on the class (helper-96).
            if self.classes[cid]
                .methods
                .iter()
                .any(|(m, _)| *m == method.name)
            {
                d = d.with_note(format!(
                    "`{}` is a method: it is called on an object, `x.{}(…)` where `x` is a `{class}`",
                    method.name, method.name
                ));
            }
            self.diags.push(d);
            return self.unknown(span);
        };
        if method.name != "find" {
            self.err(
                "name",
                method.span,
                format!(
                    "table `{class}` has no function `{}` (tables have `find`)",
                    method.name
                ),
            );
            return self.unknown(span);
        }
        let a = self.call_args(&format!("{class}.find"), &[Ty::Int], args, span);
        let Some(id) = a.into_iter().next() else {
            return self.unknown(span);
        };
        Expr::new(
            E::Find {
                table: t,
                id: Box::new(id),
            },
            Ty::nullable(Ty::Class(cid)),
            span,
        )
    }

    /// Checks and plans a query. A query inside a `where` is a query of its own: its
    /// source, `select`, `order by`, `skip` and `take` are outside any `where`
    /// (helper-110: they took a `?T` in `<` there, and only there).
    pub(super) fn query(&mut self, q: &ast::Query, span: Span) -> Checked {
        let outer = std::mem::take(&mut self.ctx.in_where);
        let checked = self.query_parts(q, span);
        self.ctx.in_where = outer;
        checked
    }

    /// A query's `order by` keys and its selection.
    fn keys_and_selection(&mut self, q: &ast::Query) -> (Vec<(Expr, bool)>, Expr) {
        let mut order = Vec::new();
        for k in &q.order {
            let e = self.expr(&k.expr, None);
            if !matches!(
                e.ty.strip(),
                Ty::Int | Ty::Float | Ty::Text | Ty::Bool | Ty::Nil | Ty::Unknown
            ) && self.table_of(e.ty.strip()).is_none()
            {
                let t = self.tyname(&e.ty);
                self.err(
                    "type",
                    k.expr.span,
                    format!("cannot order by a value of type {t}"),
                );
            }
            order.push((e, k.desc));
        }
        let select = self.expr(&q.select, None);
        if select.ty == Ty::Void {
            self.err("type", q.select.span, "`select` needs a value");
        }
        (order, select)
    }

    fn query_parts(&mut self, q: &ast::Query, span: Span) -> Checked {
        // The source: a table class, or a list.
        let (table, var_ty, list) = match &q.source.kind {
            A::TypeName(n)
                if self
                    .class_index
                    .get(n)
                    .is_some_and(|c| self.table_classes.contains(c)) =>
            {
                let c = self.class_index[n];
                self.note_class(q.source.span, c);
                (self.table_of(&Ty::Class(c)), Ty::Class(c), None)
            }
            A::TypeName(n) if self.class_index.contains_key(n) => {
                self.err(
                    "table",
                    q.source.span,
                    format!("`{n}` is not a `@table` class; a query reads a table or a list"),
                );
                (None, Ty::Unknown, None)
            }
            A::TypeName(n) if !self.global_index.contains_key(n) => {
                if !self.broken_declaration(n) {
                    let hint = self.table_hint(n);
                    self.err("name", q.source.span, format!("unknown table `{n}`{hint}"));
                }
                (None, Ty::Unknown, None)
            }
            _ => {
                let src = self.expr(&q.source, None);
                match src.ty.clone() {
                    Ty::List(t) => (None, *t, Some(src)),
                    Ty::Unknown => (None, Ty::Unknown, Some(src)),
                    t => {
                        let t = self.tyname(&t);
                        self.err(
                            "type",
                            q.source.span,
                            format!("a query reads a table or a list, not a value of type {t}"),
                        );
                        (None, Ty::Unknown, Some(src))
                    }
                }
            }
        };
        let of_rows = self.table_of(var_ty.strip()).is_some();
        let rows_nullable = of_rows && matches!(var_ty, Ty::Nullable(_));
        self.ctx.scopes.push(HashMap::new());
        let var = self.new_local(&q.var.name, q.var.span, var_ty.clone());
        let mut wheres = Vec::new();
        // What the `where`s prove of the nullable locals (the query's variable among
        // them) holds in the `where`s after them, as in the right operand of `and`,
        // and in the keys and the selection, which see only the values that passed
        // (not in `skip` and `take`, evaluated once, whatever passes).
        let mut proven = Vec::new();
        self.ctx.in_where += 1;
        for w in &q.wheres {
            let c = self.with_facts(&proven, |this| this.cond(w));
            proven.extend(self.facts(w).0);
            split_and(c, &mut wheres);
        }
        self.ctx.in_where -= 1;
        let (order, select) = self.with_facts(&proven, |this| this.keys_and_selection(q));
        self.ctx.scopes.pop();
        self.ctx.ended_queries.push((q.var.name.clone(), span));
        let count = |this: &mut Self, e: &Option<ast::Expr>, what: &str| {
            e.as_ref().map(|e| {
                let v = this.expr(e, Some(&Ty::Int));
                if v.ty != Ty::Int && v.ty != Ty::Unknown {
                    let t = this.tyname(&v.ty);
                    this.err(
                        "type",
                        e.span,
                        format!("`{what}` takes an `Int`, found {t}"),
                    );
                }
                v
            })
        };
        let skip = count(self, &q.skip, "skip");
        let take = count(self, &q.take, "take");
        // (The query's list holds the selected values: one level more, whether the
        // list is a value, iterated by a `for` or read by `first`.)
        let list_ty = self.within_depth(
            Ty::List(Box::new(select.ty.clone())),
            span,
            "the type of this query's list",
        );
        let select_ty = match list_ty {
            Ty::List(t) => *t,
            _ => Ty::Unknown,
        };
        if select_ty == Ty::Nil {
            // `nil` is only a value of `?T` (LANGUAGE.md §3): no `multi nil`.
            self.err(
                "type",
                select.span,
                "a query cannot select only `nil`: its result would have no type",
            );
        }
        let select = if matches!(select.kind, E::Local(l) if l == var) {
            None
        } else {
            Some(select)
        };
        let _ = span;
        let query = match (table, list) {
            (Some(t), _) => {
                let mut args = Vec::new();
                let mut preds = Vec::new();
                let mut residual = Vec::new();
                // A value that does work is evaluated before the walk only while no
                // condition of the program's came before it: `where d != 0 and t.n ==
                // 100 / d` keeps its short-circuit (and the narrowing of a `?T` by an
                // earlier conjunct holds where it is used).
                let mut guarded = false;
                for w in wheres {
                    match pushable(&w, var) {
                        Some((col, op, value)) if !(guarded && does_work(&value)) => {
                            let arg = arg_slot(&mut args, value);
                            preds.push(QueryPred { col, op, arg });
                        }
                        _ => {
                            residual.push(w);
                            guarded = true;
                        }
                    }
                }
                let cols: Option<Vec<(QueryCol, bool)>> = order
                    .iter()
                    .map(|(e, d)| column_of(e, var).map(|c| (c, *d)))
                    .collect();
                let (engine_order, order) = match cols {
                    Some(c) => (c, Vec::new()),
                    None => (Vec::new(), order),
                };
                let push_limits = residual.is_empty() && order.is_empty();
                let (dskip, skip) = match skip {
                    Some(e) if push_limits => (Some(arg_slot(&mut args, e)), None),
                    s => (None, s),
                };
                let (dtake, take) = match take {
                    Some(e) if push_limits => (Some(arg_slot(&mut args, e)), None),
                    s => (None, s),
                };
                let desc = QueryDesc {
                    table: u32::try_from(t).unwrap_or(u32::MAX),
                    preds,
                    order: engine_order,
                    skip: dskip,
                    take: dtake,
                    n_args: u16::try_from(args.len()).unwrap_or(u16::MAX),
                    agg: QueryAgg::Rows,
                };
                tir::Query {
                    var,
                    source: QuerySource::Table {
                        table: t,
                        desc,
                        args,
                    },
                    residual,
                    values: Vec::new(),
                    order,
                    skip,
                    take,
                    select,
                    rows: true,
                    rows_nullable: false,
                }
            }
            (None, src) => {
                let mut values = Vec::new();
                let mut guarded = false;
                let residual = wheres
                    .into_iter()
                    .map(|w| self.hoist_value(w, var, &mut values, &mut guarded))
                    .collect();
                tir::Query {
                    var,
                    source: QuerySource::List(src.unwrap_or_else(|| {
                        Expr::new(E::List(Vec::new()), Ty::Unknown, q.source.span)
                    })),
                    residual,
                    values,
                    order,
                    skip,
                    take,
                    select,
                    rows: of_rows,
                    rows_nullable,
                }
            }
        };
        Checked {
            query,
            select_ty,
            table,
        }
    }

    /// A `where` clause of a query over a list: in `x.f <op> value` (or `x <op>
    /// value`, either way round), a `value` that does work (a call, a field, arithmetic:
    /// not a literal, a local or a constant) is evaluated once, before the walk, into
    /// a local of its own pushed onto `values`, as the engine evaluates it for a
    /// table: the same query gives the same answer over a table and over a list.
    ///
    /// Only while every conjunct before it was of that shape too (`guarded` turns
    /// true at the first that is not): a condition before it keeps its short-circuit
    /// (`where i < len(ys) and y == ys[i]`) and the narrowing it makes.
    fn hoist_value(
        &mut self,
        w: Expr,
        var: usize,
        values: &mut Vec<(usize, Expr)>,
        guarded: &mut bool,
    ) -> Expr {
        let E::Binary(op, l, r) = &w.kind else {
            *guarded = true;
            return w;
        };
        let compares = matches!(
            op,
            BinOp::CmpInt(_)
                | BinOp::CmpFloat(_)
                | BinOp::CmpText(_)
                | BinOp::CmpOrNil(_)
                | BinOp::Eq
                | BinOp::Ne
        );
        let element = |e: &Expr| match &e.kind {
            E::Local(l) => *l == var,
            E::Field(x, _) | E::RowField(x, ..) => matches!(x.kind, E::Local(l) if l == var),
            _ => false,
        };
        if !compares || l.ty == Ty::Unknown || r.ty == Ty::Unknown {
            *guarded = true;
            return w;
        }
        // An element compared with a value that does no work: no guard, and nothing
        // to hoist.
        let cheap = |e: &Expr| !mentions(e, var) && !does_work(e);
        if (element(l) && cheap(r)) || (element(r) && cheap(l)) {
            return w;
        }
        let hoistable = !*guarded;
        let is_value = |e: &Expr| hoistable && !mentions(e, var) && does_work(e);
        let (op, l, r) = (*op, (**l).clone(), (**r).clone());
        let mut hoist = |e: Expr| {
            let id = self.temp_local(e.ty.clone(), e.span);
            let local = Expr::new(E::Local(id), e.ty.clone(), e.span);
            values.push((id, e));
            local
        };
        let (l, r) = if element(&l) && is_value(&r) {
            let r = hoist(r);
            (l, r)
        } else if element(&r) && is_value(&l) {
            let l = hoist(l);
            (l, r)
        } else {
            *guarded = true;
            return w;
        };
        Expr::new(E::Binary(op, Box::new(l), Box::new(r)), w.ty, w.span)
    }

    /// A query as a list-valued expression.
    pub(super) fn query_expr(&mut self, q: &ast::Query, span: Span) -> Expr {
        let c = self.query(q, span);
        Expr::new(
            E::Query(Box::new(c.query)),
            Ty::List(Box::new(c.select_ty)),
            span,
        )
    }

    /// `count(q)`, `sum(q)` … over a query the engine can run alone: returns the
    /// aggregate expression, or the query as a list for the ordinary builtin.
    pub(super) fn aggregate_arg(&mut self, name: &str, q: &ast::Query, span: Span) -> AggArg {
        let c = self.query(q, span);
        let list_ty = Ty::List(Box::new(c.select_ty.clone()));
        let qspan = span;
        let engine_ok = c.table.is_some()
            && c.query.residual.is_empty()
            && c.query.order.is_empty()
            && c.query.skip.is_none()
            && c.query.take.is_none()
            && matches!(&c.query.source, QuerySource::Table { desc, .. } if desc.skip.is_none() && desc.take.is_none());
        let var = c.query.var;
        let sel_col = match &c.query.select {
            None => None,
            Some(e) => column_of(e, var),
        };
        // The engine skips nil values, like the list aggregates.
        let agg = match (name, &c.query.select, sel_col, c.select_ty.strip().clone()) {
            // Selecting a column cannot trap or change the count.
            ("count", None, _, _) | ("count", Some(_), Some(_), _) => {
                Some((QueryAgg::Count, Ty::Int))
            }
            ("exists", None, _, _) | ("exists", Some(_), Some(_), _) => {
                Some((QueryAgg::Exists, Ty::Bool))
            }
            ("sum", Some(_), Some(col), t @ (Ty::Int | Ty::Float)) => Some((QueryAgg::Sum(col), t)),
            ("min", Some(_), Some(col), t @ (Ty::Int | Ty::Float | Ty::Text)) => {
                Some((QueryAgg::Min(col), Ty::nullable(t)))
            }
            ("max", Some(_), Some(col), t @ (Ty::Int | Ty::Float | Ty::Text)) => {
                Some((QueryAgg::Max(col), Ty::nullable(t)))
            }
            ("avg", Some(_), Some(col), Ty::Int | Ty::Float) => {
                Some((QueryAgg::Avg(col), Ty::nullable(Ty::Float)))
            }
            _ => None,
        };
        match (engine_ok, agg, c.query.source) {
            (true, Some((agg, ty)), QuerySource::Table { mut desc, args, .. }) => {
                desc.agg = agg;
                AggArg::Engine(Expr::new(E::DbAggregate { desc, args }, ty, span))
            }
            (_, _, mut source) => {
                // `exists(q)` and `first(q)` need one row: with nothing for the
                // program to order, skip or take, the walk stops at the first that
                // passes the `where`s — in the engine (`take 1`) when it does all the
                // filtering, else in the program's walk (helper-72: a `where` the
                // program evaluates ran on every row).
                let one_row = matches!(name, "exists" | "first")
                    && c.query.order.is_empty()
                    && c.query.skip.is_none()
                    && c.query.take.is_none();
                let mut program_take = None;
                match &mut source {
                    QuerySource::Table { desc, args, .. }
                        if one_row && c.query.residual.is_empty() && desc.take.is_none() =>
                    {
                        args.push(Expr::new(E::Int(1), Ty::Int, span));
                        desc.take = Some(u16::try_from(args.len() - 1).unwrap_or(u16::MAX));
                        desc.n_args = u16::try_from(args.len()).unwrap_or(u16::MAX);
                    }
                    _ if one_row => program_take = Some(Expr::new(E::Int(1), Ty::Int, span)),
                    _ => {}
                }
                let mut query = tir::Query { source, ..c.query };
                if program_take.is_some() {
                    query.take = program_take;
                }
                AggArg::List(query.into_read_only(list_ty, qspan))
            }
        }
    }
}
