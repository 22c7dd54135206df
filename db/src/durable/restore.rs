//! Loading a checkpoint into a fresh [`Db`] through its public API (insert, update,
//! delete), so that indexes, reference counts and id counters are rebuilt by the same
//! code that maintains them at run time.
//!
//! The snapshot holds only live rows, but ids are positions that are never reused:
//! the engine's next id must come back exactly, holes (deleted rows) included. The
//! engine has no "set the counter" call, so a hole is recreated as a placeholder row
//! that is inserted and deleted at once. Rows must also pass the engine's checks in
//! whatever order we insert them:
//!
//! - Tables are loaded in an order where the target of every non-nullable reference
//!   comes first. Such references cannot form a cycle among tables that ever held a
//!   row (the first row of a cycle could never have been inserted), so the order
//!   exists; a table in a cycle must have no rows.
//! - Nullable references are loaded as `nil` and set afterwards, when every live row
//!   exists (they may point forward or around a cycle).
//! - A placeholder takes `nil` for nullable columns and values chosen not to collide
//!   with unique indexes (retried on `UNIQUE`); its non-nullable references point at
//!   a live row of the target table or, when that table has no live row, at a
//!   placeholder of it kept until the end.
//!
//! This is the seam for a bulk path: an engine call that takes a table's rows and
//! counter and builds its indexes in one pass would replace this whole module.

use std::collections::HashMap;
use std::rc::Rc;

use crate::{Cell, ColType, Db, ErrorKind, RowId, Savepoint, TableId};

/// One table to load: its program id, next id and live rows in ascending id order.
pub(crate) struct Load {
    pub table: TableId,
    pub next_id: RowId,
    pub rows: Vec<(RowId, Vec<Cell>)>,
}

