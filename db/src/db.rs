//! The database: schema validation, row operations, the undo log, aggregates.

use std::mem::size_of;

use bumpalo::Bump;

use crate::query::{self, Mode};
use crate::table::Table;
use crate::undo::Change;
use crate::value::{cell_kind, sort_cmp, write_cell, KeyVal, ValRef};
use crate::{
    Agg, Cell, Col, ColType, DbError, ErrorKind, IndexKind, Plan, Query, RowId, Savepoint, Schema,
    TableDef, TableId,
};

pub(crate) fn err(kind: ErrorKind, message: String) -> DbError {
    DbError { kind, message }
}

/// The type of a column as messages name it.
pub(crate) fn ty_name(schema: &Schema, ty: ColType) -> String {
    match ty {
        ColType::Int => "Int".into(),
        ColType::Float => "Float".into(),
        ColType::Bool => "Bool".into(),
        ColType::Text => "Text".into(),
        ColType::Ref(t) => match schema.tables.get(t as usize) {
            Some(d) => format!("ref {}", d.name),
            None => format!("ref table {t}"),
        },
    }
}

/// The in-memory database: tables of rows, their indexes, and the undo log.
#[derive(Debug)]
pub struct Db {
    schema: Schema,
    tables: Vec<Table>,
    log: Vec<Change>,
    /// Per-query temporaries (candidate ids, sort buffers); reset after each query.
    bump: Bump,
    /// For each table, the `(table, column)` Ref columns that point at it.
    referrers: Vec<Vec<(TableId, usize)>>,
}

