//! Constants (LANGUAGE.md §4): their types, and the order they are initialised in.
//!
//! Types first: constants are checked in an order where the constants an initialiser
//! names come before it, so checking one does not recurse into the next (a chain of
//! thousands of constants stays flat on the stack). Then, once every function body is
//! checked, the initialisation order follows the full dependency graph: the constants
//! an initialiser reads directly and through every function, method and field
//! default it can call. A cycle in that graph is a compile error, so no constant is
//! ever read before it has its value.

use std::collections::HashMap;

use super::{Checker, GlobalState};
use crate::ast::{self, ExprKind as A};
use crate::diag::{Diagnostic, Span};
use crate::tir::{Expr, ExprKind as E, Func, FuncId, Global, Stmt, StmtKind as T, Ty};

/// How many constants may be checked inside one another (only field defaults that
/// name constants can nest them once they are sorted).
const MAX_CONST_DEPTH: usize = 64;

/// The upper-case names an expression mentions (candidate constants), in order.
fn named_constants(e: &ast::Expr, out: &mut Vec<String>) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match &e.kind {
            A::TypeName(n) => out.push(n.clone()),
            A::Int(_) | A::Float(_) | A::Bool(_) | A::Nil | A::Name(_) | A::Error => {}
            A::Text(parts) => stack.extend(parts.iter().filter_map(|p| match p {
                ast::TextPart::Expr(e) => Some(e),
                ast::TextPart::Lit(_) => None,
            })),
            A::Call { args, .. } | A::List(args) => stack.extend(args),
            A::Spawn { call } => stack.push(call),
            A::MethodCall { recv, args, .. } => {
                stack.push(recv);
                stack.extend(args);
            }
            A::Field { recv, .. } => stack.push(recv),
            A::Unary { expr, .. } => stack.push(expr),
            A::Index { recv, index: b }
            | A::Binary {
                lhs: recv, rhs: b, ..
            }
            | A::Try {
                body: recv,
                handler: b,
                ..
            } => {
                stack.push(recv);
                stack.push(b);
            }
            A::Map(entries) => {
                for (k, v) in entries {
                    stack.push(k);
                    stack.push(v);
                }
            }
            A::Construct { fields, .. } | A::Insert { fields, .. } => {
                stack.extend(fields.iter().map(|f| &f.value));
            }
            A::Query(q) => {
                stack.push(&q.source);
                stack.extend(&q.wheres);
                stack.extend(q.order.iter().map(|k| &k.expr));
                stack.extend(q.skip.iter().chain(q.take.iter()));
                stack.push(&q.select);
            }
        }
    }
}

/// Which nodes of a directed graph lie on a cycle: the strongly connected components
/// of more than one node, and nodes with an edge to themselves. Tarjan's algorithm,
/// without recursion.
fn on_cycles(edges: &[Vec<usize>]) -> Vec<bool> {
    let n = edges.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = vec![false; n];
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, i)) = work.last() {
            if let Some(&w) = edges[v].get(i) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if w >= n {
                    continue;
                }
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                let cyclic = component.len() > 1 || edges[v].contains(&v);
                for w in component {
                    out[w] = cyclic;
                }
            }
        }
    }
    out
}

/// What a piece of checked code reads and calls directly.
#[derive(Default)]
struct Reach {
    globals: Vec<usize>,
    calls: Vec<FuncId>,
}

/// The shortest chain of calls from `first` to a function that reads constant `g`
/// (`first` included), for a cycle's note; just `first` when none is found.
fn call_path(fn_reach: &[Reach], first: FuncId, g: usize) -> Vec<FuncId> {
    if first >= fn_reach.len() {
        return vec![first];
    }
    let mut prev = vec![usize::MAX; fn_reach.len()];
    prev[first] = first;
    let mut queue = std::collections::VecDeque::from([first]);
    while let Some(f) = queue.pop_front() {
        if fn_reach[f].globals.contains(&g) {
            let mut path = vec![f];
            let mut at = f;
            while at != first {
                at = prev[at];
                path.push(at);
            }
            path.reverse();
            return path;
        }
        for &c in &fn_reach[f].calls {
            if c < prev.len() && prev[c] == usize::MAX {
                prev[c] = f;
                queue.push_back(c);
            }
        }
    }
    vec![first]
}

impl Reach {
    fn expr(&mut self, e: &Expr) {
        let mut stack = vec![e];
        while let Some(e) = stack.pop() {
            self.expr_children(e, &mut stack);
        }
    }

