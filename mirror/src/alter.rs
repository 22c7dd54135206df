//! A schema migration of the data directory as PostgreSQL statements (`ALTER TABLE`
//! and friends), applied by the mirror in the transaction of the record that carries
//! it (`docs/mirror.md`, "Checkpoints and schema changes").
//!
//! The invariant: after the statements run, every mirrored table has the name, the
//! columns (by name, type and nullability), the foreign keys and the indexes that the
//! migration's schema gives it, and the rows the data directory holds; the rows are
//! never copied again. Columns are matched by name (through the migration's renames),
//! so a column's position in PostgreSQL may differ from its position in wo: the mirror
//! names every column it writes.

use wo_db::durable::read::{ColumnType, Migration, Table};
use wo_db::Cell;

use crate::sql::{self, ident};
use crate::Error;

/// The statements that turn the mirrored tables of `m.previous` into those of
/// `m.schema`, in order.
pub fn statements(m: &Migration) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    // Foreign keys and indexes come last, once every table and column exists.
    let mut after = Vec::new();
    for name in &m.dropped_tables {
        out.push(format!("DROP TABLE IF EXISTS {} CASCADE", ident(name)));
        out.push(format!(
            "DELETE FROM wo_mirror_tables WHERE name = {}",
            literal(name)
        ));
    }
    rename_all(
        &mut out,
        &m.renamed_tables,
        |a, b| format!("ALTER TABLE {} RENAME TO {}", ident(a), ident(b)),
        |a, b| {
            Some(format!(
                "UPDATE wo_mirror_tables SET name = {} WHERE name = {}",
                literal(b),
                literal(a)
            ))
        },
    );
    for (k, new) in m.schema.iter().enumerate() {
        sql::check_mirrored(new)?;
        let at = m.tables.get(k).copied().unwrap_or(usize::MAX);
        match m.previous.get(at) {
            None => {
                out.push(sql::create_table(new));
                out.push(format!(
                    "INSERT INTO wo_mirror_tables (name) VALUES ({}) ON CONFLICT DO NOTHING",
                    literal(&new.name)
                ));
                after.extend(sql::foreign_keys(new));
                after.extend(sql::indexes(new));
            }
            Some(old) => alter_table(&mut out, &mut after, m, old, new)?,
        }
    }
    out.extend(after);
    Ok(out)
}

