//! Code generation: typed IR to register bytecode. Locals live in registers allocated
//! in declaration order (Lua style); temporaries sit above them and are released at the
//! end of each statement. Calls place their arguments in consecutive registers at the
//! top, which become the callee's frame. Conditions compile to fused compare-and-branch
//! instructions where the types allow, loops test at the bottom, and every instruction
//! records the source position it came from.

use std::collections::HashMap;

use crate::diag::{Diagnostic, SourceMap, Span};
use crate::tir::{
    self, BinOp, Expr, ExprKind as E, Program, QuerySource, Stmt, StmtKind as T, Ty, UnOp,
};
use wo_bytecode::{
    BuiltinIdx, BuiltinRef, Class, ClassIdx, Cmp, Column, ColumnType, Const, ConstIdx, FieldIdx,
    FuncIdx, Function, GlobalIdx, Image, Index, Op, Pc, QueryDesc, QueryIdx, Reg, SrcPos, Table,
    TableIdx,
};

/// The most elements (or map entries) of a literal evaluated into one run of
/// registers; the rest are added one by one, so a literal of any size fits a
/// function's 65,535 registers.
const LITERAL_RUN: usize = 1024;

#[derive(Hash, PartialEq, Eq)]
enum ConstKey {
    Int(i64),
    Float(u64),
    Text(String),
}

struct Gen<'a> {
    sources: &'a SourceMap,
    consts: Vec<Const>,
    const_map: HashMap<ConstKey, u32>,
    builtins: Vec<BuiltinRef>,
    builtin_map: HashMap<&'static str, u16>,
    /// The first limit a function ran into, reported as a diagnostic.
    overflow: Option<Diagnostic>,
    queries: Vec<QueryDesc>,
}

/// What leaving a block early (by `break`, `continue` or `return`) must close.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Exit {
    Try,
    Transaction,
}

struct Loop {
    breaks: Vec<usize>,
    continues: Vec<usize>,
    /// `exits.len()` when the loop began.
    exits: usize,
}

struct FnGen {
    code: Vec<Op>,
    pos: Vec<SrcPos>,
    cur: SrcPos,
    local_reg: Vec<Reg>,
    next: u32,
    max: u32,
    loops: Vec<Loop>,
    exits: Vec<Exit>,
    span: Span,
}

/// Generates the image for a checked program. Fails only when a limit of the image
/// format is exceeded (65,535 registers in a function, 2^32 constants …).
pub fn generate(p: &Program, sources: &SourceMap) -> Result<Image, Diagnostic> {
    let mut g = Gen {
        sources,
        consts: Vec::new(),
        const_map: HashMap::new(),
        builtins: Vec::new(),
        builtin_map: HashMap::new(),
        overflow: None,
        queries: Vec::new(),
    };
    let mut functions = Vec::with_capacity(p.funcs.len() + 1);
    for f in &p.funcs {
        functions.push(g.function(f));
    }
    let init = if p.init_order.is_empty() {
        None
    } else {
        functions.push(g.init(p));
        Some(FuncIdx(
            u32::try_from(functions.len() - 1).unwrap_or(u32::MAX),
        ))
    };
    if let Some(d) = g.overflow {
        return Err(d);
    }
    Ok(Image {
        files: sources.files.iter().map(|f| f.name.clone()).collect(),
        consts: g.consts,
        functions,
        classes: p
            .classes
            .iter()
            .map(|c| Class {
                name: c.name.clone(),
                fields: c.fields.iter().map(|f| f.name.clone()).collect(),
            })
            .collect(),
        builtins: g.builtins,
        tables: tables(p),
        queries: g.queries,
        n_globals: u32::try_from(p.globals.len()).unwrap_or(u32::MAX),
        init,
        entry: FuncIdx(u32::try_from(p.main).unwrap_or(0)),
    })
}

/// The image's table list from the checked classes.
fn tables(p: &Program) -> Vec<Table> {
    p.tables
        .iter()
        .filter_map(|&cid| {
            let class = &p.classes[cid];
            let info = class.table.as_ref()?;
            let columns = class
                .fields
                .iter()
                .enumerate()
                .map(|(c, f)| Column {
                    name: f.name.clone(),
                    ty: match f.ty.strip() {
                        Ty::Float => ColumnType::Float,
                        Ty::Bool => ColumnType::Bool,
                        Ty::Text => ColumnType::Text,
                        Ty::Class(c) => ColumnType::Ref(
                            p.classes[*c]
                                .table
                                .as_ref()
                                .map(|t| idx32(t.index))
                                .unwrap_or(0),
                        ),
                        _ => ColumnType::Int,
                    },
                    nullable: f.ty.is_nullable(),
                    was: info
                        .column_was
                        .iter()
                        .find(|(k, _)| usize::from(*k) == c)
                        .map(|(_, old)| old.clone()),
                    default: info
                        .column_default
                        .iter()
                        .find(|(k, _)| usize::from(*k) == c)
                        .map(|(_, d)| d.clone()),
                })
                .collect();
            Some(Table {
                class: ClassIdx(idx32(cid)),
                name: info.name.clone(),
                columns,
                indexes: info
                    .indexes
                    .iter()
                    .map(|(cols, kind)| Index {
                        columns: cols.clone(),
                        kind: *kind,
                    })
                    .collect(),
                durable: info.durable,
                was: info.was.clone(),
            })
        })
        .collect()
}

/// The `i`-th register of a run starting at `base`.
fn nth(base: Reg, i: usize) -> Reg {
    Reg(base.0.saturating_add(u16::try_from(i).unwrap_or(u16::MAX)))
}

fn idx32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The comparison with its operands swapped: `a < b` is `b > a`.
fn swap(c: Cmp) -> Cmp {
    match c {
        Cmp::Lt => Cmp::Gt,
        Cmp::Gt => Cmp::Lt,
        Cmp::Le => Cmp::Ge,
        Cmp::Ge => Cmp::Le,
        Cmp::Eq | Cmp::Ne => c,
    }
}

fn negate(c: Cmp) -> Cmp {
    match c {
        Cmp::Eq => Cmp::Ne,
        Cmp::Ne => Cmp::Eq,
        Cmp::Lt => Cmp::Ge,
        Cmp::Ge => Cmp::Lt,
        Cmp::Le => Cmp::Gt,
        Cmp::Gt => Cmp::Le,
    }
}

/// Whether evaluating `e` into a destination register writes it before reading all of
/// its operands (so the destination must not be a local the expression reads).
fn writes_dst_early(e: &Expr) -> bool {
    matches!(
        e.kind,
        E::Binary(BinOp::And | BinOp::Or | BinOp::Coalesce, ..) | E::Try { .. }
    )
}