    fn block(&mut self, b: &[Stmt]) {
        let mut stmts: Vec<&Stmt> = b.iter().collect();
        let mut exprs: Vec<&Expr> = Vec::new();
        while let Some(s) = stmts.pop() {
            match &s.kind {
                T::Let(_, e) | T::SetLocal(_, e) | T::Expr(e) | T::Return(Some(e)) => exprs.push(e),
                T::Return(None) | T::Break | T::Continue => {}
                T::SetField { obj, value, .. } => exprs.extend([obj, value]),
                T::SetList { list, index, value } => exprs.extend([list, index, value]),
                T::SetMap { map, key, value } => exprs.extend([map, key, value]),
                T::SetRowField { row, value, .. } => exprs.extend([row, value]),
                T::Delete { row, .. } => exprs.push(row),
                T::If { cond, then, els } => {
                    exprs.push(cond);
                    stmts.extend(then.iter().chain(els));
                }
                T::While { cond: e, body }
                | T::ForList { list: e, body, .. }
                | T::ForText { text: e, body, .. }
                | T::ForMap { map: e, body, .. } => {
                    exprs.push(e);
                    stmts.extend(body);
                }
                T::ForRange {
                    start,
                    stop,
                    step,
                    body,
                    ..
                } => {
                    exprs.extend([start, stop, step]);
                    stmts.extend(body);
                }
                T::Try { body, handler, .. } => stmts.extend(body.iter().chain(handler)),
                T::Block(b) | T::Transaction(b) => stmts.extend(b),
                T::ForQuery {
                    rows, select, body, ..
                } => {
                    self.query(rows, &mut exprs);
                    exprs.extend(select.iter());
                    stmts.extend(body);
                }
            }
        }
        for e in exprs {
            self.expr(e);
        }
    }

    fn query<'e>(&mut self, q: &'e crate::tir::Query, stack: &mut Vec<&'e Expr>) {
        match &q.source {
            crate::tir::QuerySource::Table { args, .. } => stack.extend(args),
            crate::tir::QuerySource::List(e) => stack.push(e),
        }
        stack.extend(&q.residual);
        stack.extend(q.values.iter().map(|(_, v)| v));
        stack.extend(q.order.iter().map(|(e, _)| e));
        stack.extend(q.skip.iter().chain(q.take.iter()).chain(q.select.iter()));
    }

    fn expr_children<'e>(&mut self, e: &'e Expr, stack: &mut Vec<&'e Expr>) {
        match &e.kind {
            E::Int(_) | E::Float(_) | E::Text(_) | E::Bool(_) | E::Nil | E::Local(_) => {}
            E::Global(g) => self.globals.push(*g),
            E::Call { func, args } | E::Spawn { func, args } => {
                self.calls.push(*func);
                stack.extend(args);
            }
            E::Builtin { args, .. }
            | E::Concat(args)
            | E::List(args)
            | E::DbAggregate { args, .. } => stack.extend(args),
            E::New { fields, .. } | E::Insert { fields, .. } => stack.extend(fields),
            E::Unary(_, a) | E::Field(a, _) | E::RowField(a, ..) | E::RowId(a) | E::Join(a) => {
                stack.push(a)
            }
            E::Find { id, .. } => stack.push(id),
            E::Binary(_, a, b) | E::ListIndex(a, b) | E::MapIndex(a, b) => {
                stack.extend([&**a, &**b])
            }
            E::Try { body, handler, .. } => stack.extend([&**body, &**handler]),
            E::Map(entries) => {
                for (k, v) in entries {
                    stack.extend([k, v]);
                }
            }
            E::Query(q) => self.query(q, stack),
        }
    }
}

impl<'a> Checker<'a> {
    /// Checks every constant's initialiser, the constants it names first.
    pub(super) fn check_constants(&mut self) {
        let n = self.globals.len();
        let mut deps: Vec<Vec<usize>> = Vec::with_capacity(n);
        for g in 0..n {
            let (mi, ii) = self.globals[g].decl;
            let mut names = Vec::new();
            if let ast::Item::Const { value, .. } = &self.modules[mi].items[ii] {
                named_constants(value, &mut names);
            }
            deps.push(
                names
                    .iter()
                    .filter_map(|n| self.global_index.get(n).copied())
                    .collect(),
            );
        }
        // Post-order over the named constants, without recursion. A cycle is left for
        // `ensure_global` to report, where it has the span of the use.
        let mut visited = vec![false; n];
        for root in 0..n {
            if visited[root] {
                continue;
            }
            visited[root] = true;
            let mut stack = vec![(root, 0)];
            while let Some((g, next)) = stack.pop() {
                if let Some(&d) = deps[g].get(next) {
                    stack.push((g, next + 1));
                    if !visited[d] {
                        visited[d] = true;
                        stack.push((d, 0));
                    }
                } else {
                    self.ensure_global(g, None);
                }
            }
        }
    }