/// The statements for one table that exists before and after (under its new name).
fn alter_table(
    out: &mut Vec<String>,
    after: &mut Vec<String>,
    m: &Migration,
    old: &Table,
    new: &Table,
) -> Result<(), Error> {
    let t = ident(&new.name);
    let renamed = |col: &str| -> String {
        m.renamed_columns
            .iter()
            .find(|(tab, a, _)| tab == &new.name && a == col)
            .map_or_else(|| col.to_string(), |(_, _, b)| b.clone())
    };
    // Old columns by their names after the migration; those not in the new table go.
    let mut kept = Vec::new();
    let mut renames = Vec::new();
    for c in &old.columns {
        let name = renamed(&c.name);
        match new.columns.iter().find(|n| n.name == name) {
            Some(n) => {
                // A reference names its target, which the migration may rename.
                let same_type = match (&c.ty, &n.ty) {
                    (ColumnType::Ref(a), ColumnType::Ref(b)) => {
                        m.renamed_tables
                            .iter()
                            .find(|(old, _)| old == a)
                            .map_or(a, |(_, new)| new)
                            == b
                    }
                    (a, b) => a == b,
                };
                if !same_type {
                    return Err(Error::Value(format!(
                        "column `{}` of `{}` changes type in a migration, which wo never does",
                        c.name, new.name
                    )));
                }
                if name != c.name {
                    renames.push((c.name.clone(), name.clone()));
                }
                kept.push((c, n));
            }
            None => out.push(format!("ALTER TABLE {t} DROP COLUMN {}", ident(&c.name))),
        }
    }
    rename_all(
        out,
        &renames,
        |a, b| format!("ALTER TABLE {t} RENAME COLUMN {} TO {}", ident(a), ident(b)),
        |_, _| None,
    );
    for (c, n) in &kept {
        if c.nullable && !n.nullable {
            out.push(format!(
                "ALTER TABLE {t} ALTER COLUMN {} SET NOT NULL",
                ident(&n.name)
            ));
        } else if !c.nullable && n.nullable {
            out.push(format!(
                "ALTER TABLE {t} ALTER COLUMN {} DROP NOT NULL",
                ident(&n.name)
            ));
        }
    }
    for (i, n) in new.columns.iter().enumerate() {
        if kept.iter().any(|(_, k)| k.name == n.name) {
            continue;
        }
        let fill = m
            .filled
            .iter()
            .find(|(tab, col, _)| tab == &new.name && col == &n.name)
            .map_or(&Cell::Nil, |(_, _, v)| v);
        let mut s = format!(
            "ALTER TABLE {t} ADD COLUMN {} {}",
            ident(&n.name),
            sql::pg_type(&n.ty)
        );
        if *fill != Cell::Nil {
            // Every existing row gets the value; later rows always name it.
            s.push_str(" DEFAULT ");
            sql::literal(&mut s, new, 0, i, fill)?;
        }
        if !n.nullable {
            s.push_str(" NOT NULL");
        }
        out.push(s);
        if *fill != Cell::Nil {
            out.push(format!(
                "ALTER TABLE {t} ALTER COLUMN {} DROP DEFAULT",
                ident(&n.name)
            ));
        }
        if let ColumnType::Ref(target) = &n.ty {
            after.push(sql::foreign_key(&new.name, &n.name, target));
        }
    }
    // Indexes by column names (after the renames): those only the old schema has are
    // dropped, those only the new one has are made; the rest, and every index a user
    // made in PostgreSQL, stay. An index over a dropped column went with it.
    let dropped = |name: &str| !new.columns.iter().any(|n| n.name == name);
    let live = |cols: &Vec<String>| !cols.iter().any(|c| dropped(c));
    let mut before: Vec<(Vec<String>, bool)> = sql::pg_indexes(old, &renamed)
        .into_iter()
        .filter(|(cols, _)| live(cols))
        .collect();
    // A mirror made before December 6 also holds a plain btree for each of wo's
    // indexes `pg_indexes` now leaves out: such an index may be there or not.
    let old_wo = sql::wo_indexes(old, &renamed);
    let mut maybe: Vec<Vec<String>> = old_wo
        .iter()
        .filter(|(cols, _)| live(cols))
        .map(|(cols, _)| cols.clone())
        .collect();
    for (cols, _) in &before {
        if let Some(at) = maybe.iter().position(|c| c == cols) {
            maybe.swap_remove(at);
        }
    }
    let now = sql::pg_indexes(new, &|c: &str| c.to_string());
    let made = sql::indexes(new);
    for (k, ix) in now.iter().enumerate() {
        match before.iter().position(|b| b == ix) {
            // Kept: PostgreSQL follows a renamed column by itself.
            Some(at) => {
                before.swap_remove(at);
            }
            // A plain one that such a mirror may hold already is made only if absent.
            None if !ix.1 && maybe.contains(&ix.0) => {
                after.push(create_index_if_absent(&new.name, &ix.0));
            }
            None => after.extend(made.get(k).cloned()),
        }
    }
    for (cols, unique) in &before {
        out.push(drop_index(&new.name, cols, *unique));
    }
    // Such a mirror's extra copy goes with the wo index it stood for: when fewer of
    // wo's plain indexes cover its columns now and none of PostgreSQL's plain ones
    // does (the oldest plain btree is what a drop takes, and it may be the one kept).
    let new_wo = sql::wo_indexes(new, &|c: &str| c.to_string());
    let plain_over = |ixs: &[(Vec<String>, bool)], cols: &Vec<String>| {
        ixs.iter().filter(|(c, u)| !u && c == cols).count()
    };
    let mut seen: Vec<&Vec<String>> = Vec::new();
    for cols in &maybe {
        if seen.contains(&cols) || now.contains(&(cols.clone(), false)) {
            continue;
        }
        seen.push(cols);
        let gone = plain_over(&old_wo, cols).saturating_sub(plain_over(&new_wo, cols));
        let extra = maybe.iter().filter(|c| *c == cols).count();
        for _ in 0..gone.min(extra) {
            out.push(drop_index(&new.name, cols, false));
        }
    }
    Ok(())
}

