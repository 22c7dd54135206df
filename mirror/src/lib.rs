//! Getting data out of a wo data directory (LANGUAGE.md §8): `wo db export` writes its
//! rows as JSON lines, CSV or a PostgreSQL script, and `wo db mirror` copies it into a
//! PostgreSQL database and keeps that current by applying every later committed change.
//!
//! Both read the directory beside the program that writes it, through
//! [`wo_db::durable::read`]: no lock, nothing written, and only changes that recovery
//! would restore (the durable prefix of the log). This crate adds the formats and the
//! PostgreSQL side; it is cut here so the engine never depends on a database client.

pub mod alter;
pub mod apply;
pub mod export;
/// The PostgreSQL side (feature `pg`, on by default; the fuzz targets build without
/// it, and so without a database client).
#[cfg(feature = "pg")]
pub mod mirror;
pub mod sql;

use std::path::PathBuf;

pub use wo_db::durable::OpenError;

/// Why an export or a mirror stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The data directory could not be read (damaged, missing, an I/O error).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The command line asks for something impossible.
    #[error("{0}")]
    Usage(String),
    /// A table named on the command line is not in the directory.
    #[error("{} has no table `{table}`{}; {}", dir.display(), near_name(table, stored), stored_names(stored))]
    NoTable {
        table: String,
        dir: PathBuf,
        /// The tables it has, by their stored names.
        stored: Vec<String>,
    },
    /// A value the target cannot hold.
    #[error("{0}")]
    Value(String),
    /// Writing the output failed.
    #[error("cannot write the output: {0}")]
    Output(std::io::Error),
    /// The connection failed, or PostgreSQL refused for a reason that may pass (it is
    /// shutting down, out of resources, a lock or a serialization conflict): `--follow`
    /// tries again.
    #[error("postgresql: {0}")]
    Pg(String),
    /// PostgreSQL refused a statement for a reason that will not pass by trying again
    /// (a constraint, a value, a permission): never retried. `data` when the rows
    /// themselves were refused (SQLSTATE classes 22, 23 and 54).
    #[error("postgresql refused: {message}")]
    Refused { message: String, data: bool },
}

#[cfg(feature = "pg")]
impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Error {
        // The server's message, with its detail, rather than the crate's summary.
        let Some(db) = e.as_db_error() else {
            // The crate's summary ("error connecting to server") and its causes ("Connection
            // refused (os error 111)"). The crate does not expose the kind of an error;
            // its summary names it. A connection string the server's demands show to be
            // wrong (no password given, asked for) is the command line's fault; a failed
            // authentication will fail again: neither is retried. Everything else is the
            // connection (lost, refused, timed out), retried by `--follow`.
            let text = error_chain(&e);
            return match e.to_string().as_str() {
                "invalid connection string" | "invalid configuration" => {
                    Error::Usage(format!("--to: {text}"))
                }
                "authentication error" | "error performing TLS handshake" => Error::Refused {
                    message: text,
                    data: false,
                },
                _ => Error::Pg(text),
            };
        };
        let message = match db.detail() {
            Some(d) => format!("{} ({d})", db.message()),
            None => db.message().to_string(),
        };
        let code = db.code().code();
        let class = code.get(..2).unwrap_or_default();
        // Connection exceptions, transaction rollbacks (serialization, deadlock),
        // insufficient resources, operator intervention (shutdown), system errors,
        // a lock not available.
        if matches!(class, "08" | "40" | "53" | "57" | "58") || code == "55P03" {
            return Error::Pg(message);
        }
        Error::Refused {
            message: format!("{message} [SQLSTATE {code}]"),
            // Data exceptions, integrity constraints, and a program limit (a value
            // too large for an index: `index row requires 8888 bytes`).
            data: matches!(class, "22" | "23" | "54"),
        }
    }
}

impl Error {
    /// The error with the statement PostgreSQL refused named in front of its message
    /// (PostgreSQL's own message may not say which index or table it was about).
    pub fn in_statement(self, sql: &str) -> Error {
        match self {
            Error::Refused { message, data } => Error::Refused {
                message: format!("{sql}: {message}"),
                data,
            },
            other => other,
        }
    }
}

/// " (did you mean `items`?)" when a stored name is close to `table`
/// ([`wo_db::durable::near_table_name`]), else nothing.
fn near_name(table: &str, stored: &[String]) -> String {
    let names: Vec<&str> = stored.iter().map(String::as_str).collect();
    wo_db::durable::near_table_name(table, &names)
        .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"))
}

/// "its tables are `a`, `b`" (by their stored names, which `--table` takes).
pub(crate) fn stored_names(names: &[String]) -> String {
    match names {
        [] => "it has no tables".to_string(),
        [one] => format!("its one table is `{one}` (tables are named as stored)"),
        _ => {
            let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("its tables are {} (named as stored)", list.join(", "))
        }
    }
}

/// An error's text followed by that of each of its causes, joined by `: `.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        // Some errors repeat their cause's text in their own.
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

impl Error {
    /// The sysexits status: 64 usage, 65 data the target cannot take (here or as
    /// PostgreSQL refused it) or a damaged directory, 66 not a data directory, 74 I/O
    /// (the output, or PostgreSQL unreachable or refusing otherwise), 75 busy.
    pub fn exit_status(&self) -> u8 {
        match self {
            Error::Open(e) => match e.exit_status() {
                64 => 64,
                74 => 74,
                75 => 75,
                66 => 66,
                _ => 65,
            },
            Error::Usage(_) | Error::NoTable { .. } => 64,
            Error::Value(_) => 65,
            Error::Output(_) => 74,
            Error::Pg(_) => 74,
            Error::Refused { data, .. } => {
                if *data {
                    65
                } else {
                    74
                }
            }
        }
    }
}
