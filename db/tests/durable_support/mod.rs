//! Shared pieces of the durability tests: a schema with every column kind, unique and
//! foreign keys, a deterministic workload of statements and transactions (some of
//! which fail in the engine), and a snapshot of the durable state that the tests
//! compare against what recovery brings back.

#![allow(dead_code)] // Each test binary uses a different part of this module.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use wo_db::durable::{self, CommitOutcome, DataDir, Failure, OpenError, Options, SimStorage};
use wo_db::{Cell, ColType, Column, Db, IndexDef, IndexKind, RowId, Schema, TableDef, TableId};

pub const DEPTS: TableId = 0;
pub const EMPS: TableId = 1;
pub const SCRATCH: TableId = 2;

fn col(name: &str, ty: ColType, nullable: bool) -> Column {
    Column {
        name: name.into(),
        ty,
        nullable,
    }
}

/// `depts(name Text @unique)`, `emps(name, salary, dept ref depts, manager ?ref emps,
/// score ?Float, active Bool)` with a hash index on dept and a sorted one on salary,
/// and `scratch(x Int)` which is not durable.
pub fn schema() -> Schema {
    Schema {
        tables: vec![
            TableDef {
                name: "depts".into(),
                columns: vec![col("name", ColType::Text, false)],
                indexes: vec![IndexDef {
                    columns: vec![0],
                    kind: IndexKind::Unique,
                }],
                durable: true,
            },
            TableDef {
                name: "emps".into(),
                columns: vec![
                    col("name", ColType::Text, false),
                    col("salary", ColType::Int, false),
                    col("dept", ColType::Ref(DEPTS), false),
                    col("manager", ColType::Ref(EMPS), true),
                    col("score", ColType::Float, true),
                    col("active", ColType::Bool, false),
                ],
                indexes: vec![
                    IndexDef {
                        columns: vec![2],
                        kind: IndexKind::Hash,
                    },
                    IndexDef {
                        columns: vec![1],
                        kind: IndexKind::Sorted,
                    },
                ],
                durable: true,
            },
            TableDef {
                name: "scratch".into(),
                columns: vec![col("x", ColType::Int, false)],
                indexes: vec![],
                durable: false,
            },
        ],
    }
}

pub fn sim_options(sim: &SimStorage) -> Options {
    Options {
        storage: Arc::new(sim.clone()),
        preallocate: 0,
        auto_checkpoint: false,
        ..Options::default()
    }
}

/// What the crash matrices open with: automatic checkpoints every KiB of log (so
/// crashes land inside them too), and preallocation if asked.
pub fn crash_options(sim: &SimStorage, prealloc: bool) -> Options {
    Options {
        storage: Arc::new(sim.clone()),
        preallocate: if prealloc { 16 << 10 } else { 0 },
        auto_checkpoint: true,
        checkpoint_min: 1 << 10,
        ..Options::default()
    }
}

pub fn open_sim(sim: &SimStorage, dir: &Path) -> Result<(DataDir, Db), OpenError> {
    durable::open(dir, schema(), sim_options(sim))
}

/// The durable state: per durable table, its next id and its live rows, with cells
/// as their Debug text (exact: Float bits, Text content).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State(pub Vec<(RowId, Vec<(RowId, String)>)>);

pub fn state(db: &Db) -> State {
    let s = db.schema();
    State(
        (0..s.tables.len() as TableId)
            .filter(|&t| s.tables[t as usize].durable)
            .map(|t| {
                (
                    db.next_id(t),
                    db.rows(t)
                        .map(|(id, cells)| (id, format!("{cells:?}")))
                        .collect(),
                )
            })
            .collect(),
    )
}

/// A cheap fingerprint of the durable state (for sweeps that compare many times).
pub fn fingerprint(db: &Db) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let s = db.schema();
    for t in 0..s.tables.len() as TableId {
        if !s.tables[t as usize].durable {
            continue;
        }
        db.next_id(t).hash(&mut h);
        for (id, cells) in db.rows(t) {
            id.hash(&mut h);
            for c in &cells {
                match c {
                    Cell::Nil => 0u8.hash(&mut h),
                    Cell::Int(i) => (1u8, i).hash(&mut h),
                    Cell::Float(f) => (2u8, f.to_bits()).hash(&mut h),
                    Cell::Bool(b) => (3u8, b).hash(&mut h),
                    Cell::Text(t) => (4u8, &**t).hash(&mut h),
                    Cell::Ref(r) => (5u8, r).hash(&mut h),
                }
            }
        }
    }
    h.finish()
}