    pub(super) fn ensure_global(&mut self, g: usize, use_span: Option<Span>) -> Ty {
        match self.globals[g].state {
            GlobalState::Done => return self.globals[g].ty.clone(),
            GlobalState::InProgress => {
                let span = use_span.unwrap_or_default();
                let name = self.globals[g].name.clone();
                self.globals[g].cyclic = true;
                self.err(
                    "const",
                    span,
                    format!("constant `{name}` depends on itself"),
                );
                return Ty::Unknown;
            }
            GlobalState::Pending => {}
        }
        let (mi, ii) = self.globals[g].decl;
        let ast::Item::Const { value, .. } = &self.modules[mi].items[ii] else {
            return Ty::Unknown;
        };
        if self.const_depth >= MAX_CONST_DEPTH {
            let name = self.globals[g].name.clone();
            self.err(
                "limit",
                use_span.unwrap_or(value.span),
                format!("constant `{name}` is reached through more than {MAX_CONST_DEPTH} constants initialised inside one another"),
            );
            return Ty::Unknown;
        }
        self.globals[g].state = GlobalState::InProgress;
        let saved = std::mem::take(&mut self.ctx);
        self.ctx.scopes.push(HashMap::new());
        self.const_depth += 1;
        let e = self.expr(value, None);
        self.const_depth -= 1;
        let n_locals = self.ctx.locals.len();
        self.ctx = saved;
        let ty = match e.ty {
            Ty::Nil => {
                self.err("type", value.span, "a constant cannot be just `nil`");
                Ty::Unknown
            }
            Ty::Void => {
                self.err("type", value.span, "this expression has no value");
                Ty::Unknown
            }
            ref t => t.clone(),
        };
        self.globals[g].ty = ty.clone();
        self.globals[g].state = GlobalState::Done;
        self.global_out[g] = Some(Global {
            name: self.globals[g].name.clone(),
            ty: ty.clone(),
            value: e,
            n_locals,
        });
        ty
    }

    /// The span of constant `g`'s name.
    pub(super) fn const_span(&self, g: usize) -> Span {
        let (mi, ii) = self.globals[g].decl;
        match &self.modules[mi].items[ii] {
            ast::Item::Const { name, .. } => name.span,
            _ => Span::default(),
        }
    }

    /// Sets the initialisation order from the full dependency graph and reports its
    /// cycles; also reports field defaults that need themselves to be computed.
    pub(super) fn order_constants(&mut self, funcs: &[Func]) {
        let fn_reach: Vec<Reach> = funcs
            .iter()
            .map(|f| {
                let mut r = Reach::default();
                r.block(&f.body);
                r
            })
            .collect();
        self.report_default_cycles(&fn_reach);
        let n = self.globals.len();
        // deps[g]: (constant read, the function it is read through, if any).
        let mut deps: Vec<Vec<(usize, Option<FuncId>)>> = Vec::with_capacity(n);
        let mut seen_fn = vec![usize::MAX; funcs.len()];
        for g in 0..n {
            let mut r = Reach::default();
            if let Some(out) = &self.global_out[g] {
                r.expr(&out.value);
            }
            let mut d: Vec<(usize, Option<FuncId>)> =
                r.globals.iter().map(|&x| (x, None)).collect();
            // Every function reachable from the initialiser, each remembered by the
            // function called directly from the initialiser that leads to it.
            let mut work: Vec<(FuncId, FuncId)> = r.calls.iter().map(|&f| (f, f)).collect();
            while let Some((f, first)) = work.pop() {
                if f >= funcs.len() || seen_fn[f] == g {
                    continue;
                }
                seen_fn[f] = g;
                d.extend(fn_reach[f].globals.iter().map(|&x| (x, Some(first))));
                work.extend(fn_reach[f].calls.iter().map(|&c| (c, first)));
            }
            deps.push(d);
        }
        // Dependencies first; a back edge is a cycle.
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let mut mark = vec![Mark::New; n];
        let mut order = Vec::with_capacity(n);
        for root in 0..n {
            if mark[root] != Mark::New {
                continue;
            }
            mark[root] = Mark::Open;
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            while let Some(&(g, next)) = stack.last() {
                match deps[g].get(next) {
                    Some(&(d, _)) => {
                        if let Some(top) = stack.last_mut() {
                            top.1 += 1;
                        }
                        match mark[d] {
                            Mark::New => {
                                mark[d] = Mark::Open;
                                stack.push((d, 0));
                            }
                            Mark::Open => {
                                self.report_const_cycle(&stack, d, &deps, funcs, &fn_reach);
                            }
                            Mark::Done => {}
                        }
                    }
                    None => {
                        mark[g] = Mark::Done;
                        order.push(g);
                        stack.pop();
                    }
                }
            }
        }
        self.init_order = order;
    }

