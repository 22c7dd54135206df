//! The byte encoding shared by the log and the checkpoint: varints, cells, the stored
//! schema and the change items of a log record, and a bounds-checked [`Reader`] that
//! turns every malformed input into an error naming the offset (no panics on data
//! read from disk). `docs/wal-format.md` specifies these bytes; this module is the
//! only code that produces or parses them.

use std::rc::Rc;

use crate::value::ValRef;
use crate::{Cell, ColType, IndexDef, IndexKind, RowId, Schema};

/// The type of a stored column; a reference names its target table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoredType {
    Int,
    Float,
    Bool,
    Text,
    Ref(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredColumn {
    pub name: String,
    pub ty: StoredType,
    pub nullable: bool,
}

/// A durable table as the data directory knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredTable {
    pub name: String,
    pub columns: Vec<StoredColumn>,
    /// The id the next insert gets (ids are never reused, so this is persisted).
    pub next_id: RowId,
    /// The indexes; `None` in a directory that does not store them (format 1).
    pub indexes: Option<Vec<IndexDef>>,
}

/// The durable tables in their stored order; records name tables by position here.
pub(crate) type StoredSchema = Vec<StoredTable>;

/// The stored schema of a program's durable tables (ids from `next_id`), with
/// `map[program table] = Some(stored position)`.
pub(crate) fn stored_schema(
    schema: &Schema,
    next_id: impl Fn(usize) -> RowId,
) -> (StoredSchema, Vec<Option<u32>>) {
    let mut out = Vec::new();
    let mut map = Vec::with_capacity(schema.tables.len());
    for (ti, t) in schema.tables.iter().enumerate() {
        if !t.durable {
            map.push(None);
            continue;
        }
        map.push(Some(out.len() as u32));
        out.push(StoredTable {
            name: t.name.clone(),
            columns: t
                .columns
                .iter()
                .map(|c| StoredColumn {
                    name: c.name.clone(),
                    ty: match c.ty {
                        ColType::Int => StoredType::Int,
                        ColType::Float => StoredType::Float,
                        ColType::Bool => StoredType::Bool,
                        ColType::Text => StoredType::Text,
                        ColType::Ref(r) => StoredType::Ref(
                            schema
                                .tables
                                .get(r as usize)
                                .map(|d| d.name.clone())
                                .unwrap_or_default(),
                        ),
                    },
                    nullable: c.nullable,
                })
                .collect(),
            next_id: next_id(ti),
            indexes: Some(t.indexes.clone()),
        });
    }
    (out, map)
}

