//! Schema evolution (LANGUAGE.md §8, `docs/schema.md`): how a stored table becomes a
//! table of the engine, how the program's declaration is compared with what a data
//! directory stores, and the plan that turns one into the other.
//!
//! The invariant: a data directory changes schema only by a migration, applied as one
//! checkpoint whose new log generation begins with a migration item; whatever is
//! refused is refused before anything is written.

use std::fmt;
use std::path::Path;

use crate::{
    Cell, ColSource, ColType, Column, Db, IndexDef, IndexKind, Schema, TableDef, TableId,
    TableSource,
};

use super::codec::Migration;
use super::OpenError;

use super::codec::{StoredTable, StoredType};

/// The engine's definition of stored table `st`, references resolved by name in
/// `schema`. Indexes: the stored ones, or, for a directory that does not store them
/// (log format 1), those of `current` (the program's) over columns of the same name.
pub(crate) fn stored_def(
    st: &StoredTable,
    current: &TableDef,
    schema: &Schema,
) -> Result<TableDef, String> {
    let mut columns = Vec::with_capacity(st.columns.len());
    for c in &st.columns {
        let ty = match &c.ty {
            StoredType::Int => ColType::Int,
            StoredType::Float => ColType::Float,
            StoredType::Bool => ColType::Bool,
            StoredType::Text => ColType::Text,
            StoredType::Ref(name) => match schema.tables.iter().position(|t| &t.name == name) {
                Some(i) => ColType::Ref(i as TableId),
                None => {
                    return Err(format!(
                        "column `{}` of `{}` refers to table `{name}`, which is not stored",
                        c.name, st.name
                    ))
                }
            },
        };
        columns.push(Column {
            name: c.name.clone(),
            ty,
            nullable: c.nullable,
        });
    }
    let indexes = match &st.indexes {
        Some(ixs) => ixs.clone(),
        None => current
            .indexes
            .iter()
            .filter_map(|ix| {
                let cols: Option<Vec<usize>> = ix
                    .columns
                    .iter()
                    .map(|&c| {
                        let name = &current.columns.get(c)?.name;
                        columns.iter().position(|n| &n.name == name)
                    })
                    .collect();
                cols.map(|columns| IndexDef {
                    columns,
                    kind: ix.kind,
                })
            })
            .collect(),
    };
    Ok(TableDef {
        name: st.name.clone(),
        columns,
        indexes,
        durable: true,
    })
}

/// What the program says about where its tables and columns come from, beyond their
/// definitions: renames (`@was`, `@table(was:)`) and the literal defaults new columns
/// are filled with. Indexed by program table; missing entries say nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evolution {
    pub tables: Vec<TableEvolution>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableEvolution {
    /// `@table(was: "old")`: the stored name this table had.
    pub was: Option<String>,
    /// Per column, in the table's column order.
    pub columns: Vec<ColumnEvolution>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnEvolution {
    /// `@was("old")`: the stored name this column had.
    pub was: Option<String>,
    /// The column's default when it is a literal: what existing rows get when the
    /// column is new.
    pub default: Option<Cell>,
}

impl Evolution {
    fn table_was(&self, t: usize) -> Option<&str> {
        self.tables.get(t)?.was.as_deref()
    }
    fn column(&self, t: usize, c: usize) -> Option<&ColumnEvolution> {
        self.tables.get(t)?.columns.get(c)
    }
}

/// When a difference is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// On open, by any program (a new table, a new `?T` or defaulted column, `T` →
    /// `?T`, a new index, a dropped index that is not unique, a rename).
    OnOpen,
    /// Only by `wo db migrate --apply` (a removed column, `?T` → `T`, a dropped table,
    /// a dropped unique index).
    Apply,
    /// Never (a changed type, a new non-nullable column without a default on a table
    /// with rows).
    Refused,
}

/// How the plan's line begins that says what the stored rows refuse (a value a new
/// unique index would repeat): a refusal, but no difference of its own.
pub const ROWS_REFUSE: &str = "the stored rows refuse it";

/// One difference between the stored schema and the program's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What changes, naming the table and column.
    pub what: String,
    /// The stored rows it touches.
    pub rows: u64,
    pub kind: StepKind,
    /// For a refusal: what to do instead. For a new table while a stored one goes
    /// undeclared: that the new one may be it, renamed without saying so.
    pub hint: Option<String>,
}