/// Renames `(from, to)` pairs with `stmt`, through temporary names when one pair's
/// new name is another's old name (a swap), plus `also` after each final rename.
fn rename_all(
    out: &mut Vec<String>,
    pairs: &[(String, String)],
    stmt: impl Fn(&str, &str) -> String,
    also: impl Fn(&str, &str) -> Option<String>,
) {
    let clash = pairs
        .iter()
        .any(|(_, to)| pairs.iter().any(|(from, _)| from == to));
    if clash {
        for (i, (from, _)) in pairs.iter().enumerate() {
            let tmp = format!("wo_rename_{i}");
            out.push(stmt(from, &tmp));
            out.extend(also(from, &tmp));
        }
        for (i, (_, to)) in pairs.iter().enumerate() {
            let tmp = format!("wo_rename_{i}");
            out.push(stmt(&tmp, to));
            out.extend(also(&tmp, to));
        }
    } else {
        for (from, to) in pairs {
            out.push(stmt(from, to));
            out.extend(also(from, to));
        }
    }
}

/// The `ARRAY(…) = ARRAY[…]` test that the keys `keys` of the relation `rel_col`
/// name exactly `cols`, in order.
fn columns_are(keys: &str, rel_col: &str, cols: &[String]) -> String {
    let names: Vec<String> = cols.iter().map(|c| literal(c)).collect();
    format!(
        "ARRAY(SELECT a.attname::text FROM unnest({keys}) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = {rel_col} AND a.attnum = k.n ORDER BY k.o) = ARRAY[{}]::text[]",
        names.join(", ")
    )
}

/// The rows of `pg_index` (as `i`) that are plain btree indexes of `rel` over exactly
/// `cols`: not unique, no expression, no predicate; what wo's `CREATE INDEX` makes.
fn plain_btrees(rel: &str, cols: &[String]) -> String {
    format!(
        "FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_am m ON m.oid = x.relam WHERE i.indrelid = {rel}::regclass AND NOT i.indisunique AND NOT i.indisprimary AND i.indexprs IS NULL AND i.indpred IS NULL AND m.amname = 'btree' AND {}",
        columns_are("i.indkey::int2[]", "i.indrelid", cols)
    )
}

/// `CREATE INDEX` over `cols` unless a plain btree over exactly them is there.
fn create_index_if_absent(table: &str, cols: &[String]) -> String {
    let rel = literal(&ident(table));
    let list: Vec<String> = cols.iter().map(|c| ident(c)).collect();
    let create = format!("CREATE INDEX ON {} ({})", ident(table), list.join(", "));
    do_block(&format!(
        "BEGIN IF NOT EXISTS (SELECT 1 {}) THEN EXECUTE {}; END IF; END",
        plain_btrees(&rel, cols),
        literal(&create)
    ))
}