/// splitmix64.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

fn text(s: String) -> Cell {
    Cell::Text(Rc::from(s))
}

/// One random write on `db` (it may fail in the engine: duplicate name, deleting a
/// referenced row, a deleted row).
pub fn random_op(db: &mut Db, rng: &mut Rng) -> Result<(), wo_db::DbError> {
    let nd = db.next_id(DEPTS);
    let ne = db.next_id(EMPS);
    match rng.below(12) {
        0 | 1 => db
            .insert(DEPTS, vec![text(format!("d{}", rng.below(40)))])
            .map(drop),
        2..=5 => {
            let dept = if nd > 1 {
                1 + rng.below(nd as u64 - 1) as RowId
            } else {
                1
            };
            let manager = if ne > 1 && rng.below(2) == 0 {
                Cell::Ref(1 + rng.below(ne as u64 - 1) as RowId)
            } else {
                Cell::Nil
            };
            db.insert(
                EMPS,
                vec![
                    text(format!("e{}", rng.below(1000))),
                    Cell::Int(rng.below(200_000) as i64 - 1000),
                    Cell::Ref(dept),
                    manager,
                    if rng.below(3) == 0 {
                        Cell::Nil
                    } else {
                        Cell::Float(rng.below(1000) as f64 / 7.0)
                    },
                    Cell::Bool(rng.below(2) == 0),
                ],
            )
            .map(drop)
        }
        6 | 7 if ne > 1 => {
            let id = 1 + rng.below(ne as u64 - 1) as RowId;
            db.update(EMPS, id, 1, Cell::Int(rng.below(100_000) as i64))
        }
        8 if ne > 1 => {
            let id = 1 + rng.below(ne as u64 - 1) as RowId;
            let m = 1 + rng.below(ne as u64 - 1) as RowId;
            db.update(
                EMPS,
                id,
                3,
                if rng.below(3) == 0 {
                    Cell::Nil
                } else {
                    Cell::Ref(m)
                },
            )
        }
        9 if ne > 1 => db.delete(EMPS, 1 + rng.below(ne as u64 - 1) as RowId),
        10 if nd > 1 => db.delete(DEPTS, 1 + rng.below(nd as u64 - 1) as RowId),
        _ => db
            .insert(SCRATCH, vec![Cell::Int(rng.below(100) as i64)])
            .map(drop),
    }
}

/// What happened to one statement of the workload.
#[derive(Debug)]
pub enum Step {
    /// The engine refused it; nothing to commit.
    Refused,
    Committed(CommitOutcome),
    Failed(Failure),
}

/// Runs one statement (a single write, or a transaction of several) and commits it.
/// `before` is set to the state before it and `candidate` to the state it would
/// commit.
pub fn step(dd: &mut DataDir, db: &mut Db, rng: &mut Rng, candidate: &mut State) -> Step {
    let sp = db.savepoint();
    let n = if rng.below(4) == 0 {
        2 + rng.below(5)
    } else {
        1
    };
    for _ in 0..n {
        let inner = db.savepoint();
        if random_op(db, rng).is_err() {
            if n == 1 || rng.below(3) == 0 {
                // The statement (or the whole transaction) traps.
                db.rollback_to(sp);
                return Step::Refused;
            }
            // A caught trap inside the transaction: only that statement is undone.
            db.rollback_to(inner);
        }
    }
    *candidate = state(db);
    match dd.commit(db, sp) {
        Ok(o) => Step::Committed(o),
        Err(f) => Step::Failed(f),
    }
}

/// Bytes of a data-directory file on the simulated disk.
pub fn read(sim: &SimStorage, path: &Path) -> Vec<u8> {
    sim.read_file(path).expect("file exists")
}

pub fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

pub fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Recomputes a log header's CRC (docs/wal-format.md).
pub fn reseal_wal_header(wal: &mut [u8]) {
    let crc = crc32fast::hash(&wal[0..32]).to_le_bytes();
    wal[32..36].copy_from_slice(&crc);
}