/// Every difference, and how to carry them out.
#[derive(Debug, Clone)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// What the program says that the plan does not do, naming it: a `@was` (or
    /// `@table(was:)`) not used because both the old and the new name are stored.
    pub warnings: Vec<String>,
    /// The database's schema after the migration (program tables first, then the
    /// kept ones) and where each table comes from.
    pub(crate) schema: Schema,
    pub(crate) sources: Vec<TableSource>,
    /// What the migration item says besides the schema.
    pub(crate) migration: Migration,
}

impl Plan {
    /// Nothing differs.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Only new tables: declared by the next record's schema item, no migration.
    pub(crate) fn only_new_tables(&self) -> bool {
        self.migration.renames_nothing()
            && self.sources.iter().enumerate().all(|(i, s)| match s {
                TableSource::Keep(f) => *f as usize == i,
                TableSource::Empty => true,
                TableSource::Rebuild { .. } => false,
            })
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            let tag = match s.kind {
                StepKind::OnOpen => "on open",
                StepKind::Apply => "--apply",
                StepKind::Refused => "refused",
            };
            write!(f, "  [{tag}] {}", s.what)?;
            if s.rows > 0 || s.kind != StepKind::Refused {
                write!(f, " ({})", rows_text(s.rows))?;
            }
            writeln!(f)?;
            if let Some(h) = &s.hint {
                writeln!(f, "           {h}")?;
            }
        }
        for w in &self.warnings {
            writeln!(f, "  [warning] {w}")?;
        }
        Ok(())
    }
}

/// The hint for the new tables `names` when stored tables go undeclared (`undeclared`:
/// their names and rows): a class renamed without `@table(was: …)` makes a new, empty
/// table, and its rows stay in the old one, which nothing mentioned.
fn undeclared_hint(names: &[&str], undeclared: &[(&str, u64)]) -> Option<String> {
    // `Todo`; `Todo` or `Tag`; `A`, `B` or `C`; and what the `was:` goes on.
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    let (name, on, empty) = match quoted.split_last()? {
        (last, []) => (last.clone(), last.clone(), last.clone()),
        (last, rest) => (
            format!("{} or {last}", rest.join(", ")),
            "that class".to_string(),
            "table of that class".to_string(),
        ),
    };
    let shown: Vec<String> = undeclared
        .iter()
        .take(3)
        .map(|(n, rows)| format!("`{n}` ({})", rows_text(*rows)))
        .collect();
    let (first, _) = undeclared.first()?;
    let more = undeclared.len().saturating_sub(3);
    // Once a run has recorded the new table (empty), a `was:` is not used: the
    // warning then says how to remove the empty table first.
    Some(if undeclared.len() == 1 {
        format!(
            "the program does not declare stored table {}, which is kept as it is; if {name} is `{first}` renamed, say so with `@table(was: \"{first}\")` on {on}, and remove the empty {empty} first if a run has recorded it (`wo db migrate` warns how)",
            shown[0]
        )
    } else {
        let list = if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        };
        format!(
            "the program does not declare stored tables {list}, which are kept as they are; if {name} is one of them renamed, say so with `@table(was: \"…\")` on {on}, and remove the empty {empty} first if a run has recorded it (`wo db migrate` warns how)"
        )
    })
}

