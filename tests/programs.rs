//! The run corpus: every program under `tests/programs` is run with `wo run` and its
//! exit status, stdout and stderr are pinned in one snapshot, so a change in anything
//! a user sees shows up in review. A `.wo` file directly in `tests/programs` is one
//! program; a subdirectory is one multi-file program whose `main.wo` declares `main`
//! (the glob matches that file and runs its directory). A leading comment line
//! `-- args: a b` passes command-line arguments.

mod common;

#[test]
fn programs() {
    insta::glob!("programs/*.wo", |path| {
        insta::assert_snapshot!(common::run_program(path).snapshot());
    });
}

#[test]
fn directory_programs() {
    insta::glob!("programs/*/main.wo", |path| {
        let dir = path.parent().expect("main.wo is in a directory");
        insta::assert_snapshot!(common::run_program(dir).snapshot());
    });
}
