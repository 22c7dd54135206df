//! Programs the compiler must refuse: for each `tests/compile_fail/*.wo`, `wo check`
//! must exit 65 and the snapshot pins the rendered diagnostics (every one of them,
//! with source lines and carets) exactly as a user sees them on stderr. And programs
//! the compiler warns about: for each `tests/compile_warn/*.wo`, `wo check` exits 0 and
//! the snapshot pins the warnings; `wo run` says the same, then runs the program.

mod common;

#[test]
fn compile_fail() {
    insta::glob!("compile_fail/*.wo", |path| {
        let dir = path.parent().expect("a file is in a directory");
        let name = path.file_name().expect("a file has a name");
        let res = common::run_wo(dir, &[std::ffi::OsStr::new("check"), name]);
        assert_eq!(
            res.status,
            Some(65),
            "`wo check {}` must fail to compile:\n{}",
            path.display(),
            res.snapshot()
        );
        assert!(res.stdout.is_empty(), "diagnostics go to stderr only");
        // `wo run` refuses the program with the same diagnostics.
        let run = common::run_wo(dir, &[std::ffi::OsStr::new("run"), name]);
        assert_eq!(run, res, "`wo run` and `wo check` report the same");
        insta::assert_snapshot!(res.stderr);
    });
}

#[test]
fn compile_warn() {
    insta::glob!("compile_warn/*.wo", |path| {
        let dir = path.parent().expect("a file is in a directory");
        let name = path.file_name().expect("a file has a name");
        let res = common::run_wo(dir, &[std::ffi::OsStr::new("check"), name]);
        assert_eq!(
            res.status,
            Some(0),
            "`wo check {}` must compile with warnings:\n{}",
            path.display(),
            res.snapshot()
        );
        assert!(res.stdout.is_empty(), "warnings go to stderr only");
        assert!(res.stderr.contains(": warning: "), "{}", res.stderr);
        assert!(!res.stderr.contains(": error: "), "{}", res.stderr);
        let run = common::run_wo(dir, &[std::ffi::OsStr::new("run"), name]);
        assert_eq!(run.status, Some(0), "{}", run.snapshot());
        assert!(
            run.stderr.starts_with(&res.stderr),
            "`wo run` warns as `wo check` does: {}",
            run.stderr
        );
        insta::assert_snapshot!(res.stderr);
    });
}
