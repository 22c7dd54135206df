//! `wo db export DIR [--table NAME] [--format jsonl|csv|sql]` (LANGUAGE.md §8): the
//! rows of a data directory at its last final LSN, streamed from
//! [`wo_db::durable::read::snapshot`] to a writer one row at a time, so memory does not
//! grow with the data. Read-only; no lock is taken.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use wo_db::durable::read::{self, Event, Table};
use wo_db::durable::{RealStorage, Storage};
use wo_db::Cell;

use crate::sql;
use crate::Error;

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per row: `"table"`, `"id"`, then the columns.
    Jsonl,
    /// One table: a header line, RFC 4180 quoting, nil as an empty field.
    Csv,
    /// A script `psql -v ON_ERROR_STOP=1 -f` loads: tables, rows (COPY), foreign keys.
    Sql,
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    pub tables: usize,
    pub rows: u64,
    /// The LSN of the last log record included.
    pub lsn: u64,
}

/// Writes the rows of `dir` (all tables, or only `table`) to `out` in `format`.
pub fn export(
    dir: &Path,
    table: Option<&str>,
    format: Format,
    out: &mut dyn Write,
) -> Result<Summary, Error> {
    export_in(Arc::new(RealStorage), dir, table, format, out)
}

/// [`export`] of a directory in `storage` (the fuzz target's simulated disk).
pub fn export_in(
    storage: Arc<dyn Storage>,
    dir: &Path,
    table: Option<&str>,
    format: Format,
    out: &mut dyn Write,
) -> Result<Summary, Error> {
    if format == Format::Csv && table.is_none() {
        // The names `--table` takes, when the directory can say (helper-106).
        let options = wo_db::durable::Options {
            storage: storage.clone(),
            ..wo_db::durable::Options::default()
        };
        let names = wo_db::durable::stored_schema(dir, &options)
            .map(|s| s.tables.into_iter().map(|t| t.name).collect::<Vec<_>>())
            .unwrap_or_default();
        let which = if names.is_empty() {
            String::new()
        } else {
            format!("; {}: {}", dir.display(), crate::stored_names(&names))
        };
        return Err(Error::Usage(format!(
            "--format csv needs --table NAME (a CSV file holds one table){which}"
        )));
    }
    let mut sum = Summary::default();
    let mut current: Option<Table> = None;
    // Indexes and foreign keys, made after the rows (as pg_dump does).
    let mut fks: Vec<String> = Vec::new();
    // The unique keys PostgreSQL would refuse (`--format sql`).
    let mut nans = sql::UniqueNans::default();
    let mut line: Vec<u8> = Vec::with_capacity(256);
    // The stored names, for the message when `--table` names none of them.
    let mut stored: Vec<String> = Vec::new();
    let io = Error::Output;
    // The script's head is written once the directory has opened (at its first
    // table, or at the end for one with none), so a directory that does not open
    // leaves no half script.
    let mut head = format == Format::Sql;
    let mut write_head = |out: &mut dyn Write| -> Result<(), Error> {
        if std::mem::take(&mut head) {
            writeln!(
                out,
                "-- wo db export of {}\nSET client_encoding = 'UTF8';\nSET standard_conforming_strings = on;\nBEGIN;",
                one_line(&dir.display().to_string())
            )
            .map_err(io)?;
        }
        Ok(())
    };
    let follower = read::snapshot_in(storage, dir, |ev| -> Result<(), Error> {
        write_head(out)?;
        match ev {
            Event::Table(t) => {
                stored.push(t.name.clone());
                if table.is_some_and(|n| n != t.name) {
                    current = None;
                    return Ok(());
                }
                sum.tables += 1;
                match format {
                    Format::Jsonl => {
                        // Stored before the compiler refused the name: each object
                        // would hold the key twice, hiding the row's table.
                        if t.columns.iter().any(|c| c.name == "table") {
                            return Err(Error::Value(format!(
                                "table `{}` has a column named `table`, which JSON lines use for the row's table: export it with --format csv or --format sql, or rename the column (`name: T @was(\"table\")`) and run the program once",
                                t.name
                            )));
                        }
                    }
                    Format::Csv => {
                        line.clear();
                        csv_field(&mut line, "id");
                        for c in &t.columns {
                            line.push(b',');
                            csv_field(&mut line, &c.name);
                        }
                        line.extend_from_slice(b"\r\n");
                        out.write_all(&line).map_err(io)?;
                    }
                    Format::Sql => {
                        sql::check_names(t)?;
                        nans = sql::UniqueNans::new(t);
                        writeln!(
                            out,
                            "{};\n{};",
                            sql::create_table(t),
                            sql::copy_from_stdin(t)
                        )
                        .map_err(io)?;
                        fks.extend(sql::indexes(t));
                        for (col, target) in sql::references(t) {
                            let fk = sql::foreign_key(&t.name, col, target);
                            // One to a table left out (`--table`) could not be made
                            // in an empty database: it is written as a comment.
                            if table.is_some_and(|n| n != target) {
                                fks.push(format!(
                                    "-- not exported, so not made: {}",
                                    one_line(&fk)
                                ));
                            } else {
                                fks.push(fk);
                            }
                        }
                    }
                }
                current = Some(t.clone());
            }
            Event::Row(id, cells) => {
                let Some(t) = &current else { return Ok(()) };
                sum.rows += 1;
                line.clear();
                match format {
                    Format::Jsonl => json_row(&mut line, t, id, cells),
                    Format::Csv => csv_row(&mut line, id, cells),
                    Format::Sql => {
                        nans.row(t, id, cells)?;
                        sql::copy_line(&mut line, t, id, cells)?
                    }
                }
                out.write_all(&line).map_err(io)?;
            }
            Event::EndTable => {
                if current.take().is_some() && format == Format::Sql {
                    writeln!(out, "\\.").map_err(io)?;
                }
            }
        }
        Ok(())
    })?;
    sum.lsn = follower.applied();
    if let Some(name) = table {
        if sum.tables == 0 {
            return Err(Error::NoTable {
                table: name.to_string(),
                dir: dir.to_path_buf(),
                stored,
            });
        }
    }
    write_head(out)?;
    if format == Format::Sql {
        for fk in &fks {
            writeln!(out, "{fk};").map_err(io)?;
        }
        writeln!(out, "COMMIT;").map_err(io)?;
    }
    out.flush().map_err(io)?;
    Ok(sum)
}

