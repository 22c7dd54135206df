//! `wo db mirror DIR --to URL [--follow]` (LANGUAGE.md §8): copies a data directory into
//! a PostgreSQL database and keeps it current.
//!
//! - **Copy**: in one PostgreSQL transaction, drop the tables an earlier copy made
//!   (listed in `wo_mirror_tables`), create every stored table (`id bigint PRIMARY
//!   KEY`, the mapped column types, foreign keys checked at commit), stream the rows
//!   of [`read::snapshot`] in with `COPY … FROM STDIN` (4 MiB at a time), and store
//!   the position (log generation salt and LSN) in `wo_mirror_position`.
//! - **Apply**: every later final record ([`read::Follower::poll`]), in log order,
//!   as SQL (consecutive inserts into one table as one multi-row `INSERT`), up to
//!   [`BATCH_RECORDS`] records (or [`BATCH_BYTES`] of SQL) per PostgreSQL transaction, which also stores the
//!   position reached. So the position in PostgreSQL is always exactly the state it
//!   holds: a mirror killed, restarted or cut off resumes after it, nothing applied
//!   twice, nothing skipped. A commit whose outcome is unknown (the connection lost
//!   during `COMMIT`) is settled by reading the position again after reconnecting.
//! - When the records after the position are gone (a checkpoint replaced the log
//!   generation while the mirror was not following it), it copies again.
//!
//! Only this module talks to PostgreSQL; it takes a session-level advisory lock so two
//! mirrors never write into one database.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls, Transaction};
use wo_db::durable::read::{self, Change, Event, Follower, Gone, Poll, Record, Table};
use wo_db::Cell;

use crate::alter;
use crate::sql::{self, ident};
use crate::Error;

/// Final records applied per PostgreSQL transaction, at most.
pub const BATCH_RECORDS: usize = 2_000;
/// SQL text per PostgreSQL transaction: no record is added after this much (a record
/// is never split, so one large transaction may make a larger batch).
pub const BATCH_BYTES: usize = 8 << 20;
/// How long a following mirror waits when it has caught up.
const IDLE: Duration = Duration::from_millis(20);
/// COPY data sent at once.
const COPY_CHUNK: usize = 4 << 20;
/// How often the lag is reported.
const REPORT_EVERY: Duration = Duration::from_secs(1);
/// The advisory lock key of a mirror (`wo` in ASCII, then `mirror`).
const LOCK_KEY: i64 = 0x776f_6d69_7272_6f72;

const SETUP: &str = "\
SET standard_conforming_strings = on;
SET client_min_messages = warning;
CREATE TABLE IF NOT EXISTS wo_mirror_position (
  id int PRIMARY KEY CHECK (id = 1),
  salt bigint NOT NULL,
  lsn bigint NOT NULL,
  updated timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS wo_mirror_tables (name text PRIMARY KEY);";

const SAVE_POSITION: &str = "\
INSERT INTO wo_mirror_position (id, salt, lsn, updated) VALUES (1, $1, $2, now())
ON CONFLICT (id) DO UPDATE SET salt = EXCLUDED.salt, lsn = EXCLUDED.lsn, updated = now()";

/// Copies `dir` into the database at `url` and applies what is final; with `follow`,
/// keeps applying new records until killed. A lost connection while following is
/// retried every second.
pub fn mirror(dir: &Path, url: &str, follow: bool) -> Result<(), Error> {
    let mut lag = Lag::default();
    loop {
        match session(dir, url, follow, &mut lag) {
            Err(Error::Pg(m)) if follow => {
                eprintln!("wo: mirror: {m}; connecting again in 1 s");
                std::thread::sleep(Duration::from_secs(1));
            }
            res => return res,
        }
    }
}

fn session(dir: &Path, url: &str, follow: bool, lag: &mut Lag) -> Result<(), Error> {
    let mut client = Client::connect(url, NoTls)?;
    client.batch_execute(SETUP)?;
    // A mirror killed a moment ago may still hold the lock until its server process
    // notices: wait for it a while.
    client.batch_execute("SET lock_timeout = '30s'")?;
    if let Err(e) = client.execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY]) {
        return Err(Error::Pg(format!(
            "another wo db mirror is writing into this database ({})",
            Error::from(e)
        )));
    }
    client.batch_execute("SET lock_timeout = 0")?;
    let pos = client.query_opt("SELECT salt, lsn FROM wo_mirror_position WHERE id = 1", &[])?;
    let mut follower = match pos {
        Some(row) => {
            let (salt, lsn): (i64, i64) = (row.get(0), row.get(1));
            match Follower::resume(dir, salt as u64, lsn as u64)? {
                Ok(f) => f,
                Err(Gone(why)) => {
                    eprintln!("wo: mirror: {why}; copying the tables again");
                    copy(&mut client, dir)?
                }
            }
        }
        None => copy(&mut client, dir)?,
    };
    loop {
        let mut batch = Batch::default();
        let poll = follower.poll(BATCH_RECORDS, |rec, tables| {
            batch.add(rec, tables)?;
            Ok::<bool, Error>(batch.sql.len() < BATCH_BYTES)
        })?;
        match poll {
            Poll::Gone(Gone(why)) => {
                eprintln!("wo: mirror: {why}; copying the tables again");
                follower = copy(&mut client, dir)?;
            }
            Poll::Progress {
                applied,
                final_lsn,
                last_lsn,
            } => {
                if batch.records > 0 {
                    let mut tx = client.transaction()?;
                    tx.batch_execute(batch.finish(follower.tables())?)?;
                    save_position(&mut tx, follower.salt(), applied)?;
                    tx.commit()?;
                }
                lag.observe(applied, final_lsn, last_lsn, batch.records);
                if applied >= final_lsn {
                    if !follow {
                        lag.report(true);
                        return Ok(());
                    }
                    lag.report(false);
                    std::thread::sleep(IDLE);
                } else {
                    lag.report(false);
                }
            }
        }
    }
}

