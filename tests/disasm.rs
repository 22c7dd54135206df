//! `wo disasm` output for a handful of programs (a loop, calls, a class, try/catch,
//! text interpolation), with source lines, pinned as snapshots. Also checks that an
//! image disassembles to the same instructions as its source program.

mod common;

#[test]
fn disasm() {
    insta::glob!("disasm/*.wo", |path| {
        let dir = path.parent().expect("a file is in a directory");
        let name = path.file_name().expect("a file has a name");
        let res = common::run_wo(dir, &[std::ffi::OsStr::new("disasm"), name]);
        res.expect_status(0);
        assert!(
            res.stderr.is_empty(),
            "disasm prints nothing on stderr: {}",
            res.stderr
        );
        insta::assert_snapshot!(res.stdout);
    });
}

/// The instructions of an image are those of the program it was built from; only the
/// source-line annotations (which need the sources) may be missing.
#[test]
fn image_disassembles_like_its_source() {
    let src = common::root().join("tests/disasm/loop.wo");
    let dir = common::scratch_dir("disasm-image");
    let image = dir.join("loop.wob");
    common::run_wo(
        &dir,
        &[
            std::ffi::OsStr::new("build"),
            src.as_os_str(),
            "-o".as_ref(),
            image.as_os_str(),
        ],
    )
    .expect_status(0);
    let from_image = common::run_wo(&dir, &["disasm", "loop.wob"]);
    from_image.expect_status(0);
    assert!(
        !from_image.stdout.trim().is_empty(),
        "an image disassembles to something"
    );
    let from_source = common::run_wo(&dir, &[std::ffi::OsStr::new("disasm"), src.as_os_str()]);
    from_source.expect_status(0);
    // Every instruction line of the image's listing appears in the source listing.
    for line in from_image.stdout.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            from_source.stdout.contains(line.trim_end()),
            "image line `{line}` missing from the source listing:\n{}",
            from_source.stdout
        );
    }
}
