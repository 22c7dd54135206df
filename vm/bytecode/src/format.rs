//! The `.wob` file format: [`write_image`] serializes an [`Image`], [`read_image`]
//! decodes one and runs the verifier, so only verified images ever come out of a file.
//! The byte-by-byte layout, the version-bump rule and the verifier's guarantees are
//! specified in `docs/image-format.md`; this module is the one place that knows them.
//!
//! The reader treats its input as hostile: every length and count is checked against
//! the bytes that remain before anything is allocated, every value is range-checked,
//! and a CRC32 trailer catches accidental damage before any section is decoded.

use crate::image::{
    BuiltinRef, Class, Column, ColumnDefault, ColumnType, Const, Function, Image, Index, IndexKind,
    QueryAgg, QueryCol, QueryDesc, QueryPred, SrcPos, Table,
};
use crate::op::{DecodeError, Op, Reader};
use crate::types::{ClassIdx, Cmp, FuncIdx};
use crate::verify::{verify, VerifyError};

/// The first four bytes of every image.
pub const MAGIC: [u8; 4] = *b"WOB\0";

/// The image format version this build writes and reads.
///
/// Bump it for any change to opcodes (bytes, operands, operand order or widths), to the
/// header or section layout, or to the builtin catalogue's names and arities. Images of
/// any other version are refused with an error naming both versions.
///
/// Version 2 added the tables and queries sections, the database instructions
/// (`0x70`–`0x79`) and the `order_by` and `skip_take` builtins. Version 6 added the
/// renames (`@was`, `@table(was:)`) and literal defaults of table columns; version 5
/// images (the same without them) are still read. Version 8 added `TEXT_NEXT`
/// (`0x39`), version 9 `JUMP_UNLESS_EQ_K` (`0x3a`) and version 10 `LIST_ENTRY`
/// (`0x59`); older images, which cannot hold them, are read as they were.
pub const FORMAT_VERSION: u16 = 10;
/// The oldest version this build reads.
pub const OLDEST_VERSION: u16 = 5;

/// Magic, version, reserved u16.
const HEADER_LEN: usize = 8;
/// The CRC32 of everything before it.
const TRAILER_LEN: usize = 4;

/// The sections, in the order they appear; the discriminant is the tag byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Section {
    Files = 1,
    Consts = 2,
    Classes = 3,
    Builtins = 4,
    Program = 5,
    Functions = 6,
    Tables = 7,
    Queries = 8,
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Files => "files",
            Section::Consts => "constants",
            Section::Classes => "classes",
            Section::Builtins => "builtins",
            Section::Program => "program",
            Section::Functions => "functions",
            Section::Tables => "tables",
            Section::Queries => "queries",
        }
    }
}

/// Constant-pool entry tags.
const CONST_INT: u8 = 0;
const CONST_FLOAT: u8 = 1;
const CONST_TEXT: u8 = 2;

/// Column type tags (`Ref` is followed by the referenced table's index).
const COL_INT: u8 = 0;
const COL_FLOAT: u8 = 1;
const COL_BOOL: u8 = 2;
const COL_TEXT: u8 = 3;
const COL_REF: u8 = 4;

/// Index kind tags.
const INDEX_HASH: u8 = 0;
const INDEX_UNIQUE: u8 = 1;
const INDEX_SORTED: u8 = 2;

/// Query column tags: the row id, or a column position (followed by a `u16`).
const QCOL_ID: u8 = 0;
const QCOL_COLUMN: u8 = 1;

/// Query aggregate tags; `Sum` to `Avg` are followed by a query column.
const AGG_ROWS: u8 = 0;
const AGG_COUNT: u8 = 1;
const AGG_EXISTS: u8 = 2;
const AGG_SUM: u8 = 3;
const AGG_MIN: u8 = 4;
const AGG_MAX: u8 = 5;
const AGG_AVG: u8 = 6;

