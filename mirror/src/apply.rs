//! The apply half of `wo db mirror` without PostgreSQL: final log records
//! ([`Follower::poll`]) turned into the SQL of one PostgreSQL transaction (consecutive
//! inserts into one table as one multi-row `INSERT`, each updated row's columns as one
//! `UPDATE` at the end, a migration as `ALTER TABLE` statements). The `mirror` module
//! sends it; the `datadir` fuzz target runs it on damaged and mutated directories.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wo_db::durable::read::{Change, Follower, Poll, Record, Table};
use wo_db::Cell;

use crate::alter;
use crate::sql::{self, ident};
use crate::Error;

/// Final records applied per PostgreSQL transaction, at most.
pub const BATCH_RECORDS: usize = 2_000;
/// SQL text per PostgreSQL transaction: no record is added after this much (a record
/// is never split, so one large transaction may make a larger batch).
pub const BATCH_BYTES: usize = 8 << 20;

/// What [`next_batch`] read: the poll's outcome and, after progress, the SQL of the
/// records it handed out (one PostgreSQL transaction's worth).
#[derive(Debug)]
pub struct Step {
    pub poll: Poll,
    /// Empty after [`Poll::Gone`] (what was read is dropped) or when nothing was new.
    pub sql: String,
    pub records: usize,
}

/// Polls `follower` for the next batch of final records (at most [`BATCH_RECORDS`],
/// none added after [`BATCH_BYTES`] of SQL) and turns them into SQL. What the apply
/// loop sends to PostgreSQL, and what the `datadir` fuzz target runs without it.
pub fn next_batch(follower: &mut Follower) -> Result<Step, Error> {
    let mut batch = Batch::default();
    let poll = follower.poll(BATCH_RECORDS, |rec, tables| {
        batch.add(rec, tables)?;
        Ok::<bool, Error>(batch.sql.len() < BATCH_BYTES)
    })?;
    let sql = match poll {
        Poll::Progress { .. } if batch.records > 0 => {
            batch.finish(follower.tables())?;
            std::mem::take(&mut batch.sql)
        }
        _ => String::new(),
    };
    Ok(Step {
        poll,
        sql,
        records: batch.records,
    })
}

/// The SQL of one PostgreSQL transaction's worth of records.
#[derive(Debug, Default)]
struct Batch {
    sql: String,
    records: usize,
    /// The table of the multi-row `INSERT` being written, if one is open.
    inserting: Option<usize>,
    /// The columns updated per row, with their last values: written once per row at
    /// the end of the batch. PostgreSQL keeps every version a transaction makes of a
    /// row, and each update and foreign key check of that row walks them all, so
    /// updating one hot row (an account's balance) k times in one transaction costs
    /// O(k²); one UPDATE per row per batch avoids it. The result is the same:
    /// foreign keys and unique constraints are checked at commit.
    updates: BTreeMap<(usize, i64), Vec<Option<Cell>>>,
}

impl Batch {
    fn add(&mut self, rec: &Record, tables: &[Table]) -> Result<(), Error> {
        self.records += 1;
        let mut fks = Vec::new();
        for ch in &rec.changes {
            let into = match ch {
                Change::Insert { table, .. } => Some(*table),
                _ => None,
            };
            if self.inserting.is_some() && self.inserting != into {
                self.sql.push_str(";\n");
                self.inserting = None;
            }
            match ch {
                Change::Migrate(m) => {
                    // The changes before it name the tables and columns as they were.
                    self.write_updates(&m.previous)?;
                    // PostgreSQL alters no table with constraint checks pending: run
                    // them now (the state is consistent between records), and defer
                    // them again for the changes after.
                    self.sql.push_str("SET CONSTRAINTS ALL IMMEDIATE;\n");
                    for stmt in alter::statements(m)? {
                        let _ = writeln!(self.sql, "{stmt};");
                    }
                    self.sql.push_str("SET CONSTRAINTS ALL DEFERRED;\n");
                }
                Change::CreateTable(t) => {
                    let t = &tables[*t];
                    // Refused before anything is made, as in a copy.
                    sql::check_mirrored(t)?;
                    let _ = write!(
                        self.sql,
                        "{};\nINSERT INTO wo_mirror_tables (name) VALUES ({}) ON CONFLICT DO NOTHING;\n",
                        sql::create_table(t).replacen("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1),
                        alter::literal(&t.name)
                    );
                    fks.extend(sql::indexes(t));
                    fks.extend(sql::foreign_keys(t));
                }
                Change::Insert { table, id, cells } => {
                    let t = &tables[*table];
                    if self.inserting.is_none() {
                        let _ = write!(self.sql, "INSERT INTO {} (\"id\"", ident(&t.name));
                        for c in &t.columns {
                            let _ = write!(self.sql, ", {}", ident(&c.name));
                        }
                        self.sql.push_str(") VALUES\n(");
                        self.inserting = Some(*table);
                    } else {
                        self.sql.push_str(",\n(");
                    }
                    let _ = write!(self.sql, "{id}");
                    for (col, c) in cells.iter().enumerate() {
                        self.sql.push_str(", ");
                        sql::literal(&mut self.sql, t, *id, col, c)?;
                    }
                    self.sql.push(')');
                }
                Change::Update {
                    table,
                    id,
                    col,
                    cell,
                } => {
                    let n = tables[*table].columns.len();
                    self.updates
                        .entry((*table, *id))
                        .or_insert_with(|| vec![None; n])[*col] = Some(cell.clone());
                }
                Change::Delete { table, id } => {
                    self.updates.remove(&(*table, *id));
                    let _ = writeln!(
                        self.sql,
                        "DELETE FROM {} WHERE \"id\" = {id};",
                        ident(&tables[*table].name)
                    );
                }
            }
        }
        if !fks.is_empty() {
            if self.inserting.take().is_some() {
                self.sql.push_str(";\n");
            }
            for fk in fks {
                let _ = writeln!(self.sql, "{fk};");
            }
        }
        Ok(())
    }
}

impl Batch {
    /// The batch's SQL, with the collected updates at the end.
    fn finish(&mut self, tables: &[Table]) -> Result<&str, Error> {
        if self.inserting.take().is_some() {
            self.sql.push_str(";\n");
        }
        self.write_updates(tables)?;
        Ok(&self.sql)
    }

    /// Writes the collected updates (one `UPDATE` per row), naming the columns of
    /// `tables`.
    fn write_updates(&mut self, tables: &[Table]) -> Result<(), Error> {
        for ((table, id), cols) in std::mem::take(&mut self.updates) {
            let t = &tables[table];
            let _ = write!(self.sql, "UPDATE {} SET ", ident(&t.name));
            let mut first = true;
            for (col, cell) in cols.iter().enumerate() {
                let Some(cell) = cell else { continue };
                if !first {
                    self.sql.push_str(", ");
                }
                first = false;
                let _ = write!(self.sql, "{} = ", ident(&t.columns[col].name));
                sql::literal(&mut self.sql, t, id, col, cell)?;
            }
            let _ = writeln!(self.sql, " WHERE \"id\" = {id};");
        }
        Ok(())
    }
}
