//! Schema evolution (LANGUAGE.md §8, `docs/schema.md`): how a stored table becomes a
//! table of the engine, how the program's declaration is compared with what a data
//! directory stores, and the plan that turns one into the other.
//!
//! The invariant: a data directory changes schema only by a migration, applied as one
//! checkpoint whose new log generation begins with a migration item; whatever is
//! refused is refused before anything is written.

use crate::{ColType, Column, IndexDef, Schema, TableDef, TableId};

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

/// Refuses a program whose durable tables differ from what the directory stores (the
/// database after recovery: the program's tables with the stored definitions).
pub(crate) fn check_fits(
    program: &Schema,
    db: &crate::Db,
    dir: &std::path::Path,
) -> Result<(), super::OpenError> {
    let d = dir.display();
    for (t, pt) in program.tables.iter().enumerate() {
        let st = &db.schema().tables[t];
        if !pt.durable || st.columns == pt.columns {
            continue;
        }
        let describe = |c: &Column| {
            format!(
                "{}{}",
                if c.nullable { "?" } else { "" },
                crate::db::ty_name(db.schema(), c.ty)
            )
        };
        for (ci, sc) in st.columns.iter().enumerate() {
            match pt.columns.get(ci) {
                None => {
                    return Err(super::OpenError::Schema {
                        message: format!(
                            "table `{}` in {d} has column `{}`, which the program does not declare (it has {} columns, the program {})",
                            st.name,
                            sc.name,
                            st.columns.len(),
                            pt.columns.len()
                        ),
                    })
                }
                Some(pc) if pc.name != sc.name => {
                    return Err(super::OpenError::Schema {
                        message: format!(
                            "table `{}` in {d} has column `{}` at position {}, but the program declares `{}` there",
                            st.name,
                            sc.name,
                            ci + 1,
                            pc.name
                        ),
                    })
                }
                Some(pc) if pc != sc => {
                    return Err(super::OpenError::Schema {
                        message: format!(
                            "column `{}` of table `{}` is {} in {d}, but the program declares it {}",
                            sc.name,
                            st.name,
                            describe(sc),
                            describe(pc)
                        ),
                    })
                }
                Some(_) => {}
            }
        }
        if let Some(pc) = pt.columns.get(st.columns.len()) {
            return Err(super::OpenError::Schema {
                message: format!(
                    "table `{}` in {d} has no column `{}`, which the program declares (adding columns to a stored table is not supported)",
                    st.name, pc.name
                ),
            });
        }
    }
    Ok(())
}
