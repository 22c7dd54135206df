//! The database: schema validation, row operations, the undo log, aggregates.

use std::collections::hash_map::Entry;
use std::mem::size_of;

use ahash::AHashMap;
use bumpalo::Bump;

use crate::index::{Index, Posting, Sorted};
use crate::query::{self, Mode};
use crate::table::{Generations, Table};
use crate::undo::Change;
use crate::value::{cell_kind, sort_cmp, write_cell, KeyVal, ValRef};
use crate::{
    Agg, Cell, CmpOp, Col, ColSource, ColType, DbError, ErrorKind, IndexDef, IndexKind, Plan, Pred,
    Query, RowId, Savepoint, Schema, TableDef, TableId, TableSource,
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
    /// The savepoint of `log[0]`: entries before it were forgotten
    /// ([`Db::forget_undo_before`]), so savepoints stay valid as the front is dropped.
    log_base: usize,
    /// Whether changes append to `log` ([`Db::set_undo`]).
    undo: bool,
    /// While true, hash and sorted indexes of a table that changes are dropped and
    /// rebuilt in one pass when deferring ends (recovery; unique indexes stay live).
    defer: bool,
    /// Per-query temporaries (candidate ids, sort buffers); reset after each query.
    bump: Bump,
    /// For each table, the `(table, column)` Ref columns that point at it.
    referrers: Vec<Vec<(TableId, usize)>>,
}