/// `` `a`, `b`, `c` ``; past eight names, the first eight and how many more.
fn listed(names: &[&str]) -> String {
    let shown: Vec<String> = names.iter().take(8).map(|n| format!("`{n}`")).collect();
    match names.len().saturating_sub(8) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// `1 row`, `2 rows`.
fn rows_text(n: u64) -> String {
    format!("{n} {}", if n == 1 { "row" } else { "rows" })
}

fn describe(schema: &Schema, c: &Column) -> String {
    format!(
        "{}{}",
        if c.nullable { "?" } else { "" },
        crate::db::ty_name(schema, c.ty)
    )
}

fn cell_text(c: &Cell) -> String {
    match c {
        Cell::Nil => "nil".into(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(x) => format!("{x:?}"),
        Cell::Bool(b) => b.to_string(),
        Cell::Text(t) => format!("{t:?}"),
        Cell::Ref(r) => format!("row {r}"),
    }
}

/// `unique index on (a, b)`, naming the index's columns.
fn index_text(kind: IndexKind, cols: &[&str]) -> String {
    let kind = match kind {
        IndexKind::Hash => "index",
        IndexKind::Unique => "unique index",
        IndexKind::Sorted => "sorted index",
    };
    format!("{kind} on ({})", cols.join(", "))
}

/// Compares what `db` holds after recovery (the stored tables named `stored`, with
/// their stored definitions) with `program` and `ev`, and plans the migration; `drops`
/// names stored tables to remove (`--drop`). Errors: a `--drop` that cannot be done.
pub(crate) fn plan(
    db: &Db,
    program: &Schema,
    ev: &Evolution,
    stored: &[String],
    drops: &[String],
    dir: &Path,
) -> Result<Plan, OpenError> {
    let d = dir.display();
    let dbs = db.schema();
    // Names looked up, not searched (helper-76: 64,000 stored tables took more than
    // a minute to open).
    let stored_set: std::collections::HashSet<&str> = stored.iter().map(String::as_str).collect();
    let is_stored = |n: &str| stored_set.contains(n);
    let db_durable: std::collections::HashMap<&str, TableId> = dbs
        .tables
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, t)| t.durable)
        .map(|(p, t)| (t.name.as_str(), p as TableId))
        .collect();
    let db_pos = |n: &str| db_durable.get(n).copied();
    let declared_set: std::collections::HashSet<&str> = program
        .tables
        .iter()
        .filter(|t| t.durable)
        .map(|t| t.name.as_str())
        .collect();
    let declared = |n: &str| declared_set.contains(n);
    let np = program.tables.len();
    let mut steps = Vec::new();
    let mut warnings = Vec::new();
    let mut mig = Migration::default();
    // Program table -> the database table it comes from.
    let mut src_of: Vec<Option<TableId>> = vec![None; np];
    let mut claimed = vec![false; dbs.tables.len()];
    // The steps that add a new table (a hint is added below when a stored table goes
    // undeclared: the new one may be it, renamed without saying so).
    let mut new_tables = Vec::new();
    for (i, pt) in program.tables.iter().enumerate() {
        if !pt.durable {
            continue;
        }
        // Another table of the program that is not stored and says it was `w` takes
        // `w`'s rows (a rename).
        let renamed_to_other = |w: &str| {
            program.tables.iter().enumerate().any(|(j, t)| {
                j != i && t.durable && !is_stored(&t.name) && ev.table_was(j) == Some(w)
            })
        };
        if is_stored(&pt.name) {
            src_of[i] = db_pos(&pt.name);
            if let Some(w) = ev
                .table_was(i)
                .filter(|w| *w != pt.name && is_stored(w) && !renamed_to_other(w))
            {
                let n = &pt.name;
                let pos = db_pos(n);
                let empty = pos.is_some_and(|p| db.len(p) == 0);
                // A stored table that refers to `n` keeps it from being dropped alone.
                let referrer = pos.and_then(|p| {
                    dbs.tables.iter().find_map(|t| {
                        let c = t.columns.iter().find(|c| c.ty == ColType::Ref(p))?;
                        (t.durable && t.name != *n).then(|| (t.name.clone(), c.name.clone()))
                    })
                });
                warnings.push(if empty && referrer.is_none() {
                    let dir_arg = super::shell_word(&d.to_string());
                    // The likely story: the class was renamed without `was:`, and a
                    // run recorded the new, empty table; its rows are still `w`'s.
                    format!(
                        "`@table(was: \"{w}\")` of table `{n}` is not used, since both `{w}` and `{n}` are stored; `{n}` holds no rows: to give it `{w}`'s, remove the empty `{n}` first, with a program that does not declare it (`fn main() {{}}` will do): `wo db migrate {dir_arg} OTHER.wo --drop {n} --apply`"
                    )
                } else if let (true, Some((rt, rc))) = (empty, &referrer) {
                    format!(
                        "`@table(was: \"{w}\")` of table `{n}` is not used, since both `{w}` and `{n}` are stored; `{n}` holds no rows, but column `{rc}` of table `{rt}` refers to it, so it cannot be removed alone: remove that column first (its values are all nil, since `{n}` is empty), then the empty `{n}`, and add the column again after the rename"
                    )
                } else {
                    format!(
                        "`@table(was: \"{w}\")` of table `{n}` is not used, since both `{w}` and `{n}` are stored: `{n}` keeps its rows, and `{w}` is kept as it is (`--drop {w}` removes it)"
                    )
                });
            }
        } else if let Some(w) = ev.table_was(i).filter(|w| is_stored(w) && !declared(w)) {
            let s = db_pos(w);
            if s.is_some_and(|s| claimed[s as usize]) {
                return Err(OpenError::Schema {
                    message: format!("two tables of the program say they were `{w}`"),
                });
            }
            src_of[i] = s;
            mig.renamed_tables.push((w.to_string(), pt.name.clone()));
            steps.push(Step {
                what: format!("table `{w}` renamed to `{}`", pt.name),
                rows: s.map_or(0, |s| db.len(s) as u64),
                kind: StepKind::OnOpen,
                hint: None,
            });
        } else {
            // A `was:` naming no stored table (a misspelling, most likely) in a
            // directory that stores some is said (it was silently unused: helper-95).
            if let Some(w) = ev.table_was(i).filter(|w| !is_stored(w)) {
                let stored: Vec<&str> = dbs
                    .tables
                    .iter()
                    .filter(|t| t.durable && is_stored(&t.name))
                    .map(|t| t.name.as_str())
                    .collect();
                if !stored.is_empty() {
                    warnings.push(format!(
                        "`@table(was: \"{w}\")` of table `{}` names no stored table (stored: {}): `{}` is a new table",
                        pt.name,
                        listed(&stored),
                        pt.name
                    ));
                }
            }
            new_tables.push((steps.len(), pt.name.clone()));
            steps.push(Step {
                what: format!("new table `{}`", pt.name),
                rows: 0,
                kind: StepKind::OnOpen,
                hint: None,
            });
        }
        if let Some(s) = src_of[i] {
            claimed[s as usize] = true;
        }
    }
    for name in drops {
        // `--drop x --drop x` asks for one drop.
        if mig.dropped_tables.contains(name) {
            continue;
        }
        if declared(name) {
            return Err(OpenError::Schema {
                message: format!(
                    "--drop {name}: the program declares table `{name}`; only a table it does not declare can be dropped"
                ),
            });
        }
        match db_pos(name) {
            Some(p) if is_stored(name) && !claimed[p as usize] => {
                claimed[p as usize] = true;
                mig.dropped_tables.push(name.clone());
                steps.push(Step {
                    what: format!("table `{name}` dropped"),
                    rows: db.len(p) as u64,
                    kind: StepKind::Apply,
                    hint: None,
                });
            }
            Some(_) => {
                return Err(OpenError::Schema {
                    message: format!(
                    "--drop {name}: the program renames table `{name}`, it cannot also be dropped"
                ),
                })
            }
            None => {
                // What `--drop` could take: the stored tables the program leaves
                // undeclared (helper-88: a misspelt name said only "no table").
                let droppable: Vec<&str> = stored
                    .iter()
                    .filter(|n| !declared(n))
                    .map(String::as_str)
                    .collect();
                let near = super::tools::near_table_name(name, &droppable)
                    .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
                let droppable: Vec<String> = droppable.iter().map(|n| format!("`{n}`")).collect();
                let which = match droppable.as_slice() {
                    [] => "the program declares every table it stores, so none can be dropped"
                        .to_string(),
                    [one] => {
                        format!("the one it stores that the program does not declare is {one}")
                    }
                    more => format!(
                        "those it stores that the program does not declare are {}",
                        more.join(", ")
                    ),
                };
                return Err(OpenError::Usage {
                    message: format!("--drop {name}: {d} stores no table `{name}`{near}; {which}"),
                });
            }
        }
    }
    let undeclared: Vec<(&str, u64)> = stored
        .iter()
        .filter(|n| {
            !declared(n)
                && !drops.contains(n)
                && !mig.renamed_tables.iter().any(|(from, _)| from == *n)
        })
        .map(|n| (n.as_str(), db_pos(n).map_or(0, |p| db.len(p) as u64)))
        .collect();
    // One hint, on the first new table's step, naming every new table (one per new
    // table repeated the same stored tables, helper-85).
    let names: Vec<&str> = new_tables.iter().map(|(_, n)| n.as_str()).collect();
    if let Some((i, _)) = new_tables.first() {
        steps[*i].hint = undeclared_hint(&names, &undeclared);
    }
    // New positions: the program's tables, then the kept ones.
    let mut newpos: Vec<Option<TableId>> = vec![None; dbs.tables.len()];
    for (i, s) in src_of.iter().enumerate() {
        if let Some(s) = s {
            newpos[*s as usize] = Some(i as TableId);
        }
    }
    let mut kept = Vec::new();
    for (j, t) in dbs.tables.iter().enumerate().skip(np) {
        if claimed[j] || !t.durable {
            continue;
        }
        newpos[j] = Some((np + kept.len()) as TableId);
        kept.push(j);
    }
    let mut tables: Vec<TableDef> = program.tables.clone();
    let mut sources: Vec<TableSource> = Vec::with_capacity(np + kept.len());
    for (i, pt) in program.tables.iter().enumerate() {
        let Some(s) = src_of[i] else {
            let same = dbs.tables.get(i) == Some(pt);
            sources.push(if same && !claimed.get(i).copied().unwrap_or(false) {
                TableSource::Keep(i as TableId)
            } else {
                TableSource::Empty
            });
            continue;
        };
        let sd = &dbs.tables[s as usize];
        let rows = db.len(s) as u64;
        let t = &pt.name;
        let mut cols = Vec::with_capacity(pt.columns.len());
        let mut used = vec![false; sd.columns.len()];
        // Refused new columns (their step, name and type), for the hint of a rename.
        let mut unfilled: Vec<(usize, String, String)> = Vec::new();
        for (c, pc) in pt.columns.iter().enumerate() {
            let cev = ev.column(i, c);
            let by_name = sd.columns.iter().position(|o| o.name == pc.name);
            let by_was = || {
                let w = cev?.was.as_deref()?;
                if pt.columns.iter().any(|o| o.name == w) {
                    return None;
                }
                sd.columns.iter().position(|o| o.name == w)
            };
            let k = match by_name {
                Some(k) => {
                    let was = cev.and_then(|e| e.was.as_deref());
                    if let Some(w) =
                        was.filter(|w| *w != pc.name && sd.columns.iter().any(|o| o.name == *w))
                    {
                        warnings.push(format!(
                            "`{t}`: `@was(\"{w}\")` of column `{}` is not used, since both `{w}` and `{}` are stored: `{}` keeps its own values, and `{w}` is a removed column",
                            pc.name, pc.name, pc.name
                        ));
                    }
                    Some(k)
                }
                None => {
                    let k = by_was();
                    let was = cev.and_then(|e| e.was.as_deref());
                    if let (None, Some(w)) = (k, was) {
                        if !sd.columns.iter().any(|o| o.name == w) {
                            let stored: Vec<&str> =
                                sd.columns.iter().map(|o| o.name.as_str()).collect();
                            warnings.push(format!(
                                "`{t}`: `@was(\"{w}\")` of column `{}` names no stored column (`{t}` stores {}): `{}` is a new column",
                                pc.name,
                                listed(&stored),
                                pc.name
                            ));
                        }
                    }
                    if let Some(k) = k {
                        mig.renamed_columns.push((
                            t.clone(),
                            sd.columns[k].name.clone(),
                            pc.name.clone(),
                        ));
                        steps.push(Step {
                            what: format!(
                                "`{t}`: column `{}` renamed to `{}`",
                                sd.columns[k].name, pc.name
                            ),
                            rows,
                            kind: StepKind::OnOpen,
                            hint: None,
                        });
                    }
                    k
                }
            };
            match k {
                Some(k) => {
                    used[k] = true;
                    let sc = &sd.columns[k];
                    let same_ty = match (sc.ty, pc.ty) {
                        (ColType::Ref(a), ColType::Ref(b)) => newpos[a as usize] == Some(b),
                        (a, b) => a == b,
                    };
                    if !same_ty {
                        steps.push(Step {
                            what: format!(
                                "`{t}`: column `{}` changes type from {} to {}",
                                pc.name,
                                describe(dbs, sc),
                                describe(program, pc)
                            ),
                            rows,
                            kind: StepKind::Refused,
                            hint: Some(format!(
                                "no migration changes a column's type: add a column of the new type, copy the values with a program, then remove `{}`",
                                pc.name
                            )),
                        });
                    } else if sc.nullable && !pc.nullable {
                        steps.push(Step {
                            what: format!(
                                "`{t}`: column `{}` becomes non-nullable ({} to {}; every row must hold a value)",
                                pc.name,
                                describe(dbs, sc),
                                describe(program, pc)
                            ),
                            rows,
                            kind: StepKind::Apply,
                            hint: None,
                        });
                    } else if !sc.nullable && pc.nullable {
                        steps.push(Step {
                            what: format!(
                                "`{t}`: column `{}` becomes nullable ({} to {})",
                                pc.name,
                                describe(dbs, sc),
                                describe(program, pc)
                            ),
                            rows,
                            kind: StepKind::OnOpen,
                            hint: None,
                        });
                    }
                    cols.push(ColSource::From(k));
                }
                None => {
                    // A literal default fills the existing rows, as SQL's `ADD COLUMN
                    // … DEFAULT` does, `?T` or not; without one a `?T` column gives nil.
                    let fill = cev
                        .and_then(|e| e.default.clone())
                        .or_else(|| pc.nullable.then_some(Cell::Nil));
                    let ty = describe(program, pc);
                    // One value for every stored row under a unique index of this
                    // column alone repeats as soon as there are two: refused here,
                    // where the advice can fit (the rows' refusal would say to mend
                    // them with the old program, which has no such column).
                    let unique_alone = pt
                        .indexes
                        .iter()
                        .any(|ix| ix.kind == IndexKind::Unique && ix.columns == [c]);
                    match fill {
                        Some(v) if unique_alone && rows >= 2 && v != Cell::Nil => {
                            steps.push(Step {
                                what: format!(
                                    "`{t}`: new column `{}` {ty} is unique, but its default {} would be every stored row's value, and the table has rows",
                                    pc.name,
                                    cell_text(&v)
                                ),
                                rows,
                                kind: StepKind::Refused,
                                hint: Some(format!(
                                    "add it as `{}: {}` without a default (nils may repeat under `@unique`) and give each row its value with a program, or add it without `@unique` first",
                                    pc.name,
                                    if pc.nullable { ty.clone() } else { format!("?{ty}") }
                                )),
                            });
                            cols.push(ColSource::Fill(v));
                        }
                        Some(v) => {
                            steps.push(Step {
                                what: format!(
                                    "`{t}`: new column `{}` {ty}, existing rows get {}",
                                    pc.name,
                                    cell_text(&v)
                                ),
                                rows,
                                kind: StepKind::OnOpen,
                                hint: None,
                            });
                            mig.filled.push((t.clone(), pc.name.clone(), v.clone()));
                            cols.push(ColSource::Fill(v));
                        }
                        None if rows == 0 => {
                            steps.push(Step {
                                what: format!("`{t}`: new column `{}` {ty}", pc.name),
                                rows,
                                kind: StepKind::OnOpen,
                                hint: None,
                            });
                            cols.push(ColSource::Fill(Cell::Nil));
                        }
                        None => {
                            unfilled.push((steps.len(), pc.name.clone(), ty.clone()));
                            steps.push(Step {
                                what: format!(
                                    "`{t}`: new column `{}` {ty} has no value for the stored rows (only a literal default, such as `= 0`, is given to them), and the table has rows",
                                    pc.name
                                ),
                                rows,
                                kind: StepKind::Refused,
                                hint: Some(format!(
                                    "declare it `?{ty}` or give it a literal default (`{}: {ty} = …`)",
                                    pc.name
                                )),
                            });
                            cols.push(ColSource::Fill(Cell::Nil));
                        }
                    }
                }
            }
        }
        // A stored column of the same type that the program leaves out may be the
        // new one under another name: renamed by a newer program (this one is older
        // than the data), or to be renamed now. A default would instead drop its
        // values (helper-106: an older program run on a directory that had renamed
        // `city` to `town` was told to give `city` a default).
        for (step, name, ty) in unfilled {
            let same: Vec<&str> = sd
                .columns
                .iter()
                .enumerate()
                .filter(|&(k, sc)| !used[k] && describe(dbs, sc) == ty)
                .map(|(_, sc)| sc.name.as_str())
                .collect();
            if let [stored, ..] = same[..] {
                if let Some(h) = steps[step].hint.as_mut() {
                    h.push_str(&format!(
                        "; or, if it is the stored {ty} column `{stored}` under another name (renamed by a newer program, or to be renamed now), keep its values: declare `{stored}: {ty}`, or `{name}: {ty} @was(\"{stored}\")`"
                    ));
                }
            }
        }
        for (k, sc) in sd.columns.iter().enumerate() {
            if !used[k] {
                mig.dropped_columns.push((t.clone(), sc.name.clone()));
                steps.push(Step {
                    what: format!(
                        "`{t}`: column `{}` {} removed (its values are dropped)",
                        sc.name,
                        describe(dbs, sc)
                    ),
                    rows,
                    kind: StepKind::Apply,
                    hint: None,
                });
            }
        }
        let order: Vec<usize> = cols
            .iter()
            .filter_map(|c| match c {
                ColSource::From(k) => Some(*k),
                ColSource::Fill(_) => None,
            })
            .collect();
        if order.windows(2).any(|w| w[0] > w[1]) {
            steps.push(Step {
                what: format!("`{t}`: columns reordered"),
                rows,
                kind: StepKind::OnOpen,
                hint: None,
            });
        }
        // Indexes, compared by the columns' (new) names. A stored index over a column
        // the program removes goes with that column: named by its stored name, and
        // dropped only when the removal is (`--apply`).
        let stored_ix: Vec<(String, Vec<&str>)> = sd
            .indexes
            .iter()
            .map(|ix| {
                let mut removed = Vec::new();
                let names: Vec<&str> = ix
                    .columns
                    .iter()
                    .map(
                        |&k| match cols.iter().position(|c| *c == ColSource::From(k)) {
                            Some(c) => pt.columns.get(c).map_or("?", |c| c.name.as_str()),
                            None => {
                                let name = sd.columns.get(k).map_or("?", |c| c.name.as_str());
                                removed.push(name);
                                name
                            }
                        },
                    )
                    .collect();
                (index_text(ix.kind, &names), removed)
            })
            .collect();
        let prog_ix: Vec<String> = pt
            .indexes
            .iter()
            .map(|ix| {
                let names: Vec<&str> = ix
                    .columns
                    .iter()
                    .map(|&c| pt.columns.get(c).map_or("?", |c| c.name.as_str()))
                    .collect();
                index_text(ix.kind, &names)
            })
            .collect();
        for ix in &prog_ix {
            if !stored_ix.iter().any(|(s, _)| s == ix) {
                steps.push(Step {
                    what: format!("`{t}`: new {ix}"),
                    rows,
                    kind: StepKind::OnOpen,
                    hint: None,
                });
            }
        }
        // A unique index guards the data: dropping one is done on purpose, with
        // `--apply`, never by opening (a program older than the index, or an image
        // built before it, would drop it in silence; helper-95). Other indexes only
        // make queries fast, and go on open.
        for ((ix, removed), stored) in stored_ix.iter().zip(&sd.indexes) {
            if !prog_ix.contains(ix) {
                let unique = stored.kind == IndexKind::Unique;
                steps.push(Step {
                    what: match removed.as_slice() {
                        [] if unique => {
                            format!("`{t}`: {ix} dropped (its values may then repeat)")
                        }
                        [] => format!("`{t}`: {ix} dropped"),
                        [c] => format!("`{t}`: {ix} dropped with column `{c}`"),
                        cs => format!("`{t}`: {ix} dropped with columns `{}`", cs.join("`, `")),
                    },
                    rows,
                    kind: if removed.is_empty() && !unique {
                        StepKind::OnOpen
                    } else {
                        StepKind::Apply
                    },
                    hint: None,
                });
            }
        }
        let identity = s as usize == i
            && sd == pt
            && cols
                .iter()
                .enumerate()
                .all(|(c, src)| *src == ColSource::From(c));
        sources.push(if identity {
            TableSource::Keep(s)
        } else {
            TableSource::Rebuild { from: s, cols }
        });
    }
    for &j in &kept {
        let mut def = dbs.tables[j].clone();
        for c in &mut def.columns {
            if let ColType::Ref(r) = c.ty {
                match newpos[r as usize] {
                    Some(n) => c.ty = ColType::Ref(n),
                    None => {
                        return Err(OpenError::Schema {
                            message: format!(
                                "--drop {}: table `{}` (kept) refers to it in column `{}`; drop `{}` too",
                                dbs.tables[r as usize].name, def.name, c.name, def.name
                            ),
                        })
                    }
                }
            }
        }
        let same = def == dbs.tables[j];
        tables.push(def);
        sources.push(if same {
            TableSource::Keep(j as TableId)
        } else {
            TableSource::Rebuild {
                from: j as TableId,
                cols: (0..dbs.tables[j].columns.len())
                    .map(ColSource::From)
                    .collect(),
            }
        });
    }
    // The schema before, as stored (tables the directory does not store yet left out).
    mig.previous = super::codec::stored_schema(dbs, |t| db.next_id(t as TableId))
        .0
        .into_iter()
        .filter(|t| is_stored(&t.name))
        .collect();
    Ok(Plan {
        steps,
        warnings,
        schema: Schema { tables },
        sources,
        migration: mig,
    })
}