impl FnGen {
    fn new(n_locals: usize, span: Span) -> FnGen {
        FnGen {
            code: Vec::new(),
            pos: Vec::new(),
            cur: SrcPos::default(),
            local_reg: vec![Reg(0); n_locals],
            next: 0,
            max: 0,
            loops: Vec::new(),
            exits: Vec::new(),
            span,
        }
    }

    fn alloc_n(&mut self, n: usize) -> Reg {
        if n == 0 {
            // An empty run names no register; r0 keeps the operand in range.
            return Reg(0);
        }
        let r = self.next;
        self.next = self.next.saturating_add(idx32(n));
        self.max = self.max.max(self.next);
        Reg(u16::try_from(r).unwrap_or(u16::MAX))
    }

    fn alloc(&mut self) -> Reg {
        self.alloc_n(1)
    }

    fn target(&mut self, dst: Option<Reg>) -> Reg {
        dst.unwrap_or_else(|| self.alloc())
    }

    fn emit(&mut self, op: Op) -> usize {
        self.code.push(op);
        self.pos.push(self.cur);
        self.code.len() - 1
    }

    /// A `JUMP_IF_NIL` (to be patched) for each side of a comparison whose type is
    /// nullable (`BinOp::CmpOrNil`: a nil side makes it false).
    fn nil_tests(&mut self, sides: [(&Expr, Reg); 2]) -> Vec<usize> {
        sides
            .into_iter()
            .filter(|(e, _)| e.ty.is_nullable())
            .map(|(_, reg)| self.emit(Op::JumpIfNil { a: reg, t: Pc(0) }))
            .collect()
    }

    fn here(&self) -> Pc {
        Pc(idx32(self.code.len()))
    }

    /// Points the jump at `at` to the current end of the code.
    fn patch(&mut self, at: usize) {
        let t = self.here();
        self.patch_to(at, t);
    }

    fn patch_to(&mut self, at: usize, t: Pc) {
        match &mut self.code[at] {
            Op::Jump { t: x }
            | Op::JumpIf { t: x, .. }
            | Op::JumpIfNot { t: x, .. }
            | Op::JumpIfNil { t: x, .. }
            | Op::JumpIfNotNil { t: x, .. }
            | Op::JumpUnlessCmpInt { t: x, .. }
            | Op::JumpUnlessCmpIntImm { t: x, .. }
            | Op::TryEnter { t: x, .. }
            | Op::ForPrep { t: x, .. }
            | Op::ForLoop { t: x, .. }
            | Op::TextNext { t: x, .. }
            | Op::JumpUnlessEqConst { t: x, .. } => *x = t,
            _ => {}
        }
    }
}

impl<'a> Gen<'a> {
    fn pos_of(&self, span: Span) -> SrcPos {
        if (span.file.0 as usize) >= self.sources.files.len() {
            return SrcPos::default();
        }
        let (line, col) = self.sources.line_col(span);
        SrcPos {
            file: span.file.0,
            line,
            col,
        }
    }

    fn constant(&mut self, c: Const) -> ConstIdx {
        let key = match &c {
            Const::Int(v) => ConstKey::Int(*v),
            Const::Float(v) => ConstKey::Float(v.to_bits()),
            Const::Text(s) => ConstKey::Text(s.clone()),
        };
        if let Some(&i) = self.const_map.get(&key) {
            return ConstIdx(i);
        }
        let i = idx32(self.consts.len());
        self.consts.push(c);
        self.const_map.insert(key, i);
        ConstIdx(i)
    }

    fn builtin(&mut self, name: &'static str, arity: usize) -> BuiltinIdx {
        if let Some(&i) = self.builtin_map.get(name) {
            return BuiltinIdx(i);
        }
        let i = u16::try_from(self.builtins.len()).unwrap_or(u16::MAX);
        self.builtins.push(BuiltinRef {
            name: name.to_string(),
            arity: u16::try_from(arity).unwrap_or(u16::MAX),
        });
        self.builtin_map.insert(name, i);
        BuiltinIdx(i)
    }

    fn finish(&mut self, name: &str, arity: usize, mut f: FnGen) -> Function {
        // A jump may target the end of the code, so there is always a final return.
        f.emit(Op::RetNil {});
        if f.max > u32::from(u16::MAX) && self.overflow.is_none() {
            self.overflow = Some(Diagnostic::error(
                "limit",
                f.span,
                format!("function `{name}` needs more than 65535 registers; split it into smaller functions"),
            ));
        }
        Function {
            name: name.to_string(),
            arity: u16::try_from(arity).unwrap_or(u16::MAX),
            n_regs: u16::try_from(f.max.max(idx32(arity))).unwrap_or(u16::MAX),
            code: f.code,
            pos: f.pos,
        }
    }

    fn function(&mut self, func: &tir::Func) -> Function {
        let mut f = FnGen::new(func.n_locals, func.span);
        f.cur = self.pos_of(func.span);
        for &p in &func.params {
            let r = f.alloc();
            f.local_reg[p] = r;
        }
        self.block(&mut f, &func.body);
        self.finish(&func.name, func.params.len(), f)
    }

    fn init(&mut self, p: &Program) -> Function {
        let mut f = FnGen::new(0, Span::default());
        for &g in &p.init_order {
            let global = &p.globals[g];
            f.local_reg = vec![Reg(0); global.n_locals];
            let mark = f.next;
            let r = self.expr(&mut f, &global.value, None);
            f.emit(Op::SetGlobal {
                g: GlobalIdx(idx32(g)),
                a: r,
            });
            f.next = mark;
        }
        self.finish("<init>", 0, f)
    }

    fn block(&mut self, f: &mut FnGen, stmts: &[Stmt]) {
        let mark = f.next;
        for s in stmts {
            self.stmt(f, s);
        }
        f.next = mark;
    }

