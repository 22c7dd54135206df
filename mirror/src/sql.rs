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

/// `"name"` with `"` doubled: a stored name that [`check_names`] accepts is a valid
/// PostgreSQL identifier.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The longest name PostgreSQL keeps, in bytes (`NAMEDATALEN` - 1): a longer one is
/// cut short, and two names cut alike collide.
pub const MAX_NAME: usize = 63;

/// The names of the mirror's own tables, which no mirrored table may take.
pub const MIRROR_TABLES: [&str; 2] = ["wo_mirror_position", "wo_mirror_tables"];

/// The names of PostgreSQL's system columns (version 15; `oid` stopped being one in
/// 12), which every table has: `CREATE TABLE` refuses a column named like one.
pub const SYSTEM_COLUMNS: [&str; 6] = ["tableoid", "xmin", "cmin", "xmax", "cmax", "ctid"];

/// Refuses a table whose name or column names PostgreSQL cannot take as they are:
/// longer than [`MAX_NAME`] bytes, or holding U+0000; a table name starting with
/// `pg_` (PostgreSQL reserves the prefix for its catalog, which every unqualified name
/// is looked up in first: `CREATE TABLE` would make `public.pg_class` while `COPY` and
/// `INSERT` wrote into `pg_catalog.pg_class`); a column named like one of
/// [`SYSTEM_COLUMNS`]. (wo names have no such limits; the data stays exportable as
/// JSON lines and CSV.)
pub fn check_names(t: &Table) -> Result<(), Error> {
    let names = std::iter::once(&t.name).chain(t.columns.iter().map(|c| &c.name));
    for (k, name) in names.enumerate() {
        let what = if k == 0 {
            format!("table `{name}`")
        } else {
            format!("column `{name}` of table `{}`", t.name)
        };
        if name.contains('\0') {
            return Err(Error::Value(format!(
                "the name of {what} holds the character U+0000, which PostgreSQL names cannot"
            )));
        }
        if name.len() > MAX_NAME {
            return Err(Error::Value(format!(
                "the name of {what} is {} bytes: PostgreSQL keeps {MAX_NAME} and would cut it short ({})",
                name.len(),
                rename_hint(k == 0)
            )));
        }
        if k == 0 && name.starts_with("pg_") {
            return Err(Error::Value(format!(
                "table `{name}` starts with `pg_`, which PostgreSQL reserves for its system catalog (its tables would be found first under that name; {})",
                rename_hint(true)
            )));
        }
        if k > 0 && SYSTEM_COLUMNS.contains(&name.as_str()) {
            return Err(Error::Value(format!(
                "{what} has the name of a PostgreSQL system column, which every table has ({}; {})",
                SYSTEM_COLUMNS.join(", "),
                rename_hint(false)
            )));
        }
    }
    Ok(())
}

/// How to rename a table or a column in the program, keeping its data (docs/schema.md).
fn rename_hint(table: bool) -> &'static str {
    if table {
        "rename the table with `@table(name: \"new\", was: \"old\")` and run the program once"
    } else {
        "rename the column with `@was(\"old\")` and run the program once"
    }
}

/// [`check_names`] for a table the mirror creates: also not one of [`MIRROR_TABLES`].
pub fn check_mirrored(t: &Table) -> Result<(), Error> {
    check_names(t)?;
    if MIRROR_TABLES.contains(&t.name.as_str()) {
        return Err(Error::Value(format!(
            "table `{}` has the name of a table the mirror keeps its position in ({})",
            t.name,
            rename_hint(true)
        )));
    }
    Ok(())
}

/// Finds rows that a PostgreSQL `UNIQUE` constraint would refuse although wo's unique
/// index holds them: keys with a NaN. wo's `==` makes NaN equal to nothing, so such
/// keys never collide in wo; PostgreSQL orders every NaN as one value, equal to
/// itself. (Other keys collide alike: both make `-0.0` equal `0.0`, both let a key
/// with a nil repeat.)
#[derive(Default)]
pub struct UniqueNans {
    /// Per unique index of the table: its columns, and the first row of each key.
    seen: Vec<(Vec<usize>, std::collections::HashMap<String, i64>)>,
}

impl UniqueNans {
    pub fn new(t: &Table) -> UniqueNans {
        let floats = |ix: &&wo_db::durable::read::Index| {
            ix.unique
                && ix
                    .columns
                    .iter()
                    .any(|&c| t.columns.get(c).is_some_and(|c| c.ty == ColumnType::Float))
        };
        UniqueNans {
            seen: t
                .indexes
                .iter()
                .filter(floats)
                .map(|ix| (ix.columns.clone(), std::collections::HashMap::new()))
                .collect(),
        }
    }