/// Loads `loads` into `db` (which must be empty). Errors are sentences naming the
/// table.
pub(crate) fn restore(db: &mut Db, loads: Vec<Load>) -> Result<(), String> {
    let schema = db.schema().clone();
    let by_table: HashMap<TableId, usize> = loads
        .iter()
        .enumerate()
        .map(|(i, l)| (l.table, i))
        .collect();

    // Order: targets of non-nullable references first (Kahn's algorithm).
    let n = loads.len();
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, l) in loads.iter().enumerate() {
        let def = &schema.tables[l.table as usize];
        if l.next_id <= 1 {
            continue;
        }
        for c in &def.columns {
            if let (ColType::Ref(target), false) = (c.ty, c.nullable) {
                match by_table.get(&target) {
                    Some(&j) if j == i => {
                        return Err(format!(
                            "table `{}` has rows but its column `{}` requires a reference to another row of it",
                            def.name, c.name
                        ))
                    }
                    Some(&j) if loads[j].next_id <= 1 => {
                        return Err(format!(
                            "table `{}` has rows but `{}`, which its column `{}` requires, never had any",
                            def.name, schema.tables[target as usize].name, c.name
                        ))
                    }
                    Some(&j) => deps[i].push(j),
                    None => {
                        return Err(format!(
                            "column `{}` of `{}` refers to `{}`, which is not durable",
                            c.name, def.name, schema.tables[target as usize].name
                        ))
                    }
                }
            }
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    while order.len() < n {
        let before = order.len();
        for i in 0..n {
            if !done[i] && deps[i].iter().all(|&j| done[j]) {
                done[i] = true;
                order.push(i);
            }
        }
        if order.len() == before {
            let stuck: Vec<&str> = (0..n)
                .filter(|&i| !done[i])
                .map(|i| schema.tables[loads[i].table as usize].name.as_str())
                .collect();
            return Err(format!(
                "tables {} hold rows but require references to each other in a cycle",
                stuck.join(", ")
            ));
        }
    }

    // Candidate targets for placeholders' references: a few live rows per table, plus
    // the kept placeholder of a table without live rows.
    let mut live_sample: Vec<Vec<RowId>> = loads
        .iter()
        .map(|l| l.rows.iter().take(64).map(|r| r.0).collect())
        .collect();
    let mut kept: Vec<Option<RowId>> = vec![None; n];
    let mut deferred: Vec<(TableId, RowId, usize, Cell)> = Vec::new();

    for &i in &order {
        let l = &loads[i];
        let t = l.table;
        let def = &schema.tables[t as usize];
        let mut rows = l.rows.iter().peekable();
        for pos in 1..l.next_id {
            let live = rows.next_if(|r| r.0 == pos);
            match live {
                Some((id, cells)) => {
                    let mut cells = cells.clone();
                    for (c, col) in def.columns.iter().enumerate() {
                        if matches!(col.ty, ColType::Ref(_))
                            && col.nullable
                            && cells[c] != Cell::Nil
                        {
                            deferred.push((t, *id, c, std::mem::replace(&mut cells[c], Cell::Nil)));
                        }
                    }
                    let got = db.insert(t, cells).map_err(|e| {
                        format!("cannot load row {id} of `{}`: {}", def.name, e.message)
                    })?;
                    if got != *id {
                        return Err(format!(
                            "loading `{}` gave row id {got}, expected {id}",
                            def.name
                        ));
                    }
                }
                None => {
                    let keep = l.rows.is_empty() && kept[i].is_none();
                    let mut attempt = 0u32;
                    loop {
                        let cells =
                            placeholder(&schema.tables[t as usize].columns, attempt, |target| {
                                let j = by_table[&target];
                                let cands = &live_sample[j];
                                if cands.is_empty() {
                                    kept[j].map(Cell::Ref).unwrap_or(Cell::Nil)
                                } else {
                                    Cell::Ref(cands[attempt as usize % cands.len()])
                                }
                            });
                        match db.insert(t, cells) {
                            Ok(id) => {
                                debug_assert_eq!(id, pos);
                                break;
                            }
                            Err(e) if e.kind == ErrorKind::Unique && attempt < 256 => attempt += 1,
                            Err(e) => {
                                return Err(format!(
                                    "cannot recreate deleted row {pos} of `{}` (ids are never reused): {}",
                                    def.name, e.message
                                ))
                            }
                        }
                    }
                    if keep {
                        kept[i] = Some(pos);
                    } else {
                        db.delete(t, pos).map_err(|e| {
                            format!(
                                "cannot remove placeholder {pos} of `{}`: {}",
                                def.name, e.message
                            )
                        })?;
                    }
                }
            }
            db.truncate_undo(Savepoint(0));
        }
        if rows.next().is_some() {
            return Err(format!(
                "`{}` has a row at or beyond its next id {}",
                def.name, l.next_id
            ));
        }
        live_sample[i].retain(|&id| db.is_live(t, id));
    }
    for (t, id, c, cell) in deferred {
        db.update(t, id, c, cell).map_err(|e| {
            format!(
                "cannot restore column {c} of row {id} of `{}`: {}",
                schema.tables[t as usize].name, e.message
            )
        })?;
        db.truncate_undo(Savepoint(0));
    }
    for &i in order.iter().rev() {
        if let Some(id) = kept[i] {
            let t = loads[i].table;
            db.delete(t, id)
                .map_err(|e| format!("cannot remove placeholder {id}: {}", e.message))?;
        }
    }
    db.truncate_undo(Savepoint(0));
    Ok(())
}

/// The cells of placeholder number `attempt` for a deleted row.
fn placeholder(
    columns: &[crate::Column],
    attempt: u32,
    target: impl Fn(TableId) -> Cell,
) -> Vec<Cell> {
    columns
        .iter()
        .map(|c| {
            if c.nullable {
                return Cell::Nil;
            }
            match c.ty {
                ColType::Int => Cell::Int(i64::MIN + i64::from(attempt)),
                ColType::Float => Cell::Float(f64::NAN),
                ColType::Bool => Cell::Bool(attempt % 2 == 1),
                ColType::Text => Cell::Text(Rc::from(format!("\u{0}placeholder {attempt}"))),
                ColType::Ref(t) => target(t),
            }
        })
        .collect()
}