    fn stmt(&mut self, f: &mut FnGen, s: &Stmt) {
        f.cur = self.pos_of(s.span);
        let mark = f.next;
        match &s.kind {
            T::Let(id, e) => {
                let r = f.alloc();
                f.local_reg[*id] = r;
                self.expr(f, e, Some(r));
                f.next = mark + 1;
                return;
            }
            T::SetLocal(id, e) => {
                let r = f.local_reg[*id];
                if writes_dst_early(e) {
                    let t = self.expr(f, e, None);
                    f.emit(Op::Move { a: r, b: t });
                } else {
                    self.expr(f, e, Some(r));
                }
            }
            T::SetField { obj, field, value } => {
                let o = self.expr(f, obj, None);
                let v = self.expr(f, value, None);
                f.cur = self.pos_of(s.span);
                f.emit(Op::SetField {
                    a: o,
                    f: FieldIdx(*field),
                    b: v,
                });
            }
            T::SetList { list, index, value } => {
                let l = self.expr(f, list, None);
                let i = self.expr(f, index, None);
                let v = self.expr(f, value, None);
                f.cur = self.pos_of(s.span);
                f.emit(Op::ListSet { a: l, b: i, c: v });
            }
            T::SetMap { map, key, value } => {
                let m = self.expr(f, map, None);
                let k = self.expr(f, key, None);
                let v = self.expr(f, value, None);
                f.cur = self.pos_of(s.span);
                f.emit(Op::MapSet { a: m, b: k, c: v });
            }
            T::Expr(e) => {
                self.expr(f, e, None);
            }
            T::Return(e) => {
                let r = e.as_ref().map(|e| self.expr(f, e, None));
                // Leaving a transaction by `return` commits it.
                if f.exits.contains(&Exit::Transaction) {
                    f.emit(Op::TxCommit {});
                }
                f.emit(match r {
                    Some(a) => Op::Ret { a },
                    None => Op::RetNil {},
                });
            }
            T::Break | T::Continue => {
                let depth = f.loops.last().map(|l| l.exits).unwrap_or(0);
                let closing: Vec<Exit> = f.exits[depth..].iter().rev().copied().collect();
                for e in closing {
                    f.emit(match e {
                        Exit::Try => Op::TryExit {},
                        Exit::Transaction => Op::TxCommit {},
                    });
                }
                let j = f.emit(Op::Jump { t: Pc(0) });
                if let Some(l) = f.loops.last_mut() {
                    if matches!(s.kind, T::Break) {
                        l.breaks.push(j);
                    } else {
                        l.continues.push(j);
                    }
                }
            }
            T::If { cond, then, els } => {
                let jf = self.cond_jump(f, cond, false);
                self.block(f, then);
                if els.is_empty() {
                    for j in jf {
                        f.patch(j);
                    }
                } else {
                    let je = f.emit(Op::Jump { t: Pc(0) });
                    for j in jf {
                        f.patch(j);
                    }
                    self.block(f, els);
                    f.patch(je);
                }
            }
            T::While { cond, body } => {
                let to_cond = f.emit(Op::Jump { t: Pc(0) });
                let body_start = f.here();
                self.loop_body(f, body, |this, f| {
                    f.patch(to_cond);
                    let back = this.cond_jump(f, cond, true);
                    for j in back {
                        f.patch_to(j, body_start);
                    }
                });
            }
            T::ForList { var, list, body } => {
                let l = f.alloc();
                let n = f.alloc();
                let i = f.alloc();
                let v = f.alloc();
                f.local_reg[*var] = v;
                self.expr(f, list, Some(l));
                f.emit(Op::ListLen { a: n, b: l });
                self.counted_loop(f, i, n, body, |f| {
                    f.emit(Op::ListEntry { a: v, b: l, c: i });
                });
            }
            T::ForText { var, text, body } => {
                // TEXT_NEXT heads the loop: it ends the loop at the end of the text, or
                // hands out the next character and moves the byte cursor past it.
                let t = f.alloc();
                let i = f.alloc();
                let v = f.alloc();
                f.local_reg[*var] = v;
                self.expr(f, text, Some(t));
                f.emit(Op::LoadInt { a: i, v: 0 });
                let head = f.here();
                let next = f.emit(Op::TextNext {
                    v,
                    b: t,
                    i,
                    t: Pc(0),
                });
                self.loop_body(f, body, |_, f| {
                    f.emit(Op::Jump { t: head });
                });
                f.patch(next);
            }
            T::ForRange {
                var,
                start,
                stop,
                step,
                body,
            } => {
                // The bounds are evaluated once into `a … a+2`; FOR_PREP checks the step
                // and counts the iterations, FOR_LOOP is the loop's one instruction per
                // iteration. `var` is a copy of the counter, so assigning to it in the
                // body does not change the iterations.
                let a = f.alloc_n(3);
                for (i, e) in [start, stop, step].into_iter().enumerate() {
                    self.expr(f, e, Some(nth(a, i)));
                }
                let v = f.alloc();
                f.local_reg[*var] = v;
                let saved = f.cur;
                f.cur = self.pos_of(step.span);
                let prep = f.emit(Op::ForPrep { a, v, t: Pc(0) });
                f.cur = saved;
                let body_start = f.here();
                let head = self.pos_of(s.span);
                self.loop_body(f, body, |_, f| {
                    f.cur = head;
                    f.emit(Op::ForLoop {
                        a,
                        v,
                        t: body_start,
                    });
                });
                f.patch(prep);
            }
            T::ForMap {
                key,
                value,
                map,
                body,
            } => {
                let m = f.alloc();
                let n = f.alloc();
                let i = f.alloc();
                let k = f.alloc();
                let v = f.alloc();
                f.local_reg[*key] = k;
                f.local_reg[*value] = v;
                self.expr(f, map, Some(m));
                f.emit(Op::MapLen { a: n, b: m });
                self.counted_loop(f, i, n, body, |f| {
                    f.emit(Op::MapEntry { k, v, m, i });
                });
            }
            T::Try { body, err, handler } => {
                let e = f.alloc();
                f.local_reg[*err] = e;
                let enter = f.emit(Op::TryEnter { t: Pc(0), err: e });
                f.exits.push(Exit::Try);
                self.block(f, body);
                f.exits.pop();
                f.emit(Op::TryExit {});
                let skip = f.emit(Op::Jump { t: Pc(0) });
                f.patch(enter);
                self.block(f, handler);
                f.patch(skip);
            }
            T::Block(stmts) => self.block(f, stmts),
            T::SetRowField {
                row,
                table,
                col,
                value,
            } => {
                let r = self.expr(f, row, None);
                let v = self.expr(f, value, None);
                f.cur = self.pos_of(s.span);
                f.emit(Op::DbUpdateField {
                    a: r,
                    t: TableIdx(idx32(*table)),
                    f: FieldIdx(*col),
                    b: v,
                });
            }
            T::Delete { row, table } => {
                let r = self.expr(f, row, None);
                f.cur = self.pos_of(s.span);
                f.emit(Op::DbDelete {
                    a: r,
                    t: TableIdx(idx32(*table)),
                });
            }
            T::Transaction(body) => {
                f.emit(Op::TxBegin {});
                f.exits.push(Exit::Transaction);
                self.block(f, body);
                f.exits.pop();
                // The commit (and a durability failure it reports) belongs to the
                // block's closing brace, not to its last statement.
                f.cur = self.pos_of(Span {
                    lo: s.span.hi.saturating_sub(1),
                    ..s.span
                });
                f.emit(Op::TxCommit {});
            }
            T::ForQuery {
                var,
                rows,
                select,
                body,
            } => self.for_query(f, *var, rows, select.as_ref(), body),
        }
        f.next = mark;
    }