impl Db {
    /// Checks the schema (Ref targets exist, index columns exist, a sorted index has one
    /// column, an index has at least one) and makes an empty database.
    pub fn new(schema: Schema) -> Result<Db, DbError> {
        let referrers = validate(&schema)?;
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
            log_base: 0,
            undo: true,
            defer: false,
            bump: Bump::new(),
            referrers,
        })
    }

    /// Turns the undo log on (the default) or off. While it is off, `insert`, `update`
    /// and `delete` append nothing to it: nothing they do can be rolled back and
    /// [`Db::changes_since`] does not see them, but they cost no allocation for the
    /// entry (a row image for inserts and deletes). Every operation still checks
    /// everything before it changes anything, so a failed one needs no undo.
    ///
    /// For writes that are final as soon as they succeed: a statement outside a
    /// transaction when no write-ahead log needs the change. Entries already in the log
    /// stay (turn it off when the log is empty, i.e. with no transaction open).
    pub fn set_undo(&mut self, on: bool) {
        self.undo = on;
    }

    /// Whether changes are recorded in the undo log ([`Db::set_undo`]).
    pub fn undo_enabled(&self) -> bool {
        self.undo
    }

    /// Starts or ends deferred index maintenance (recovery). While deferring, a table
    /// that is loaded or changed drops its hash and sorted indexes and stops
    /// maintaining them; ending rebuilds them in one pass each (a sorted index by one
    /// sort, not one B-tree insert per row). Unique indexes stay live, so their checks
    /// are exact throughout. A query on a table with dropped indexes rebuilds them
    /// first, so results are always right.
    pub(crate) fn defer_indexes(&mut self, on: bool) {
        self.defer = on;
        if !on {
            for t in 0..self.tables.len() {
                self.rebuild_stale(t as TableId);
            }
        }
    }

    /// Marks `t`'s hash and sorted indexes as dropped (while deferring).
    #[inline]
    fn touch(&mut self, t: TableId) {
        if self.defer {
            let tab = &mut self.tables[t as usize];
            if !tab.stale {
                tab.stale = true;
                for ix in &mut tab.indexes {
                    if !matches!(ix, Index::Unique(_)) {
                        ix.clear();
                    }
                }
            }
        }
    }

    /// Rebuilds `t`'s dropped hash and sorted indexes.
    fn rebuild_stale(&mut self, t: TableId) {
        let def = &self.schema.tables[t as usize];
        let tab = &mut self.tables[t as usize];
        if !tab.stale {
            return;
        }
        for (i, ix) in def.indexes.iter().enumerate() {
            if ix.kind != IndexKind::Unique {
                tab.indexes[i] = build_index(tab, ix)
                    .unwrap_or_else(|_| unreachable!("only unique indexes refuse keys"));
            }
        }
        tab.stale = false;
    }

    /// Fills empty tables in one pass each (checkpoint loading). Each item is a table,
    /// its id counter (the id its next insert gets) and its live rows in ascending id
    /// order, one cell per column; the ids below the counter that have no row are
    /// deleted rows (never reused). Checks every cell's type, the ids, the unique
    /// indexes and, once every table is filled, that every reference names a live row
    /// (so tables may refer to each other in any order, cycles included); builds the
    /// indexes in bulk (a sorted index by one sort) and the inbound reference counts.
    /// Logs nothing in the undo log, which must be empty.
    ///
    /// On error every table of the call is left empty again.
    pub fn load<R>(
        &mut self,
        tables: impl IntoIterator<Item = (TableId, RowId, R)>,
    ) -> Result<(), DbError>
    where
        R: IntoIterator<Item = (RowId, Vec<Cell>)>,
    {
        if !self.log.is_empty() {
            return Err(err(
                ErrorKind::Db,
                "cannot load tables while the undo log holds changes".into(),
            ));
        }
        let mut loaded: Vec<TableId> = Vec::new();
        let mut res = Ok(());
        for (t, next_id, rows) in tables {
            // Checked before anything changes: a table this call must not clear.
            let def = match table_def(&self.schema, t) {
                Ok(def) => def,
                Err(e) => {
                    res = Err(e);
                    break;
                }
            };
            if self.tables[t as usize].n != 0 || next_id < 1 {
                res = Err(err(
                    ErrorKind::Db,
                    if next_id < 1 {
                        format!("load into {}: next id {next_id} is not positive", def.name)
                    } else {
                        format!("load into {}: the table is not empty", def.name)
                    },
                ));
                break;
            }
            loaded.push(t);
            res = self.load_one(t, next_id, rows);
            if res.is_err() {
                break;
            }
        }
        if res.is_ok() {
            res = self.check_loaded_refs(&loaded);
        }
        match res {
            Ok(()) => {
                self.count_inbound();
                Ok(())
            }
            Err(e) => {
                for t in loaded {
                    let referenced = !self.referrers[t as usize].is_empty();
                    self.tables[t as usize] =
                        Table::new(&self.schema.tables[t as usize], referenced);
                }
                Err(e)
            }
        }
    }

    /// [`Db::load`] of one table.
    pub fn load_table(
        &mut self,
        t: TableId,
        next_id: RowId,
        rows: impl IntoIterator<Item = (RowId, Vec<Cell>)>,
    ) -> Result<(), DbError> {
        self.load([(t, next_id, rows)])
    }

    fn load_one(
        &mut self,
        t: TableId,
        next_id: RowId,
        rows: impl IntoIterator<Item = (RowId, Vec<Cell>)>,
    ) -> Result<(), DbError> {
        let def = &self.schema.tables[t as usize];
        let tab = &mut self.tables[t as usize];
        let load_err = |m: String| err(ErrorKind::Db, format!("load into {}: {m}", def.name));
        let ncols = def.columns.len();
        let hole = |tab: &mut Table| {
            let pos = tab.n;
            for col in &mut tab.cols {
                col.push(pos, &Cell::Nil);
            }
            if let Some(inb) = &mut tab.inbound {
                inb.push(0);
            }
            tab.n += 1;
        };
        for (id, cells) in rows {
            if id <= tab.n as RowId || id >= next_id {
                return Err(load_err(format!(
                    "row {id} is out of order or not below next id {next_id}"
                )));
            }
            if cells.len() != ncols {
                return Err(load_err(format!(
                    "row {id} has {} cells, expected {ncols}",
                    cells.len()
                )));
            }
            for (c, cell) in cells.iter().enumerate() {
                check_cell(&self.schema, def, c, cell)
                    .map_err(|e| load_err(format!("row {id}: {}", e.message)))?;
            }
            while (tab.n as RowId) < id - 1 {
                hole(tab);
            }
            let pos = tab.n;
            for (col, cell) in tab.cols.iter_mut().zip(&cells) {
                col.push(pos, cell);
            }
            if let Some(inb) = &mut tab.inbound {
                inb.push(0);
            }
            tab.live.set(pos, true);
            tab.n += 1;
            tab.live_count += 1;
        }
        while (tab.n as RowId) < next_id - 1 {
            hole(tab);
        }
        for (i, ix) in def.indexes.iter().enumerate() {
            if ix.kind == IndexKind::Unique || !self.defer {
                // The two rows are named: values that print alike (`0.0` and `-0.0`
                // are one key) are otherwise hard to find.
                tab.indexes[i] = build_index(tab, ix).map_err(|(pos, first)| {
                    err(
                        ErrorKind::Unique,
                        clash(def, ix, tab, (pos, first), &|_| None),
                    )
                })?;
            }
        }
        if self.defer {
            tab.stale = true;
        }
        Ok(())
    }

    /// Checks that every reference of the rows of `loaded` names a live row.
    fn check_loaded_refs(&self, loaded: &[TableId]) -> Result<(), DbError> {
        for &t in loaded {
            let def = &self.schema.tables[t as usize];
            let tab = &self.tables[t as usize];
            for &(c, target) in &tab.ref_cols {
                let ttab = &self.tables[target as usize];
                for pos in tab.live.ones(0, tab.n) {
                    if let ValRef::Ref(r) = tab.cols[c].val(pos) {
                        if !ttab.is_live(r) {
                            return Err(err(
                                ErrorKind::Fk,
                                format!(
                                    "{}.{} refers to {} row {r}, which does not exist",
                                    def.name,
                                    def.columns[c].name,
                                    self.schema.tables[target as usize].name
                                ),
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Recounts every table's inbound references from scratch (every reference names a
    /// live row).
    fn count_inbound(&mut self) {
        for tab in &mut self.tables {
            if let Some(inb) = &mut tab.inbound {
                for n in inb.iter_mut() {
                    *n = 0;
                }
            }
        }
        for t in 0..self.tables.len() {
            for k in 0..self.tables[t].ref_cols.len() {
                let (c, target) = self.tables[t].ref_cols[k];
                let n = self.tables[t].n;
                for pos in 0..n {
                    if !self.tables[t].live.get(pos) {
                        continue;
                    }
                    if let ValRef::Ref(r) = self.tables[t].cols[c].val(pos) {
                        add_ref(
                            &mut self.tables,
                            t as TableId,
                            pos as RowId + 1,
                            target,
                            r,
                            1,
                        );
                    }
                }
            }
        }
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Changes the schema, keeping the data: the schema migration of a data directory
    /// (and the tables a stored schema adds during recovery). `sources[i]` says where
    /// table `i` of `schema` comes from: an old table moved as it is (its definition
    /// must be the same), an old table rebuilt column by column (ids, deleted ids and
    /// the id counter kept; each cell checked as an insert would be: type, nil, unique
    /// keys, references), or nothing (an empty table). Old tables that no source names
    /// are dropped. The undo log must be empty.
    ///
    /// All or nothing: on error (a nil for a column that is not nullable, a unique
    /// index over repeated values, naming the value) the database is as it was.
    pub fn restructure(
        &mut self,
        schema: Schema,
        sources: Vec<TableSource>,
    ) -> Result<(), DbError> {
        if !self.log.is_empty() {
            return Err(err(
                ErrorKind::Db,
                "cannot change the schema while the undo log holds changes".into(),
            ));
        }
        if sources.len() != schema.tables.len() {
            return Err(err(
                ErrorKind::Db,
                format!(
                    "restructure: {} sources for {} tables",
                    sources.len(),
                    schema.tables.len()
                ),
            ));
        }
        let mut new = Db::new(schema)?;
        new.undo = self.undo;
        new.defer = self.defer;
        // Check the sources before anything moves.
        let mut used = vec![false; self.tables.len()];
        for (i, src) in sources.iter().enumerate() {
            let from = match src {
                TableSource::Keep(f) => {
                    let same = self.schema.tables.get(*f as usize) == Some(&new.schema.tables[i]);
                    if !same {
                        return Err(err(
                            ErrorKind::Db,
                            format!("restructure: table {f} is kept but its definition changes"),
                        ));
                    }
                    *f
                }
                TableSource::Rebuild { from, cols } => {
                    let Some(old) = self.schema.tables.get(*from as usize) else {
                        return Err(err(ErrorKind::Db, format!("restructure: no table {from}")));
                    };
                    let def = &new.schema.tables[i];
                    if cols.len() != def.columns.len()
                        || cols
                            .iter()
                            .any(|c| matches!(c, ColSource::From(k) if *k >= old.columns.len()))
                    {
                        return Err(err(
                            ErrorKind::Db,
                            format!("restructure: bad column sources for {}", def.name),
                        ));
                    }
                    *from
                }
                TableSource::Empty => continue,
            };
            if std::mem::replace(&mut used[from as usize], true) {
                return Err(err(
                    ErrorKind::Db,
                    format!("restructure: table {from} is the source of two tables"),
                ));
            }
        }
        // A column becoming non-nullable must hold no nil: say which row does.
        if let Some((_, _, message)) = self.nils_refused(&new.schema, &sources).into_iter().next() {
            return Err(err(ErrorKind::Db, message));
        }
        // Move the kept tables over; put them back if loading fails.
        let mut moved: Vec<(usize, TableId)> = Vec::new();
        for (i, src) in sources.iter().enumerate() {
            if let TableSource::Keep(f) = src {
                let placeholder = Table::new(&self.schema.tables[*f as usize], false);
                let mut tab = std::mem::replace(&mut self.tables[*f as usize], placeholder);
                let referenced = !new.referrers[i].is_empty();
                match (&tab.inbound, referenced) {
                    (None, true) => {
                        let mut inb = crate::table::Chunked::default();
                        for _ in 0..tab.n {
                            inb.push(0);
                        }
                        tab.inbound = Some(inb);
                    }
                    (Some(_), false) => tab.inbound = None,
                    _ => {}
                }
                new.tables[i] = tab;
                moved.push((i, *f));
            }
        }
        let old = &*self;
        let rebuilds = sources.iter().enumerate().filter_map(|(i, src)| match src {
            TableSource::Rebuild { from, cols } => {
                let rows = old.rows(*from).map(move |(id, cells)| {
                    let out = cols
                        .iter()
                        .map(|c| match c {
                            ColSource::From(k) => cells[*k].clone(),
                            ColSource::Fill(cell) => cell.clone(),
                        })
                        .collect();
                    (id, out)
                });
                Some((i as TableId, old.next_id(*from), rows))
            }
            _ => None,
        });
        let loaded = new.load(rebuilds);
        if let Err(e) = loaded {
            for (i, f) in moved {
                let tab =
                    std::mem::replace(&mut new.tables[i], Table::new(&new.schema.tables[i], false));
                self.tables[f as usize] = tab;
            }
            return Err(e);
        }
        *self = new;
        Ok(())
    }

    /// For each table of `schema` and each of its columns, the name it is stored under
    /// here (`T.c`) when `sources` keep it under another name (its own or its table's
    /// renamed by a migration), else `None`: a refusal names both, since its advice
    /// sends the user back to the program that knew the stored name.
    pub fn stored_names(
        &self,
        schema: &Schema,
        sources: &[TableSource],
    ) -> Vec<Vec<Option<String>>> {
        schema
            .tables
            .iter()
            .zip(sources)
            .map(|(def, src)| {
                let was = match src {
                    TableSource::Rebuild { from, cols } => {
                        self.schema.tables.get(*from as usize).map(|w| (w, cols))
                    }
                    _ => None,
                };
                def.columns
                    .iter()
                    .enumerate()
                    .map(|(c, col)| {
                        let (w, cols) = was?;
                        let ColSource::From(k) = cols.get(c)? else {
                            return None;
                        };
                        let (now, then) = (
                            format!("{}.{}", def.name, col.name),
                            format!("{}.{}", w.name, w.columns.get(*k)?.name),
                        );
                        (now != then).then_some(then)
                    })
                    .collect()
            })
            .collect()
    }

    /// The columns of `schema` that are not nullable but would hold a nil once
    /// `sources` rebuilt their tables, each as (table, column, what
    /// [`restructure`](Self::restructure) refuses, naming its first such row).
    pub fn nils_refused(
        &self,
        schema: &Schema,
        sources: &[TableSource],
    ) -> Vec<(usize, usize, String)> {
        let stored = self.stored_names(schema, sources);
        let mut out = Vec::new();
        for (i, src) in sources.iter().enumerate() {
            let (TableSource::Rebuild { from, cols }, Some(def)) = (src, schema.tables.get(i))
            else {
                continue;
            };
            let Some(tab) = self.tables.get(*from as usize) else {
                continue;
            };
            for (c, cs) in cols.iter().enumerate() {
                let Some(col) = def.columns.get(c).filter(|col| !col.nullable) else {
                    continue;
                };
                let nil_at = match cs {
                    ColSource::From(k) => tab
                        .live
                        .ones(0, tab.n)
                        .find(|&p| matches!(tab.cols[*k].val(p), ValRef::Nil)),
                    ColSource::Fill(Cell::Nil) => tab.live.ones(0, tab.n).next(),
                    ColSource::Fill(_) => None,
                };
                if let Some(p) = nil_at {
                    out.push((
                        i,
                        c,
                        format!(
                            "{}.{}{} would be nil in row {} ({} is not nullable)",
                            def.name,
                            col.name,
                            stored[i][c]
                                .as_ref()
                                .map(|w| format!(" (stored as `{w}`)"))
                                .unwrap_or_default(),
                            p + 1,
                            col.name
                        ),
                    ));
                }
            }
        }
        out
    }

    /// What the unique indexes of `target` would refuse of the rows this database
    /// holds, one message per index (the value and both rows, as a load says it):
    /// `target` is this database's schema with some indexes unique that are plain
    /// here, so each is checked apart (a migration's plan names them all at once).
    /// `stored` names the renamed columns as [`Db::stored_names`] did before the
    /// rebuild.
    pub fn unique_clashes(&self, target: &Schema, stored: &[Vec<Option<String>>]) -> Vec<String> {
        let mut out = Vec::new();
        for (t, (def, tab)) in target.tables.iter().zip(&self.tables).enumerate() {
            let was = |c: usize| stored.get(t)?.get(c)?.clone();
            for ix in def.indexes.iter().filter(|ix| ix.kind == IndexKind::Unique) {
                if let Err(at) = build_index(tab, ix) {
                    out.push(clash(def, ix, tab, at, &was));
                }
            }
        }
        out
    }

    /// Stores a row (one cell per column, in order) and returns its id.
    pub fn insert(&mut self, t: TableId, cells: Vec<Cell>) -> Result<RowId, DbError> {
        let id = self.insert_row(t, &cells)?;
        if self.undo {
            self.log.push(Change::Insert {
                table: t,
                id,
                cells,
            });
        }
        Ok(id)
    }

    /// [`Db::insert`] from borrowed cells: with the undo log off ([`Db::set_undo`])
    /// it allocates nothing for the row (the caller can reuse its buffer); with it on,
    /// the undo entry copies the cells.
    pub fn insert_cells(&mut self, t: TableId, cells: &[Cell]) -> Result<RowId, DbError> {
        let id = self.insert_row(t, cells)?;
        if self.undo {
            self.log.push(Change::Insert {
                table: t,
                id,
                cells: cells.to_vec(),
            });
        }
        Ok(id)
    }

    /// Checks and stores a row; no undo entry.
    fn insert_row(&mut self, t: TableId, cells: &[Cell]) -> Result<RowId, DbError> {
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
        self.touch(t);
        let tab = &mut self.tables[t as usize];
        let pos = tab.n;
        for (col, cell) in tab.cols.iter_mut().zip(cells) {
            col.push(pos, cell);
        }
        tab.live.set(pos, true);
        tab.n += 1;
        tab.live_count += 1;
        if let Some(inb) = &mut tab.inbound {
            inb.push(0);
        }
        link(&self.schema, &mut self.tables, t, pos);
        Ok(pos as RowId + 1)
    }

    /// One column of a live row.
    #[inline]
    pub fn get(&self, t: TableId, id: RowId, col: usize) -> Result<Cell, DbError> {
        if let Some(tab) = self.tables.get(t as usize) {
            if let (true, Some(c)) = (tab.is_live(id), tab.cols.get(col)) {
                return Ok(c.cell(id as usize - 1));
            }
        }
        Err(self.get_error(t, id, col))
    }

    /// [`Db::get`] through a handle made at generation `gen` of `id`
    /// ([`Db::generation`]): `None` when the row is not there for it (deleted, never
    /// inserted, or its insert undone since), for the caller's slow path to explain.
    #[inline]
    pub fn get_current(&self, t: TableId, id: RowId, gen: u32, col: usize) -> Option<Cell> {
        let tab = self.tables.get(t as usize)?;
        if tab.is_current(id, gen) {
            return tab.cols.get(col).map(|c| c.cell(id as usize - 1));
        }
        None
    }

    /// Whether a handle made at generation `gen` of row `id` of `t` reaches a row: the
    /// row is live and its id has not been given again since ([`Db::generation`]).
    #[inline]
    pub fn is_current(&self, t: TableId, id: RowId, gen: u32) -> bool {
        self.tables
            .get(t as usize)
            .is_some_and(|tab| tab.is_current(id, gen))
    }

    /// The `DB` error for a handle to row `id` of `t` whose insert was undone (it is
    /// stale: [`Db::generation`] moved past it).
    #[cold]
    pub fn stale_row(&self, t: TableId, id: RowId) -> DbError {
        let name = table_def(&self.schema, t).map_or("?", |d| d.name.as_str());
        err(
            ErrorKind::Db,
            format!("row {id} of {name} does not exist (its insert was rolled back)"),
        )
    }

    /// The `FK` error for storing such a stale handle in column `col` of table `t`, a
    /// reference to table `target`.
    #[cold]
    pub fn stale_ref(&self, t: TableId, col: usize, target: TableId, id: RowId) -> DbError {
        let name = |t| table_def(&self.schema, t).map_or("?", |d| d.name.as_str());
        let column = table_def(&self.schema, t)
            .ok()
            .and_then(|d| d.columns.get(col))
            .map_or("?", |c| c.name.as_str());
        err(
            ErrorKind::Fk,
            format!(
                "{}.{column} refers to {} row {id}, which does not exist (its insert was \
                 rolled back)",
                name(t),
                name(target)
            ),
        )
    }

    /// Why [`Db::get`] failed.
    #[cold]
    fn get_error(&self, t: TableId, id: RowId, col: usize) -> DbError {
        let def = match table_def(&self.schema, t) {
            Ok(def) => def,
            Err(e) => return e,
        };
        let tab = &self.tables[t as usize];
        if !tab.is_live(id) {
            dead_row(def, tab, id)
        } else {
            no_column(def, col)
        }
    }

    #[inline]
    pub fn is_live(&self, t: TableId, id: RowId) -> bool {
        self.tables
            .get(t as usize)
            .is_some_and(|tab| tab.is_live(id))
    }

    /// The generation of row id `id` of `t`: 0, plus one for each time an insert of
    /// that id was undone (rolled back, or undone by the failure contract), after
    /// which the id is given again. A handle made at another generation is stale: its
    /// row is gone, whatever row holds the id now.
    #[inline]
    pub fn generation(&self, t: TableId, id: RowId) -> u32 {
        self.tables
            .get(t as usize)
            .map_or(0, |tab| tab.reborn.of(id))
    }

    /// The generations of `t`'s ids ([`Db::generation`]), for an engine that takes
    /// over `t`'s rows while handles to them live on (a REPL session's tables, when
    /// an input declares another table).
    pub fn generations(&self, t: TableId) -> Generations {
        self.tables
            .get(t as usize)
            .map(|tab| tab.reborn.clone())
            .unwrap_or_default()
    }

    /// Gives `t`'s ids the generations `g` (from [`Db::generations`] of the engine
    /// whose rows `t` now holds).
    pub fn set_generations(&mut self, t: TableId, g: Generations) {
        if let Some(tab) = self.tables.get_mut(t as usize) {
            tab.reborn = g;
        }
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
        let old = self.undo.then(|| tab.cols[col].cell(pos));
        self.touch(t);
        raw_set(&self.schema, &mut self.tables, t, pos, col, &cell);
        if let Some(old) = old {
            self.log.push(Change::Update {
                table: t,
                id,
                col,
                old,
                new: cell,
            });
        }
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
        let cells: Option<Vec<Cell>> = self
            .undo
            .then(|| tab.cols.iter().map(|c| c.cell(pos)).collect());
        self.touch(t);
        unlink(&self.schema, &mut self.tables, t, pos);
        let tab = &mut self.tables[t as usize];
        tab.live.set(pos, false);
        tab.live_count -= 1;
        for c in &mut tab.cols {
            c.clear(pos);
        }
        if let Some(cells) = cells {
            self.log.push(Change::Delete {
                table: t,
                id,
                cells,
            });
        }
        Ok(())
    }

    /// Live rows of `t` (0 for a table that does not exist).
    pub fn len(&self, t: TableId) -> usize {
        self.tables.get(t as usize).map_or(0, |tab| tab.live_count)
    }

    /// The current position of the undo log.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint(self.log_base + self.log.len())
    }

    /// Undoes every change made after `sp`, newest first: rows, indexes, id counters and
    /// reference counts come back exactly. A savepoint beyond the log does nothing.
    pub fn rollback_to(&mut self, sp: Savepoint) {
        while self.log_base + self.log.len() > sp.0 {
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
                    tab.reborn.undone(id);
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
        self.log.truncate(sp.0.saturating_sub(self.log_base));
        if self.log.is_empty() && self.log.capacity() > 4096 {
            self.log = Vec::new();
        }
    }

    /// Forgets the undo entries before `sp`; their changes stay, and the entries after
    /// it keep their savepoints (group commit: the records that became durable are
    /// forgotten while later ones still wait for their sync). The savepoints before `sp`
    /// are no longer valid rollback targets.
    pub fn forget_undo_before(&mut self, sp: Savepoint) {
        let n = sp.0.saturating_sub(self.log_base).min(self.log.len());
        self.log.drain(..n);
        self.log_base += n;
    }

    /// The changes made after `sp`, oldest first (every change still held when `sp`
    /// is older than the oldest entry).
    pub fn changes_since(&self, sp: Savepoint) -> &[Change] {
        self.log
            .get(sp.0.saturating_sub(self.log_base)..)
            .unwrap_or(&[])
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
        table_def(&self.schema, q.table)?;
        if self.tables[q.table as usize].stale {
            self.rebuild_stale(q.table);
        }
        let def = &self.schema.tables[q.table as usize];
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
    /// the column's type. Sums are exact, so the order rows are visited in does not
    /// change them; `order` matters only with `skip`/`take`.
    pub fn aggregate(&mut self, q: &Query, agg: Agg, args: &[Cell]) -> Result<Cell, DbError> {
        table_def(&self.schema, q.table)?;
        if self.tables[q.table as usize].stale {
            self.rebuild_stale(q.table);
        }
        let def = &self.schema.tables[q.table as usize];
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
        // `min`/`max` of a column with a sorted index, over the whole table: the
        // index's walk in the aggregate's direction, to the first row with a value
        // (`!= nil` starts the walk past the nil keys, which come first in either
        // direction; ties in id order, as the scan below keeps the first of equal
        // values). The scan read every row: the "next
        // number" idiom, `max(from o in O select o.seq) + 1` per insert, was quadratic
        // (helper-106: 16,000 inserts took 4.5 s).
        if let (Agg::Min(Col::At(c)) | Agg::Max(Col::At(c)), true) = (agg, plain) {
            let sorted = def
                .indexes
                .iter()
                .any(|ix| ix.kind == IndexKind::Sorted && ix.columns[0] == c);
            if sorted {
                let walk = Query {
                    preds: vec![Pred {
                        col: Col::At(c),
                        op: CmpOp::Ne,
                        arg: 0,
                    }],
                    order: vec![(Col::At(c), matches!(agg, Agg::Max(_)))],
                    ..q.clone()
                };
                let mut found = None;
                let r = query::exec(
                    &self.schema,
                    def,
                    tab,
                    &walk,
                    &[Cell::Nil],
                    &self.bump,
                    Mode::Query,
                    &mut |id| {
                        found = Some(id as usize - 1);
                        false
                    },
                );
                self.bump.reset();
                r?;
                return Ok(found.map_or(Cell::Nil, |p| tab.cols[c].cell(p)));
            }
        }
        let mode = match agg {
            _ if q.skip.is_some() || q.take.is_some() => Mode::Query,
            Agg::Exists => Mode::First,
            _ => Mode::Unordered,
        };
        let val = |pos: usize| match col {
            Some(Col::At(c)) => tab.cols[c].val(pos),
            _ => ValRef::Int(pos as i64 + 1),
        };
        let mut count: i64 = 0;
        // Exact sums: the order the rows come in (id order, an index's key order)
        // cannot change the result (crate::sum).
        let mut isum = crate::IntSum::default();
        let mut fsum = crate::FloatSum::new();
        let mut best: Option<usize> = None;
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
                            isum.add(x);
                        }
                        ValRef::Float(x) => {
                            count += 1;
                            fsum.add(x);
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
        Ok(match agg {
            Agg::Count => Cell::Int(count),
            Agg::Exists => Cell::Bool(count > 0),
            Agg::Sum(_) => match ty {
                ColType::Float => Cell::Float(fsum.value()),
                _ => Cell::Int(isum.total().map_err(|m| err(ErrorKind::Overflow, m))?),
            },
            Agg::Avg(_) if count == 0 => Cell::Nil,
            Agg::Avg(_) => match ty {
                ColType::Float => Cell::Float(fsum.value() / count as f64),
                _ => Cell::Float(isum.mean(count as usize)),
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

    /// Live rows of `t` in id order from row position `from` on, with each row's
    /// position and its values borrowed from the columns (no allocation per row or
    /// text: what a checkpoint writes).
    pub(crate) fn row_vals_from(
        &self,
        t: TableId,
        from: usize,
    ) -> impl Iterator<Item = (usize, impl Iterator<Item = ValRef<'_>> + '_)> + '_ {
        self.tables
            .get(t as usize)
            .into_iter()
            .flat_map(move |tab| {
                tab.live
                    .ones(from.min(tab.n), tab.n)
                    .map(move |p| (p, tab.cols.iter().map(move |c| c.val(p))))
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

/// Checks a schema (see [`Db::new`]) and returns, for each table, the `(table, column)`
/// Ref columns that point at it.
fn validate(schema: &Schema) -> Result<Vec<Vec<(TableId, usize)>>, DbError> {
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
    Ok(referrers)
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
    named_unique_error(def, columns, cell, &|_| None)
}

/// [`unique_error`], each column `c` followed by ``(stored as `T.c`)`` where
/// `stored(c)` gives its stored name (a migration that renames it).
fn named_unique_error(
    def: &TableDef,
    columns: &[usize],
    cell: impl Fn(usize) -> Cell,
    stored: &dyn Fn(usize) -> Option<String>,
) -> DbError {
    let name = |c: usize| {
        let mut n = format!("{}.{}", def.name, def.columns[c].name);
        if let Some(was) = stored(c) {
            n.push_str(&format!(" (stored as `{was}`)"));
        }
        n
    };
    let mut m = String::from("duplicate value ");
    if let [c] = columns {
        write_cell(&mut m, &cell(*c));
        m.push_str(&format!(" for unique column {}", name(*c)));
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
            m.push_str(&name(c));
        }
    }
    err(ErrorKind::Unique, m)
}

/// What a unique index `ix` of `def` refuses when row position `pos` of `tab` repeats
/// the key of row `first`: the value and both rows (values that print alike, `0.0`
/// and `-0.0`, are one key and hard to find otherwise).
fn clash(
    def: &TableDef,
    ix: &IndexDef,
    tab: &Table,
    (pos, first): (usize, RowId),
    stored: &dyn Fn(usize) -> Option<String>,
) -> String {
    let e = named_unique_error(def, &ix.columns, |c| tab.cols[c].cell(pos), stored);
    format!("{} (rows {first} and {})", e.message, pos as RowId + 1)
}

/// Builds index `ix` of `tab` from its live rows in one pass: a hash index by
/// appending ids in ascending order, a sorted one by sorting `(key, id)` once and
/// building the B-tree from the sorted run. For a unique index, `Err(pos)` names the
/// second row holding a key.
/// A unique index over two rows of one key is refused: the later row's position and
/// the earlier row's id.
fn build_index(tab: &Table, ix: &IndexDef) -> Result<Index, (usize, RowId)> {
    let keys = tab
        .live
        .ones(0, tab.n)
        .map(|pos| (tab.index_key(&ix.columns, ix.kind, pos), pos));
    Ok(match ix.kind {
        IndexKind::Hash => {
            let mut m: AHashMap<KeyVal, Posting> = AHashMap::default();
            for (key, pos) in keys {
                let id = pos as RowId + 1;
                match m.entry(key) {
                    Entry::Occupied(mut e) => e.get_mut().push(id),
                    Entry::Vacant(e) => {
                        e.insert(Posting::One(id));
                    }
                }
            }
            Index::Hash(m)
        }
        IndexKind::Unique => {
            let mut m: AHashMap<KeyVal, RowId> = AHashMap::default();
            for (key, pos) in keys {
                if !key.exempt() {
                    if let Some(first) = m.insert(key, pos as RowId + 1) {
                        return Err((pos, first));
                    }
                }
            }
            Index::Unique(m)
        }
        IndexKind::Sorted => {
            let col = &tab.cols[ix.columns[0]];
            let live = tab.live.ones(0, tab.n);
            let v: Vec<(KeyVal, RowId)> = if col.is_text() {
                // Ids are distinct, so no two entries are equal and an unstable sort
                // is exact.
                let mut v: Vec<(KeyVal, RowId)> =
                    keys.map(|(k, pos)| (k, pos as RowId + 1)).collect();
                v.sort_unstable();
                v
            } else {
                // Nil keys first (in id order), then the others sorted by an
                // order-preserving integer image of the key, ties by position.
                let mut nil = Vec::new();
                let mut keyed = Vec::with_capacity(tab.live_count);
                for pos in live {
                    match col.order_bits(pos) {
                        Some(b) => keyed.push((b, pos)),
                        None => nil.push(pos),
                    }
                }
                keyed.sort_unstable();
                nil.into_iter()
                    .chain(keyed.into_iter().map(|(_, pos)| pos))
                    .map(|pos| (col.key(pos, false), pos as RowId + 1))
                    .collect()
            };
            // The order above is only a speed-up: the build sorts its input.
            Index::Sorted(Sorted::of(v))
        }
    })
}

/// Adds row position `pos` of `t` to its indexes and counts its references.
fn link(schema: &Schema, tables: &mut [Table], t: TableId, pos: usize) {
    relink(schema, tables, t, pos, true);
}

/// Removes row position `pos` of `t` from its indexes and uncounts its references.
fn unlink(schema: &Schema, tables: &mut [Table], t: TableId, pos: usize) {
    relink(schema, tables, t, pos, false);
}

/// [`link`] (`add`) or [`unlink`]: the same walk over indexes and references.
fn relink(schema: &Schema, tables: &mut [Table], t: TableId, pos: usize, add: bool) {
    let id = pos as RowId + 1;
    let def = &schema.tables[t as usize];
    let tab = &mut tables[t as usize];
    for (i, ix) in def.indexes.iter().enumerate() {
        if tab.stale && ix.kind != IndexKind::Unique {
            continue;
        }
        let key = tab.index_key(&ix.columns, ix.kind, pos);
        if add {
            tab.indexes[i].insert(key, id);
        } else {
            tab.indexes[i].remove(key, id);
        }
    }
    for k in 0..tables[t as usize].ref_cols.len() {
        let (c, target) = tables[t as usize].ref_cols[k];
        if let ValRef::Ref(r) = tables[t as usize].cols[c].val(pos) {
            add_ref(tables, t, id, target, r, if add { 1 } else { -1 });
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
        if tab.stale && ix.kind != IndexKind::Unique {
            continue;
        }
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
        if tab.stale && ix.kind != IndexKind::Unique {
            continue;
        }
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