/// Why bytes are not a loadable image. The CLI prints these after
/// ``wo: invalid image `path`: ``; byte offsets count from the start of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    #[error("not a wo image (it does not start with the bytes `WOB\\0`)")]
    BadMagic,
    #[error(
        "image format version {found} is older than version {supported}, the oldest this wo \
         reads; rebuild the image from source with `wo build`"
    )]
    TooOld { found: u16, supported: u16 },
    #[error(
        "image format version {found} is newer than version {supported}, the one this wo \
         reads; use a newer wo or rebuild the image from source with `wo build`"
    )]
    TooNew { found: u16, supported: u16 },
    #[error(
        "checksum mismatch (stored 0x{stored:08x}, computed 0x{computed:08x}): the file is \
         damaged or truncated"
    )]
    Checksum { stored: u32, computed: u32 },
    #[error("unexpected end of data reading {what} at byte {at}")]
    Truncated { what: &'static str, at: usize },
    #[error(
        "expected the {expected} section (tag {expected_tag}) at byte {at}, found tag {found}"
    )]
    BadSection {
        expected: &'static str,
        expected_tag: u8,
        found: u8,
        at: usize,
    },
    #[error("the {section} section has {n} unexpected trailing bytes at byte {at}")]
    TrailingBytes {
        section: &'static str,
        n: usize,
        at: usize,
    },
    #[error("{n} unexpected bytes after the last section at byte {at}")]
    TrailingData { n: usize, at: usize },
    #[error(
        "{what} count {count} at byte {at} is more than the {remaining} bytes that remain can hold"
    )]
    CountTooLarge {
        what: &'static str,
        count: u32,
        remaining: usize,
        at: usize,
    },
    #[error("{what} at byte {at} is not valid UTF-8")]
    BadUtf8 { what: &'static str, at: usize },
    #[error("invalid {what} {value} at byte {at}")]
    BadValue {
        what: &'static str,
        value: u64,
        at: usize,
    },
    #[error("function `{function}` pc {pc}: {error}")]
    Code {
        function: String,
        pc: usize,
        error: DecodeError,
    },
    #[error("function `{function}`: debug table {problem}")]
    DebugTable { function: String, problem: String },
    #[error(transparent)]
    Verify(#[from] VerifyError),
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

/// Serializes an image. Write only verified images (the compiler's output is): the
/// reader verifies, so an image that breaks a verifier rule is written but refused when
/// read back.
///
/// # Panics
///
/// When a string, table or function body is longer than a u32 length can state (4 GiB),
/// which no image that fits in memory alongside its compiler comes near.
pub fn write_image(image: &Image) -> Vec<u8> {
    let mut w = Writer::default();
    w.out.extend_from_slice(&MAGIC);
    w.u16(FORMAT_VERSION);
    w.u16(0); // reserved

    w.section(Section::Files, |w| {
        w.len(image.files.len());
        for file in &image.files {
            w.str(file);
        }
    });
    w.section(Section::Consts, |w| {
        w.len(image.consts.len());
        for k in &image.consts {
            match k {
                Const::Int(i) => {
                    w.u8(CONST_INT);
                    w.out.extend_from_slice(&i.to_le_bytes());
                }
                Const::Float(f) => {
                    w.u8(CONST_FLOAT);
                    w.out.extend_from_slice(&f.to_bits().to_le_bytes());
                }
                Const::Text(t) => {
                    w.u8(CONST_TEXT);
                    w.str(t);
                }
            }
        }
    });
    w.section(Section::Classes, |w| {
        w.len(image.classes.len());
        for class in &image.classes {
            w.str(&class.name);
            w.len(class.fields.len());
            for field in &class.fields {
                w.str(field);
            }
        }
    });
    w.section(Section::Builtins, |w| {
        w.len(image.builtins.len());
        for b in &image.builtins {
            w.str(&b.name);
            w.u16(b.arity);
        }
    });
    w.section(Section::Program, |w| {
        w.u32(image.n_globals);
        match image.init {
            Some(f) => {
                w.u8(1);
                w.u32(f.0);
            }
            None => {
                w.u8(0);
                w.u32(0);
            }
        }
        w.u32(image.entry.0);
    });
    w.section(Section::Functions, |w| {
        w.len(image.functions.len());
        for f in &image.functions {
            w.str(&f.name);
            w.u16(f.arity);
            w.u16(f.n_regs);
            let mut code = Vec::new();
            for op in &f.code {
                op.encode(&mut code);
            }
            w.bytes(&code);
            w.bytes(&encode_positions(&f.pos));
        }
    });
    w.section(Section::Tables, |w| {
        w.len(image.tables.len());
        for t in &image.tables {
            write_table(w, t);
        }
    });
    w.section(Section::Queries, |w| {
        w.len(image.queries.len());
        for q in &image.queries {
            write_query(w, q);
        }
    });

    let crc = crc32fast::hash(&w.out);
    w.u32(crc);
    w.out
}

fn write_table(w: &mut Writer, t: &Table) {
    w.u32(t.class.0);
    w.str(&t.name);
    w.u8(u8::from(t.durable));
    w.len(t.columns.len());
    for c in &t.columns {
        w.str(&c.name);
        match c.ty {
            ColumnType::Int => w.u8(COL_INT),
            ColumnType::Float => w.u8(COL_FLOAT),
            ColumnType::Bool => w.u8(COL_BOOL),
            ColumnType::Text => w.u8(COL_TEXT),
            ColumnType::Ref(target) => {
                w.u8(COL_REF);
                w.u32(target);
            }
        }
        w.u8(u8::from(c.nullable));
        write_was(w, c.was.as_deref());
        match &c.default {
            None => w.u8(DEFAULT_NONE),
            Some(ColumnDefault::Nil) => w.u8(DEFAULT_NIL),
            Some(ColumnDefault::Int(i)) => {
                w.u8(DEFAULT_INT);
                w.out.extend_from_slice(&i.to_le_bytes());
            }
            Some(ColumnDefault::Float(f)) => {
                w.u8(DEFAULT_FLOAT);
                w.out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Some(ColumnDefault::Bool(false)) => w.u8(DEFAULT_FALSE),
            Some(ColumnDefault::Bool(true)) => w.u8(DEFAULT_TRUE),
            Some(ColumnDefault::Text(t)) => {
                w.u8(DEFAULT_TEXT);
                w.str(t);
            }
        }
    }
    w.len(t.indexes.len());
    for index in &t.indexes {
        w.u8(match index.kind {
            IndexKind::Hash => INDEX_HASH,
            IndexKind::Unique => INDEX_UNIQUE,
            IndexKind::Sorted => INDEX_SORTED,
        });
        w.len(index.columns.len());
        for &col in &index.columns {
            w.u16(col);
        }
    }
    write_was(w, t.was.as_deref());
}

fn write_query(w: &mut Writer, q: &QueryDesc) {
    w.u32(q.table);
    w.len(q.preds.len());
    for p in &q.preds {
        w.query_col(p.col);
        w.u8(p.op as u8);
        w.u16(p.arg);
    }
    w.len(q.order.len());
    for &(col, desc) in &q.order {
        w.query_col(col);
        w.u8(u8::from(desc));
    }
    for arg in [q.skip, q.take] {
        match arg {
            Some(arg) => {
                w.u8(1);
                w.u16(arg);
            }
            None => {
                w.u8(0);
                w.u16(0);
            }
        }
    }
    w.u16(q.n_args);
    match q.agg {
        QueryAgg::Rows => w.u8(AGG_ROWS),
        QueryAgg::Count => w.u8(AGG_COUNT),
        QueryAgg::Exists => w.u8(AGG_EXISTS),
        QueryAgg::Sum(col) | QueryAgg::Min(col) | QueryAgg::Max(col) | QueryAgg::Avg(col) => {
            w.u8(match q.agg {
                QueryAgg::Sum(_) => AGG_SUM,
                QueryAgg::Min(_) => AGG_MIN,
                QueryAgg::Max(_) => AGG_MAX,
                _ => AGG_AVG,
            });
            w.query_col(col);
        }
    }
}

/// Run-length and delta encoding of the per-instruction positions: a sequence of runs,
/// each `count` (ULEB128, ≥ 1) followed by the zigzag SLEB128 deltas of file, line and
/// column from the previous run (the first run's deltas are from 0:0:0).
fn encode_positions(pos: &[SrcPos]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut prev = SrcPos::default();
    let mut i = 0;
    while let Some(&cur) = pos.get(i) {
        let run = pos[i..].iter().take_while(|&&p| p == cur).count();
        put_uleb(
            &mut out,
            u64::try_from(run).expect("a run is shorter than 2^64"),
        );
        put_sleb(&mut out, i64::from(cur.file) - i64::from(prev.file));
        put_sleb(&mut out, i64::from(cur.line) - i64::from(prev.line));
        put_sleb(&mut out, i64::from(cur.col) - i64::from(prev.col));
        prev = cur;
        i += run;
    }
    out
}

fn put_uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let low = u8::try_from(v & 0x7f).expect("seven bits fit a byte");
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

fn put_sleb(out: &mut Vec<u8>, v: i64) {
    // Zigzag: 0, -1, 1, -2, … map to 0, 1, 2, 3, … so small magnitudes stay small.
    let zigzag = (v << 1) ^ (v >> 63);
    put_uleb(out, u64::from_ne_bytes(zigzag.to_ne_bytes()));
}

#[derive(Default)]
struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    fn u16(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    fn query_col(&mut self, col: QueryCol) {
        match col {
            QueryCol::Id => self.u8(QCOL_ID),
            QueryCol::Col(c) => {
                self.u8(QCOL_COLUMN);
                self.u16(c);
            }
        }
    }

    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).expect("image tables and strings are shorter than 4 GiB"));
    }

    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.out.extend_from_slice(b);
    }

    /// Writes the tag, a length placeholder, the body, then patches the length.
    fn section(&mut self, s: Section, body: impl FnOnce(&mut Writer)) {
        self.u8(s as u8);
        let at = self.out.len();
        self.u32(0);
        body(self);
        let n = self.out.len() - at - 4;
        let n = u32::try_from(n).expect("image sections are shorter than 4 GiB");
        self.out[at..at + 4].copy_from_slice(&n.to_le_bytes());
    }
}