/// The refusal of a plan that has steps `open` does not apply (every one, one per
/// line), or `None`. `apply`: for `wo db migrate --apply`, which refuses only what no
/// migration does.
pub(crate) fn refusal(plan: &Plan, apply: bool, dir: &Path, program: &str) -> Option<OpenError> {
    let d = dir.display();
    // With a refused difference, `--apply` is refused too: the other lines do not send
    // the user to it (helper-106: four lines said to run it).
    let refused = plan.steps.iter().any(|s| s.kind == StepKind::Refused);
    let mut lines: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| match s.kind {
            StepKind::OnOpen => false,
            StepKind::Apply => !apply,
            StepKind::Refused => true,
        })
        .map(|s| match (s.kind, &s.hint) {
            (StepKind::Refused, Some(h)) => {
                format!("{d}: {} ({}): refused; {h}", s.what, rows_text(s.rows))
            }
            _ if refused => format!(
                "{d}: {} ({}): not applied on open (`wo db migrate … --apply` applies it once nothing is refused)",
                s.what,
                rows_text(s.rows),
            ),
            _ => format!(
                "{d}: {} ({}): not applied on open; run `wo db migrate {} {} --apply` to apply it",
                s.what,
                rows_text(s.rows),
                super::shell_word(&d.to_string()),
                super::shell_word(program)
            ),
        })
        .collect();
    if !lines.is_empty() {
        lines.extend(plan.warnings.iter().map(|w| format!("{d}: warning: {w}")));
    }
    (!lines.is_empty()).then(|| OpenError::Schema {
        message: lines.join("\n"),
    })
}