impl Db {
    /// Checks the schema (Ref targets exist, index columns exist, a sorted index has one
    /// column, an index has at least one) and makes an empty database.
    pub fn new(schema: Schema) -> Result<Db, DbError> {
        let n = schema.tables.len();
        let mut referrers = vec![Vec::new(); n];
        for (ti, t) in schema.tables.iter().enumerate() {
            for (ci, c) in t.columns.iter().enumerate() {
                if let ColType::Ref(target) = c.ty {
                    if target as usize >= n {
                        return Err(err(
                            ErrorKind::Db,
                            format!(
                                "{}.{} refers to table {target}, which does not exist",
                                t.name, c.name
                            ),
                        ));
                    }
                    referrers[target as usize].push((ti as TableId, ci));
                }
            }
            for (ii, ix) in t.indexes.iter().enumerate() {
                if ix.columns.is_empty() {
                    return Err(err(
                        ErrorKind::Db,
                        format!("index {ii} of {} has no columns", t.name),
                    ));
                }
                if let Some(&c) = ix.columns.iter().find(|&&c| c >= t.columns.len()) {
                    return Err(err(
                        ErrorKind::Db,
                        format!(
                            "index {ii} of {} names column {c}, but {} has {} columns",
                            t.name,
                            t.name,
                            t.columns.len()
                        ),
                    ));
                }
                if ix.kind == IndexKind::Sorted && ix.columns.len() != 1 {
                    return Err(err(
                        ErrorKind::Db,
                        format!(
                            "sorted index {ii} of {} must have exactly one column",
                            t.name
                        ),
                    ));
                }
            }
        }
        let tables = schema
            .tables
            .iter()
            .enumerate()
            .map(|(i, d)| Table::new(d, !referrers[i].is_empty()))
            .collect();
        Ok(Db {
            schema,
            tables,
            log: Vec::new(),
            bump: Bump::new(),
            referrers,
        })
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Stores a row (one cell per column, in order) and returns its id.
    pub fn insert(&mut self, t: TableId, cells: Vec<Cell>) -> Result<RowId, DbError> {
        let def = table_def(&self.schema, t)?;
        if cells.len() != def.columns.len() {
            return Err(err(
                ErrorKind::Db,
                format!(
                    "insert into {}: expected {} cells, got {}",
                    def.name,
                    def.columns.len(),
                    cells.len()
                ),
            ));
        }
        for (c, cell) in cells.iter().enumerate() {
            check_cell(&self.schema, def, c, cell)?;
        }
        let tab = &self.tables[t as usize];
        for &(c, target) in &tab.ref_cols {
            check_ref(&self.schema, &self.tables, def, c, target, &cells[c])?;
        }
        for (i, ix) in def.indexes.iter().enumerate() {
            if ix.kind == IndexKind::Unique {
                let key = key_of(def, &ix.columns, |c| {
                    KeyVal::from_cell(def.columns[c].ty, &cells[c], true)
                });
                if tab.indexes[i].holder(&key).is_some() {
                    return Err(unique_error(def, &ix.columns, |c| cells[c].clone()));
                }
            }
        }
        // Nothing can fail from here on.
        let tab = &mut self.tables[t as usize];
        let pos = tab.n;
        for (col, cell) in tab.cols.iter_mut().zip(&cells) {
            col.push(pos, cell);
        }
        tab.live.set(pos, true);
        tab.n += 1;
        tab.live_count += 1;
        if let Some(inb) = &mut tab.inbound {
            inb.push(0);
        }
        link(&self.schema, &mut self.tables, t, pos);
        let id = pos as RowId + 1;
        self.log.push(Change::Insert {
            table: t,
            id,
            cells,
        });
        Ok(id)
    }

    /// One column of a live row.
    pub fn get(&self, t: TableId, id: RowId, col: usize) -> Result<Cell, DbError> {
        let def = table_def(&self.schema, t)?;
        let tab = &self.tables[t as usize];
        if !tab.is_live(id) {
            return Err(dead_row(def, tab, id));
        }
        match tab.cols.get(col) {
            Some(c) => Ok(c.cell(id as usize - 1)),
            None => Err(no_column(def, col)),
        }
    }

    pub fn is_live(&self, t: TableId, id: RowId) -> bool {
        self.tables
            .get(t as usize)
            .is_some_and(|tab| tab.is_live(id))
    }

    /// The id the next insert into `t` will get (ids are never reused).
    pub fn next_id(&self, t: TableId) -> RowId {
        self.tables
            .get(t as usize)
            .map_or(1, |tab| tab.n as RowId + 1)
    }

    /// Sets one column of a live row. Setting the value it already holds changes nothing
    /// and logs nothing. Only the indexes containing the column are touched.
    pub fn update(&mut self, t: TableId, id: RowId, col: usize, cell: Cell) -> Result<(), DbError> {
        let def = table_def(&self.schema, t)?;
        let tab = &self.tables[t as usize];
        if !tab.is_live(id) {
            return Err(dead_row(def, tab, id));
        }
        if col >= def.columns.len() {
            return Err(no_column(def, col));
        }
        check_cell(&self.schema, def, col, &cell)?;
        let pos = id as usize - 1;
        if tab.cols[col].same(pos, &cell) {
            return Ok(());
        }
        if let ColType::Ref(target) = def.columns[col].ty {
            check_ref(&self.schema, &self.tables, def, col, target, &cell)?;
        }
        for &i in &tab.col_indexes[col] {
            let ix = &def.indexes[i];
            if ix.kind == IndexKind::Unique {
                let key = key_of(def, &ix.columns, |c| {
                    if c == col {
                        KeyVal::from_cell(def.columns[c].ty, &cell, true)
                    } else {
                        tab.cols[c].key(pos, true)
                    }
                });
                if tab.indexes[i].holder(&key).is_some_and(|h| h != id) {
                    return Err(unique_error(def, &ix.columns, |c| {
                        if c == col {
                            cell.clone()
                        } else {
                            tab.cols[c].cell(pos)
                        }
                    }));
                }
            }
        }
        let old = tab.cols[col].cell(pos);
        raw_set(&self.schema, &mut self.tables, t, pos, col, &cell);
        self.log.push(Change::Update {
            table: t,
            id,
            col,
            old,
            new: cell,
        });
        Ok(())
    }

    /// Deletes a live row. Refused (`Fk`) while another live row refers to it; a row
    /// that refers only to itself can be deleted.
    pub fn delete(&mut self, t: TableId, id: RowId) -> Result<(), DbError> {
        let def = table_def(&self.schema, t)?;
        let tab = &self.tables[t as usize];
        if !tab.is_live(id) {
            return Err(dead_row(def, tab, id));
        }
        let pos = id as usize - 1;
        if let Some(inb) = &tab.inbound {
            if *inb.get(pos) > 0 {
                return Err(self.restrict_error(t, id));
            }
        }
        let cells: Vec<Cell> = tab.cols.iter().map(|c| c.cell(pos)).collect();
        unlink(&self.schema, &mut self.tables, t, pos);
        let tab = &mut self.tables[t as usize];
        tab.live.set(pos, false);
        tab.live_count -= 1;
        for c in &mut tab.cols {
            c.clear(pos);
        }
        self.log.push(Change::Delete {
            table: t,
            id,
            cells,
        });
        Ok(())
    }

    /// Live rows of `t` (0 for a table that does not exist).
    pub fn len(&self, t: TableId) -> usize {
        self.tables.get(t as usize).map_or(0, |tab| tab.live_count)
    }

    /// The current position of the undo log.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint(self.log.len())
    }

