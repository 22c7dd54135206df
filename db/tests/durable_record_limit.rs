//! A commit whose log record would be larger than recovery accepts (1 GiB) was written,
//! synced and acknowledged, then cut on the next open as a "torn tail" — an
//! acknowledged change lost (and with a later commit behind it, a directory refused
//! with 65). The fix: the writer checks the record's size before anything is written;
//! a change over the limit is undone and refused (`limit`, the program gets `LIMIT`),
//! the log is not fenced, and every later commit goes on. The limit is made small here
//! (`Options::max_record`) so the test does not need gigabytes.

mod durable_support;

use std::path::PathBuf;
use std::rc::Rc;

use durable_support::*;
use wo_db::durable::{self, Options, SimStorage};
use wo_db::{Cell, Db, Savepoint};

const LIMIT: usize = 4096;

fn open(sim: &SimStorage) -> (durable::DataDir, Db) {
    let options = Options {
        max_record: LIMIT,
        ..sim_options(sim)
    };
    durable::open(&PathBuf::from("/data"), schema(), options).expect("open")
}

fn dept(db: &mut Db, name: &str) {
    db.insert(DEPTS, vec![Cell::Text(Rc::from(name))])
        .expect("insert");
}

#[test]
fn a_record_over_the_limit_is_refused_before_anything_is_written() {
    let sim = SimStorage::new();
    let (mut dd, mut db) = open(&sim);
    dept(&mut db, "small");
    dd.commit(&mut db, Savepoint(0)).expect("a small commit");
    let before = state(&db);
    let lsn = dd.staged_lsn();

    // One transaction of about 6 KiB of text: over the 4 KiB limit.
    let sp = db.savepoint();
    for i in 0..6 {
        dept(&mut db, &format!("{i}{}", "x".repeat(1000)));
    }
    let f = dd.commit(&mut db, sp).expect_err("over the limit");
    assert!(f.limit, "{f:?}");
    assert_eq!(f.changes_undone, 6);
    assert!(
        f.message.contains("over the limit of 4096 bytes"),
        "{}",
        f.message
    );
    assert_eq!(state(&db), before, "the change is undone in memory");
    assert_eq!(dd.staged_lsn(), lsn, "nothing was written");
    assert!(dd.fence().is_none(), "the log is not fenced");

    // Later commits go on, and everything acknowledged comes back.
    dept(&mut db, "after");
    dd.commit(&mut db, Savepoint(0)).expect("the next commit");
    let want = state(&db);
    drop(dd);
    let (_dd, db2) = open(&sim.crash_image(durable::Fate::DropAll));
    assert_eq!(state(&db2), want);
}
