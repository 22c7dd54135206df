//! PostgreSQL text shared by `wo db export --format sql` and the mirror: quoted
//! names, the column types of a stored table, `CREATE TABLE`, and values as COPY text
//! fields and as SQL literals. Every value goes over exactly (an Int as its decimal, a
//! Float as the shortest decimal that reads back to the same bits, Text with its
//! escapes); what PostgreSQL cannot hold (a Text with the character U+0000) is an
//! error naming the row.

use std::fmt::Write as _;

use wo_db::durable::read::{ColumnType, Table};
use wo_db::Cell;

use crate::Error;

/// `"name"` with `"` doubled: any stored name is a valid PostgreSQL identifier.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The PostgreSQL type of a column.
pub fn pg_type(ty: &ColumnType) -> &'static str {
    match ty {
        ColumnType::Int | ColumnType::Ref(_) => "bigint",
        ColumnType::Float => "double precision",
        ColumnType::Bool => "boolean",
        ColumnType::Text => "text",
    }
}

/// `CREATE TABLE` with the primary key `id` and the column types; the foreign keys
/// come after, from [`foreign_keys`].
pub fn create_table(t: &Table) -> String {
    let mut s = format!(
        "CREATE TABLE {} (\n  \"id\" bigint PRIMARY KEY",
        ident(&t.name)
    );
    for c in &t.columns {
        let _ = write!(s, ",\n  {} {}", ident(&c.name), pg_type(&c.ty));
        if !c.nullable {
            s.push_str(" NOT NULL");
        }
    }
    s.push_str("\n)");
    s
}

/// The indexes of a table: `ALTER TABLE … ADD UNIQUE` for a unique one (PostgreSQL,
/// like wo, lets nulls repeat; checked at commit, so the mirror may apply a batch's
/// updates in any order), `CREATE INDEX` for the others. Made after the rows.
pub fn indexes(t: &Table) -> Vec<String> {
    t.indexes
        .iter()
        .filter_map(|ix| {
            let cols: Option<Vec<String>> = ix
                .columns
                .iter()
                .map(|&c| t.columns.get(c).map(|c| ident(&c.name)))
                .collect();
            let cols = cols?.join(", ");
            Some(if ix.unique {
                format!(
                    "ALTER TABLE {} ADD UNIQUE ({cols}) DEFERRABLE INITIALLY DEFERRED",
                    ident(&t.name)
                )
            } else {
                format!("CREATE INDEX ON {} ({cols})", ident(&t.name))
            })
        })
        .collect()
}

/// `COPY "t" ("id", "a", …) FROM STDIN`.
pub fn copy_from_stdin(t: &Table) -> String {
    let cols: Vec<String> = std::iter::once("\"id\"".to_string())
        .chain(t.columns.iter().map(|c| ident(&c.name)))
        .collect();
    format!("COPY {} ({}) FROM STDIN", ident(&t.name), cols.join(", "))
}

/// The foreign keys of a table as `ALTER TABLE` statements, added after the rows (as
/// pg_dump does), so rows may refer forward; checked at commit (`DEFERRABLE
/// INITIALLY DEFERRED`), so the mirror may apply a transaction's changes in order.
pub fn foreign_keys(t: &Table) -> Vec<String> {
    t.columns
        .iter()
        .filter_map(|c| match &c.ty {
            ColumnType::Ref(target) => Some(foreign_key(&t.name, &c.name, target)),
            _ => None,
        })
        .collect()
}

/// The foreign key of column `col` of `table` to table `target`, as [`foreign_keys`]
/// makes it.
pub fn foreign_key(table: &str, col: &str, target: &str) -> String {
    format!(
        "ALTER TABLE {} ADD FOREIGN KEY ({}) REFERENCES {} (\"id\") DEFERRABLE INITIALLY DEFERRED",
        ident(table),
        ident(col),
        ident(target)
    )
}

/// The text of a Float that reads back to the same bits (NaN's payload and sign
/// aside: PostgreSQL has one NaN).
pub fn float_text(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x == f64::INFINITY {
        "Infinity".into()
    } else if x == f64::NEG_INFINITY {
        "-Infinity".into()
    } else {
        // Rust's shortest round-trip representation; PostgreSQL reads it exactly.
        format!("{x:?}")
    }
}

fn no_nul(s: &str, table: &Table, id: i64, col: usize) -> Result<(), Error> {
    if s.contains('\0') {
        return Err(Error::Value(format!(
            "row {id} of `{}`: column `{}` holds the character U+0000, which PostgreSQL text cannot store",
            table.name,
            table.columns.get(col).map_or("?", |c| c.name.as_str())
        )));
    }
    Ok(())
}

/// Appends one COPY text-format line (tab-separated, `\N` for nil, newline at the
/// end) for row `id`.
pub fn copy_line(out: &mut Vec<u8>, table: &Table, id: i64, cells: &[Cell]) -> Result<(), Error> {
    let _ = write!(Fmt(out), "{id}");
    for (col, c) in cells.iter().enumerate() {
        out.push(b'\t');
        match c {
            Cell::Nil => out.extend_from_slice(b"\\N"),
            Cell::Int(v) | Cell::Ref(v) => {
                let _ = write!(Fmt(out), "{v}");
            }
            Cell::Float(x) => out.extend_from_slice(float_text(*x).as_bytes()),
            Cell::Bool(b) => out.push(if *b { b't' } else { b'f' }),
            Cell::Text(s) => {
                no_nul(s, table, id, col)?;
                for b in s.bytes() {
                    match b {
                        b'\\' => out.extend_from_slice(b"\\\\"),
                        b'\n' => out.extend_from_slice(b"\\n"),
                        b'\r' => out.extend_from_slice(b"\\r"),
                        b'\t' => out.extend_from_slice(b"\\t"),
                        _ => out.push(b),
                    }
                }
            }
        }
    }
    out.push(b'\n');
    Ok(())
}

/// Appends a value as an SQL literal (with `standard_conforming_strings` on).
pub fn literal(
    out: &mut String,
    table: &Table,
    id: i64,
    col: usize,
    c: &Cell,
) -> Result<(), Error> {
    match c {
        Cell::Nil => out.push_str("NULL"),
        Cell::Int(v) | Cell::Ref(v) => {
            let _ = write!(out, "{v}");
        }
        Cell::Float(x) => {
            let _ = write!(out, "'{}'::float8", float_text(*x));
        }
        Cell::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Cell::Text(s) => {
            no_nul(s, table, id, col)?;
            out.push('\'');
            for ch in s.chars() {
                if ch == '\'' {
                    out.push('\'');
                }
                out.push(ch);
            }
            out.push('\'');
        }
    }
    Ok(())
}

/// `fmt::Write` into a byte buffer.
struct Fmt<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Fmt<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_back_to_the_same_bits() {
        for x in [
            0.1,
            -0.0,
            1e300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            1.0 / 3.0,
        ] {
            let t = float_text(x);
            assert_eq!(t.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{t}");
        }
        assert_eq!(float_text(f64::NAN), "NaN");
        assert_eq!(float_text(f64::NEG_INFINITY), "-Infinity");
    }

    #[test]
    fn names_are_quoted() {
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }
}
