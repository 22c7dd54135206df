//! Two durable tables of the same name made a data directory unopenable forever
//! (issue 13 W5): the compiler accepted two classes with `@table(name: "x")`, one
//! ordinary run stored both under the name `x`, and every later open was refused (65)
//! because tables are matched by name, while `verify` said ok. The runtime half of
//! the fix (the compiler's is a compile error): `open` refuses a program that declares
//! two durable tables of one name before it creates or writes anything, and a
//! directory that already stores two is reported by `open` and `verify` naming the
//! table.

mod durable_support;

use std::path::PathBuf;

use durable_support::*;
use wo_db::durable::{self, OpenError, SimStorage};
use wo_db::Schema;

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn twice(name: &str) -> Schema {
    let mut s = one_table_schema(name);
    s.tables.push(s.tables[0].clone());
    s
}

#[test]
fn a_program_with_two_durable_tables_of_one_name_is_refused_before_writing() {
    let sim = SimStorage::new();
    match durable::open(&dir(), twice("x"), sim_options(&sim)) {
        Err(OpenError::Schema { message }) => {
            assert!(
                message.contains("two durable tables named `x`"),
                "{message}"
            );
        }
        other => panic!("{:?}", other.map(drop)),
    }
    assert!(sim.ops().is_empty(), "wrote {:?}", sim.ops());
    assert!(sim.list(&dir()).is_empty());
}

#[test]
fn a_directory_storing_two_tables_of_one_name_is_reported_by_open_and_verify() {
    let sim = SimStorage::new();
    let mut schema = schema_item("x", 1);
    // Two tables in the schema item: bump the count and append the table again.
    let table = schema[2..].to_vec();
    schema[1] = 2;
    schema.extend(table);
    sim.write_file(&dir().join("wal"), &wal_file(7, 1, &[schema]));
    match durable::open(&dir(), one_table_schema("x"), sim_options(&sim)) {
        Err(OpenError::Schema { message }) => {
            assert!(message.contains("two tables named `x`"), "{message}");
        }
        other => panic!("{:?}", other.map(drop)),
    }
    let rep = durable::verify_with(&sim, &dir()).unwrap();
    let p = rep.problem.expect("verify reports it");
    assert!(p.what.contains("two tables named `x`"), "{}", p.what);
}