    /// `for v in <query over a table>`: rows and selected values first, then the body
    /// over the rows still alive.
    fn for_query(
        &mut self,
        f: &mut FnGen,
        var: usize,
        q: &tir::Query,
        select: Option<&Expr>,
        body: &[Stmt],
    ) {
        let rows = f.alloc();
        self.query(f, q, Some(rows));
        let n = f.alloc();
        f.emit(Op::ListLen { a: n, b: rows });
        let i = f.alloc();
        let vals = select.map(|sel| {
            let vals = f.alloc();
            f.emit(Op::NewList {
                a: vals,
                b: Reg(0),
                n: 0,
            });
            let x = f.alloc();
            f.local_reg[q.var] = x;
            let alive = f.alloc();
            self.counted_loop_with(f, i, n, |this, f| {
                f.emit(Op::ListGet {
                    a: x,
                    b: rows,
                    c: i,
                });
                // A row another fiber deleted meanwhile (the selection may yield, or
                // be preempted) gets a nil in its place, never read: the body skips it.
                let dead = Self::jump_if_dead(f, x, alive, q.rows_nullable);
                this.push_value(f, vals, sel);
                let done = f.emit(Op::Jump { t: Pc(0) });
                f.patch(dead);
                let nil = Expr::new(E::Nil, Ty::Unknown, Span::default());
                this.push_value(f, vals, &nil);
                f.patch(done);
            });
            vals
        });
        let row = f.alloc();
        let v = if vals.is_some() { f.alloc() } else { row };
        f.local_reg[var] = v;
        let alive = f.alloc();
        self.counted_loop_with(f, i, n, |this, f| {
            f.emit(Op::ListGet {
                a: row,
                b: rows,
                c: i,
            });
            let skip = Self::jump_if_dead(f, row, alive, q.rows_nullable);
            if let Some(l) = f.loops.last_mut() {
                l.continues.push(skip);
            }
            if let Some(vals) = vals {
                f.emit(Op::ListGet {
                    a: v,
                    b: vals,
                    c: i,
                });
            }
            this.block(f, body);
        });
    }

    /// Emits the test that skips a deleted row in `x` (with `alive` as scratch) and
    /// returns its jump, to patch to where a deleted row goes. A nil (a list of `?T`)
    /// is no row and passes.
    fn jump_if_dead(f: &mut FnGen, x: Reg, alive: Reg, nullable: bool) -> usize {
        let nil = nullable.then(|| f.emit(Op::JumpIfNil { a: x, t: Pc(0) }));
        f.emit(Op::DbAlive { a: alive, b: x });
        let dead = f.emit(Op::JumpIfNot { a: alive, t: Pc(0) });
        if let Some(j) = nil {
            f.patch(j);
        }
        dead
    }

    /// In a query's loop, for the value in `x` that passed: counted against `skip`
    /// while some are still to skip (the loop goes on), else its selection (or the
    /// value) pushed onto `out` and counted against `take` (the loop ends when that
    /// reaches 0). `counts` are the registers counted down.
    fn keep_value(
        &mut self,
        f: &mut FnGen,
        out: Reg,
        x: Reg,
        counts: (Option<Reg>, Option<Reg>),
        select: Option<&Expr>,
    ) {
        let (to_skip, to_take) = counts;
        if let Some(s) = to_skip {
            let keep = f.emit(Op::JumpUnlessCmpIntImm {
                b: s,
                v: 0,
                op: Cmp::Gt,
                t: Pc(0),
            });
            f.emit(Op::AddIntImm { a: s, b: s, v: -1 });
            let next = f.emit(Op::Jump { t: Pc(0) });
            if let Some(l) = f.loops.last_mut() {
                l.continues.push(next);
            }
            f.patch(keep);
        }
        match select {
            Some(sel) => self.push_value(f, out, sel),
            None => self.push_reg(f, out, x),
        }
        if let Some(t) = to_take {
            f.emit(Op::AddIntImm { a: t, b: t, v: -1 });
            let done = f.emit(Op::JumpUnlessCmpIntImm {
                b: t,
                v: 0,
                op: Cmp::Gt,
                t: Pc(0),
            });
            if let Some(l) = f.loops.last_mut() {
                l.breaks.push(done);
            }
        }
    }

    /// In a loop's body: goes on to the next turn when the row in `x` was deleted.
    fn continue_if_dead(f: &mut FnGen, x: Reg, alive: Reg, nullable: bool) {
        let dead = Self::jump_if_dead(f, x, alive, nullable);
        if let Some(l) = f.loops.last_mut() {
            l.continues.push(dead);
        }
    }

    /// Pushes the list of a value's `order by` keys onto `keys`.
    fn push_keys(&mut self, f: &mut FnGen, keys: Reg, order: &[(Expr, bool)]) {
        let mark = f.next;
        let base = f.alloc_n(order.len());
        for (k, (e, _)) in order.iter().enumerate() {
            self.expr(f, e, Some(nth(base, k)));
        }
        let kl = f.alloc();
        f.emit(Op::NewList {
            a: kl,
            b: base,
            n: u16::try_from(order.len()).unwrap_or(u16::MAX),
        });
        let pb = f.alloc_n(2);
        f.emit(Op::Move { a: pb, b: keys });
        f.emit(Op::Move {
            a: Reg(pb.0.saturating_add(1)),
            b: kl,
        });
        let push = self.builtin("push", 2);
        f.emit(Op::CallBuiltin {
            f: push,
            base: pb,
            n: 2,
        });
        f.next = mark;
    }

    /// Evaluates the field values of a constructor or an `insert` into a run of
    /// registers in declaration order, in the order `order` says (the order written),
    /// then the rest; returns the run's first register.
    fn fields_run(&mut self, f: &mut FnGen, fields: &[Expr], order: &[usize]) -> Reg {
        let base = f.alloc_n(fields.len());
        for &i in order {
            self.expr(f, &fields[i], Some(nth(base, i)));
        }
        for (i, fe) in fields.iter().enumerate() {
            if !order.contains(&i) {
                self.expr(f, fe, Some(nth(base, i)));
            }
        }
        base
    }

    /// `push(list, e)`.
    fn push_value(&mut self, f: &mut FnGen, list: Reg, e: &Expr) {
        self.push_with(f, list, |this, f, r| {
            this.expr(f, e, Some(r));
        });
    }

    /// Pushes the value in register `x` onto `list`.
    fn push_reg(&mut self, f: &mut FnGen, list: Reg, x: Reg) {
        self.push_with(f, list, |_, f, r| {
            f.emit(Op::Move { a: r, b: x });
        });
    }

    /// Pushes onto `list` the value `fill` puts in the register it is given.
    fn push_with(
        &mut self,
        f: &mut FnGen,
        list: Reg,
        fill: impl FnOnce(&mut Self, &mut FnGen, Reg),
    ) {
        let mark = f.next;
        let base = f.alloc_n(2);
        f.emit(Op::Move { a: base, b: list });
        fill(self, f, Reg(base.0.saturating_add(1)));
        let b = self.builtin("push", 2);
        f.emit(Op::CallBuiltin { f: b, base, n: 2 });
        f.next = mark;
    }

