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
    #[error("{} has no table `{table}`", dir.display())]
    NoTable { table: String, dir: PathBuf },
    /// A value the target cannot hold.
    #[error("{0}")]
    Value(String),
    /// Writing the output failed.
    #[error("cannot write the output: {0}")]
    Output(std::io::Error),
    /// PostgreSQL refused something, or the connection failed.
    #[error("postgresql: {0}")]
    Pg(String),
}

#[cfg(feature = "pg")]
impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Error {
        // The server's message, with its detail, rather than the crate's summary.
        match e.as_db_error() {
            Some(db) => Error::Pg(match db.detail() {
                Some(d) => format!("{} ({d})", db.message()),
                None => db.message().to_string(),
            }),
            None => Error::Pg(e.to_string()),
        }
    }
}

impl Error {
    /// The sysexits status: 64 usage, 65 data the target cannot take or a damaged
    /// directory, 66 not a data directory, 74 I/O (the output, or PostgreSQL
    /// unreachable or refusing), 75 busy.
    pub fn exit_status(&self) -> u8 {
        match self {
            Error::Open(e) => match e.exit_status() {
                74 => 74,
                75 => 75,
                66 => 66,
                _ => 65,
            },
            Error::Usage(_) | Error::NoTable { .. } => 64,
            Error::Value(_) => 65,
            Error::Output(_) => 74,
            Error::Pg(_) => 74,
        }
    }
}
