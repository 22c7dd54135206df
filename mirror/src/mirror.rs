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
//!   [`BATCH_RECORDS`](crate::apply::BATCH_RECORDS) records (or [`BATCH_BYTES`](crate::apply::BATCH_BYTES) of SQL) per PostgreSQL transaction, which also stores the
//!   position reached. So the position in PostgreSQL is always exactly the state it
//!   holds: a mirror killed, restarted or cut off resumes after it, nothing applied
//!   twice, nothing skipped. A commit whose outcome is unknown (the connection lost
//!   during `COMMIT`) is settled by reading the position again after reconnecting.
//! - When the records after the position are gone (a checkpoint replaced the log
//!   generation while the mirror was not following it), it copies again. A following
//!   mirror that loses its connection keeps its follower (with the log generation it
//!   has open) and the batch it was applying: after reconnecting it goes on from
//!   there when PostgreSQL's position is the follower's, or the batch's start (the
//!   batch did not commit: applied again), so a checkpoint made while PostgreSQL was
//!   away costs no copy.
//!
//! Only this module talks to PostgreSQL; it takes a session-level advisory lock so two
//! mirrors never write into one database.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use postgres::config::SslMode;
use postgres::{Client, Config, NoTls, Transaction};
use wo_db::durable::read::{self, Event, Follower, Gone, Poll, Table};

use crate::apply::next_batch;
use crate::sql::{self, ident};
use crate::{error_chain, Error};

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
    // A `--to` that can never connect is refused at once, even with `--follow`.
    let config = connection(url)?;
    // Nothing is created in PostgreSQL for a directory that cannot be read.
    read::check_dir(dir)?;
    let mut lag = Lag::default();
    let mut held = None;
    loop {
        match session(dir, &config, follow, &mut lag, &mut held) {
            Err(Error::Pg(m)) if follow => {
                eprintln!("wo: mirror: {m}; connecting again in 1 s");
                std::thread::sleep(Duration::from_secs(1));
            }
            res => return res,
        }
    }
}

/// The connection settings of `--to`. A usage error (exit 64) when they can never
/// work: the string does not parse (the crate's cause says why: `invalid port`,
/// `unknown option `bogus``), names no host, or asks for TLS, which the mirror does not
/// speak. The URL is not repeated in the message: it may hold a password.
fn connection(url: &str) -> Result<Config, Error> {
    let config: Config = url
        .parse()
        .map_err(|e: postgres::Error| Error::Usage(format!("--to: {}", error_chain(&e))))?;
    if !matches!(config.get_ssl_mode(), SslMode::Disable | SslMode::Prefer) {
        return Err(Error::Usage(
            "--to asks for TLS (sslmode=require), which wo db mirror does not support: connect without it (sslmode=disable or prefer), over a trusted network or a tunnel".into(),
        ));
    }
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err(Error::Usage(
            "--to names no host (`postgresql://user@host:port/db` or `host=… port=… user=… dbname=…`)".into(),
        ));
    }
    Ok(config)
}

/// What a following mirror keeps across a lost connection (helper-92: after
/// PostgreSQL was away while a checkpoint replaced the log, the mirror copied every
/// table again, dropping the indexes and views a user had added to them).
struct Held {
    /// The follower, with the log generation it reads still open.
    follower: Follower,
    /// The batch being applied when the connection was lost, if any.
    pending: Option<Batch>,
}

/// A batch of SQL and the positions (salt, LSN) before and after it.
struct Batch {
    sql: String,
    before: (u64, u64),
    after: (u64, u64),
}

/// Applies `b` and stores the position after it, in one transaction.
fn apply(client: &mut Client, b: &Batch) -> Result<(), Error> {
    let mut tx = client.transaction()?;
    tx.batch_execute(&b.sql)?;
    save_position(&mut tx, b.after.0, b.after.1)?;
    tx.commit()?;
    Ok(())
}

/// A follower from PostgreSQL's position `pos`, or a new copy when there is none or
/// the records after it are gone.
fn resume_or_copy(
    client: &mut Client,
    dir: &Path,
    pos: Option<(u64, u64)>,
) -> Result<Follower, Error> {
    let Some((salt, lsn)) = pos else {
        return copy(client, dir);
    };
    match Follower::resume(dir, salt, lsn)? {
        Ok(f) => Ok(f),
        Err(Gone(why)) => {
            eprintln!("wo: mirror: {why}; copying the tables again");
            copy(client, dir)
        }
    }
}

/// Where `config` connects, for messages: `127.0.0.1:5432` (never the password).
fn target(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match hosts.as_slice() {
        [] => format!("port {port}"),
        [one] => format!("{one}:{port}"),
        more => format!("{}:{port}", more.join(",")),
    }
}

