//! Programs the compiler must refuse: for each `tests/compile_fail/*.wo`, `wo check`
//! must exit 65 and the snapshot pins the rendered diagnostics (every one of them,
//! with source lines and carets) exactly as a user sees them on stderr.

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
