//! The engine against a naive model: random schemas (1–3 tables, 1–5 columns of every
//! type, nullable or not, refs between and within tables, random hash/unique/sorted
//! indexes), random operations (inserts, updates, deletes — some failing —,
//! savepoints, rollbacks, commits) and random queries and aggregates, all checked
//! against a model: a `Vec` of rows per table, a filter and a stable sort. Every query
//! also runs as a forced full scan, which must agree with the planned path. After every
//! rollback and at the end, the whole state (rows, id counters, and index contents as
//! seen through probes and ordered walks of every index) must equal the model's.
//!
//! Driven two ways from the same [`run_case`]: by proptest (`db/tests/model.rs`) and
//! by the coverage-guided `engine` fuzz target (`fuzz/fuzz_targets/engine.rs`, which
//! includes this file by path).

#![allow(clippy::manual_is_multiple_of)]

use std::cmp::Ordering;
use std::rc::Rc;

use wo_db::*;

/// `check!(cond, "fmt", args…)`: fail the case with the message unless `cond` holds.
macro_rules! check {
    ($cond:expr) => {
        check!($cond, "{} does not hold", stringify!($cond))
    };
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// `check_eq!(got, want[, "fmt", args…])`: fail the case unless the two are equal.
macro_rules! check_eq {
    ($got:expr, $want:expr) => {
        check_eq!($got, $want, "{} == {}", stringify!($got), stringify!($want))
    };
    ($got:expr, $want:expr, $($msg:tt)+) => {{
        let (got, want) = (&$got, &$want);
        if got != want {
            return Err(format!(
                "{}: got {:?}, want {:?}",
                format!($($msg)+),
                got,
                want
            ));
        }
    }};
}

type Row = Vec<Cell>;

#[derive(Clone, Debug, Default)]
struct Model {
    /// Per table, per id - 1: the row, or None once deleted.
    tables: Vec<Vec<Option<Row>>>,
}

/// A column as raw numbers: type `ty % 5` (Int, Float, Bool, Text, a ref to table
/// `target % tables`).
#[derive(Debug, Clone)]
pub struct RawCol {
    pub ty: u8,
    pub nullable: bool,
    pub target: u8,
}

/// A table as raw numbers: 1–5 columns, indexes `(kind % 3, column, second column)`.
#[derive(Debug, Clone)]
pub struct RawTable {
    pub cols: Vec<RawCol>,
    pub indexes: Vec<(u8, u8, Option<u8>)>,
}

/// An operation as raw numbers: `(kind, a, b, c, values)`: `kind % 12` picks the
/// operation, `a` the table, `b` and `c` a row, a column or an aggregate; `values`
/// (not empty) the cells and the query.
pub type RawOp = (u8, u16, u16, u16, Vec<u16>);

fn build_schema(raw: &[RawTable]) -> Schema {
    let n = raw.len() as u32;
    Schema {
        tables: raw
            .iter()
            .enumerate()
            .map(|(ti, rt)| {
                let columns: Vec<Column> = rt
                    .cols
                    .iter()
                    .enumerate()
                    .map(|(ci, c)| Column {
                        name: format!("c{ci}"),
                        ty: match c.ty {
                            0 => ColType::Int,
                            1 => ColType::Float,
                            2 => ColType::Bool,
                            3 => ColType::Text,
                            _ => ColType::Ref(u32::from(c.target) % n),
                        },
                        nullable: c.nullable,
                    })
                    .collect();
                let nc = columns.len();
                let indexes = rt
                    .indexes
                    .iter()
                    .map(|&(k, a, b)| {
                        let kind =
                            [IndexKind::Hash, IndexKind::Unique, IndexKind::Sorted][k as usize];
                        let mut cols = vec![a as usize % nc];
                        if let (Some(b), false) = (b, kind == IndexKind::Sorted) {
                            let b = b as usize % nc;
                            if b != cols[0] {
                                cols.push(b);
                            }
                        }
                        IndexDef {
                            columns: cols,
                            kind,
                        }
                    })
                    .collect();
                TableDef {
                    name: format!("t{ti}"),
                    columns,
                    indexes,
                    durable: true,
                }
            })
            .collect(),
    }
}

fn text(s: &str) -> Cell {
    Cell::Text(Rc::from(s))
}

/// A value for a column: mostly of its type, sometimes nil, rarely of a wrong type.
fn value(ty: ColType, nullable: bool, v: u16, allow_wrong: bool) -> Cell {
    if nullable && v % 7 == 0 {
        return Cell::Nil;
    }
    if allow_wrong && v % 53 == 1 {
        return match ty {
            ColType::Int => Cell::Float(1.0),
            _ => Cell::Int(1),
        };
    }
    let w = (v / 7) as usize;
    match ty {
        ColType::Int => {
            let pool = [-2, -1, 0, 1, 2, 3, 0, 1, 2, 5, 7, i64::MAX, i64::MIN + 1];
            Cell::Int(pool[w % pool.len()])
        }
        ColType::Float => {
            let pool = [
                -1.5,
                -0.0,
                0.0,
                1.0,
                2.5,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                1.0,
                2.5,
            ];
            Cell::Float(pool[w % pool.len()])
        }
        ColType::Bool => Cell::Bool(w % 2 == 0),
        // Short texts (stored in the slot) and long ones (over 15 bytes, stored apart)
        // around the boundary, with shared prefixes so that orders mix the two.
        ColType::Text => text(
            [
                "",
                "a",
                "b",
                "ab",
                "B",
                "é",
                "a",
                "aaaaaaaaaaaaaaa",
                "aaaaaaaaaaaaaaaa",
                "aaaaaaaaaaaaaab",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "éééééééé",
            ][w % 12],
        ),
        ColType::Ref(_) => Cell::Ref((w % 7) as RowId),
    }
}

fn same(a: &Cell, b: &Cell) -> bool {
    match (a, b) {
        (Cell::Float(x), Cell::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn same_rows(a: &[Cell], b: &[Cell]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

// ---- the model's semantics, written independently of the engine ----

fn m_eq(a: &Cell, b: &Cell) -> bool {
    match (a, b) {
        (Cell::Nil, Cell::Nil) => true,
        (Cell::Int(x) | Cell::Ref(x), Cell::Int(y) | Cell::Ref(y)) => x == y,
        (Cell::Float(x), Cell::Float(y)) => x == y,
        (Cell::Bool(x), Cell::Bool(y)) => x == y,
        (Cell::Text(x), Cell::Text(y)) => x == y,
        _ => false,
    }
}

fn m_ord(a: &Cell, b: &Cell) -> Option<Ordering> {
    match (a, b) {
        (Cell::Int(x) | Cell::Ref(x), Cell::Int(y) | Cell::Ref(y)) => Some(x.cmp(y)),
        (Cell::Float(x), Cell::Float(y)) => x.partial_cmp(y),
        (Cell::Bool(x), Cell::Bool(y)) => Some(x.cmp(y)),
        (Cell::Text(x), Cell::Text(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    }
}

fn m_sort(a: &Cell, b: &Cell) -> Ordering {
    match (a, b) {
        (Cell::Nil, Cell::Nil) => Ordering::Equal,
        (Cell::Nil, _) => Ordering::Less,
        (_, Cell::Nil) => Ordering::Greater,
        (Cell::Float(x), Cell::Float(y)) => x.total_cmp(y),
        _ => m_ord(a, b).unwrap(),
    }
}

fn m_holds(v: &Cell, op: CmpOp, arg: &Cell) -> bool {
    match op {
        CmpOp::Eq => m_eq(v, arg),
        CmpOp::Ne => !m_eq(v, arg),
        CmpOp::Lt => m_ord(v, arg) == Some(Ordering::Less),
        CmpOp::Le => matches!(m_ord(v, arg), Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => m_ord(v, arg) == Some(Ordering::Greater),
        CmpOp::Ge => matches!(m_ord(v, arg), Some(Ordering::Greater | Ordering::Equal)),
    }
}

fn m_type_ok(c: &Column, cell: &Cell) -> bool {
    matches!(
        (c.ty, cell),
        (ColType::Int, Cell::Int(_))
            | (ColType::Float, Cell::Float(_))
            | (ColType::Bool, Cell::Bool(_))
            | (ColType::Text, Cell::Text(_))
            | (ColType::Ref(_), Cell::Ref(_))
    ) || (c.nullable && *cell == Cell::Nil)
}

impl Model {
    fn live(&self, t: usize, id: RowId) -> bool {
        id >= 1
            && self.tables[t]
                .get(id as usize - 1)
                .is_some_and(Option::is_some)
    }

    fn val(&self, t: usize, id: RowId, c: Col) -> Cell {
        match c {
            Col::Id => Cell::Int(id),
            Col::At(i) => self.tables[t][id as usize - 1].as_ref().unwrap()[i].clone(),
        }
    }

    /// The row id in `t` (other than `except`) whose unique key equals `key`.
    fn unique_clash(&self, t: usize, cols: &[usize], key: &[Cell], except: RowId) -> bool {
        if key
            .iter()
            .any(|k| *k == Cell::Nil || matches!(k, Cell::Float(f) if f.is_nan()))
        {
            return false;
        }
        self.tables[t].iter().enumerate().any(|(i, r)| {
            r.as_ref().is_some_and(|r| {
                i as RowId + 1 != except && cols.iter().zip(key).all(|(&c, k)| m_eq(&r[c], k))
            })
        })
    }

    fn insert(&mut self, s: &Schema, t: usize, cells: Row) -> Result<RowId, ErrorKind> {
        let def = &s.tables[t];
        if cells.len() != def.columns.len() {
            return Err(ErrorKind::Db);
        }
        if !def.columns.iter().zip(&cells).all(|(c, v)| m_type_ok(c, v)) {
            return Err(ErrorKind::Db);
        }
        for (c, v) in def.columns.iter().zip(&cells) {
            if let (ColType::Ref(target), Cell::Ref(r)) = (c.ty, v) {
                if !self.live(target as usize, *r) {
                    return Err(ErrorKind::Fk);
                }
            }
        }
        for ix in def.indexes.iter().filter(|ix| ix.kind == IndexKind::Unique) {
            let key: Vec<Cell> = ix.columns.iter().map(|&c| cells[c].clone()).collect();
            if self.unique_clash(t, &ix.columns, &key, 0) {
                return Err(ErrorKind::Unique);
            }
        }
        self.tables[t].push(Some(cells));
        Ok(self.tables[t].len() as RowId)
    }

    fn update(
        &mut self,
        s: &Schema,
        t: usize,
        id: RowId,
        col: usize,
        cell: Cell,
    ) -> Result<(), ErrorKind> {
        let def = &s.tables[t];
        if !self.live(t, id) || col >= def.columns.len() || !m_type_ok(&def.columns[col], &cell) {
            return Err(ErrorKind::Db);
        }
        let row = self.tables[t][id as usize - 1].clone().unwrap();
        if same(&row[col], &cell) {
            return Ok(());
        }
        if let (ColType::Ref(target), Cell::Ref(r)) = (def.columns[col].ty, &cell) {
            if !self.live(target as usize, *r) {
                return Err(ErrorKind::Fk);
            }
        }
        for ix in def
            .indexes
            .iter()
            .filter(|ix| ix.kind == IndexKind::Unique && ix.columns.contains(&col))
        {
            let key: Vec<Cell> = ix
                .columns
                .iter()
                .map(|&c| {
                    if c == col {
                        cell.clone()
                    } else {
                        row[c].clone()
                    }
                })
                .collect();
            if self.unique_clash(t, &ix.columns, &key, id) {
                return Err(ErrorKind::Unique);
            }
        }
        self.tables[t][id as usize - 1].as_mut().unwrap()[col] = cell;
        Ok(())
    }

    fn delete(&mut self, s: &Schema, t: usize, id: RowId) -> Result<(), ErrorKind> {
        if !self.live(t, id) {
            return Err(ErrorKind::Db);
        }
        for (rt, def) in s.tables.iter().enumerate() {
            for (c, column) in def.columns.iter().enumerate() {
                if column.ty != ColType::Ref(t as TableId) {
                    continue;
                }
                let referred = self.tables[rt].iter().enumerate().any(|(i, r)| {
                    r.as_ref().is_some_and(|r| {
                        r[c] == Cell::Ref(id) && !(rt == t && i as RowId + 1 == id)
                    })
                });
                if referred {
                    return Err(ErrorKind::Fk);
                }
            }
        }
        self.tables[t][id as usize - 1] = None;
        Ok(())
    }

    fn query(&self, q: &Query, args: &[Cell]) -> Vec<RowId> {
        let t = q.table as usize;
        let mut ids: Vec<RowId> = (1..=self.tables[t].len() as RowId)
            .filter(|&id| self.live(t, id))
            .filter(|&id| {
                q.preds
                    .iter()
                    .all(|p| m_holds(&self.val(t, id, p.col), p.op, &args[p.arg]))
            })
            .collect();
        ids.sort_by(|&a, &b| {
            for &(c, desc) in &q.order {
                let (x, y) = (self.val(t, a, c), self.val(t, b, c));
                let o = if desc && x != Cell::Nil && y != Cell::Nil {
                    m_sort(&y, &x)
                } else {
                    m_sort(&x, &y)
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        let n = |a: Option<usize>| {
            a.map(|a| {
                if let Cell::Int(n) = args[a] {
                    n.max(0) as usize
                } else {
                    0
                }
            })
        };
        let skip = n(q.skip).unwrap_or(0);
        ids.into_iter()
            .skip(skip)
            .take(n(q.take).unwrap_or(usize::MAX))
            .collect()
    }

    fn aggregate(&self, s: &Schema, q: &Query, agg: Agg, args: &[Cell]) -> Result<Cell, ErrorKind> {
        let t = q.table as usize;
        let ids = if q.skip.is_none() && q.take.is_none() {
            let mut plain = q.clone();
            plain.order.clear();
            self.query(&plain, args)
        } else {
            self.query(q, args)
        };
        let c = match agg {
            Agg::Count => return Ok(Cell::Int(ids.len() as i64)),
            Agg::Exists => return Ok(Cell::Bool(!ids.is_empty())),
            Agg::Sum(c) | Agg::Min(c) | Agg::Max(c) | Agg::Avg(c) => c,
        };
        let ty = match c {
            Col::Id => ColType::Int,
            Col::At(i) => s.tables[t].columns[i].ty,
        };
        let vals: Vec<Cell> = ids
            .iter()
            .map(|&id| self.val(t, id, c))
            .filter(|v| *v != Cell::Nil)
            .collect();
        match agg {
            Agg::Sum(_) | Agg::Avg(_) if !matches!(ty, ColType::Int | ColType::Float) => {
                Err(ErrorKind::Db)
            }
            // Sums are exact: an Int total must fit (partial sums may not), a Float
            // total is rounded once. The Float arithmetic is the engine's own
            // (`wo_db::FloatSum`, checked against CPython's math.fsum in
            // db/tests/fsum.rs); what the model checks is which values reach it.
            Agg::Sum(_) if ty == ColType::Int => {
                let total: i128 = vals.iter().map(int_of).sum();
                i64::try_from(total)
                    .map(Cell::Int)
                    .map_err(|_| ErrorKind::Overflow)
            }
            Agg::Sum(_) => Ok(Cell::Float(float_total(&vals))),
            Agg::Avg(_) if vals.is_empty() => Ok(Cell::Nil),
            Agg::Avg(_) if ty == ColType::Int => {
                let total: i128 = vals.iter().map(int_of).sum();
                Ok(Cell::Float(total as f64 / vals.len() as f64))
            }
            Agg::Avg(_) => Ok(Cell::Float(float_total(&vals) / vals.len() as f64)),
            Agg::Min(_) => Ok(vals
                .iter()
                .min_by(|a, b| m_sort(a, b))
                .cloned()
                .unwrap_or(Cell::Nil)),
            Agg::Max(_) => Ok(vals
                .iter()
                .max_by(|a, b| m_sort(a, b))
                .cloned()
                .unwrap_or(Cell::Nil)),
            _ => unreachable!(),
        }
    }
}

fn pick_col(def: &TableDef, v: u16) -> Col {
    let n = def.columns.len() as u16 + 1;
    match v % n {
        0 => Col::Id,
        c => Col::At(c as usize - 1),
    }
}

fn arg_for(def: &TableDef, c: Col, v: u16) -> Cell {
    match c {
        Col::Id => {
            if v % 9 == 0 {
                Cell::Nil
            } else {
                Cell::Int(i64::from(v / 9 % 8))
            }
        }
        Col::At(i) => value(
            def.columns[i].ty,
            v % 5 == 0 || def.columns[i].nullable,
            v,
            false,
        ),
    }
}

/// A random query over table `t` built from raw numbers.
fn make_query(s: &Schema, t: usize, vals: &[u16]) -> (Query, Vec<Cell>) {
    let def = &s.tables[t];
    let mut it = vals.iter().copied().cycle();
    let mut next = || it.next().unwrap_or(0);
    let mut args = Vec::new();
    let mut preds = Vec::new();
    for _ in 0..next() % 4 {
        let c = pick_col(def, next());
        let op = [
            CmpOp::Eq,
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
        ][next() as usize % 7];
        args.push(arg_for(def, c, next()));
        preds.push(Pred {
            col: c,
            op,
            arg: args.len() - 1,
        });
    }
    // Make index probes likely: sometimes add equalities on every column of an index.
    if !def.indexes.is_empty() && next() % 3 == 0 {
        let ix = &def.indexes[next() as usize % def.indexes.len()];
        for &c in &ix.columns {
            args.push(arg_for(def, Col::At(c), next()));
            preds.push(Pred {
                col: Col::At(c),
                op: CmpOp::Eq,
                arg: args.len() - 1,
            });
        }
    }
    let mut order = Vec::new();
    for _ in 0..next() % 3 {
        order.push((pick_col(def, next()), next() % 2 == 0));
    }
    let mut opt_int = |args: &mut Vec<Cell>| {
        let v = next();
        if v % 3 == 0 {
            None
        } else {
            args.push(Cell::Int(i64::from(v / 3 % 6) - 1));
            Some(args.len() - 1)
        }
    };
    let skip = opt_int(&mut args);
    let take = opt_int(&mut args);
    (
        Query {
            table: t as TableId,
            preds,
            order,
            skip,
            take,
        },
        args,
    )
}

fn check_query(db: &mut Db, model: &Model, q: &Query, args: &[Cell]) -> Result<(), String> {
    let want = model.query(q, args);
    let mut got = Vec::new();
    let plan = db.query(q, args, &mut got).map_err(|e| format!("{e}"))?;
    check_eq!(&got, &want, "query {:?} args {:?} plan {:?}", q, args, plan);
    let mut scan = Vec::new();
    db.query_scan(q, args, &mut scan).unwrap();
    check_eq!(&scan, &want, "forced scan of {:?} args {:?}", q, args);
    Ok(())
}

/// The whole state: rows, id counters, and every index seen through probes and walks.
fn check_state(db: &mut Db, model: &Model, s: &Schema) -> Result<(), String> {
    for (t, def) in s.tables.iter().enumerate() {
        let tid = t as TableId;
        let want: Vec<(RowId, Row)> = model.tables[t]
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.clone().map(|r| (i as RowId + 1, r)))
            .collect();
        let got: Vec<(RowId, Row)> = db.rows(tid).collect();
        check_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            check!(
                g.0 == w.0 && same_rows(&g.1, &w.1),
                "row {:?} != {:?}",
                g,
                w
            );
        }
        check_eq!(db.len(tid), want.len());
        check_eq!(db.next_id(tid), model.tables[t].len() as RowId + 1);
        for ix in &def.indexes {
            if ix.kind == IndexKind::Sorted {
                for desc in [false, true] {
                    let q = Query {
                        table: tid,
                        preds: vec![],
                        order: vec![(Col::At(ix.columns[0]), desc)],
                        skip: None,
                        take: None,
                    };
                    check_query(db, model, &q, &[])?;
                }
                continue;
            }
            for (_, row) in &want {
                let args: Vec<Cell> = ix.columns.iter().map(|&c| row[c].clone()).collect();
                let preds = ix
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(a, &c)| Pred {
                        col: Col::At(c),
                        op: CmpOp::Eq,
                        arg: a,
                    })
                    .collect();
                let q = Query {
                    table: tid,
                    preds,
                    order: vec![],
                    skip: None,
                    take: None,
                };
                check_query(db, model, &q, &args)?;
            }
        }
    }
    Ok(())
}

/// Runs `ops` on a fresh engine with the schema `raw` and on the model side by side;
/// the first difference is the error.
pub fn run_case(raw: Vec<RawTable>, ops: Vec<RawOp>) -> Result<(), String> {
    let s = build_schema(&raw);
    let mut db = Db::new(s.clone()).map_err(|e| e.message)?;
    let mut model = Model {
        tables: vec![Vec::new(); s.tables.len()],
    };
    // Open savepoints, outermost first, with the model as it was at each.
    let mut sps: Vec<(Savepoint, Model)> = Vec::new();
    for (kind, a, b, c, vals) in ops {
        let t = a as usize % s.tables.len();
        let def = &s.tables[t];
        let tid = t as TableId;
        let id = |v: u16, m: &Model| -> RowId {
            let n = m.tables[t].len() as RowId;
            if n == 0 {
                1
            } else {
                RowId::from(v) % (n + 1) + 1
            }
        };
        match kind % 12 {
            0..=3 => {
                let cells: Row = def
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, col)| value(col.ty, col.nullable, vals[i % vals.len()] ^ b, true))
                    .collect();
                let want = model.insert(&s, t, cells.clone());
                let got = db.insert(tid, cells).map_err(|e| e.kind);
                check_eq!(got, want);
            }
            4 | 5 => {
                let rid = id(b, &model);
                let col = c as usize % def.columns.len();
                let cell = value(
                    def.columns[col].ty,
                    def.columns[col].nullable,
                    vals[0],
                    true,
                );
                let want = model.update(&s, t, rid, col, cell.clone());
                let got = db.update(tid, rid, col, cell).map_err(|e| e.kind);
                check_eq!(got, want);
            }
            6 => {
                let rid = id(b, &model);
                let want = model.delete(&s, t, rid);
                let got = db.delete(tid, rid).map_err(|e| e.kind);
                check_eq!(got, want);
            }
            7 => sps.push((db.savepoint(), model.clone())),
            8 => {
                if !sps.is_empty() {
                    let k = b as usize % sps.len();
                    db.rollback_to(sps[k].0);
                    model = sps[k].1.clone();
                    sps.truncate(k);
                    check_state(&mut db, &model, &s)?;
                }
            }
            9 => {
                // Commit: the outermost savepoint's changes become final.
                if let Some((sp, _)) = sps.first() {
                    db.truncate_undo(*sp);
                    check!(db.changes_since(*sp).is_empty());
                    sps.clear();
                }
            }
            10 => {
                let (q, args) = make_query(&s, t, &vals);
                check_query(&mut db, &model, &q, &args)?;
            }
            _ => {
                let (q, args) = make_query(&s, t, &vals);
                let col = pick_col(def, c);
                let agg = [
                    Agg::Count,
                    Agg::Exists,
                    Agg::Sum(col),
                    Agg::Min(col),
                    Agg::Max(col),
                    Agg::Avg(col),
                ][b as usize % 6];
                let want = model.aggregate(&s, &q, agg, &args);
                let got = db.aggregate(&q, agg, &args).map_err(|e| e.kind);
                let ok = match (&got, &want) {
                    (Ok(Cell::Float(g)), Ok(Cell::Float(w))) if g.is_nan() => w.is_nan(),
                    (Ok(g), Ok(w)) => same(g, w),
                    _ => got == want,
                };
                check!(
                    ok,
                    "aggregate {:?} of {:?} args {:?}: got {:?}, want {:?}",
                    agg,
                    q,
                    args,
                    got,
                    want
                );
            }
        }
    }
    check_state(&mut db, &model, &s)?;
    if let Some((sp, m)) = sps.first() {
        db.rollback_to(*sp);
        check_state(&mut db, m, &s)?;
    }
    Ok(())
}

fn int_of(v: &Cell) -> i128 {
    match v {
        Cell::Int(x) => i128::from(*x),
        _ => 0,
    }
}

fn float_total(vals: &[Cell]) -> f64 {
    let mut total = wo_db::FloatSum::new();
    for v in vals {
        if let Cell::Float(x) = v {
            total.add(*x);
        }
    }
    total.value()
}