/// A statement that drops the index wo made of `table` over `cols`, whatever
/// PostgreSQL named it: for a unique one, the unique constraint over exactly those
/// columns; otherwise a plain btree index (not unique, no expression, no predicate)
/// over exactly those columns. One, the oldest: other indexes, those a user made over
/// expressions (`lower(t)`), other columns or with another method, are not touched.
fn drop_index(table: &str, cols: &[String], unique: bool) -> String {
    let rel = literal(&ident(table));
    let body = if unique {
        format!(
            "DECLARE r record; BEGIN SELECT c.conname INTO r FROM pg_constraint c WHERE c.conrelid = {rel}::regclass AND c.contype = 'u' AND {} ORDER BY c.oid LIMIT 1; IF FOUND THEN EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', {rel}, r.conname); END IF; END",
            columns_are("c.conkey", "c.conrelid", cols)
        )
    } else {
        format!(
            "DECLARE r record; BEGIN SELECT i.indexrelid::regclass::text AS n INTO r {} ORDER BY i.indexrelid LIMIT 1; IF FOUND THEN EXECUTE 'DROP INDEX ' || r.n; END IF; END",
            plain_btrees(&rel, cols)
        )
    };
    do_block(&body)
}

/// `DO $tag$ body $tag$`, with a tag the body (which holds names) does not contain.
fn do_block(body: &str) -> String {
    let mut tag = "$wo$".to_string();
    let mut k = 0;
    while body.contains(&tag) {
        k += 1;
        tag = format!("$wo{k}$");
    }
    format!("DO {tag} {body} {tag}")
}