fn session(
    dir: &Path,
    config: &Config,
    follow: bool,
    lag: &mut Lag,
    held: &mut Option<Held>,
) -> Result<(), Error> {
    // Which server it could not reach is said (helper-92: a mistyped port showed as
    // "Connection refused" alone).
    let mut client = config.connect(NoTls).map_err(|e| match Error::from(e) {
        Error::Pg(m) => Error::Pg(format!("{}: {m}", target(config))),
        other => other,
    })?;
    // The mirror's own tables, made by a first mirror, are taken away again when that
    // mirror's first copy is refused (helper-92: a refused mirror left them behind).
    let fresh: bool = client
        .query_one(
            "SELECT to_regclass('wo_mirror_position') IS NULL AND to_regclass('wo_mirror_tables') IS NULL",
            &[],
        )?
        .get(0);
    client.batch_execute(SETUP)?;
    // A mirror killed a moment ago may still hold the lock until its server process
    // notices: wait for it a while, and say so (helper-92: 30 s of silence).
    let locked: bool = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&LOCK_KEY])?
        .get(0);
    if !locked {
        eprintln!(
            "wo: mirror: another wo db mirror holds this database's lock; waiting up to 30 s for it"
        );
        client.batch_execute("SET lock_timeout = '30s'")?;
        if let Err(e) = client.execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY]) {
            return Err(Error::Pg(format!(
                "another wo db mirror is writing into this database ({})",
                Error::from(e)
            )));
        }
        client.batch_execute("SET lock_timeout = 0")?;
    }
    let pos = client.query_opt("SELECT salt, lsn FROM wo_mirror_position WHERE id = 1", &[])?;
    // Salts are random 64-bit values; PostgreSQL's bigint holds their bits.
    let pos = pos.map(|row| (row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64));
    let mut follower = match held.take() {
        Some(h) if pos == Some((h.follower.salt(), h.follower.applied())) => h.follower,
        Some(h) if h.pending.as_ref().is_some_and(|b| pos == Some(b.before)) => {
            if let Some(b) = &h.pending {
                if let Err(e) = apply(&mut client, b) {
                    *held = Some(h);
                    return Err(e);
                }
            }
            h.follower
        }
        // PostgreSQL holds another position (another mirror wrote meanwhile): from
        // there, as a mirror started afresh.
        _ => match resume_or_copy(&mut client, dir, pos) {
            Ok(f) => f,
            Err(e) => {
                if fresh && !matches!(e, Error::Pg(_)) {
                    let _ = client
                        .batch_execute("DROP TABLE IF EXISTS wo_mirror_position, wo_mirror_tables");
                }
                return Err(e);
            }
        },
    };
    loop {
        let before = (follower.salt(), follower.applied());
        let step = next_batch(&mut follower).map_err(|e| match e {
            // A record PostgreSQL cannot take (U+0000 in a text): the mirror stops
            // there, and would again from the same position (helper-92: no way on
            // was given).
            Error::Value(m) => Error::Value(format!(
                "{m}; the mirror stops at this record: change the value in wo, then run `wo db checkpoint {}`, after which the mirror copies the tables again and goes on",
                dir.display()
            )),
            other => other,
        })?;
        match step.poll {
            Poll::Gone(Gone(why)) => {
                eprintln!("wo: mirror: {why}; copying the tables again");
                follower = copy(&mut client, dir)?;
            }
            Poll::Progress {
                applied,
                final_lsn,
                last_lsn,
            } => {
                if step.records > 0 {
                    let batch = Batch {
                        sql: step.sql,
                        before,
                        after: (follower.salt(), applied),
                    };
                    if let Err(e) = apply(&mut client, &batch) {
                        *held = Some(Held {
                            follower,
                            pending: Some(batch),
                        });
                        return Err(e);
                    }
                }
                lag.observe(applied, final_lsn, last_lsn, step.records);
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
    let mut nans = sql::UniqueNans::default();
    let mut current: Option<(Table, String)> = None;
    let mut buf: Vec<u8> = Vec::new();
    let (mut n_tables, mut n_rows) = (0usize, 0u64);
    let follower = read::snapshot(dir, |ev| -> Result<(), Error> {
        match ev {
            Event::Table(t) => {
                sql::check_mirrored(t)?;
                nans = sql::UniqueNans::new(t);
                tx.batch_execute(&sql::create_table(t)).map_err(|e| {
                    // A table of that name the mirror did not make (helper-92: the
                    // refusal said only "already exists").
                    let taken = e.code() == Some(&postgres::error::SqlState::DUPLICATE_TABLE);
                    match Error::from(e) {
                        Error::Refused { message, data } if taken => Error::Refused {
                            message: format!(
                                "{message}: the database has a table `{}` that no wo db mirror made; mirror into another database, or drop or rename that table",
                                t.name
                            ),
                            data,
                        },
                        other => other,
                    }
                })?;
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
                nans.row(t, id, cells)?;
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
        tx.batch_execute(fk)
            .map_err(|e| Error::from(e).in_statement(fk))?;
    }
    save_position(&mut tx, follower.salt(), follower.applied())?;
    tx.commit()?;
    eprintln!(
        "wo: mirror: copied {}, {} (up to lsn {}) in {:.1} s",
        counted(n_tables as u64, "table"),
        counted(n_rows, "row"),
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
            "wo: mirror: applied up to lsn {} ({} since the last report); behind: {} ({} in doubt), {:.2} s",
            self.applied,
            counted(self.n_applied as u64, "record"),
            counted(self.last_lsn.saturating_sub(self.applied), "record"),
            self.last_lsn.saturating_sub(self.final_lsn),
            secs
        );
        self.n_applied = 0;
        self.last_report = Some(now);
    }
}

/// `1 table`, `2 tables`.
fn counted(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}