    /// Evaluates a query into a list (or, for `DbAggregate`, its value).
    fn query(&mut self, f: &mut FnGen, q: &tir::Query, dst: Option<Reg>) -> Reg {
        let rows = match &q.source {
            QuerySource::Table { desc, args, .. } => self.db_query(f, desc.clone(), args),
            QuerySource::List(e) => self.expr(f, e, None),
        };
        // The values `where` compares with, once (`tir::Query::values`).
        for (id, e) in &q.values {
            let r = f.alloc();
            self.expr(f, e, Some(r));
            f.local_reg[*id] = r;
        }
        // The engine's list is new and holds only live rows. The query's list is never
        // a list source itself (pushing to one would change the other): values asked
        // nothing of are copied, rows are walked to leave out those deleted since the
        // list was made. (A reader that only reads gets the source list instead:
        // `tir::Query::into_read_only`.)
        let plain = q.residual.is_empty()
            && q.order.is_empty()
            && q.skip.is_none()
            && q.take.is_none()
            && q.select.is_none();
        match q.source {
            QuerySource::Table { .. } if plain => return Self::to_dst(f, rows, dst),
            // Values asked nothing of: a copy made natively, `slice(xs, 0, len(xs))`.
            QuerySource::List(_) if plain && !q.rows => {
                let base = f.alloc_n(3);
                f.emit(Op::Move { a: base, b: rows });
                f.emit(Op::LoadInt {
                    a: nth(base, 1),
                    v: 0,
                });
                f.emit(Op::ListLen {
                    a: nth(base, 2),
                    b: rows,
                });
                let slice = self.builtin("slice", 3);
                f.emit(Op::CallBuiltin {
                    f: slice,
                    base,
                    n: 3,
                });
                return Self::to_dst(f, base, dst);
            }
            _ => {}
        }
        let out = f.alloc();
        f.emit(Op::NewList {
            a: out,
            b: Reg(0),
            n: 0,
        });
        let keys = (!q.order.is_empty()).then(|| {
            let k = f.alloc();
            f.emit(Op::NewList {
                a: k,
                b: Reg(0),
                n: 0,
            });
            k
        });
        // `skip` and `take` are evaluated once, before the walk. Without `order by`
        // they apply as the values stream (counters counted down), and the walk stops
        // once `take` values are kept, as the engine's streaming walk does: `take 3`
        // of a long list reads what it needs. With it they apply to the sorted list.
        let counter = |this: &mut Self, f: &mut FnGen, e: &Option<Expr>| {
            let e = e.as_ref()?;
            let r = f.alloc();
            this.expr(f, e, Some(r));
            Some(r)
        };
        let to_skip = counter(self, f, &q.skip);
        let to_take = counter(self, f, &q.take);
        // `take` 0 or less: no value is wanted, and no predicate runs.
        let none_wanted = to_take.map(|t| {
            f.emit(Op::JumpUnlessCmpIntImm {
                b: t,
                v: 0,
                op: Cmp::Gt,
                t: Pc(0),
            })
        });
        let n = f.alloc();
        f.emit(Op::ListLen { a: n, b: rows });
        let i = f.alloc();
        let x = f.alloc();
        f.local_reg[q.var] = x;
        let alive = q.rows.then(|| f.alloc());
        self.counted_loop_with(f, i, n, |this, f| {
            f.emit(Op::ListGet {
                a: x,
                b: rows,
                c: i,
            });
            if let Some(alive) = alive {
                // The rows were chosen when the query began; one deleted since (from a
                // list of rows, or by another fiber while a predicate, a key or the
                // selection yields or is preempted) is skipped, as a `for` loop over
                // the query skips it.
                Self::continue_if_dead(f, x, alive, q.rows_nullable);
            }
            for w in &q.residual {
                let js = this.cond_jump(f, w, false);
                if let Some(l) = f.loops.last_mut() {
                    l.continues.extend(js);
                }
            }
            if let Some(keys) = keys {
                // The keys and the value itself: `skip`, `take` and the selection
                // apply once sorted, as they do without `order by` (a selection that
                // would trap on a value `skip` leaves out does not run on it).
                this.push_keys(f, keys, &q.order);
                this.push_reg(f, out, x);
                return;
            }
            this.keep_value(f, out, x, (to_skip, to_take), q.select.as_ref());
        });
        if let Some(keys) = keys {
            let base = f.alloc_n(3);
            f.emit(Op::Move { a: base, b: keys });
            f.emit(Op::Move {
                a: Reg(base.0.saturating_add(1)),
                b: out,
            });
            let mask = q
                .order
                .iter()
                .enumerate()
                .filter(|(_, (_, desc))| *desc)
                .fold(0i64, |m, (k, _)| m | (1i64 << k.min(62)));
            self.load_int(f, Reg(base.0.saturating_add(2)), mask);
            let b = self.builtin("order_by", 3);
            f.emit(Op::CallBuiltin { f: b, base, n: 3 });
            f.emit(Op::Move { a: out, b: base });
            if to_skip.is_some() || to_take.is_some() || q.select.is_some() || alive.is_some() {
                // The sorted values walked as the values of a query without `order
                // by` are: a row deleted meanwhile (by a predicate, a key or a
                // selection) is left out and not counted, `skip` and `take` counted
                // down, the selection made of the values kept.
                let sorted = f.alloc();
                f.emit(Op::Move { a: sorted, b: out });
                f.emit(Op::NewList {
                    a: out,
                    b: Reg(0),
                    n: 0,
                });
                f.emit(Op::ListLen { a: n, b: sorted });
                self.counted_loop_with(f, i, n, |this, f| {
                    f.emit(Op::ListGet {
                        a: x,
                        b: sorted,
                        c: i,
                    });
                    if let Some(alive) = alive {
                        Self::continue_if_dead(f, x, alive, q.rows_nullable);
                    }
                    this.keep_value(f, out, x, (to_skip, to_take), q.select.as_ref());
                });
            }
        }
        if let Some(j) = none_wanted {
            f.patch(j);
        }
        Self::to_dst(f, out, dst)
    }

    /// `DB_QUERY` with the descriptor registered in the image.
    fn db_query(&mut self, f: &mut FnGen, desc: QueryDesc, args: &[Expr]) -> Reg {
        let base = self.expr_run(f, args, 0);
        let q = QueryIdx(idx32(self.queries.len()));
        self.queries.push(desc);
        let a = f.alloc();
        f.emit(Op::DbQuery { a, q, b: base });
        a
    }

    /// `i = 0; while i < n { fetch; body; i += 1 }` with the test at the bottom.
    fn counted_loop(
        &mut self,
        f: &mut FnGen,
        i: Reg,
        n: Reg,
        body: &[Stmt],
        fetch: impl FnOnce(&mut FnGen),
    ) {
        self.counted_loop_with(f, i, n, |this, f| {
            fetch(f);
            this.block(f, body);
        });
    }

