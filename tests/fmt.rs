//! `wo fmt` (docs/tools.md). Over every `.wo` file of the project (the corpora,
//! samples, benchmarks): a file that parses formats; formatting the result changes
//! nothing; and the formatted program compiles to the same image as the original
//! (instructions, constants, tables; source positions aside), or, if the original did
//! not compile, to the same diagnostics. Then the command itself: `--check`, the
//! files it rewrites, a file that does not parse left alone with exit 65.

mod common;

use std::path::{Path, PathBuf};

use common::{root, run_wo, scratch_dir};
use wo_compiler::fmt::{format, meaning};

/// Every `.wo` file under the project's source directories (not `target/`).
fn project_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "wo") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    for dir in [
        "tests",
        "samples",
        "bench",
        "compiler/tests",
        "fuzz/regressions",
    ] {
        walk(&root().join(dir), &mut out);
    }
    out.sort();
    out
}

#[test]
fn the_corpus_formats_idempotently_to_the_same_program() {
    let files = project_files();
    assert!(files.len() > 150, "found only {} files", files.len());
    let mut n_formatted = 0;
    let mut problems = Vec::new();
    for path in &files {
        let name = path.display().to_string();
        let Ok(src) = std::fs::read_to_string(path) else {
            continue; // not UTF-8: a compile_fail case of its own
        };
        let once = match format(&src) {
            Ok(once) => once,
            Err(d) => {
                // Refused: only because the file does not parse.
                let body = src.strip_prefix('\u{feff}').unwrap_or(&src);
                if wo_compiler::parse_file(body, wo_compiler::FileId(0))
                    .1
                    .is_empty()
                {
                    problems.push(format!("{name}: parses but is refused: {d:?}"));
                }
                continue;
            }
        };
        n_formatted += 1;
        match format(&once) {
            Ok(twice) if twice == once => {}
            Ok(twice) => problems.push(format!(
                "{name}: not idempotent\n--- once\n{once}\n--- twice\n{twice}"
            )),
            Err(d) => problems.push(format!("{name}: output does not format: {d:?}")),
        }
        // The layout comes from the tokens, not from the author's indentation.
        let flat: String = src
            .lines()
            .map(|l| format!("{}\n", l.trim_start()))
            .collect();
        match format(&flat) {
            Ok(from_flat) if from_flat == once => {}
            Ok(from_flat) => problems.push(format!(
                "{name}: indentation depends on the input's\n--- formatted\n{once}\n--- from flat\n{from_flat}"
            )),
            Err(d) => problems.push(format!("{name}: unindented does not format: {d:?}")),
        }
        if meaning(&name, &src) != meaning(&name, &once) {
            problems.push(format!(
                "{name}: compiles differently once formatted\n{once}"
            ));
        }
    }
    assert!(n_formatted > 150, "formatted only {n_formatted} files");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// A program in no particular layout, and the layout `wo fmt` gives it.
const MESSY: &str = "fn main( ) { let x=1; print( x ) }\n";
const TIDY: &str = "fn main() {\n  let x = 1\n  print(x)\n}\n";

#[test]
fn fmt_rewrites_files_and_check_lists_them() {
    let dir = scratch_dir("fmt-rewrite");
    std::fs::create_dir_all(dir.join("app/lib")).expect("mkdir");
    std::fs::write(dir.join("app/main.wo"), MESSY).expect("write");
    std::fs::write(dir.join("app/lib/tidy.wo"), TIDY).expect("write");

    let res = run_wo(&dir, &["fmt", "--check", "app"]);
    res.expect_status(1);
    assert_eq!(res.stdout, "app/main.wo\n");
    assert!(
        res.stderr.contains("1 file is not formatted"),
        "{}",
        res.stderr
    );
    let main = std::fs::read_to_string(dir.join("app/main.wo")).expect("read");
    assert_eq!(main, MESSY, "--check writes nothing");

    run_wo(&dir, &["fmt", "app"]).expect_status(0);
    let main = std::fs::read_to_string(dir.join("app/main.wo")).expect("read");
    assert_eq!(main, TIDY);

    let res = run_wo(&dir, &["fmt", "--check", "app", "app/main.wo"]);
    res.expect_status(0);
    assert_eq!(res.stdout, "");
    assert_eq!(res.stderr, "");
}

#[test]
fn fmt_refuses_a_file_that_does_not_parse() {
    let dir = scratch_dir("fmt-broken");
    let broken = "fn main( {\n  print(1)\n}\n";
    std::fs::write(dir.join("broken.wo"), broken).expect("write");
    std::fs::write(dir.join("messy.wo"), MESSY).expect("write");
    let res = run_wo(&dir, &["fmt", "broken.wo", "messy.wo"]);
    res.expect_status(65);
    assert!(
        res.stderr.contains("broken.wo:1:10: error:"),
        "{}",
        res.stderr
    );
    assert!(
        res.stderr.contains("`broken.wo` not formatted"),
        "{}",
        res.stderr
    );
    let after = std::fs::read_to_string(dir.join("broken.wo")).expect("read");
    assert_eq!(after, broken, "a file that does not parse is left as it is");
    let messy = std::fs::read_to_string(dir.join("messy.wo")).expect("read");
    assert_eq!(messy, TIDY, "the other files are still formatted");

    run_wo(&dir, &["fmt", "--check", "broken.wo"]).expect_status(65);
    run_wo(&dir, &["fmt", "missing.wo"]).expect_status(66);
    run_wo(&dir, &["fmt"]).expect_status(64);
}

/// `wo fmt -`: standard input formatted to standard output, for editors and pipes;
/// with `--check`, its name when it would change; nothing on stdout when it does
/// not parse.
#[test]
fn fmt_of_standard_input_writes_standard_output() {
    let dir = scratch_dir("fmt-stdin");
    let fmt_from = |text: &str, args: &[&str]| {
        let input = dir.join("input");
        std::fs::write(&input, text).expect("write");
        let mut cmd = common::wo();
        cmd.current_dir(&dir)
            .args(args)
            .stdin(std::fs::File::open(&input).expect("open"));
        common::output(cmd)
    };
    let res = fmt_from(MESSY, &["fmt", "-"]);
    res.expect_status(0);
    assert_eq!(res.stdout, TIDY);
    let res = fmt_from(MESSY, &["fmt", "--check", "-"]);
    res.expect_status(1);
    assert_eq!(res.stdout, "<stdin>\n");
    let res = fmt_from(TIDY, &["fmt", "--check", "-"]);
    res.expect_status(0);
    assert_eq!(res.stdout, "");
    let res = fmt_from("fn main( {\n}\n", &["fmt", "-"]);
    res.expect_status(65);
    assert_eq!(res.stdout, "", "no half a program on stdout");
    assert!(
        res.stderr.contains("<stdin>:1:10: error:"),
        "{}",
        res.stderr
    );
    fmt_from(MESSY, &["fmt", "-", "-"]).expect_status(64);
}

/// A write that fails leaves the file as it was (it was truncated to what fitted: a
/// file size limit of 2 KiB kept half of a 4 KiB program), and no stray file; a file
/// reached through a symbolic link is formatted where it lives, its mode kept.
#[cfg(unix)]
#[test]
fn a_failed_write_leaves_the_file_whole() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("fmt-efbig");
    let mut messy = String::from("fn main() {\n");
    for i in 0..300 {
        messy.push_str(&format!("    print({i})\n"));
    }
    messy.push_str("}\n");
    std::fs::write(dir.join("big.wo"), &messy).expect("write");
    // `ulimit -f 2`: files of at most 2 KiB; the formatted program is larger.
    let out = std::process::Command::new("sh")
        .current_dir(&dir)
        .arg("-c")
        .arg(format!(
            "ulimit -f 2; exec {} fmt big.wo",
            env!("CARGO_BIN_EXE_wo")
        ))
        .output()
        .expect("sh");
    assert_eq!(out.status.code(), Some(74), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot write `big.wo`"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.join("big.wo")).unwrap(), messy);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["big.wo"], "a temporary file was left behind");

    std::fs::set_permissions(dir.join("big.wo"), std::fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("big.wo", dir.join("link.wo")).unwrap();
    run_wo(&dir, &["fmt", "link.wo"]).expect_status(0);
    assert!(dir.join("link.wo").is_symlink(), "the link stays a link");
    let tidy = std::fs::read_to_string(dir.join("big.wo")).unwrap();
    assert!(tidy.starts_with("fn main() {\n  print(0)\n"), "{tidy}");
    let mode = std::fs::metadata(dir.join("big.wo"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
}

#[test]
fn fmt_keeps_comments() {
    let dir = scratch_dir("fmt-comments");
    let src = "-- a program\nfn main() {   -- entry\n    -- say it\n  print(1) -- one\n}\n-- end\n";
    std::fs::write(dir.join("c.wo"), src).expect("write");
    run_wo(&dir, &["fmt", "c.wo"]).expect_status(0);
    let after = std::fs::read_to_string(dir.join("c.wo")).expect("read");
    assert_eq!(
        after,
        "-- a program\nfn main() { -- entry\n  -- say it\n  print(1) -- one\n}\n-- end\n"
    );
}

/// The paths `.ci/fmt-exclude` lists.
fn excluded() -> Vec<String> {
    let list =
        std::fs::read_to_string(root().join(".ci/fmt-exclude")).expect("read .ci/fmt-exclude");
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// What `.ci/run` checks, so a plain `cargo test` finds it first: every project
/// `.wo` file is formatted except those `.ci/fmt-exclude` lists, and each of those is
/// one `wo fmt` would refuse or change (the list holds nothing stale).
#[test]
fn the_project_is_formatted_except_the_listed_files() {
    let excluded = excluded();
    let mut problems = Vec::new();
    for path in project_files() {
        let rel = path
            .strip_prefix(root())
            .expect("under the root")
            .display()
            .to_string();
        let Ok(src) = std::fs::read_to_string(&path) else {
            continue;
        };
        let formatted = format(&src).ok();
        let is_formatted = formatted.as_deref() == Some(src.as_str());
        match (excluded.contains(&rel), is_formatted) {
            (false, false) => problems.push(format!("{rel}: not formatted (run `wo fmt {rel}`)")),
            (true, true) => problems.push(format!("{rel}: formatted, yet in .ci/fmt-exclude")),
            _ => {}
        }
    }
    for rel in &excluded {
        if !root().join(rel).exists() {
            problems.push(format!("{rel}: in .ci/fmt-exclude but missing"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