/// A Float as JSON or CSV text: the shortest decimal that reads back to the same bits;
/// NaN and the infinities as `NaN`, `inf`, `-inf`.
fn float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:?}")
    }
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for ch in s.chars() {
        match ch {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
}

fn json_row(out: &mut Vec<u8>, t: &Table, id: i64, cells: &[Cell]) {
    out.extend_from_slice(b"{\"table\":");
    json_str(out, &t.name);
    out.extend_from_slice(format!(",\"id\":{id}").as_bytes());
    for (c, cell) in t.columns.iter().zip(cells) {
        out.push(b',');
        json_str(out, &c.name);
        out.push(b':');
        match cell {
            Cell::Nil => out.extend_from_slice(b"null"),
            Cell::Int(v) | Cell::Ref(v) => out.extend_from_slice(v.to_string().as_bytes()),
            Cell::Float(x) if x.is_finite() => out.extend_from_slice(float(*x).as_bytes()),
            Cell::Float(x) => json_str(out, &float(*x)),
            Cell::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Cell::Text(s) => json_str(out, s),
        }
    }
    out.extend_from_slice(b"}\n");
}

/// An RFC 4180 field: quoted when it holds a comma, a quote, CR or LF, or is empty
/// (an empty Text is `""`, nil an empty field).
fn csv_field(out: &mut Vec<u8>, s: &str) {
    if s.is_empty() || s.contains([',', '"', '\r', '\n']) {
        out.push(b'"');
        out.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

fn csv_row(out: &mut Vec<u8>, id: i64, cells: &[Cell]) {
    out.extend_from_slice(id.to_string().as_bytes());
    for cell in cells {
        out.push(b',');
        match cell {
            Cell::Nil => {}
            Cell::Int(v) | Cell::Ref(v) => out.extend_from_slice(v.to_string().as_bytes()),
            Cell::Float(x) => out.extend_from_slice(float(*x).as_bytes()),
            Cell::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Cell::Text(s) => csv_field(out, s),
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// `text` fit for an SQL comment, which ends at its line: a line break in a directory's
/// or a table's name (both may hold one) is written `\n` (`\r`), so that what follows
/// it is not read as a statement (helper-88: a directory named `d⏎DROP TABLE x;`).
fn one_line(text: &str) -> String {
    text.replace('\n', "\\n").replace('\r', "\\r")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dir` opened on the simulated disk `sim` for a program with `schema`.
    fn open_sim(
        sim: &wo_db::durable::SimStorage,
        dir: &Path,
        schema: wo_db::Schema,
    ) -> (wo_db::durable::DataDir, wo_db::Db) {
        let options = wo_db::durable::Options {
            storage: Arc::new(sim.clone()),
            ..wo_db::durable::Options::default()
        };
        wo_db::durable::open(dir, schema, options).unwrap()
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        let mut out = Vec::new();
        csv_row(
            &mut out,
            7,
            &[
                Cell::Nil,
                Cell::Text("".into()),
                Cell::Text("a,\"b\"\n".into()),
                Cell::Float(f64::NEG_INFINITY),
            ],
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "7,,\"\",\"a,\"\"b\"\"\n\",-inf\r\n"
        );
    }

    /// A column named `table`, stored before the compiler refused the name: JSON lines
    /// would hold the key twice, so that format refuses the table, naming the way out;
    /// CSV exports it.
    #[test]
    fn json_lines_refuse_a_column_named_table() {
        use wo_db::durable::SimStorage;
        use wo_db::{ColType, Column, Schema, TableDef};
        let sim = SimStorage::new();
        let dir = Path::new("/d");
        let schema = Schema {
            tables: vec![TableDef {
                name: "t".into(),
                columns: vec![Column {
                    name: "table".into(),
                    ty: ColType::Text,
                    nullable: false,
                }],
                indexes: Vec::new(),
                durable: true,
            }],
        };
        let (mut dd, mut db) = open_sim(&sim, dir, schema);
        db.insert(0, vec![Cell::Text("other".into())]).unwrap();
        dd.commit(&mut db, wo_db::Savepoint(0)).unwrap();
        drop(dd);
        let storage = || -> Arc<dyn Storage> { Arc::new(sim.clone()) };
        let mut out = Vec::new();
        match export_in(storage(), dir, None, Format::Jsonl, &mut out) {
            Err(Error::Value(m)) => assert!(m.contains("column named `table`"), "{m}"),
            other => panic!("{other:?}"),
        }
        let mut out = Vec::new();
        export_in(storage(), dir, Some("t"), Format::Csv, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "id,table\r\n1,other\r\n");
    }

    /// Line breaks in the names an SQL script's comments hold (the directory's, a
    /// table's) stay in the comment (helper-88: `d⏎DROP TABLE x;` ran as a statement).
    #[test]
    fn sql_comments_keep_line_breaks_in_names_to_their_line() {
        use wo_db::durable::SimStorage;
        use wo_db::{ColType, Column, Schema, TableDef};
        let sim = SimStorage::new();
        let dir = Path::new("/d\nDROP TABLE x;");
        let column = |name: &str, ty| Column {
            name: name.into(),
            ty,
            nullable: false,
        };
        let schema = Schema {
            tables: vec![
                TableDef {
                    name: "par\r\nent".into(),
                    columns: vec![column("n", ColType::Int)],
                    indexes: Vec::new(),
                    durable: true,
                },
                TableDef {
                    name: "child".into(),
                    columns: vec![column("p", ColType::Ref(0))],
                    indexes: Vec::new(),
                    durable: true,
                },
            ],
        };
        let (mut dd, mut db) = open_sim(&sim, dir, schema);
        let parent = db.insert(0, vec![Cell::Int(1)]).unwrap();
        db.insert(1, vec![Cell::Ref(parent)]).unwrap();
        dd.commit(&mut db, wo_db::Savepoint(0)).unwrap();
        drop(dd);
        let mut out = Vec::new();
        export_in(
            Arc::new(sim.clone()),
            dir,
            Some("child"),
            Format::Sql,
            &mut out,
        )
        .unwrap();
        let script = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = script.lines().collect();
        assert_eq!(
            lines[0], "-- wo db export of /d\\nDROP TABLE x;",
            "{script}"
        );
        let fk = lines
            .iter()
            .find(|l| l.contains("not made"))
            .unwrap_or_else(|| panic!("{script}"));
        assert!(
            fk.starts_with("-- ") && fk.ends_with("DEFERRABLE INITIALLY DEFERRED;"),
            "{fk}"
        );
        assert!(fk.contains("\"par\\r\\nent\""), "{fk}");
    }

    #[test]
    fn json_escapes_control_characters() {
        let mut out = Vec::new();
        json_str(&mut out, "a\"\\\u{1}\u{e9}");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"\\\\\\u0001\u{e9}\""
        );
    }
}