    /// Takes row `id`; an error names it and the earlier row with the same key.
    pub fn row(&mut self, t: &Table, id: i64, cells: &[Cell]) -> Result<(), Error> {
        for (cols, seen) in &mut self.seen {
            let key: Vec<&Cell> = cols.iter().filter_map(|&c| cells.get(c)).collect();
            let has_nan = key
                .iter()
                .any(|c| matches!(c, Cell::Float(x) if x.is_nan()));
            if !has_nan || key.iter().any(|c| matches!(c, Cell::Nil)) {
                continue;
            }
            let mut text = String::new();
            for c in &key {
                let _ = match c {
                    Cell::Float(x) if *x == 0.0 => write!(text, "F0|"),
                    Cell::Float(x) => write!(text, "F{}|", float_text(*x)),
                    Cell::Text(s) => write!(text, "T{}:{s}|", s.len()),
                    Cell::Int(v) | Cell::Ref(v) => write!(text, "I{v}|"),
                    Cell::Bool(b) => write!(text, "B{b}|"),
                    Cell::Nil => Ok(()),
                };
            }
            if let Some(first) = seen.insert(text, id) {
                let names: Vec<&str> = cols
                    .iter()
                    .filter_map(|&c| t.columns.get(c).map(|c| c.name.as_str()))
                    .collect();
                return Err(Error::Value(format!(
                    "rows {first} and {id} of `{}` hold NaN in unique ({}): wo lets such keys repeat (NaN equals nothing), PostgreSQL's UNIQUE counts every NaN as one value",
                    t.name,
                    names.join(", ")
                )));
            }
        }
        Ok(())
    }
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

/// wo's indexes of a table, as (column names through `rename`, unique), in the
/// table's order: one PostgreSQL index each, as the mirror made them until December
/// 6 (see [`pg_indexes`]).
pub fn wo_indexes(t: &Table, rename: &dyn Fn(&str) -> String) -> Vec<(Vec<String>, bool)> {
    t.indexes
        .iter()
        .filter_map(|ix| {
            let cols: Option<Vec<String>> = ix
                .columns
                .iter()
                .map(|&c| t.columns.get(c).map(|c| rename(&c.name)))
                .collect();
            Some((cols?, ix.unique))
        })
        .collect()
}

/// The indexes PostgreSQL keeps for a table ([`wo_indexes`] less the redundant
/// ones). Every one is a btree there, so a plain index over the same columns as a
/// unique one or an earlier plain one (wo's hash and sorted indexes on one column, a
/// `sorted:` index beside `@unique`) would be a second copy of the same index: it is
/// left out.
pub fn pg_indexes(t: &Table, rename: &dyn Fn(&str) -> String) -> Vec<(Vec<String>, bool)> {
    let all = wo_indexes(t, rename);
    let mut kept: Vec<(Vec<String>, bool)> = Vec::with_capacity(all.len());
    for (cols, unique) in &all {
        let covered = !unique
            && (all.iter().any(|(c, u)| *u && c == cols) || kept.iter().any(|(c, _)| c == cols));
        if !covered {
            kept.push((cols.clone(), *unique));
        }
    }
    kept
}

/// The indexes of a table ([`pg_indexes`]): `ALTER TABLE … ADD UNIQUE` for a unique
/// one (PostgreSQL, like wo, lets nulls repeat; checked at commit, so the mirror may
/// apply a batch's updates in any order), `CREATE INDEX` for the others. Made after
/// the rows.
pub fn indexes(t: &Table) -> Vec<String> {
    pg_indexes(t, &|c: &str| ident(c))
        .into_iter()
        .map(|(cols, unique)| {
            let cols = cols.join(", ");
            if unique {
                format!(
                    "ALTER TABLE {} ADD UNIQUE ({cols}) DEFERRABLE INITIALLY DEFERRED",
                    ident(&t.name)
                )
            } else {
                format!("CREATE INDEX ON {} ({cols})", ident(&t.name))
            }
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
    references(t)
        .map(|(col, target)| foreign_key(&t.name, col, target))
        .collect()
}

/// The `ref` columns of `t`, each with the table it refers to, in column order.
pub fn references(t: &Table) -> impl Iterator<Item = (&str, &str)> {
    t.columns.iter().filter_map(|c| match &c.ty {
        ColumnType::Ref(target) => Some((c.name.as_str(), target.as_str())),
        _ => None,
    })
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