/// Carries out the plan in memory: the database's schema and data become the new
/// ones, or nothing changes (a unique index over repeated values, a nil where no nil
/// may be: the message names the value or the row, every one of them).
pub(crate) fn restructure(db: &mut Db, plan: &Plan, dir: &Path) -> Result<(), OpenError> {
    let Err(e) = db.restructure(plan.schema.clone(), plan.sources.clone()) else {
        return Ok(());
    };
    // (The database is as it was: the refusals are tried on it, all at once.)
    let all = rows_refuse(db, plan);
    Err(match e.kind {
        // (The rows' refusal names a renamed column by its stored name too.)
        crate::ErrorKind::Unique if all.len() <= 1 => {
            super::unique_conflict(dir, all.first().unwrap_or(&e.message))
        }
        _ => OpenError::Schema {
            message: format!(
                "{}: the migration is refused: {}",
                dir.display(),
                if all.is_empty() {
                    e.message
                } else {
                    all.join("; ")
                }
            ),
        },
    })
}

/// What the stored rows refuse of `plan`, every refusal at once, tried in memory on
/// `db` (left restructured, perhaps to a relaxed schema, unless something other than
/// a nil or a repeated value is refused): each column's first nil where none may be;
/// then, the rows loaded with those columns nullable and the rebuilt tables' unique
/// indexes plain, each unique index's first repeated value. (helper-109, helper-111:
/// one refusal hid the next, found only once the first was mended.)
pub(crate) fn rows_refuse(db: &mut Db, plan: &Plan) -> Vec<String> {
    let stored = db.stored_names(&plan.schema, &plan.sources);
    let mut relaxed = plan.schema.clone();
    let mut refusals = Vec::new();
    for (t, c, message) in db.nils_refused(&plan.schema, &plan.sources) {
        relaxed.tables[t].columns[c].nullable = true;
        refusals.push(message);
    }
    for (def, src) in relaxed.tables.iter_mut().zip(&plan.sources) {
        if matches!(src, crate::TableSource::Rebuild { .. }) {
            for ix in &mut def.indexes {
                if ix.kind == crate::IndexKind::Unique {
                    ix.kind = crate::IndexKind::Hash;
                }
            }
        }
    }
    match db.restructure(relaxed, plan.sources.clone()) {
        Ok(()) => refusals.extend(db.unique_clashes(&plan.schema, &stored)),
        Err(e) => refusals.push(e.message),
    }
    refusals
}
