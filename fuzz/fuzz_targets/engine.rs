//! The query engine against a naive model: fuzzer bytes -> a schema (1–3 tables of
//! 1–5 columns of every type, refs, hash/unique/sorted indexes) and up to 200
//! operations (inserts, updates, deletes, savepoints, rollbacks, commits, queries with
//! predicates, orders, skip and take, aggregates), run on `wo_db::Db` and on the model
//! of `db/tests/engine_model` (a `Vec` of rows, a filter, a stable sort) side by side.
//! Any difference, in a result, an error kind or the state after a rollback, is a
//! crash. The proptest `db/tests/model.rs` runs the same cases from random numbers;
//! here coverage steers them.
#![no_main]
use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[allow(dead_code, clippy::all)]
#[path = "../../db/tests/engine_model/mod.rs"]
mod engine_model;

use engine_model::{run_case, RawCol, RawOp, RawTable};

const MAX_OPS: usize = 200;

fn table(u: &mut Unstructured<'_>) -> Result<RawTable> {
    let ncols = 1 + usize::from(u.arbitrary::<u8>()? % 5);
    let mut cols = Vec::with_capacity(ncols);
    for _ in 0..ncols {
        cols.push(RawCol {
            ty: u.arbitrary::<u8>()? % 5,
            nullable: u.arbitrary()?,
            target: u.arbitrary()?,
        });
    }
    let nidx = u.arbitrary::<u8>()? % 4;
    let mut indexes = Vec::new();
    for _ in 0..nidx {
        indexes.push((u.arbitrary::<u8>()? % 3, u.arbitrary()?, u.arbitrary()?));
    }
    Ok(RawTable { cols, indexes })
}

fn case(u: &mut Unstructured<'_>) -> Result<(Vec<RawTable>, Vec<RawOp>)> {
    let ntables = 1 + usize::from(u.arbitrary::<u8>()? % 3);
    let mut raw = Vec::with_capacity(ntables);
    for _ in 0..ntables {
        raw.push(table(u)?);
    }
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_OPS {
        let kind: u8 = u.arbitrary()?;
        let (a, b, c): (u16, u16, u16) = (u.arbitrary()?, u.arbitrary()?, u.arbitrary()?);
        let n = 1 + usize::from(u.arbitrary::<u8>()? % 8);
        let mut vals = Vec::with_capacity(n);
        for _ in 0..n {
            vals.push(u.arbitrary()?);
        }
        ops.push((kind, a, b, c, vals));
    }
    Ok((raw, ops))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok((raw, ops)) = case(&mut u) else {
        return;
    };
    if std::env::var_os("WO_FUZZ_PRINT").is_some() {
        eprintln!("{raw:?}\n{ops:?}");
    }
    if let Err(e) = run_case(raw.clone(), ops) {
        panic!("the engine differs from the model: {e}\nschema {raw:?}");
    }
});