    /// A counted loop whose body is generated by `body` (which may add `continue`
    /// jumps to the innermost loop).
    fn counted_loop_with(
        &mut self,
        f: &mut FnGen,
        i: Reg,
        n: Reg,
        body: impl FnOnce(&mut Self, &mut FnGen),
    ) {
        f.emit(Op::LoadInt { a: i, v: 0 });
        let to_cond = f.emit(Op::Jump { t: Pc(0) });
        let body_start = f.here();
        self.loop_with(f, body, |_, f| {
            f.emit(Op::AddIntImm { a: i, b: i, v: 1 });
            f.patch(to_cond);
            f.emit(Op::JumpUnlessCmpInt {
                b: i,
                c: n,
                op: Cmp::Ge,
                t: body_start,
            });
        });
    }

    /// Compiles a loop body, then the continue section `tail` (the step and the test),
    /// and points `continue` and `break` jumps at the right places.
    fn loop_body(
        &mut self,
        f: &mut FnGen,
        body: &[Stmt],
        tail: impl FnOnce(&mut Self, &mut FnGen),
    ) {
        self.loop_with(f, |this, f| this.block(f, body), tail);
    }

    fn loop_with(
        &mut self,
        f: &mut FnGen,
        body: impl FnOnce(&mut Self, &mut FnGen),
        tail: impl FnOnce(&mut Self, &mut FnGen),
    ) {
        f.loops.push(Loop {
            breaks: Vec::new(),
            continues: Vec::new(),
            exits: f.exits.len(),
        });
        let mark = f.next;
        body(self, f);
        f.next = mark;
        let l = f.loops.pop().unwrap_or(Loop {
            breaks: Vec::new(),
            continues: Vec::new(),
            exits: 0,
        });
        for j in l.continues {
            f.patch(j);
        }
        tail(self, f);
        for j in l.breaks {
            f.patch(j);
        }
    }

    /// Emits jumps taken when `e` evaluates to `when`; returns them for patching.
    fn cond_jump(&mut self, f: &mut FnGen, e: &Expr, when: bool) -> Vec<usize> {
        let saved = f.cur;
        f.cur = self.pos_of(e.span);
        let res = match &e.kind {
            E::Bool(b) => {
                if *b == when {
                    vec![f.emit(Op::Jump { t: Pc(0) })]
                } else {
                    Vec::new()
                }
            }
            E::Unary(UnOp::Not, x) => self.cond_jump(f, x, !when),
            E::Binary(BinOp::And, l, r) => {
                if when {
                    let skip = self.cond_jump(f, l, false);
                    let js = self.cond_jump(f, r, true);
                    for j in skip {
                        f.patch(j);
                    }
                    js
                } else {
                    let mut js = self.cond_jump(f, l, false);
                    js.extend(self.cond_jump(f, r, false));
                    js
                }
            }
            E::Binary(BinOp::Or, l, r) => {
                if when {
                    let mut js = self.cond_jump(f, l, true);
                    js.extend(self.cond_jump(f, r, true));
                    js
                } else {
                    let skip = self.cond_jump(f, l, true);
                    let js = self.cond_jump(f, r, false);
                    for j in skip {
                        f.patch(j);
                    }
                    js
                }
            }
            E::Binary(BinOp::CmpInt(op), l, r) => {
                // Against a constant that fits the immediate (on either side: a literal
                // has no effects, so the operands may trade places), no register is
                // loaded with the constant on every test.
                let imm = |e: &Expr| match e.kind {
                    E::Int(v) => i32::try_from(v).ok(),
                    _ => None,
                };
                let (x, v, cmp) = match (imm(r), imm(l)) {
                    (Some(v), _) => (l, Some(v), *op),
                    (None, Some(v)) => (r, Some(v), swap(*op)),
                    (None, None) => (l, None, *op),
                };
                if let Some(v) = v {
                    let mark = f.next;
                    let b = self.expr(f, x, None);
                    f.next = mark;
                    let op = if when { negate(cmp) } else { cmp };
                    let j = f.emit(Op::JumpUnlessCmpIntImm { b, v, op, t: Pc(0) });
                    f.cur = saved;
                    return vec![j];
                }
                let mark = f.next;
                let b = self.expr(f, l, None);
                let c = self.expr(f, r, None);
                f.next = mark;
                let op = if when { negate(*op) } else { *op };
                vec![f.emit(Op::JumpUnlessCmpInt { b, c, op, t: Pc(0) })]
            }
            E::Binary(BinOp::CmpOrNil(op), l, r) if l.ty.strip() == &Ty::Int => {
                // A nil side makes it false: when jumping on false, each nil test
                // jumps too; when jumping on true, they skip the comparison's jump.
                let mark = f.next;
                let b = self.expr(f, l, None);
                let c = self.expr(f, r, None);
                f.next = mark;
                let nils = f.nil_tests([(l, b), (r, c)]);
                let cmp = if when { negate(*op) } else { *op };
                let j = f.emit(Op::JumpUnlessCmpInt {
                    b,
                    c,
                    op: cmp,
                    t: Pc(0),
                });
                f.cur = saved;
                if when {
                    for n in nils {
                        f.patch(n);
                    }
                    vec![j]
                } else {
                    let mut js = nils;
                    js.push(j);
                    js
                }
            }
            E::Binary(op @ (BinOp::Eq | BinOp::Ne), l, r)
                if Self::literal(r).is_some() || Self::literal(l).is_some() =>
            {
                // Against a Text or Float literal (on either side: a literal has no
                // effects), the constant is compared where it is, not loaded first.
                let (x, c) = match Self::literal(r) {
                    Some(c) => (l, c),
                    None => (r, Self::literal(l).expect("the guard found a literal")),
                };
                let k = self.constant(c);
                let mark = f.next;
                let b = self.expr(f, x, None);
                f.next = mark;
                // Jump unless (x == k) == eq: for `==`, unless it holds when jumping on
                // false; for `!=`, the other way round.
                let eq = (*op == BinOp::Eq) != when;
                vec![f.emit(Op::JumpUnlessEqConst { b, k, eq, t: Pc(0) })]
            }
            E::Binary(op @ (BinOp::Eq | BinOp::Ne), l, r)
                if matches!(r.kind, E::Nil) || matches!(l.kind, E::Nil) =>
            {
                let x = if matches!(r.kind, E::Nil) { l } else { r };
                let mark = f.next;
                let a = self.expr(f, x, None);
                f.next = mark;
                // Jump when (x == nil) == (when == (op is Eq)).
                let jump_if_nil = when == (*op == BinOp::Eq);
                let t = Pc(0);
                vec![f.emit(if jump_if_nil {
                    Op::JumpIfNil { a, t }
                } else {
                    Op::JumpIfNotNil { a, t }
                })]
            }
            _ => {
                let mark = f.next;
                let a = self.expr(f, e, None);
                f.next = mark;
                let t = Pc(0);
                vec![f.emit(if when {
                    Op::JumpIf { a, t }
                } else {
                    Op::JumpIfNot { a, t }
                })]
            }
        };
        f.cur = saved;
        res
    }