    /// Undoes every change made after `sp`, newest first: rows, indexes, id counters and
    /// reference counts come back exactly. A savepoint beyond the log does nothing.
    pub fn rollback_to(&mut self, sp: Savepoint) {
        while self.log.len() > sp.0 {
            let Some(ch) = self.log.pop() else { break };
            match ch {
                Change::Insert { table, id, .. } => {
                    let pos = id as usize - 1;
                    debug_assert_eq!(
                        pos + 1,
                        self.tables[table as usize].n,
                        "undo of an insert out of order"
                    );
                    unlink(&self.schema, &mut self.tables, table, pos);
                    let tab = &mut self.tables[table as usize];
                    for c in &mut tab.cols {
                        c.pop(pos);
                    }
                    tab.live.truncate(pos);
                    if let Some(inb) = &mut tab.inbound {
                        inb.pop();
                    }
                    tab.n -= 1;
                    tab.live_count -= 1;
                }
                Change::Update {
                    table,
                    id,
                    col,
                    old,
                    ..
                } => {
                    raw_set(
                        &self.schema,
                        &mut self.tables,
                        table,
                        id as usize - 1,
                        col,
                        &old,
                    );
                }
                Change::Delete { table, id, cells } => {
                    let pos = id as usize - 1;
                    let tab = &mut self.tables[table as usize];
                    for (c, cell) in tab.cols.iter_mut().zip(&cells) {
                        c.set(pos, cell);
                    }
                    tab.live.set(pos, true);
                    tab.live_count += 1;
                    link(&self.schema, &mut self.tables, table, pos);
                }
            }
        }
    }

    /// Forgets the undo entries after `sp`; their changes stay.
    pub fn truncate_undo(&mut self, sp: Savepoint) {
        self.log.truncate(sp.0);
        if self.log.is_empty() && self.log.capacity() > 4096 {
            self.log = Vec::new();
        }
    }

    /// The changes made after `sp`, oldest first.
    pub fn changes_since(&self, sp: Savepoint) -> &[Change] {
        self.log.get(sp.0..).unwrap_or(&[])
    }

    /// Appends the ids of the rows matching `q` to `out`, in result order, and returns
    /// the access path used.
    pub fn query(
        &mut self,
        q: &Query,
        args: &[Cell],
        out: &mut Vec<RowId>,
    ) -> Result<Plan, DbError> {
        self.run_query(q, args, out, Mode::Query)
    }

    /// [`Db::query`] forced to scan the whole table (for tests: the result must be the
    /// same as with the planner's choice).
    #[doc(hidden)]
    pub fn query_scan(
        &mut self,
        q: &Query,
        args: &[Cell],
        out: &mut Vec<RowId>,
    ) -> Result<Plan, DbError> {
        self.run_query(q, args, out, Mode::Scan)
    }

    fn run_query(
        &mut self,
        q: &Query,
        args: &[Cell],
        out: &mut Vec<RowId>,
        mode: Mode,
    ) -> Result<Plan, DbError> {
        let def = table_def(&self.schema, q.table)?;
        let tab = &self.tables[q.table as usize];
        let r = query::exec(
            &self.schema,
            def,
            tab,
            q,
            args,
            &self.bump,
            mode,
            &mut |id| {
                out.push(id);
                true
            },
        );
        self.bump.reset();
        r
    }

    /// The access path `q` would use (before looking at its arguments).
    pub fn plan(&self, q: &Query) -> Plan {
        match self.schema.tables.get(q.table as usize) {
            Some(def) => query::choose(def, &q.preds, &q.order, q.take.is_some()),
            None => Plan::Scan,
        }
    }