fn save_position(tx: &mut Transaction<'_>, salt: u64, lsn: u64) -> Result<(), Error> {
    // Salts are random 64-bit values; PostgreSQL's bigint holds their bits.
    tx.execute(SAVE_POSITION, &[&(salt as i64), &(lsn as i64)])?;
    Ok(())
}

/// Copies the state of `dir` into the database in one transaction, replacing an
/// earlier copy, and returns the follower positioned after it.
fn copy(client: &mut Client, dir: &Path) -> Result<Follower, Error> {
    let started = Instant::now();
    let mut tx = client.transaction()?;
    let old: Vec<String> = tx
        .query("SELECT name FROM wo_mirror_tables", &[])?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for name in &old {
        tx.batch_execute(&format!("DROP TABLE IF EXISTS {} CASCADE", ident(name)))?;
    }
    tx.batch_execute("DELETE FROM wo_mirror_tables")?;
    let mut fks: Vec<String> = Vec::new();
    let mut current: Option<(Table, String)> = None;
    let mut buf: Vec<u8> = Vec::new();
    let (mut n_tables, mut n_rows) = (0usize, 0u64);
    let follower = read::snapshot(dir, |ev| -> Result<(), Error> {
        match ev {
            Event::Table(t) => {
                tx.batch_execute(&sql::create_table(t))?;
                tx.execute(
                    "INSERT INTO wo_mirror_tables (name) VALUES ($1)",
                    &[&t.name],
                )?;
                fks.extend(sql::indexes(t));
                fks.extend(sql::foreign_keys(t));
                current = Some((t.clone(), sql::copy_from_stdin(t)));
                n_tables += 1;
            }
            Event::Row(id, cells) => {
                let Some((t, stmt)) = &current else {
                    return Ok(());
                };
                sql::copy_line(&mut buf, t, id, cells)?;
                n_rows += 1;
                if buf.len() >= COPY_CHUNK {
                    send_copy(&mut tx, stmt, &mut buf)?;
                }
            }
            Event::EndTable => {
                if let Some((_, stmt)) = current.take() {
                    send_copy(&mut tx, &stmt, &mut buf)?;
                }
            }
        }
        Ok(())
    })?;
    for fk in &fks {
        tx.batch_execute(fk)?;
    }
    save_position(&mut tx, follower.salt(), follower.applied())?;
    tx.commit()?;
    eprintln!(
        "wo: mirror: copied {n_tables} tables, {n_rows} rows (up to lsn {}) in {:.1} s",
        follower.applied(),
        started.elapsed().as_secs_f64()
    );
    Ok(follower)
}

fn send_copy(tx: &mut Transaction<'_>, stmt: &str, buf: &mut Vec<u8>) -> Result<(), Error> {
    use std::io::Write;
    if buf.is_empty() {
        return Ok(());
    }
    let mut w = tx.copy_in(stmt)?;
    w.write_all(buf)
        .map_err(|e| Error::Pg(format!("COPY failed: {e}")))?;
    w.finish()?;
    buf.clear();
    Ok(())
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

/// How far behind the directory the mirror is, reported on stderr.
#[derive(Debug, Default)]
struct Lag {
    /// When each LSN range was first seen in the log: `(last LSN seen, when)`.
    seen: VecDeque<(u64, Instant)>,
    applied: u64,
    final_lsn: u64,
    last_lsn: u64,
    /// Records applied since the last report.
    n_applied: usize,
    last_report: Option<Instant>,
}

impl Lag {
    fn observe(&mut self, applied: u64, final_lsn: u64, last_lsn: u64, n: usize) {
        let now = Instant::now();
        if self.seen.back().is_none_or(|&(l, _)| l < last_lsn) {
            self.seen.push_back((last_lsn, now));
        }
        while self.seen.front().is_some_and(|&(l, _)| l <= applied) {
            self.seen.pop_front();
        }
        self.applied = applied;
        self.final_lsn = final_lsn;
        self.last_lsn = last_lsn;
        self.n_applied += n;
    }

    /// Prints the lag once a second (and at the end, with `last`).
    fn report(&mut self, last: bool) {
        let now = Instant::now();
        let due = self
            .last_report
            .is_none_or(|t| now.duration_since(t) >= REPORT_EVERY);
        if !due && !last {
            return;
        }
        let secs = self
            .seen
            .front()
            .map_or(0.0, |&(_, t)| now.duration_since(t).as_secs_f64());
        eprintln!(
            "wo: mirror: applied up to lsn {} ({} records since the last report); behind: {} records ({} in doubt), {:.2} s",
            self.applied,
            self.n_applied,
            self.last_lsn.saturating_sub(self.applied),
            self.last_lsn.saturating_sub(self.final_lsn),
            secs
        );
        self.n_applied = 0;
        self.last_report = Some(now);
    }
}