/// A Text as an SQL string literal.
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wo_db::durable::read::{Column, Index};

    fn col(name: &str, ty: ColumnType, nullable: bool) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable,
        }
    }

    fn table(name: &str, columns: Vec<Column>, indexes: Vec<Index>) -> Table {
        Table {
            name: name.into(),
            columns,
            indexes,
        }
    }

    fn migration(previous: Vec<Table>, schema: Vec<Table>, tables: Vec<usize>) -> Migration {
        Migration {
            schema,
            tables,
            previous,
            renamed_tables: vec![],
            renamed_columns: vec![],
            dropped_tables: vec![],
            dropped_columns: vec![],
            filled: vec![],
        }
    }

    #[test]
    fn an_added_column_with_a_default_fills_existing_rows_then_drops_the_default() {
        let old = table("t", vec![col("a", ColumnType::Int, false)], vec![]);
        let new = table(
            "t",
            vec![
                col("a", ColumnType::Int, false),
                col("b", ColumnType::Text, false),
                col("c", ColumnType::Float, true),
            ],
            vec![],
        );
        let mut m = migration(vec![old], vec![new], vec![0]);
        m.filled = vec![
            ("t".into(), "b".into(), Cell::Text("it's".into())),
            ("t".into(), "c".into(), Cell::Nil),
        ];
        assert_eq!(
            statements(&m).unwrap(),
            [
                "ALTER TABLE \"t\" ADD COLUMN \"b\" text DEFAULT 'it''s' NOT NULL",
                "ALTER TABLE \"t\" ALTER COLUMN \"b\" DROP DEFAULT",
                "ALTER TABLE \"t\" ADD COLUMN \"c\" double precision",
            ]
        );
    }

    #[test]
    fn renames_swap_through_temporary_names() {
        let old = table(
            "t",
            vec![
                col("a", ColumnType::Int, false),
                col("b", ColumnType::Int, false),
            ],
            vec![],
        );
        let new = old.clone();
        let mut m = migration(vec![old], vec![new], vec![0]);
        m.renamed_columns = vec![
            ("t".into(), "a".into(), "b".into()),
            ("t".into(), "b".into(), "a".into()),
        ];
        assert_eq!(
            statements(&m).unwrap(),
            [
                "ALTER TABLE \"t\" RENAME COLUMN \"a\" TO \"wo_rename_0\"",
                "ALTER TABLE \"t\" RENAME COLUMN \"b\" TO \"wo_rename_1\"",
                "ALTER TABLE \"t\" RENAME COLUMN \"wo_rename_0\" TO \"b\"",
                "ALTER TABLE \"t\" RENAME COLUMN \"wo_rename_1\" TO \"a\"",
            ]
        );
    }

    /// Only the indexes that differ are made or dropped, each by its columns (a drop
    /// never touches an index a user made in PostgreSQL over something else); a
    /// rename alone changes none.
    #[test]
    fn an_index_change_makes_or_drops_that_index_and_a_rename_alone_does_not() {
        let ix = |c, unique| Index {
            columns: vec![c],
            unique,
        };
        let old = table(
            "t",
            vec![
                col("a", ColumnType::Int, false),
                col("b", ColumnType::Int, true),
            ],
            vec![ix(0, true)],
        );
        let mut new = old.clone();
        new.columns[0].name = "z".into();
        let mut m = migration(vec![old.clone()], vec![new.clone()], vec![0]);
        m.renamed_columns = vec![("t".into(), "a".into(), "z".into())];
        assert_eq!(
            statements(&m).unwrap(),
            ["ALTER TABLE \"t\" RENAME COLUMN \"a\" TO \"z\""]
        );
        new.indexes.push(ix(1, false));
        new.columns[1].nullable = false;
        let mut m = migration(vec![old.clone()], vec![new.clone()], vec![0]);
        m.renamed_columns = vec![("t".into(), "a".into(), "z".into())];
        assert_eq!(
            statements(&m).unwrap(),
            [
                "ALTER TABLE \"t\" RENAME COLUMN \"a\" TO \"z\"",
                "ALTER TABLE \"t\" ALTER COLUMN \"b\" SET NOT NULL",
                "CREATE INDEX ON \"t\" (\"b\")"
            ]
        );
        // The unique one dropped: its constraint over exactly (z), and nothing else.
        new.indexes.remove(0);
        let mut m = migration(vec![old], vec![new], vec![0]);
        m.renamed_columns = vec![("t".into(), "a".into(), "z".into())];
        let s = statements(&m).unwrap();
        assert_eq!(s.len(), 4, "{s:?}");
        assert!(s[2].starts_with("DO $wo$"), "{}", s[2]);
        assert!(s[2].contains("contype = 'u'"), "{}", s[2]);
        assert!(s[2].contains("= ARRAY['z']::text[]"), "{}", s[2]);
        assert_eq!(s[3], "CREATE INDEX ON \"t\" (\"b\")");
    }

    /// PostgreSQL keeps one btree per column list: a plain index beside a unique one
    /// (or a second plain one) over the same columns is neither made nor dropped, and
    /// dropping wo's unique one leaves PostgreSQL the plain index it then needs.
    #[test]
    fn a_plain_index_over_a_unique_ones_columns_is_not_a_second_index() {
        let ix = |c, unique| Index {
            columns: vec![c],
            unique,
        };
        let cols = vec![
            col("a", ColumnType::Int, false),
            col("b", ColumnType::Int, false),
        ];
        let old = table(
            "t",
            cols.clone(),
            vec![ix(0, true), ix(0, false), ix(1, false), ix(1, false)],
        );
        assert_eq!(
            sql::indexes(&old),
            [
                "ALTER TABLE \"t\" ADD UNIQUE (\"a\") DEFERRABLE INITIALLY DEFERRED",
                "CREATE INDEX ON \"t\" (\"b\")"
            ]
        );
        // One of two plain indexes over b goes in wo: PostgreSQL's one stays.
        let new = table(
            "t",
            cols.clone(),
            vec![ix(0, true), ix(0, false), ix(1, false)],
        );
        let m = migration(vec![old.clone()], vec![new], vec![0]);
        assert_eq!(statements(&m).unwrap(), Vec::<String>::new());
        // The unique one goes, the plain one over a stays: PostgreSQL gets it now,
        // unless it has it (a mirror made before December 6 made one per wo index).
        let new = table("t", cols.clone(), vec![ix(0, false), ix(1, false)]);
        let m = migration(vec![old], vec![new], vec![0]);
        let s = statements(&m).unwrap();
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[0].contains("contype = 'u'"), "{}", s[0]);
        assert!(
            s[1].starts_with("DO $wo$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_index"),
            "{}",
            s[1]
        );
        assert!(
            s[1].contains("EXECUTE 'CREATE INDEX ON \"t\" (\"a\")'"),
            "{}",
            s[1]
        );
        // Such a mirror's extra copies go with the wo indexes they stood for, and only
        // then: none while a plain index over their columns stays.
        let drops = |old: Vec<Index>, new: Vec<Index>| {
            let m = migration(
                vec![table("t", cols.clone(), old)],
                vec![table("t", cols.clone(), new)],
                vec![0],
            );
            let s = statements(&m).unwrap();
            let plain = s.iter().filter(|s| s.contains("NOT i.indisunique")).count();
            let unique = s.iter().filter(|s| s.contains("contype = 'u'")).count();
            (plain, unique, s.len())
        };
        assert_eq!(drops(vec![ix(0, false), ix(0, false)], vec![]), (2, 0, 2));
        assert_eq!(
            drops(vec![ix(0, true), ix(0, false)], vec![ix(0, true)]),
            (1, 0, 1)
        );
        assert_eq!(drops(vec![ix(0, true), ix(0, false)], vec![]), (1, 1, 2));
        assert_eq!(
            drops(vec![ix(0, false), ix(0, false)], vec![ix(0, false)]),
            (0, 0, 0)
        );
        assert_eq!(
            drops(
                vec![ix(0, true), ix(0, false)],
                vec![ix(0, true), ix(0, false)]
            ),
            (0, 0, 0)
        );
    }

    #[test]
    fn a_do_block_takes_a_tag_its_names_do_not_hold() {
        let s = drop_index("t", &["a$wo$b".into()], false);
        assert!(s.starts_with("DO $wo1$ "), "{s}");
        assert!(s.ends_with(" $wo1$"), "{s}");
    }

    #[test]
    fn a_reference_to_a_renamed_table_is_not_a_change_of_type() {
        let dept = table("depts", vec![], vec![]);
        let emp = table(
            "emps",
            vec![
                col("d", ColumnType::Ref("depts".into()), false),
                col("me", ColumnType::Ref("emps".into()), true),
            ],
            vec![],
        );
        let mut new_dept = dept.clone();
        new_dept.name = "departments".into();
        let mut new_emp = emp.clone();
        new_emp.name = "people".into();
        new_emp.columns[0].ty = ColumnType::Ref("departments".into());
        new_emp.columns[1].ty = ColumnType::Ref("people".into());
        let mut m = migration(vec![dept, emp], vec![new_dept, new_emp], vec![0, 1]);
        m.renamed_tables = vec![
            ("depts".into(), "departments".into()),
            ("emps".into(), "people".into()),
        ];
        assert_eq!(
            statements(&m).unwrap(),
            [
                "ALTER TABLE \"depts\" RENAME TO \"departments\"",
                "UPDATE wo_mirror_tables SET name = 'departments' WHERE name = 'depts'",
                "ALTER TABLE \"emps\" RENAME TO \"people\"",
                "UPDATE wo_mirror_tables SET name = 'people' WHERE name = 'emps'",
            ]
        );
        // A real change of target is still refused.
        m.schema[1].columns[0].ty = ColumnType::Ref("people".into());
        assert!(statements(&m).is_err());
    }

    #[test]
    fn a_dropped_table_goes_and_a_new_one_is_created_with_its_foreign_keys_last() {
        let a = table("a", vec![col("x", ColumnType::Int, false)], vec![]);
        let gone = table("gone", vec![], vec![]);
        let b = table(
            "b",
            vec![col("r", ColumnType::Ref("a".into()), false)],
            vec![],
        );
        let mut m = migration(vec![a.clone(), gone], vec![a, b], vec![0, 2]);
        m.dropped_tables = vec!["gone".into()];
        let s = statements(&m).unwrap();
        assert_eq!(s[0], "DROP TABLE IF EXISTS \"gone\" CASCADE");
        assert!(s[2].starts_with("CREATE TABLE \"b\""), "{}", s[2]);
        assert!(s
            .last()
            .unwrap()
            .contains("FOREIGN KEY (\"r\") REFERENCES \"a\""));
    }
}