/// Appends an unsigned LEB128 varint.
#[inline]
pub(crate) fn put_uvar(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
pub(crate) fn put_ivar(out: &mut Vec<u8>, v: i64) {
    put_uvar(out, ((v << 1) ^ (v >> 63)) as u64);
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_uvar(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

pub(crate) const CELL_NIL: u8 = 0;
pub(crate) const CELL_INT: u8 = 1;
pub(crate) const CELL_FLOAT: u8 = 2;
pub(crate) const CELL_FALSE: u8 = 3;
pub(crate) const CELL_TRUE: u8 = 4;
pub(crate) const CELL_TEXT: u8 = 5;
pub(crate) const CELL_REF: u8 = 6;

#[inline]
pub(crate) fn put_cell(out: &mut Vec<u8>, c: &Cell) {
    match c {
        Cell::Nil => out.push(CELL_NIL),
        Cell::Int(i) => {
            out.push(CELL_INT);
            put_ivar(out, *i);
        }
        Cell::Float(f) => {
            out.push(CELL_FLOAT);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Cell::Bool(false) => out.push(CELL_FALSE),
        Cell::Bool(true) => out.push(CELL_TRUE),
        Cell::Text(t) => {
            out.push(CELL_TEXT);
            put_str(out, t);
        }
        Cell::Ref(r) => {
            out.push(CELL_REF);
            put_ivar(out, *r);
        }
    }
}

/// [`put_cell`] of a value borrowed from the engine's columns (no allocation).
#[inline]
pub(crate) fn put_val(out: &mut Vec<u8>, v: ValRef<'_>) {
    match v {
        ValRef::Nil => out.push(CELL_NIL),
        ValRef::Int(i) => {
            out.push(CELL_INT);
            put_ivar(out, i);
        }
        ValRef::Float(f) => {
            out.push(CELL_FLOAT);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        ValRef::Bool(false) => out.push(CELL_FALSE),
        ValRef::Bool(true) => out.push(CELL_TRUE),
        ValRef::Text(t) => {
            out.push(CELL_TEXT);
            put_uvar(out, t.len() as u64);
            out.extend_from_slice(t);
        }
        ValRef::Ref(r) => {
            out.push(CELL_REF);
            put_ivar(out, r);
        }
    }
}

/// The stored schema with each table's indexes (log format 2, checkpoint format 3):
/// after a table's columns, the index count (uvar), then per index its kind byte
/// (0 hash, 1 unique, 2 sorted), column count (uvar) and column positions (uvar).
/// (Format 1's schema, without indexes, is only read.)
pub(crate) fn put_schema_indexed(out: &mut Vec<u8>, schema: &StoredSchema) {
    put_uvar(out, schema.len() as u64);
    for t in schema {
        put_str(out, &t.name);
        put_ivar(out, t.next_id);
        put_uvar(out, t.columns.len() as u64);
        for c in &t.columns {
            put_str(out, &c.name);
            match &c.ty {
                StoredType::Int => out.push(0),
                StoredType::Float => out.push(1),
                StoredType::Bool => out.push(2),
                StoredType::Text => out.push(3),
                StoredType::Ref(target) => {
                    out.push(4);
                    put_str(out, target);
                }
            }
            out.push(u8::from(c.nullable));
        }
        {
            let ixs = t.indexes.as_deref().unwrap_or_default();
            put_uvar(out, ixs.len() as u64);
            for ix in ixs {
                out.push(match ix.kind {
                    IndexKind::Hash => 0,
                    IndexKind::Unique => 1,
                    IndexKind::Sorted => 2,
                });
                put_uvar(out, ix.columns.len() as u64);
                for &c in &ix.columns {
                    put_uvar(out, c as u64);
                }
            }
        }
    }
}

/// A migration (`docs/schema.md`): the complete stored schema after it, and what a
/// reader that knows only the schema before it cannot derive by itself: renames (by
/// old and new name), drops, and the value existing rows got in each new column.
/// Table names in `renamed_columns`, `dropped_columns` and `filled` are the new ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Migration {
    pub schema: StoredSchema,
    /// `(old, new)`.
    pub renamed_tables: Vec<(String, String)>,
    /// `(table, old column, new column)`.
    pub renamed_columns: Vec<(String, String, String)>,
    pub dropped_tables: Vec<String>,
    /// `(table, column)`.
    pub dropped_columns: Vec<(String, String)>,
    /// `(table, column, the value every existing row got)`.
    pub filled: Vec<(String, String, Cell)>,
    /// The stored schema before the migration: what a reader that resumes after it
    /// from its checkpoint alone (a mirror stopped before it) changes from.
    pub previous: StoredSchema,
}

impl Migration {
    /// No rename, drop or filled column: the schema alone says what changed.
    pub(crate) fn renames_nothing(&self) -> bool {
        self.renamed_tables.is_empty()
            && self.renamed_columns.is_empty()
            && self.dropped_tables.is_empty()
            && self.dropped_columns.is_empty()
            && self.filled.is_empty()
    }
}

/// Appends a migration item (tag and body).
pub(crate) fn put_migration(out: &mut Vec<u8>, m: &Migration) {
    out.push(ITEM_MIGRATE);
    put_schema_indexed(out, &m.schema);
    put_uvar(out, m.renamed_tables.len() as u64);
    for (a, b) in &m.renamed_tables {
        put_str(out, a);
        put_str(out, b);
    }
    put_uvar(out, m.renamed_columns.len() as u64);
    for (t, a, b) in &m.renamed_columns {
        put_str(out, t);
        put_str(out, a);
        put_str(out, b);
    }
    put_uvar(out, m.dropped_tables.len() as u64);
    for t in &m.dropped_tables {
        put_str(out, t);
    }
    put_uvar(out, m.dropped_columns.len() as u64);
    for (t, c) in &m.dropped_columns {
        put_str(out, t);
        put_str(out, c);
    }
    put_uvar(out, m.filled.len() as u64);
    for (t, c, v) in &m.filled {
        put_str(out, t);
        put_str(out, c);
        put_cell(out, v);
    }
    put_schema_indexed(out, &m.previous);
}

/// A migration item is the first record of the log generation its migration starts
/// (the checkpoint before it holds the migrated tables): anywhere else it is damage,
/// which recovery, `verify` and the readers refuse alike. (A fuzzed log with a
/// migration to no tables in its middle was read three ways: recovery kept the
/// tables, the export reader showed their rows, `wo db checkpoint` took the schema
/// to be empty.)
pub(crate) fn misplaced_migration(lsn: u64, first_lsn: u64) -> Option<String> {
    (lsn != first_lsn).then(|| {
        format!(
            "record {lsn} holds a migration, which only the first record of a log generation (lsn {first_lsn}) can"
        )
    })
}

/// Item tags inside a log record's payload.
pub(crate) const ITEM_SCHEMA: u8 = 1;
pub(crate) const ITEM_INSERT: u8 = 2;
pub(crate) const ITEM_UPDATE: u8 = 3;
pub(crate) const ITEM_DELETE: u8 = 4;
/// A schema item whose tables carry their indexes (log format 2).
pub(crate) const ITEM_SCHEMA_INDEXED: u8 = 5;
/// A migration: the first item of the generation a migration starts (log format 2).
pub(crate) const ITEM_MIGRATE: u8 = 6;

/// One decoded change item (table numbers are stored positions).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Schema(StoredSchema),
    Migrate(Box<Migration>),
    Insert {
        table: u32,
        id: RowId,
        cells: Vec<Cell>,
    },
    Update {
        table: u32,
        id: RowId,
        col: usize,
        cell: Cell,
    },
    Delete {
        table: u32,
        id: RowId,
    },
}

/// A decoding error: what was wrong and where (an offset within the decoded buffer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodecError {
    pub at: usize,
    pub what: String,
}

/// A cursor over bytes read from disk; every read is bounds-checked.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }
    pub(crate) fn err(&self, what: impl Into<String>) -> CodecError {
        CodecError {
            at: self.pos,
            what: what.into(),
        }
    }
    #[inline]
    pub(crate) fn u8(&mut self) -> Result<u8, CodecError> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.err("unexpected end of data")),
        }
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        match self
            .pos
            .checked_add(n)
            .and_then(|end| self.buf.get(self.pos..end))
        {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.err(format!(
                "{n} bytes expected, {} left",
                self.buf.len() - self.pos
            ))),
        }
    }
    pub(crate) fn u64_le(&mut self) -> Result<u64, CodecError> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    #[inline]
    pub(crate) fn uvar(&mut self) -> Result<u64, CodecError> {
        let start = self.pos;
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                self.pos = start;
                return Err(self.err("varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                self.pos = start;
                return Err(self.err("varint longer than 10 bytes"));
            }
        }
    }
    #[inline]
    pub(crate) fn ivar(&mut self) -> Result<i64, CodecError> {
        let u = self.uvar()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }
    /// A count that must fit in the remaining bytes (each counted thing takes at least
    /// `min_size` bytes), so a damaged count cannot make us allocate gigabytes.
    pub(crate) fn count(&mut self, min_size: usize, what: &str) -> Result<usize, CodecError> {
        let at = self.pos;
        let n = self.uvar()?;
        let left = (self.buf.len() - self.pos) as u64;
        if n.saturating_mul(min_size as u64) > left {
            return Err(CodecError {
                at,
                what: format!("{what} count {n} exceeds the data left ({left} bytes)"),
            });
        }
        Ok(n as usize)
    }
    pub(crate) fn str(&mut self) -> Result<&'a str, CodecError> {
        let at = self.pos;
        let n = self.count(1, "string length")?;
        let b = self.bytes(n)?;
        std::str::from_utf8(b).map_err(|_| CodecError {
            at,
            what: "text is not valid UTF-8".into(),
        })
    }
    pub(crate) fn id(&mut self) -> Result<RowId, CodecError> {
        let at = self.pos;
        let id = self.ivar()?;
        if id < 1 {
            return Err(CodecError {
                at,
                what: format!("row id {id} is not positive"),
            });
        }
        Ok(id)
    }
    #[inline]
    pub(crate) fn cell(&mut self) -> Result<Cell, CodecError> {
        let at = self.pos;
        Ok(match self.u8()? {
            CELL_NIL => Cell::Nil,
            CELL_INT => Cell::Int(self.ivar()?),
            CELL_FLOAT => Cell::Float(f64::from_bits(self.u64_le()?)),
            CELL_FALSE => Cell::Bool(false),
            CELL_TRUE => Cell::Bool(true),
            CELL_TEXT => Cell::Text(Rc::from(self.str()?)),
            CELL_REF => Cell::Ref(self.id()?),
            t => {
                return Err(CodecError {
                    at,
                    what: format!("unknown cell tag {t}"),
                })
            }
        })
    }
    /// A stored schema without indexes.
    pub(crate) fn schema(&mut self) -> Result<StoredSchema, CodecError> {
        self.schema_as(false)
    }

    /// A stored schema, with indexes when `indexed`.
    pub(crate) fn schema_as(&mut self, indexed: bool) -> Result<StoredSchema, CodecError> {
        let n = self.count(3, "table")?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let name = self.str()?.to_string();
            let at = self.pos;
            let next_id = self.ivar()?;
            if next_id < 1 {
                return Err(CodecError {
                    at,
                    what: format!("table `{name}` has next id {next_id}"),
                });
            }
            let nc = self.count(3, "column")?;
            let mut columns: Vec<StoredColumn> = Vec::with_capacity(nc);
            let mut names = std::collections::HashSet::with_capacity(nc);
            for _ in 0..nc {
                let at = self.pos;
                let cname = self.str()?.to_string();
                // Columns are matched by name (schema evolution): a repeated name is
                // damage, not a table wo could have written. (A set: 64,000 columns
                // searched each other, helper-76.)
                if !names.insert(cname.clone()) {
                    return Err(CodecError {
                        at,
                        what: format!("table `{name}` has two columns named `{cname}`"),
                    });
                }
                let at = self.pos;
                let ty = match self.u8()? {
                    0 => StoredType::Int,
                    1 => StoredType::Float,
                    2 => StoredType::Bool,
                    3 => StoredType::Text,
                    4 => StoredType::Ref(self.str()?.to_string()),
                    t => {
                        return Err(CodecError {
                            at,
                            what: format!("unknown column type {t}"),
                        })
                    }
                };
                let at = self.pos;
                let nullable = match self.u8()? {
                    0 => false,
                    1 => true,
                    b => {
                        return Err(CodecError {
                            at,
                            what: format!("nullable flag {b} is not 0 or 1"),
                        })
                    }
                };
                columns.push(StoredColumn {
                    name: cname,
                    ty,
                    nullable,
                });
            }
            let indexes = if indexed {
                let ni = self.count(2, "index")?;
                let mut ixs = Vec::with_capacity(ni);
                for _ in 0..ni {
                    let at = self.pos;
                    let kind = match self.u8()? {
                        0 => IndexKind::Hash,
                        1 => IndexKind::Unique,
                        2 => IndexKind::Sorted,
                        k => {
                            return Err(CodecError {
                                at,
                                what: format!("unknown index kind {k}"),
                            })
                        }
                    };
                    let nc = self.count(1, "index column")?;
                    let mut cols = Vec::with_capacity(nc);
                    for _ in 0..nc {
                        let at = self.pos;
                        let c = self.uvar()?;
                        if c >= columns.len() as u64 {
                            return Err(CodecError {
                                at,
                                what: format!(
                                    "an index of `{name}` names column {c}, the table has {}",
                                    columns.len()
                                ),
                            });
                        }
                        cols.push(c as usize);
                    }
                    if nc == 0 || (kind == IndexKind::Sorted && nc != 1) {
                        return Err(CodecError {
                            at,
                            what: format!("an index of `{name}` has {nc} columns"),
                        });
                    }
                    ixs.push(IndexDef {
                        columns: cols,
                        kind,
                    });
                }
                Some(ixs)
            } else {
                None
            };
            out.push(StoredTable {
                name,
                columns,
                next_id,
                indexes,
            });
        }
        Ok(out)
    }
    /// One change item of a log record.
    pub(crate) fn item(&mut self) -> Result<Item, CodecError> {
        let at = self.pos;
        Ok(match self.u8()? {
            ITEM_SCHEMA => Item::Schema(self.schema()?),
            ITEM_SCHEMA_INDEXED => Item::Schema(self.schema_as(true)?),
            ITEM_MIGRATE => Item::Migrate(Box::new(self.migration()?)),
            ITEM_INSERT => {
                let table = self.table()?;
                let id = self.id()?;
                let n = self.count(1, "cell")?;
                let mut cells = Vec::with_capacity(n);
                for _ in 0..n {
                    cells.push(self.cell()?);
                }
                Item::Insert { table, id, cells }
            }
            ITEM_UPDATE => {
                let table = self.table()?;
                let id = self.id()?;
                let at = self.pos;
                let col = usize::try_from(self.uvar()?).map_err(|_| CodecError {
                    at,
                    what: "column out of range".into(),
                })?;
                let cell = self.cell()?;
                Item::Update {
                    table,
                    id,
                    col,
                    cell,
                }
            }
            ITEM_DELETE => {
                let table = self.table()?;
                let id = self.id()?;
                Item::Delete { table, id }
            }
            t => {
                return Err(CodecError {
                    at,
                    what: format!("unknown item tag {t}"),
                })
            }
        })
    }
    /// The head of a checkpoint's body: the stored schema (with indexes when
    /// `indexed`, version 3) and, in version 3, the migration the checkpoint carries
    /// out (a byte 0, or a migration item).
    pub(crate) fn checkpoint_head(
        &mut self,
        indexed: bool,
    ) -> Result<(StoredSchema, Option<Migration>), CodecError> {
        let schema = self.schema_as(indexed)?;
        if !indexed {
            return Ok((schema, None));
        }
        let at = self.pos;
        let m = match self.u8()? {
            0 => None,
            ITEM_MIGRATE => Some(self.migration()?),
            t => {
                return Err(CodecError {
                    at,
                    what: format!("expected 0 or a migration item, found tag {t}"),
                })
            }
        };
        if m.as_ref().is_some_and(|m| m.schema != schema) {
            return Err(CodecError {
                at,
                what: "the checkpoint's migration names another schema than the checkpoint's"
                    .into(),
            });
        }
        Ok((schema, m))
    }

    /// The body of a migration item.
    fn migration(&mut self) -> Result<Migration, CodecError> {
        let schema = self.schema_as(true)?;
        let mut m = Migration {
            schema,
            ..Migration::default()
        };
        for _ in 0..self.count(2, "table rename")? {
            m.renamed_tables
                .push((self.str()?.to_string(), self.str()?.to_string()));
        }
        for _ in 0..self.count(3, "column rename")? {
            m.renamed_columns.push((
                self.str()?.to_string(),
                self.str()?.to_string(),
                self.str()?.to_string(),
            ));
        }
        for _ in 0..self.count(1, "dropped table")? {
            m.dropped_tables.push(self.str()?.to_string());
        }
        for _ in 0..self.count(2, "dropped column")? {
            m.dropped_columns
                .push((self.str()?.to_string(), self.str()?.to_string()));
        }
        for _ in 0..self.count(3, "filled column")? {
            m.filled.push((
                self.str()?.to_string(),
                self.str()?.to_string(),
                self.cell()?,
            ));
        }
        m.previous = self.schema_as(true)?;
        Ok(m)
    }

    fn table(&mut self) -> Result<u32, CodecError> {
        let at = self.pos;
        u32::try_from(self.uvar()?).map_err(|_| CodecError {
            at,
            what: "table number out of range".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        for v in [0i64, 1, -1, 63, -64, 64, i64::MAX, i64::MIN, 1 << 40] {
            let mut out = Vec::new();
            put_ivar(&mut out, v);
            assert_eq!(Reader::new(&out).ivar(), Ok(v));
        }
        let overlong = [0xffu8; 11];
        assert!(Reader::new(&overlong).uvar().is_err());
        let mut r = Reader::new(&[0x05, b'a']);
        assert!(
            r.str().is_err(),
            "a length beyond the data is an error, not a panic"
        );
    }

    /// W6 of issue 13 (`fuzz/regressions/datadir/w6-repeated-column-name`): a stored
    /// table with two columns of one name could not be written by wo, and schema
    /// evolution matches columns by name, so its checkpoint did not reopen. Damage.
    #[test]
    fn a_stored_table_with_two_columns_of_one_name_is_damage() {
        let col = |name: &str| StoredColumn {
            name: name.into(),
            ty: StoredType::Int,
            nullable: false,
        };
        let table = |cols: Vec<StoredColumn>| StoredTable {
            name: "t".into(),
            columns: cols,
            next_id: 1,
            indexes: Some(Vec::new()),
        };
        let mut ok = Vec::new();
        put_schema_indexed(&mut ok, &vec![table(vec![col("a"), col("b")])]);
        assert!(Reader::new(&ok).schema_as(true).is_ok());
        let mut bad = Vec::new();
        put_schema_indexed(&mut bad, &vec![table(vec![col("a"), col("a")])]);
        let e = Reader::new(&bad).schema_as(true).unwrap_err();
        assert_eq!(e.what, "table `t` has two columns named `a`");
    }
}