/// Recomputes the CRC of the log record at `pos`.
pub fn reseal_record(wal: &mut [u8], pos: usize) {
    let mut h = crc32fast::Hasher::new();
    h.update(&wal[16..24]);
    h.update(&wal[pos..pos + 4]);
    h.update(&wal[pos + 8..pos + 24]);
    let len = le32(&wal[pos..]) as usize;
    h.update(&wal[pos + 24..pos + 24 + len]);
    let crc = h.finalize().to_le_bytes();
    wal[pos + 4..pos + 8].copy_from_slice(&crc);
}

/// A version 2 checkpoint file around `body` (docs/wal-format.md).
pub fn checkpoint_file(lsn: u64, taken_from: u64, next: u64, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(b"\x89wockp\r\n");
    f.extend_from_slice(&2u32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&lsn.to_le_bytes());
    f.extend_from_slice(&(body.len() as u64).to_le_bytes());
    f.extend_from_slice(&taken_from.to_le_bytes());
    f.extend_from_slice(&next.to_le_bytes());
    let crc = crc32fast::hash(&f).to_le_bytes();
    f.extend_from_slice(&crc);
    f.extend_from_slice(body);
    f.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    f
}

/// Unsigned LEB128, as the formats write it.
pub fn uvar(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zig-zag LEB128.
pub fn ivar(out: &mut Vec<u8>, v: i64) {
    uvar(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// A checkpoint body: one table `name(n Int)` with next id `next_id` and rows `rows`.
pub fn one_table_body(name: &str, next_id: i64, rows: &[(i64, i64)]) -> Vec<u8> {
    let mut b = Vec::new();
    uvar(&mut b, 1);
    uvar(&mut b, name.len() as u64);
    b.extend_from_slice(name.as_bytes());
    ivar(&mut b, next_id);
    uvar(&mut b, 1);
    uvar(&mut b, 1);
    b.push(b'n');
    b.push(0); // Int
    b.push(0); // not nullable
    uvar(&mut b, rows.len() as u64);
    let mut prev = 0;
    for &(id, n) in rows {
        ivar(&mut b, id - prev);
        prev = id;
        b.push(1); // CELL_INT
        ivar(&mut b, n);
    }
    b
}

/// The program schema matching [`one_table_body`]: `name(n Int)`, durable.
pub fn one_table_schema(name: &str) -> Schema {
    Schema {
        tables: vec![TableDef {
            name: name.into(),
            columns: vec![col("n", ColType::Int, false)],
            indexes: vec![],
            durable: true,
        }],
    }
}

/// A log file (docs/wal-format.md): header with `salt` and `first_lsn`, then one
/// record per payload, each claiming the previous LSN durable.
pub fn wal_file(salt: u64, first_lsn: u64, payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(b"\x89wowal\r\n");
    w.extend_from_slice(&1u32.to_le_bytes());
    w.extend_from_slice(&0u32.to_le_bytes());
    w.extend_from_slice(&salt.to_le_bytes());
    w.extend_from_slice(&first_lsn.to_le_bytes());
    w.extend_from_slice(&[0; 4]);
    reseal_wal_header(&mut w);
    for (i, p) in payloads.iter().enumerate() {
        let pos = w.len();
        let lsn = first_lsn.wrapping_add(i as u64);
        w.extend_from_slice(&(p.len() as u32).to_le_bytes());
        w.extend_from_slice(&[0; 4]);
        w.extend_from_slice(&lsn.to_le_bytes());
        w.extend_from_slice(&lsn.wrapping_sub(1).to_le_bytes());
        w.extend_from_slice(p);
        reseal_record(&mut w, pos);
    }
    w
}

/// A schema item (tag 1) for one table `name(n Int)` with next id `next_id`.
pub fn schema_item(name: &str, next_id: i64) -> Vec<u8> {
    let mut p = vec![1u8];
    let body = one_table_body(name, next_id, &[]);
    // The body is the schema followed by a row count of 0: drop the count.
    p.extend_from_slice(&body[..body.len() - 1]);
    p
}

/// An insert item (tag 2) of row `id` with `n` into stored table 0.
pub fn insert_item(id: i64, n: i64) -> Vec<u8> {
    let mut p = vec![2u8];
    uvar(&mut p, 0);
    ivar(&mut p, id);
    uvar(&mut p, 1);
    p.push(1);
    ivar(&mut p, n);
    p
}
