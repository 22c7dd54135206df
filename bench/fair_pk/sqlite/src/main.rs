//! The fair primary-key benchmark against SQLite `:memory:` — the peer of
//! `bench/fair_pk/fair_pk.wo`. Same phases, same data, same output lines.
//!
//!   fair_pk_sqlite [N] [mode]
//!
//! N (default 100_000) rows. mode:
//!   (none)  — all phases, one `phase ops_per_sec` line each, then `check …` lines
//!   txn     — the same, but every phase runs inside one explicit transaction
//!             (BEGIN … COMMIT around the loop; a second variant, not the default)
//!   mem     — insert N rows into `person`, keep them, print `rows N` and exit
//!             (the harness reads the peak RSS with /usr/bin/time -f %M)
//!
//! Rules (REFERENCE §3): one statement per operation, prepared once, reused.
//! By default no explicit transaction: every statement autocommits, as SQLite
//! does when a program simply runs statements (`:memory:` has no journal to
//! sync, so this mostly costs the per-statement transaction bookkeeping).

use rusqlite::{params, Connection};
use std::time::Instant;

fn ops(n: usize, t: Instant) -> u64 {
    let us = t.elapsed().as_secs_f64();
    if us <= 0.0 {
        0
    } else {
        (n as f64 / us) as u64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args
        .first()
        .map(|s| s.parse().expect("N must be an integer"))
        .unwrap_or(100_000);
    let mode = args.get(1).map(String::as_str).unwrap_or("");
    let txn = mode == "txn";

    let db = Connection::open_in_memory().unwrap();
    db.execute_batch(
        "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, age INT, score REAL);",
    )
    .unwrap();

    if mode == "mem" {
        let mut ins = db
            .prepare("INSERT INTO person (name, age, score) VALUES (?1, ?2, ?3)")
            .unwrap();
        for i in 0..n {
            let name = format!("person{i}");
            ins.execute(params![name, (i % 100) as i64, i as f64 * 0.5]).unwrap();
        }
        let rows: i64 = db
            .query_row("SELECT count(*) FROM person", [], |r| r.get(0))
            .unwrap();
        println!("rows {rows}");
        return;
    }

    let begin = |db: &Connection| {
        if txn {
            db.execute_batch("BEGIN").unwrap();
        }
    };
    let commit = |db: &Connection| {
        if txn {
            db.execute_batch("COMMIT").unwrap();
        }
    };

    // Data prepared before any timer starts (the wo script does the same).
    let names: Vec<String> = (0..n).map(|i| format!("person{i}")).collect();

    // ---- INSERT N -------------------------------------------------------
    let mut ids: Vec<i64> = Vec::with_capacity(n);
    {
        let mut ins = db
            .prepare("INSERT INTO person (name, age, score) VALUES (?1, ?2, ?3)")
            .unwrap();
        let t = Instant::now();
        begin(&db);
        for i in 0..n {
            ins.execute(params![names[i], (i % 100) as i64, i as f64 * 0.5])
                .unwrap();
            ids.push(db.last_insert_rowid());
        }
        commit(&db);
        println!("insert {}", ops(n, t));
    }
    let (c, sa, ss): (i64, i64, f64) = db
        .query_row(
            "SELECT count(*), sum(age), sum(score) FROM person",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let check_insert = format!("check insert rows={c} sum_age={sa} sum_score={ss:?}");

    // ---- point READ by id (all three columns) ---------------------------
    // Two passes, as the wo script does: `read` (wo: through the kept
    // handles) and `read_find` (wo: `Person.find(id)`). For SQLite both are
    // the same prepared `SELECT … WHERE id = ?`.
    let mut check_read = String::new();
    for phase in ["read", "read_find"] {
        let mut sel = db
            .prepare_cached("SELECT name, age, score FROM person WHERE id = ?1")
            .unwrap();
        let (mut sum_age, mut sum_score, mut name_len) = (0i64, 0f64, 0i64);
        let t = Instant::now();
        begin(&db);
        for &id in &ids {
            let mut rows = sel.query([id]).unwrap();
            let row = rows.next().unwrap().unwrap();
            name_len += row.get_ref(0).unwrap().as_str().unwrap().len() as i64;
            sum_age += row.get::<_, i64>(1).unwrap();
            sum_score += row.get::<_, f64>(2).unwrap();
        }
        commit(&db);
        println!("{phase} {}", ops(n, t));
        check_read = format!("check read sum_age={sum_age} sum_score={sum_score:?} name_len={name_len}");
    }

    // ---- UPDATE one column by id ----------------------------------------
    {
        let mut upd = db
            .prepare("UPDATE person SET age = ?1 WHERE id = ?2")
            .unwrap();
        let t = Instant::now();
        begin(&db);
        for (i, &id) in ids.iter().enumerate() {
            upd.execute(params![(i % 50) as i64 + 1, id]).unwrap();
        }
        commit(&db);
        println!("update {}", ops(n, t));
    }
    let (c, sa): (i64, i64) = db
        .query_row("SELECT count(*), sum(age) FROM person", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let check_update = format!("check update rows={c} sum_age={sa}");

    // ---- DELETE by id ---------------------------------------------------
    {
        let mut del = db.prepare("DELETE FROM person WHERE id = ?1").unwrap();
        let t = Instant::now();
        begin(&db);
        for &id in &ids {
            del.execute([id]).unwrap();
        }
        commit(&db);
        println!("delete {}", ops(n, t));
    }
    let c: i64 = db
        .query_row("SELECT count(*) FROM person", [], |r| r.get(0))
        .unwrap();
    let check_delete = format!("check delete rows={c}");

    // ---- equality queries on an indexed column ---------------------------
    // N rows, K = N/10 keys, row i has k = i % K (so 10 rows per key).
    // Q = N queries, query j asks for key j % K.
    db.execute_batch("CREATE TABLE item (id INTEGER PRIMARY KEY, k INT, v INT); CREATE INDEX item_k ON item (k);")
        .unwrap();
    let keys = std::cmp::max(n / 10, 1);
    let q = n;
    {
        let mut ins = db.prepare("INSERT INTO item (k, v) VALUES (?1, ?2)").unwrap();
        let t = Instant::now();
        begin(&db);
        for i in 0..n {
            ins.execute(params![(i % keys) as i64, (i % 7) as i64]).unwrap();
        }
        commit(&db);
        println!("eq_insert {}", ops(n, t));
    }
    // `from x in Item where x.k == key select x`: the rows (handles = ids).
    let mut eq_rows = 0i64;
    let mut eq_idsum = 0i64;
    {
        let mut sel = db.prepare("SELECT id FROM item WHERE k = ?1").unwrap();
        let t = Instant::now();
        begin(&db);
        for j in 0..q {
            let key = (j % keys) as i64;
            let got: Vec<i64> = sel
                .query_map([key], |r| r.get(0))
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            eq_rows += got.len() as i64;
            eq_idsum += got.first().copied().unwrap_or(0);
        }
        commit(&db);
        println!("eq_query {}", ops(q, t));
    }
    // `count(from x in Item where x.k == key select x)`
    let mut eq_count = 0i64;
    {
        let mut sel = db.prepare("SELECT count(*) FROM item WHERE k = ?1").unwrap();
        let t = Instant::now();
        begin(&db);
        for j in 0..q {
            let key = (j % keys) as i64;
            eq_count += sel.query_row([key], |r| r.get::<_, i64>(0)).unwrap();
        }
        commit(&db);
        println!("eq_count {}", ops(q, t));
    }
    // update through a query: `for x in from x in Item where x.k == key select x { x.v += 1 }`
    {
        let mut upd = db.prepare("UPDATE item SET v = v + 1 WHERE k = ?1").unwrap();
        let t = Instant::now();
        begin(&db);
        for j in 0..q {
            let key = (j % keys) as i64;
            upd.execute([key]).unwrap();
        }
        commit(&db);
        println!("eq_update {}", ops(q, t));
    }
    let (c, sv): (i64, i64) = db
        .query_row("SELECT count(*), sum(v) FROM item", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();

    println!("{check_insert}");
    println!("{check_read}");
    println!("{check_update}");
    println!("{check_delete}");
    println!("check eq rows={eq_rows} first_id_sum={eq_idsum} count={eq_count}");
    println!("check eq_update rows={c} sum_v={sv}");
}
