//! The engine's own cost per operation, without the VM:
//! `cargo run -p wo-db --release --example micro [N]` (default N = 100000).
//!
//! Table `(name Text, age Int, score Float)`, N rows; phases INSERT, point GET by id
//! (one column, and all three), UPDATE one column by id, DELETE by id, each op wrapped
//! the way the VM wraps an autocommit statement (savepoint, op, truncate_undo). Each
//! phase runs 5 times on a fresh database; the median ops/s is printed. The `… no undo`
//! phases run the same ops with the undo log off (`Db::set_undo(false)`: an autocommit
//! statement without a durable log), `insert_cells` with a reused cell buffer. Then
//! the memory per row of a few tables.

use std::rc::Rc;
use std::time::Instant;

use wo_db::*;

fn col(name: &str, ty: ColType) -> Column {
    Column {
        name: name.into(),
        ty,
        nullable: false,
    }
}

fn table(columns: Vec<Column>, indexes: Vec<IndexDef>) -> Schema {
    Schema {
        tables: vec![TableDef {
            name: "t".into(),
            columns,
            indexes,
            durable: true,
        }],
    }
}

fn person() -> Schema {
    table(
        vec![
            col("name", ColType::Text),
            col("age", ColType::Int),
            col("score", ColType::Float),
        ],
        vec![],
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let names: Vec<Rc<str>> = (0..n).map(|i| Rc::from(format!("name{i:06}"))).collect();
    let mut res: Vec<(&str, Vec<f64>)> = [
        "insert",
        "get 1 col",
        "get 3 cols",
        "update",
        "delete",
        "insert raw",
        "insert no undo",
        "insert_cells no undo",
        "update no undo",
        "delete no undo",
    ]
    .iter()
    .map(|s| (*s, Vec::new()))
    .collect();
    let mut sink = 0i64;
    for _ in 0..5 {
        let mut db = Db::new(person()).unwrap();
        let t0 = Instant::now();
        for (i, name) in names.iter().enumerate() {
            let sp = db.savepoint();
            db.insert(
                0,
                vec![
                    Cell::Text(name.clone()),
                    Cell::Int(i as i64 % 90),
                    Cell::Float(i as f64 * 0.5),
                ],
            )
            .unwrap();
            db.truncate_undo(sp);
        }
        res[0].1.push(n as f64 / t0.elapsed().as_secs_f64());

        let t0 = Instant::now();
        for id in 1..=n as RowId {
            if let Cell::Int(a) = db.get(0, id, 1).unwrap() {
                sink += a;
            }
        }
        res[1].1.push(n as f64 / t0.elapsed().as_secs_f64());

        let t0 = Instant::now();
        for id in 1..=n as RowId {
            for c in 0..3 {
                if let Cell::Int(a) = db.get(0, id, c).unwrap() {
                    sink += a;
                }
            }
        }
        res[2].1.push(n as f64 / t0.elapsed().as_secs_f64());

        let t0 = Instant::now();
        for id in 1..=n as RowId {
            let sp = db.savepoint();
            db.update(0, id, 1, Cell::Int(id + 1000)).unwrap();
            db.truncate_undo(sp);
        }
        res[3].1.push(n as f64 / t0.elapsed().as_secs_f64());

        let t0 = Instant::now();
        for id in 1..=n as RowId {
            let sp = db.savepoint();
            db.delete(0, id).unwrap();
            db.truncate_undo(sp);
        }
        res[4].1.push(n as f64 / t0.elapsed().as_secs_f64());

        // Inserts with the undo log left to grow (one big transaction).
        let mut db = Db::new(person()).unwrap();
        let t0 = Instant::now();
        for (i, name) in names.iter().enumerate() {
            db.insert(
                0,
                vec![
                    Cell::Text(name.clone()),
                    Cell::Int(i as i64 % 90),
                    Cell::Float(i as f64 * 0.5),
                ],
            )
            .unwrap();
        }
        res[5].1.push(n as f64 / t0.elapsed().as_secs_f64());

        // The same without undo entries.
        let mut db = Db::new(person()).unwrap();
        db.set_undo(false);
        let t0 = Instant::now();
        for (i, name) in names.iter().enumerate() {
            db.insert(
                0,
                vec![
                    Cell::Text(name.clone()),
                    Cell::Int(i as i64 % 90),
                    Cell::Float(i as f64 * 0.5),
                ],
            )
            .unwrap();
        }
        res[6].1.push(n as f64 / t0.elapsed().as_secs_f64());
        let mut db2 = Db::new(person()).unwrap();
        db2.set_undo(false);
        let mut buf = vec![Cell::Nil, Cell::Nil, Cell::Nil];
        let t0 = Instant::now();
        for (i, name) in names.iter().enumerate() {
            buf[0] = Cell::Text(name.clone());
            buf[1] = Cell::Int(i as i64 % 90);
            buf[2] = Cell::Float(i as f64 * 0.5);
            db2.insert_cells(0, &buf).unwrap();
        }
        res[7].1.push(n as f64 / t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        for id in 1..=n as RowId {
            db.update(0, id, 1, Cell::Int(id + 1000)).unwrap();
        }
        res[8].1.push(n as f64 / t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        for id in 1..=n as RowId {
            db.delete(0, id).unwrap();
        }
        res[9].1.push(n as f64 / t0.elapsed().as_secs_f64());
    }
    println!("wo-db micro, N = {n} (median of 5)");
    for (name, v) in res {
        let m = median(v);
        println!("{name:<12} {:>12.0} ops/s  {:>7.1} ns/op", m, 1e9 / m);
    }
    assert!(sink != 42);

    println!("\nmemory at {n} rows (memory_bytes() / rows, undo log truncated)");
    let ints = table(
        vec![
            col("a", ColType::Int),
            col("b", ColType::Int),
            col("c", ColType::Int),
        ],
        vec![],
    );
    let texts = table(vec![col("name", ColType::Text)], vec![]);
    let uniq = vec![IndexDef {
        columns: vec![0],
        kind: IndexKind::Unique,
    }];
    let texts_unique = table(vec![col("name", ColType::Text)], uniq.clone());
    let ints_unique = table(
        vec![
            col("a", ColType::Int),
            col("b", ColType::Int),
            col("c", ColType::Int),
        ],
        uniq,
    );
    let sorted = table(
        vec![
            col("a", ColType::Int),
            col("b", ColType::Int),
            col("c", ColType::Int),
        ],
        vec![IndexDef {
            columns: vec![1],
            kind: IndexKind::Sorted,
        }],
    );
    for (label, schema, text) in [
        ("3 Int columns", ints, false),
        ("3 Int columns, unique index on a", ints_unique, false),
        ("3 Int columns, sorted index on b", sorted, false),
        ("1 Text column (10 chars)", texts, true),
        ("1 Text column (10 chars), unique", texts_unique, true),
        ("person (Text, Int, Float)", person(), false),
    ] {
        let mut db = Db::new(schema).unwrap();
        let empty = db.memory_bytes();
        let ncols = db.schema().tables[0].columns.len();
        for (i, name) in names.iter().enumerate() {
            let cells = if text {
                vec![Cell::Text(Rc::from(format!("n{i:09}")))]
            } else if ncols == 3 && db.schema().tables[0].columns[0].ty == ColType::Text {
                vec![
                    Cell::Text(name.clone()),
                    Cell::Int(i as i64),
                    Cell::Float(i as f64),
                ]
            } else {
                vec![
                    Cell::Int(i as i64),
                    Cell::Int(i as i64 * 7 % 1000),
                    Cell::Int(3),
                ]
            };
            db.insert(0, cells).unwrap();
        }
        db.truncate_undo(Savepoint(0));
        let b = db.memory_bytes() - empty;
        println!("{label:<36} {:>6.1} B/row", b as f64 / n as f64);
    }
}