    /// The constant a Text or Float literal is (Ints have their own fused tests).
    fn literal(e: &Expr) -> Option<Const> {
        match &e.kind {
            E::Text(s) => Some(Const::Text(s.clone())),
            E::Float(v) => Some(Const::Float(*v)),
            _ => None,
        }
    }

    fn load_int(&mut self, f: &mut FnGen, a: Reg, v: i64) {
        match i32::try_from(v) {
            Ok(v) => f.emit(Op::LoadInt { a, v }),
            Err(_) => {
                let k = self.constant(Const::Int(v));
                f.emit(Op::LoadConst { a, k })
            }
        };
    }

    /// Evaluates `e`; the result is in `dst` when given, else in the returned register
    /// (a local's own register, or a fresh temporary).
    fn expr(&mut self, f: &mut FnGen, e: &Expr, dst: Option<Reg>) -> Reg {
        let saved = f.cur;
        f.cur = self.pos_of(e.span);
        let r = self.expr_inner(f, e, dst);
        f.cur = saved;
        r
    }

    /// Call arguments: a run that is at least one register long, since the call's
    /// result comes back in its first register.
    fn call_args(&mut self, f: &mut FnGen, args: &[Expr]) -> Reg {
        self.expr_run(f, args, 1)
    }

    /// Evaluates `exprs` into a fresh run of consecutive registers (at least `min`
    /// long) and returns its first register.
    fn expr_run(&mut self, f: &mut FnGen, exprs: &[Expr], min: usize) -> Reg {
        let base = f.alloc_n(exprs.len().max(min));
        for (i, e) in exprs.iter().enumerate() {
            self.expr(f, e, Some(nth(base, i)));
        }
        base
    }

    fn to_dst(f: &mut FnGen, r: Reg, dst: Option<Reg>) -> Reg {
        match dst {
            Some(d) if d != r => {
                f.emit(Op::Move { a: d, b: r });
                d
            }
            _ => r,
        }
    }

    fn expr_inner(&mut self, f: &mut FnGen, e: &Expr, dst: Option<Reg>) -> Reg {
        match &e.kind {
            E::Int(v) => {
                let a = f.target(dst);
                self.load_int(f, a, *v);
                a
            }
            E::Float(v) => {
                let a = f.target(dst);
                let k = self.constant(Const::Float(*v));
                f.emit(Op::LoadConst { a, k });
                a
            }
            E::Text(s) => {
                let a = f.target(dst);
                let k = self.constant(Const::Text(s.clone()));
                f.emit(Op::LoadConst { a, k });
                a
            }
            E::Bool(v) => {
                let a = f.target(dst);
                f.emit(Op::LoadBool { a, v: *v });
                a
            }
            E::Nil => {
                let a = f.target(dst);
                f.emit(Op::LoadNil { a });
                a
            }
            E::Local(id) => {
                let r = f.local_reg[*id];
                Self::to_dst(f, r, dst)
            }
            E::Global(g) => {
                let a = f.target(dst);
                f.emit(Op::GetGlobal {
                    a,
                    g: GlobalIdx(idx32(*g)),
                });
                a
            }
            E::Call { func, args } => {
                let base = self.call_args(f, args);
                f.cur = self.pos_of(e.span);
                f.emit(Op::Call {
                    f: FuncIdx(idx32(*func)),
                    base,
                });
                Self::to_dst(f, base, dst)
            }
            E::Spawn { func, args } => {
                let base = self.expr_run(f, args, 0);
                let a = f.target(dst);
                f.cur = self.pos_of(e.span);
                f.emit(Op::Spawn {
                    a,
                    f: FuncIdx(idx32(*func)),
                    base,
                    n: u16::try_from(args.len()).unwrap_or(u16::MAX),
                });
                a
            }
            E::Join(t) => {
                let b = self.expr(f, t, None);
                let a = f.target(dst);
                f.cur = self.pos_of(e.span);
                f.emit(Op::Join { a, b });
                a
            }
            E::Builtin { name, args } => {
                let base = self.call_args(f, args);
                let b = self.builtin(name, args.len());
                f.cur = self.pos_of(e.span);
                f.emit(Op::CallBuiltin {
                    f: b,
                    base,
                    n: u16::try_from(args.len()).unwrap_or(u16::MAX),
                });
                Self::to_dst(f, base, dst)
            }
            E::Unary(op, x) => {
                let b = self.expr(f, x, None);
                let a = f.target(dst);
                f.emit(match op {
                    UnOp::NegInt => Op::NegInt { a, b },
                    UnOp::NegFloat => Op::NegFloat { a, b },
                    UnOp::Not => Op::Not { a, b },
                    UnOp::IntToFloat => Op::IntToFloat { a, b },
                    UnOp::FloatToInt => Op::FloatToInt { a, b },
                    UnOp::Unwrap => Op::Unwrap { a, b },
                    UnOp::ToText => Op::ToText { a, b },
                });
                a
            }
            E::Binary(op, l, r) => self.binary(f, *op, l, r, dst),
            E::Concat(parts) => {
                let base = self.expr_run(f, parts, 0);
                let a = f.target(dst);
                f.emit(Op::ConcatN {
                    a,
                    b: base,
                    n: u16::try_from(parts.len()).unwrap_or(u16::MAX),
                });
                a
            }
            E::List(items) if items.len() > LITERAL_RUN => {
                // A long literal: its first elements in one run of registers, the
                // rest pushed one by one (in order), so that its size needs no more
                // registers than `LITERAL_RUN`; built in a register of its own (an
                // element may read the variable it is assigned to).
                let list = f.alloc();
                let base = self.expr_run(f, &items[..LITERAL_RUN], 0);
                f.emit(Op::NewList {
                    a: list,
                    b: base,
                    n: LITERAL_RUN as u16,
                });
                for item in &items[LITERAL_RUN..] {
                    self.push_value(f, list, item);
                }
                let a = f.target(dst);
                f.emit(Op::Move { a, b: list });
                a
            }
            E::List(items) => {
                let base = self.expr_run(f, items, 0);
                let a = f.target(dst);
                f.emit(Op::NewList {
                    a,
                    b: base,
                    n: u16::try_from(items.len()).unwrap_or(u16::MAX),
                });
                a
            }
            E::Map(entries) => {
                // As for a list: a long literal's later entries are set one by one.
                let (run, rest) = entries.split_at(entries.len().min(LITERAL_RUN));
                let base = f.alloc_n(run.len() * 2);
                for (i, (k, v)) in run.iter().enumerate() {
                    self.expr(f, k, Some(nth(base, 2 * i)));
                    self.expr(f, v, Some(nth(base, 2 * i + 1)));
                }
                let map = if rest.is_empty() {
                    f.target(dst)
                } else {
                    f.alloc()
                };
                f.emit(Op::NewMap {
                    a: map,
                    b: base,
                    n: u16::try_from(run.len()).unwrap_or(u16::MAX),
                });
                if rest.is_empty() {
                    return map;
                }
                for (k, v) in rest {
                    let mark = f.next;
                    let kr = self.expr(f, k, None);
                    let vr = self.expr(f, v, None);
                    f.emit(Op::MapSet {
                        a: map,
                        b: kr,
                        c: vr,
                    });
                    f.next = mark;
                }
                let a = f.target(dst);
                f.emit(Op::Move { a, b: map });
                a
            }
            E::New {
                class,
                fields,
                order,
            } => {
                let base = self.fields_run(f, fields, order);
                let a = f.target(dst);
                f.emit(Op::NewObj {
                    a,
                    c: ClassIdx(idx32(*class)),
                    b: base,
                });
                a
            }
            E::Field(obj, idx) => {
                let b = self.expr(f, obj, None);
                let a = f.target(dst);
                f.emit(Op::GetField {
                    a,
                    b,
                    f: FieldIdx(*idx),
                });
                a
            }
            E::ListIndex(l, i) => {
                let b = self.expr(f, l, None);
                let c = self.expr(f, i, None);
                let a = f.target(dst);
                f.emit(Op::ListGet { a, b, c });
                a
            }
            E::MapIndex(m, k) => {
                let b = self.expr(f, m, None);
                let c = self.expr(f, k, None);
                let a = f.target(dst);
                f.emit(Op::MapGet { a, b, c });
                a
            }
            E::Insert {
                table,
                fields,
                order,
            } => {
                let base = self.fields_run(f, fields, order);
                let a = f.target(dst);
                f.cur = self.pos_of(e.span);
                f.emit(Op::DbInsert {
                    a,
                    t: TableIdx(idx32(*table)),
                    b: base,
                });
                a
            }
            E::RowField(row, table, col) => {
                let b = self.expr(f, row, None);
                let a = f.target(dst);
                f.emit(Op::DbGetField {
                    a,
                    b,
                    t: TableIdx(idx32(*table)),
                    f: FieldIdx(*col),
                });
                a
            }
            E::RowId(row) => {
                let b = self.expr(f, row, None);
                let a = f.target(dst);
                f.emit(Op::DbRowId { a, b });
                a
            }
            E::Find { table, id } => {
                let b = self.expr(f, id, None);
                let a = f.target(dst);
                f.emit(Op::DbFind {
                    a,
                    t: TableIdx(idx32(*table)),
                    b,
                });
                a
            }
            E::Query(q) => self.query(f, q, dst),
            E::DbAggregate { desc, args } => {
                let r = self.db_query(f, desc.clone(), args);
                Self::to_dst(f, r, dst)
            }
            E::Try { body, err, handler } => {
                let a = f.target(dst);
                let er = f.alloc();
                f.local_reg[*err] = er;
                let enter = f.emit(Op::TryEnter { t: Pc(0), err: er });
                self.expr(f, body, Some(a));
                f.emit(Op::TryExit {});
                let skip = f.emit(Op::Jump { t: Pc(0) });
                f.patch(enter);
                self.expr(f, handler, Some(a));
                f.patch(skip);
                a
            }
        }
    }