    /// Computes `agg` over the rows of `q` without materializing them. `nil` values are
    /// skipped by Sum/Min/Max/Avg; Min/Max/Avg give `nil` on no values; Sum gives 0 of
    /// the column's type. `order` matters only with `skip`/`take`.
    pub fn aggregate(&mut self, q: &Query, agg: Agg, args: &[Cell]) -> Result<Cell, DbError> {
        let def = table_def(&self.schema, q.table)?;
        let tab = &self.tables[q.table as usize];
        let plain = q.preds.is_empty() && q.skip.is_none() && q.take.is_none();
        match agg {
            Agg::Count if plain => return Ok(Cell::Int(tab.live_count as i64)),
            Agg::Exists if plain => return Ok(Cell::Bool(tab.live_count > 0)),
            _ => {}
        }
        let col = match agg {
            Agg::Sum(c) | Agg::Min(c) | Agg::Max(c) | Agg::Avg(c) => Some(c),
            Agg::Count | Agg::Exists => None,
        };
        let ty = match col {
            None | Some(Col::Id) => ColType::Int,
            Some(Col::At(c)) => match def.columns.get(c) {
                Some(column) => column.ty,
                None => return Err(no_column(def, c)),
            },
        };
        let what = match agg {
            Agg::Sum(_) => "sum",
            Agg::Avg(_) => "avg",
            _ => "",
        };
        if !what.is_empty() && !matches!(ty, ColType::Int | ColType::Float) {
            let name = match col {
                Some(Col::At(c)) => def.columns[c].name.as_str(),
                _ => "id",
            };
            return Err(err(
                ErrorKind::Db,
                format!(
                    "cannot {what} {}.{name}: it is {}, not Int or Float",
                    def.name,
                    ty_name(&self.schema, ty)
                ),
            ));
        }
        let mode = if q.skip.is_none() && q.take.is_none() {
            Mode::Unordered
        } else {
            Mode::Query
        };
        let val = |pos: usize| match col {
            Some(Col::At(c)) => tab.cols[c].val(pos),
            _ => ValRef::Int(pos as i64 + 1),
        };
        let mut count: i64 = 0;
        let mut isum: i64 = 0;
        let mut wide: i128 = 0;
        let mut fsum: f64 = 0.0;
        let mut best: Option<usize> = None;
        let mut overflow = false;
        let r = query::exec(
            &self.schema,
            def,
            tab,
            q,
            args,
            &self.bump,
            mode,
            &mut |id| {
                let pos = id as usize - 1;
                match agg {
                    Agg::Count => count += 1,
                    Agg::Exists => {
                        count += 1;
                        return false;
                    }
                    Agg::Sum(_) | Agg::Avg(_) => match val(pos) {
                        ValRef::Int(x) => {
                            count += 1;
                            wide += i128::from(x);
                            if matches!(agg, Agg::Sum(_)) {
                                match isum.checked_add(x) {
                                    Some(s) => isum = s,
                                    None => {
                                        overflow = true;
                                        return false;
                                    }
                                }
                            }
                        }
                        ValRef::Float(x) => {
                            count += 1;
                            fsum += x;
                        }
                        _ => {}
                    },
                    Agg::Min(_) | Agg::Max(_) => {
                        let v = val(pos);
                        if !v.is_nil() {
                            let better = match best {
                                None => true,
                                Some(b) => {
                                    let o = sort_cmp(v, val(b));
                                    if matches!(agg, Agg::Min(_)) {
                                        o.is_lt()
                                    } else {
                                        o.is_gt()
                                    }
                                }
                            };
                            if better {
                                best = Some(pos);
                            }
                        }
                    }
                }
                true
            },
        );
        self.bump.reset();
        r?;
        if overflow {
            return Err(err(ErrorKind::Overflow, "sum overflows Int".into()));
        }
        Ok(match agg {
            Agg::Count => Cell::Int(count),
            Agg::Exists => Cell::Bool(count > 0),
            Agg::Sum(_) => match ty {
                ColType::Float => Cell::Float(fsum),
                _ => Cell::Int(isum),
            },
            Agg::Avg(_) if count == 0 => Cell::Nil,
            Agg::Avg(_) => match ty {
                ColType::Float => Cell::Float(fsum / count as f64),
                _ => Cell::Float(wide as f64 / count as f64),
            },
            Agg::Min(c) | Agg::Max(c) => match (best, c) {
                (None, _) => Cell::Nil,
                (Some(p), Col::Id) => Cell::Int(p as i64 + 1),
                (Some(p), Col::At(c)) => tab.cols[c].cell(p),
            },
        })
    }