    /// `stack` is the path of constants being ordered; its last one reads `back`,
    /// which is on the path.
    fn report_const_cycle(
        &mut self,
        stack: &[(usize, usize)],
        back: usize,
        deps: &[Vec<(usize, Option<FuncId>)>],
        funcs: &[Func],
        fn_reach: &[Reach],
    ) {
        let start = stack.iter().position(|&(g, _)| g == back).unwrap_or(0);
        if stack[start..].iter().any(|&(g, _)| self.globals[g].cyclic) {
            return; // reported while checking types, where the use is
        }
        let mut steps = Vec::new();
        for &(g, next) in &stack[start..] {
            // `next` was advanced past the edge taken from `g`.
            let Some(&(d, via)) = deps[g].get(next.saturating_sub(1)) else {
                continue;
            };
            let (from, to) = (&self.globals[g].name, &self.globals[d].name);
            steps.push(match via {
                Some(f) => match funcs[f].name.strip_suffix(" (default)") {
                    Some(field) => {
                        format!("`{from}` uses the default of `{field}`, which reads `{to}`")
                    }
                    None => {
                        let mut text = format!("`{from}` calls `{}`", funcs[f].name);
                        for c in call_path(fn_reach, f, d).iter().skip(1) {
                            text.push_str(&format!(", which calls `{}`", funcs[*c].name));
                        }
                        text.push_str(&format!(", which reads `{to}`"));
                        text
                    }
                },
                None => format!("`{from}` reads `{to}`"),
            });
        }
        let name = self.globals[back].name.clone();
        let d = Diagnostic::error(
            "const",
            self.const_span(back),
            format!("constant `{name}` depends on itself"),
        )
        .with_note(format!(
            "{}: it would be read before it has a value",
            super::names::listed(&steps)
        ));
        self.diags.push(d);
    }

    /// A field default that constructs its own class without giving the field would
    /// compute itself again at every construction, without end.
    fn report_default_cycles(&mut self, fn_reach: &[Reach]) {
        let n = self.funcs.len();
        let is_default = |f: FuncId| self.funcs.get(f).is_some_and(|s| s.default.is_some());
        // Edges between defaults only: a default that calls a user function may stop.
        let edges: Vec<Vec<FuncId>> = (0..n)
            .map(|f| match fn_reach.get(f) {
                Some(r) if is_default(f) => {
                    r.calls.iter().copied().filter(|&g| is_default(g)).collect()
                }
                _ => Vec::new(),
            })
            .collect();
        let on_cycle = on_cycles(&edges);
        for start in (0..n).filter(|&f| on_cycle[f]) {
            let Some((cid, i)) = self.funcs[start].default else {
                continue;
            };
            let (mi, ii) = self.class_decls[cid];
            let span = match &self.modules[mi].items[ii] {
                ast::Item::Class(c) => c
                    .fields
                    .get(i)
                    .and_then(|f| f.default.as_ref())
                    .map_or(Span::default(), |d| d.span),
                _ => Span::default(),
            };
            let (class, field) = (&self.classes[cid].name, &self.classes[cid].fields[i].name);
            let msg = format!("the default of `{class}.{field}` needs itself: computing it constructs a value that takes the same default again, without end");
            self.diags.push(
                Diagnostic::error("default", span, msg)
                    .with_note(format!("give `{field}` in that constructor literal, or drop the default (a `?T` field is nil when omitted)")),
            );
        }
    }
}