    fn binary(&mut self, f: &mut FnGen, op: BinOp, l: &Expr, r: &Expr, dst: Option<Reg>) -> Reg {
        match op {
            BinOp::And | BinOp::Or | BinOp::Coalesce => {
                let a = f.target(dst);
                self.expr(f, l, Some(a));
                let t = Pc(0);
                let j = f.emit(match op {
                    BinOp::And => Op::JumpIfNot { a, t },
                    BinOp::Or => Op::JumpIf { a, t },
                    _ => Op::JumpIfNotNil { a, t },
                });
                self.expr(f, r, Some(a));
                f.patch(j);
                return a;
            }
            BinOp::CmpOrNil(op) => {
                // False when either side is nil, else the typed comparison.
                let b = self.expr(f, l, None);
                let c = self.expr(f, r, None);
                let a = f.target(dst);
                let nil_tests = f.nil_tests([(l, b), (r, c)]);
                f.emit(match l.ty.strip() {
                    Ty::Float => Op::CmpFloat { a, b, c, op },
                    Ty::Text => Op::CmpText { a, b, c, op },
                    _ => Op::CmpInt { a, b, c, op },
                });
                let done = f.emit(Op::Jump { t: Pc(0) });
                for j in nil_tests {
                    f.patch(j);
                }
                f.emit(Op::LoadBool { a, v: false });
                f.patch(done);
                return a;
            }
            BinOp::AddInt | BinOp::SubInt => {
                if let Some(v) = match r.kind {
                    E::Int(v) => i32::try_from(v).ok(),
                    _ => None,
                } {
                    let b = self.expr(f, l, None);
                    let a = f.target(dst);
                    f.emit(if op == BinOp::SubInt {
                        Op::SubIntImm { a, b, v }
                    } else {
                        Op::AddIntImm { a, b, v }
                    });
                    return a;
                }
            }
            _ => {}
        }
        let b = self.expr(f, l, None);
        let c = self.expr(f, r, None);
        let a = f.target(dst);
        f.emit(match op {
            BinOp::AddInt => Op::AddInt { a, b, c },
            BinOp::SubInt => Op::SubInt { a, b, c },
            BinOp::MulInt => Op::MulInt { a, b, c },
            BinOp::DivInt => Op::DivInt { a, b, c },
            BinOp::RemInt => Op::RemInt { a, b, c },
            BinOp::AddFloat => Op::AddFloat { a, b, c },
            BinOp::SubFloat => Op::SubFloat { a, b, c },
            BinOp::MulFloat => Op::MulFloat { a, b, c },
            BinOp::DivFloat => Op::DivFloat { a, b, c },
            BinOp::RemFloat => Op::RemFloat { a, b, c },
            BinOp::CmpInt(op) => Op::CmpInt { a, b, c, op },
            BinOp::CmpFloat(op) => Op::CmpFloat { a, b, c, op },
            BinOp::CmpText(op) => Op::CmpText { a, b, c, op },
            BinOp::Eq => Op::Eq { a, b, c },
            BinOp::Ne => Op::Ne { a, b, c },
            BinOp::Concat => Op::Concat { a, b, c },
            BinOp::And | BinOp::Or | BinOp::Coalesce | BinOp::CmpOrNil(_) => Op::Nop {},
        });
        a
    }
}