    /// Live rows of `t` in id order with all their cells.
    pub fn rows(&self, t: TableId) -> impl Iterator<Item = (RowId, Vec<Cell>)> + '_ {
        self.tables.get(t as usize).into_iter().flat_map(|tab| {
            tab.live
                .ones(0, tab.n)
                .map(move |p| (p as RowId + 1, tab.cols.iter().map(|c| c.cell(p)).collect()))
        })
    }

    /// Approximate heap bytes: columns, texts, bitmaps, reference counts, indexes, the
    /// undo log and the query arena.
    pub fn memory_bytes(&self) -> usize {
        let log: usize = self.log.capacity() * size_of::<Change>()
            + self
                .log
                .iter()
                .map(|c| match c {
                    Change::Insert { cells, .. } | Change::Delete { cells, .. } => {
                        cells.capacity() * size_of::<Cell>()
                    }
                    Change::Update { .. } => 0,
                })
                .sum::<usize>();
        size_of::<Db>()
            + self.tables.iter().map(Table::heap_bytes).sum::<usize>()
            + self.tables.capacity() * size_of::<Table>()
            + log
            + self.bump.allocated_bytes()
    }

    /// The `Fk` error for deleting row `id` of `t` that some other live row refers to
    /// (only built on the error path: it searches for the referring column).
    fn restrict_error(&self, t: TableId, id: RowId) -> DbError {
        let name = &self.schema.tables[t as usize].name;
        for &(rt, rc) in &self.referrers[t as usize] {
            let rtab = &self.tables[rt as usize];
            let found = rtab.live.ones(0, rtab.n).any(|p| {
                matches!(rtab.cols[rc].val(p), ValRef::Ref(r) if r == id)
                    && !(rt == t && p as RowId + 1 == id)
            });
            if found {
                let rdef = &self.schema.tables[rt as usize];
                return err(
                    ErrorKind::Fk,
                    format!(
                        "cannot delete {name} row {id}: {}.{} still refers to it",
                        rdef.name, rdef.columns[rc].name
                    ),
                );
            }
        }
        err(
            ErrorKind::Fk,
            format!("cannot delete {name} row {id}: another row still refers to it"),
        )
    }
}

fn table_def(schema: &Schema, t: TableId) -> Result<&TableDef, DbError> {
    schema
        .tables
        .get(t as usize)
        .ok_or_else(|| err(ErrorKind::Db, format!("no table {t}")))
}

fn no_column(def: &TableDef, col: usize) -> DbError {
    err(ErrorKind::Db, format!("{} has no column {col}", def.name))
}

fn dead_row(def: &TableDef, tab: &Table, id: RowId) -> DbError {
    let why = if id >= 1 && id as u64 <= tab.n as u64 {
        "it was deleted"
    } else {
        "no such row"
    };
    err(
        ErrorKind::Db,
        format!("row {id} of {} does not exist ({why})", def.name),
    )
}

fn check_cell(schema: &Schema, def: &TableDef, col: usize, cell: &Cell) -> Result<(), DbError> {
    let c = &def.columns[col];
    let ok = match (c.ty, cell) {
        (_, Cell::Nil) => c.nullable,
        (ColType::Int, Cell::Int(_))
        | (ColType::Float, Cell::Float(_))
        | (ColType::Bool, Cell::Bool(_))
        | (ColType::Text, Cell::Text(_))
        | (ColType::Ref(_), Cell::Ref(_)) => true,
        _ => false,
    };
    if ok {
        return Ok(());
    }
    let msg = if *cell == Cell::Nil {
        format!(
            "cannot store nil in {}.{} (it is {}, not nullable)",
            def.name,
            c.name,
            ty_name(schema, c.ty)
        )
    } else {
        format!(
            "cannot store {} in {}.{} (it is {})",
            cell_kind(cell),
            def.name,
            c.name,
            ty_name(schema, c.ty)
        )
    };
    Err(err(ErrorKind::Db, msg))
}

fn check_ref(
    schema: &Schema,
    tables: &[Table],
    def: &TableDef,
    col: usize,
    target: TableId,
    cell: &Cell,
) -> Result<(), DbError> {
    if let Cell::Ref(r) = cell {
        if !tables[target as usize].is_live(*r) {
            return Err(err(
                ErrorKind::Fk,
                format!(
                    "{}.{} refers to {} row {r}, which does not exist",
                    def.name, def.columns[col].name, schema.tables[target as usize].name
                ),
            ));
        }
    }
    Ok(())
}