// ---------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------

/// Decodes and verifies an image. Any damage, any value out of range and any image that
/// breaks a verifier rule is an error; nothing in `bytes` can make this panic or
/// allocate much more than `bytes.len()` times a small constant.
pub fn read_image(bytes: &[u8]) -> Result<Image, ImageError> {
    let image = decode(bytes)?;
    verify(&image)?;
    Ok(image)
}

fn decode(bytes: &[u8]) -> Result<Image, ImageError> {
    if bytes.get(..MAGIC.len()) != Some(&MAGIC[..]) {
        return Err(ImageError::BadMagic);
    }
    // The version comes before the checksum: an image of another version may lay out
    // (or checksum) its bytes differently, and its version is the useful message.
    let mut header = Cursor::new(bytes, 0);
    header.take(MAGIC.len(), "the magic bytes")?;
    let version = header.u16("the format version")?;
    if version < OLDEST_VERSION {
        return Err(ImageError::TooOld {
            found: version,
            supported: OLDEST_VERSION,
        });
    }
    if version > FORMAT_VERSION {
        return Err(ImageError::TooNew {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    if bytes.len() < HEADER_LEN + TRAILER_LEN {
        return Err(ImageError::Truncated {
            what: "the header and checksum",
            at: bytes.len(),
        });
    }
    let (body, trailer) = bytes.split_at(bytes.len() - TRAILER_LEN);
    let mut stored = [0u8; TRAILER_LEN];
    stored.copy_from_slice(trailer);
    let stored = u32::from_le_bytes(stored);
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(ImageError::Checksum { stored, computed });
    }

    let mut r = Cursor::new(body, 0);
    r.take(MAGIC.len() + 2, "the header")?;
    let reserved_at = r.abs();
    let reserved = r.u16("the reserved header field")?;
    if reserved != 0 {
        return Err(ImageError::BadValue {
            what: "reserved header field",
            value: u64::from(reserved),
            at: reserved_at,
        });
    }

    let mut s = r.section(Section::Files)?;
    let n = s.count("file", 4)?;
    let mut files = Vec::with_capacity(n);
    for _ in 0..n {
        files.push(s.str("a file name")?);
    }
    s.finish(Section::Files)?;

    let mut s = r.section(Section::Consts)?;
    let n = s.count("constant", 5)?;
    let mut consts = Vec::with_capacity(n);
    for _ in 0..n {
        let at = s.abs();
        consts.push(match s.u8("a constant tag")? {
            CONST_INT => Const::Int(i64::from_le_bytes(s.array("an Int constant")?)),
            CONST_FLOAT => Const::Float(f64::from_bits(u64::from_le_bytes(
                s.array("a Float constant")?,
            ))),
            CONST_TEXT => Const::Text(s.str("a Text constant")?),
            tag => {
                return Err(ImageError::BadValue {
                    what: "constant tag",
                    value: u64::from(tag),
                    at,
                })
            }
        });
    }
    s.finish(Section::Consts)?;

    let mut s = r.section(Section::Classes)?;
    let n = s.count("class", 8)?;
    let mut classes = Vec::with_capacity(n);
    for _ in 0..n {
        let name = s.str("a class name")?;
        let n_fields = s.count("field", 4)?;
        let mut fields = Vec::with_capacity(n_fields);
        for _ in 0..n_fields {
            fields.push(s.str("a field name")?);
        }
        classes.push(Class { name, fields });
    }
    s.finish(Section::Classes)?;

    let mut s = r.section(Section::Builtins)?;
    let n = s.count("builtin", 6)?;
    let mut builtins = Vec::with_capacity(n);
    for _ in 0..n {
        let name = s.str("a builtin name")?;
        let arity = s.u16("a builtin arity")?;
        builtins.push(BuiltinRef { name, arity });
    }
    s.finish(Section::Builtins)?;

    let mut s = r.section(Section::Program)?;
    let n_globals = s.u32("the global count")?;
    let flag_at = s.abs();
    let has_init = s.u8("the init flag")?;
    let init_at = s.abs();
    let init = s.u32("the init function")?;
    let init = match (has_init, init) {
        (0, 0) => None,
        (1, f) => Some(FuncIdx(f)),
        (0, f) => {
            return Err(ImageError::BadValue {
                what: "init function for an image without one",
                value: u64::from(f),
                at: init_at,
            })
        }
        (flag, _) => {
            return Err(ImageError::BadValue {
                what: "init flag",
                value: u64::from(flag),
                at: flag_at,
            })
        }
    };
    let entry = FuncIdx(s.u32("the entry function")?);
    s.finish(Section::Program)?;

    let mut s = r.section(Section::Functions)?;
    let n = s.count("function", 16)?;
    let mut functions = Vec::with_capacity(n);
    for _ in 0..n {
        functions.push(read_function(&mut s, version)?);
    }
    s.finish(Section::Functions)?;

    let mut s = r.section(Section::Tables)?;
    let n = s.count("table", 17)?;
    let mut tables = Vec::with_capacity(n);
    for _ in 0..n {
        tables.push(read_table(&mut s, version)?);
    }
    s.finish(Section::Tables)?;

    let mut s = r.section(Section::Queries)?;
    let n = s.count("query", 21)?;
    let mut queries = Vec::with_capacity(n);
    for _ in 0..n {
        queries.push(read_query(&mut s)?);
    }
    s.finish(Section::Queries)?;

    if !r.at_end() {
        return Err(ImageError::TrailingData {
            n: r.remaining(),
            at: r.abs(),
        });
    }

    Ok(Image {
        files,
        consts,
        functions,
        classes,
        builtins,
        tables,
        queries,
        n_globals,
        init,
        entry,
    })
}

/// The first format version that has the instruction `op` (each opcode added after
/// the oldest version read is listed): an older image holding it was not written by a
/// wo of its version, and an older wo would refuse it.
pub fn since_version(op: &Op) -> u16 {
    match op {
        Op::TextNext { .. } => 8,
        Op::JumpUnlessEqConst { .. } => 9,
        Op::ListEntry { .. } => 10,
        _ => OLDEST_VERSION,
    }
}

fn read_function(s: &mut Cursor<'_>, version: u16) -> Result<Function, ImageError> {
    let name = s.str("a function name")?;
    let arity = s.u16("a function arity")?;
    let n_regs = s.u16("a register count")?;

    let code_bytes = s.sized("function code")?;
    let code_base = s.abs() - code_bytes.len();
    let mut r = Reader::new(code_bytes);
    let mut code = Vec::new();
    while !r.at_end() {
        let at = r.pos;
        let op = Op::decode(&mut r).map_err(|error| ImageError::Code {
            function: name.clone(),
            pc: code.len(),
            error: in_file(error, code_base),
        })?;
        if since_version(&op) > version {
            return Err(ImageError::Code {
                function: name,
                pc: code.len(),
                error: DecodeError::UnknownOpcode {
                    code: op.code(),
                    at: code_base + at,
                },
            });
        }
        code.push(op);
    }

    let debug = s.sized("a debug table")?;
    let pos = decode_positions(debug, s.abs() - debug.len(), code.len(), &name)?;
    Ok(Function {
        name,
        arity,
        n_regs,
        code,
        pos,
    })
}

fn read_table(s: &mut Cursor<'_>, version: u16) -> Result<Table, ImageError> {
    let class = ClassIdx(s.u32("a table's class")?);
    let name = s.str("a table name")?;
    let durable = s.flag("the durable flag")?;
    let n_columns = s.count("column", 6)?;
    let mut columns = Vec::with_capacity(n_columns);
    for _ in 0..n_columns {
        let name = s.str("a column name")?;
        let at = s.abs();
        let ty = match s.u8("a column type")? {
            COL_INT => ColumnType::Int,
            COL_FLOAT => ColumnType::Float,
            COL_BOOL => ColumnType::Bool,
            COL_TEXT => ColumnType::Text,
            COL_REF => ColumnType::Ref(s.u32("a referenced table")?),
            tag => {
                return Err(ImageError::BadValue {
                    what: "column type tag",
                    value: u64::from(tag),
                    at,
                })
            }
        };
        let nullable = s.flag("the nullable flag")?;
        let (was, default) = if version >= 6 {
            (read_was(s)?, read_default(s)?)
        } else {
            (None, None)
        };
        columns.push(Column {
            name,
            ty,
            nullable,
            was,
            default,
        });
    }
    let n_indexes = s.count("index", 5)?;
    let mut indexes = Vec::with_capacity(n_indexes);
    for _ in 0..n_indexes {
        let at = s.abs();
        let kind = match s.u8("an index kind")? {
            INDEX_HASH => IndexKind::Hash,
            INDEX_UNIQUE => IndexKind::Unique,
            INDEX_SORTED => IndexKind::Sorted,
            tag => {
                return Err(ImageError::BadValue {
                    what: "index kind",
                    value: u64::from(tag),
                    at,
                })
            }
        };
        let n = s.count("index column", 2)?;
        let mut cols = Vec::with_capacity(n);
        for _ in 0..n {
            cols.push(s.u16("an index column")?);
        }
        indexes.push(Index {
            columns: cols,
            kind,
        });
    }
    let was = if version >= 6 { read_was(s)? } else { None };
    Ok(Table {
        class,
        name,
        columns,
        indexes,
        durable,
        was,
    })
}

/// A former name: a flag, then the name.
fn read_was(s: &mut Cursor<'_>) -> Result<Option<String>, ImageError> {
    Ok(if s.flag("the rename flag")? {
        Some(s.str("a former name")?)
    } else {
        None
    })
}

fn read_default(s: &mut Cursor<'_>) -> Result<Option<ColumnDefault>, ImageError> {
    let at = s.abs();
    Ok(match s.u8("a column default tag")? {
        DEFAULT_NONE => None,
        DEFAULT_NIL => Some(ColumnDefault::Nil),
        DEFAULT_INT => Some(ColumnDefault::Int(i64::from_le_bytes(
            s.array("an Int default")?,
        ))),
        DEFAULT_FLOAT => Some(ColumnDefault::Float(f64::from_le_bytes(
            s.array("a Float default")?,
        ))),
        DEFAULT_FALSE => Some(ColumnDefault::Bool(false)),
        DEFAULT_TRUE => Some(ColumnDefault::Bool(true)),
        DEFAULT_TEXT => Some(ColumnDefault::Text(s.str("a Text default")?)),
        tag => {
            return Err(ImageError::BadValue {
                what: "column default tag",
                value: u64::from(tag),
                at,
            })
        }
    })
}

const DEFAULT_NONE: u8 = 0;
const DEFAULT_NIL: u8 = 1;
const DEFAULT_INT: u8 = 2;
const DEFAULT_FLOAT: u8 = 3;
const DEFAULT_FALSE: u8 = 4;
const DEFAULT_TRUE: u8 = 5;
const DEFAULT_TEXT: u8 = 6;

fn write_was(w: &mut Writer, was: Option<&str>) {
    match was {
        Some(n) => {
            w.u8(1);
            w.str(n);
        }
        None => w.u8(0),
    }
}

fn read_query(s: &mut Cursor<'_>) -> Result<QueryDesc, ImageError> {
    let table = s.u32("a query's table")?;
    let n_preds = s.count("predicate", 4)?;
    let mut preds = Vec::with_capacity(n_preds);
    for _ in 0..n_preds {
        let col = s.query_col()?;
        let at = s.abs();
        let v = s.u8("a comparison")?;
        let op = Cmp::from_u8(v).ok_or(ImageError::BadValue {
            what: "comparison",
            value: u64::from(v),
            at,
        })?;
        let arg = s.u16("a predicate argument")?;
        preds.push(QueryPred { col, op, arg });
    }
    let n_order = s.count("order key", 2)?;
    let mut order = Vec::with_capacity(n_order);
    for _ in 0..n_order {
        let col = s.query_col()?;
        let desc = s.flag("the descending flag")?;
        order.push((col, desc));
    }
    let skip = s.optional_arg("the skip flag", "the skip argument")?;
    let take = s.optional_arg("the take flag", "the take argument")?;
    let n_args = s.u16("the argument count")?;
    let at = s.abs();
    let agg = match s.u8("an aggregate")? {
        AGG_ROWS => QueryAgg::Rows,
        AGG_COUNT => QueryAgg::Count,
        AGG_EXISTS => QueryAgg::Exists,
        AGG_SUM => QueryAgg::Sum(s.query_col()?),
        AGG_MIN => QueryAgg::Min(s.query_col()?),
        AGG_MAX => QueryAgg::Max(s.query_col()?),
        AGG_AVG => QueryAgg::Avg(s.query_col()?),
        tag => {
            return Err(ImageError::BadValue {
                what: "aggregate tag",
                value: u64::from(tag),
                at,
            })
        }
    };
    Ok(QueryDesc {
        table,
        preds,
        order,
        skip,
        take,
        n_args,
        agg,
    })
}

/// Moves a decode error's offset from the start of a function's code to the start of
/// the file, like every other offset in an [`ImageError`].
fn in_file(error: DecodeError, base: usize) -> DecodeError {
    match error {
        DecodeError::Truncated(at) => DecodeError::Truncated(base + at),
        DecodeError::UnknownOpcode { code, at } => DecodeError::UnknownOpcode {
            code,
            at: base + at,
        },
        DecodeError::BadOperand { value, at } => DecodeError::BadOperand {
            value,
            at: base + at,
        },
    }
}

/// Decodes the runs [`encode_positions`] writes; they must cover exactly `n_code`
/// instructions, so the allocation is bounded by the code already decoded.
fn decode_positions(
    bytes: &[u8],
    base: usize,
    n_code: usize,
    function: &str,
) -> Result<Vec<SrcPos>, ImageError> {
    let problem = |problem: String| ImageError::DebugTable {
        function: function.to_string(),
        problem,
    };
    let mut d = Cursor::new(bytes, base);
    let mut pos = Vec::with_capacity(n_code);
    let mut cur = SrcPos::default();
    while !d.at_end() {
        let at = d.abs();
        let run = d.uleb("a debug run length")?;
        let left = n_code - pos.len();
        let run = match usize::try_from(run) {
            Ok(run) if (1..=left).contains(&run) => run,
            _ => {
                return Err(problem(format!(
                    "has a run of {run} instructions at byte {at} where {left} remain"
                )))
            }
        };
        cur.file = apply_delta(cur.file, d.sleb("a debug file delta")?)
            .ok_or_else(|| problem(format!("file index out of range at byte {at}")))?;
        cur.line = apply_delta(cur.line, d.sleb("a debug line delta")?)
            .ok_or_else(|| problem(format!("line out of range at byte {at}")))?;
        cur.col = apply_delta(cur.col, d.sleb("a debug column delta")?)
            .ok_or_else(|| problem(format!("column out of range at byte {at}")))?;
        pos.resize(pos.len() + run, cur);
    }
    if pos.len() != n_code {
        return Err(problem(format!(
            "covers {} of the {n_code} instructions",
            pos.len()
        )));
    }
    Ok(pos)
}

fn apply_delta(prev: u32, delta: i64) -> Option<u32> {
    i64::from(prev)
        .checked_add(delta)
        .and_then(|v| u32::try_from(v).ok())
}

/// A bounds-checked view of part of the input; `base` is the absolute offset of
/// `bytes[0]`, so errors name file offsets.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8], base: usize) -> Cursor<'a> {
        Cursor {
            bytes,
            pos: 0,
            base,
        }
    }

    fn abs(&self) -> usize {
        self.base + self.pos
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ImageError> {
        if n > self.remaining() {
            return Err(ImageError::Truncated {
                what,
                at: self.abs(),
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ImageError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, ImageError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, ImageError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, ImageError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// A `u8` that must be 0 (false) or 1 (true).
    fn flag(&mut self, what: &'static str) -> Result<bool, ImageError> {
        let at = self.abs();
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ImageError::BadValue {
                what: what.strip_prefix("the ").unwrap_or(what),
                value: u64::from(v),
                at,
            }),
        }
    }

    /// A query column: tag 0 (the row id) or tag 1 and a `u16` column position.
    fn query_col(&mut self) -> Result<QueryCol, ImageError> {
        let at = self.abs();
        match self.u8("a query column tag")? {
            QCOL_ID => Ok(QueryCol::Id),
            QCOL_COLUMN => Ok(QueryCol::Col(self.u16("a query column")?)),
            tag => Err(ImageError::BadValue {
                what: "query column tag",
                value: u64::from(tag),
                at,
            }),
        }
    }

    /// A presence flag and a `u16` argument position (0 when absent), as `skip` and
    /// `take` are stored.
    fn optional_arg(
        &mut self,
        flag: &'static str,
        what: &'static str,
    ) -> Result<Option<u16>, ImageError> {
        let present = self.flag(flag)?;
        let at = self.abs();
        let arg = self.u16(what)?;
        match (present, arg) {
            (true, arg) => Ok(Some(arg)),
            (false, 0) => Ok(None),
            (false, arg) => Err(ImageError::BadValue {
                what: "argument position for an absent skip or take",
                value: u64::from(arg),
                at,
            }),
        }
    }

    /// A u32 length, then that many bytes.
    fn sized(&mut self, what: &'static str) -> Result<&'a [u8], ImageError> {
        let n = self.u32(what)?;
        let n = usize::try_from(n).map_err(|_| ImageError::Truncated {
            what,
            at: self.abs(),
        })?;
        self.take(n, what)
    }

    fn str(&mut self, what: &'static str) -> Result<String, ImageError> {
        let at = self.abs();
        let bytes = self.sized(what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(ImageError::BadUtf8 { what, at }),
        }
    }

    /// A u32 element count, refused when `count * min_size` bytes (each element's
    /// smallest encoding) do not remain: callers may then allocate `count` elements.
    fn count(&mut self, what: &'static str, min_size: usize) -> Result<usize, ImageError> {
        let at = self.abs();
        let count = self.u32(what)?;
        let remaining = self.remaining();
        match usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(min_size).map(|bytes| (n, bytes)))
        {
            Some((n, bytes)) if bytes <= remaining => Ok(n),
            _ => Err(ImageError::CountTooLarge {
                what,
                count,
                remaining,
                at,
            }),
        }
    }

    /// A section header (tag, u32 length), returning a cursor over its body.
    fn section(&mut self, s: Section) -> Result<Cursor<'a>, ImageError> {
        let at = self.abs();
        let tag = self.u8("a section tag")?;
        if tag != s as u8 {
            return Err(ImageError::BadSection {
                expected: s.name(),
                expected_tag: s as u8,
                found: tag,
                at,
            });
        }
        let body = self.sized(s.name())?;
        Ok(Cursor::new(body, self.abs() - body.len()))
    }

    fn finish(&self, s: Section) -> Result<(), ImageError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(ImageError::TrailingBytes {
                section: s.name(),
                n: self.remaining(),
                at: self.abs(),
            })
        }
    }

    /// An unsigned LEB128 of at most 10 bytes, refused when overlong or over 64 bits,
    /// so each value has exactly one encoding.
    fn uleb(&mut self, what: &'static str) -> Result<u64, ImageError> {
        let at = self.abs();
        let mut v: u64 = 0;
        for i in 0..10u32 {
            let byte = self.u8(what)?;
            let low = u64::from(byte & 0x7f);
            if i == 9 && byte > 1 {
                return Err(ImageError::BadValue {
                    what: "varint (over 64 bits)",
                    value: u64::from(byte),
                    at,
                });
            }
            v |= low << (7 * i);
            if byte & 0x80 == 0 {
                if i > 0 && byte == 0 {
                    return Err(ImageError::BadValue {
                        what: "varint (overlong encoding)",
                        value: v,
                        at,
                    });
                }
                return Ok(v);
            }
        }
        Err(ImageError::BadValue {
            what: "varint (longer than 10 bytes)",
            value: v,
            at,
        })
    }

    /// A zigzag-encoded signed LEB128.
    fn sleb(&mut self, what: &'static str) -> Result<i64, ImageError> {
        let u = self.uleb(what)?;
        let magnitude = i64::try_from(u >> 1).map_err(|_| ImageError::BadValue {
            what,
            value: u,
            at: self.abs(),
        })?;
        Ok(if u & 1 == 0 {
            magnitude
        } else {
            -magnitude - 1
        })
    }
}