fn key_of(_def: &TableDef, columns: &[usize], f: impl Fn(usize) -> KeyVal) -> KeyVal {
    if let [c] = columns {
        f(*c)
    } else {
        KeyVal::Tuple(columns.iter().map(|&c| f(c)).collect())
    }
}

fn unique_error(def: &TableDef, columns: &[usize], cell: impl Fn(usize) -> Cell) -> DbError {
    let mut m = String::from("duplicate value ");
    if let [c] = columns {
        write_cell(&mut m, &cell(*c));
        m.push_str(&format!(
            " for unique column {}.{}",
            def.name, def.columns[*c].name
        ));
    } else {
        m.push('(');
        for (i, &c) in columns.iter().enumerate() {
            if i > 0 {
                m.push_str(", ");
            }
            write_cell(&mut m, &cell(c));
        }
        m.push_str(") for unique columns ");
        for (i, &c) in columns.iter().enumerate() {
            if i > 0 {
                m.push_str(", ");
            }
            m.push_str(&format!("{}.{}", def.name, def.columns[c].name));
        }
    }
    err(ErrorKind::Unique, m)
}

/// Adds row position `pos` of `t` to its indexes and counts its references.
fn link(schema: &Schema, tables: &mut [Table], t: TableId, pos: usize) {
    let id = pos as RowId + 1;
    let def = &schema.tables[t as usize];
    let tab = &mut tables[t as usize];
    for (i, ix) in def.indexes.iter().enumerate() {
        let key = tab.index_key(&ix.columns, ix.kind, pos);
        tab.indexes[i].insert(key, id);
    }
    for k in 0..tables[t as usize].ref_cols.len() {
        let (c, target) = tables[t as usize].ref_cols[k];
        if let ValRef::Ref(r) = tables[t as usize].cols[c].val(pos) {
            add_ref(tables, t, id, target, r, 1);
        }
    }
}

/// Removes row position `pos` of `t` from its indexes and uncounts its references.
fn unlink(schema: &Schema, tables: &mut [Table], t: TableId, pos: usize) {
    let id = pos as RowId + 1;
    let def = &schema.tables[t as usize];
    let tab = &mut tables[t as usize];
    for (i, ix) in def.indexes.iter().enumerate() {
        let key = tab.index_key(&ix.columns, ix.kind, pos);
        tab.indexes[i].remove(key, id);
    }
    for k in 0..tables[t as usize].ref_cols.len() {
        let (c, target) = tables[t as usize].ref_cols[k];
        if let ValRef::Ref(r) = tables[t as usize].cols[c].val(pos) {
            add_ref(tables, t, id, target, r, -1);
        }
    }
}

/// Counts (or uncounts) a reference from row `from` of `t` to row `to` of `target`;
/// a row's reference to itself is not counted.
#[inline]
fn add_ref(tables: &mut [Table], t: TableId, from: RowId, target: TableId, to: RowId, d: i32) {
    if target == t && to == from {
        return;
    }
    if let Some(inb) = &mut tables[target as usize].inbound {
        let n = inb.get_mut(to as usize - 1);
        *n = n.wrapping_add_signed(d);
    }
}

/// Sets one column of row position `pos`, maintaining the indexes on that column and
/// the reference counts. No checks, no logging.
fn raw_set(schema: &Schema, tables: &mut [Table], t: TableId, pos: usize, col: usize, cell: &Cell) {
    let id = pos as RowId + 1;
    let def = &schema.tables[t as usize];
    let tab = &mut tables[t as usize];
    for &i in &tab.col_indexes[col] {
        let ix = &def.indexes[i];
        let key = tab.index_key(&ix.columns, ix.kind, pos);
        tab.indexes[i].remove(key, id);
    }
    let target = match def.columns[col].ty {
        ColType::Ref(target) => Some(target),
        _ => None,
    };
    let old_ref = match tab.cols[col].val(pos) {
        ValRef::Ref(r) => Some(r),
        _ => None,
    };
    tab.cols[col].set(pos, cell);
    for &i in &tab.col_indexes[col] {
        let ix = &def.indexes[i];
        let key = tab.index_key(&ix.columns, ix.kind, pos);
        tab.indexes[i].insert(key, id);
    }
    if let Some(target) = target {
        if let Some(r) = old_ref {
            add_ref(tables, t, id, target, r, -1);
        }
        if let Cell::Ref(r) = cell {
            add_ref(tables, t, id, target, *r, 1);
        }
    }
}
