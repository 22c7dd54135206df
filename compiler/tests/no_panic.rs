//! The whole compiler (parser, checker, codegen) must never panic on a program, however
//! broken: every corpus program is compiled with each line removed in turn and cut at
//! many points, and every result must be an image or diagnostics. Removing lines and
//! cutting files produce exactly the half-finished programs an editor sees.

use std::path::{Path, PathBuf};

use wo_compiler::{compile, SourceMap};

fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in [
        "tests/programs",
        "tests/compile_fail",
        "tests/disasm",
        "samples",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "wo") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn compiles_without_panic(name: &str, src: &str) {
    let mut sources = SourceMap::default();
    sources.add(name, src);
    let res = std::panic::catch_unwind(|| compile(&sources).map(|_| ()).map_err(|d| d.len()));
    assert!(
        res.is_ok(),
        "the compiler panicked on this variant of {name}:\n{src}"
    );
}

#[test]
fn broken_programs_never_panic_the_compiler() {
    let files = corpus();
    assert!(files.len() > 50, "the corpus was not found");
    let mut n_variants = 0;
    for path in files {
        let src = std::fs::read_to_string(&path).expect("corpus files are UTF-8");
        let name = path.display().to_string();
        let lines: Vec<&str> = src.lines().collect();
        for skip in 0..lines.len() {
            let variant: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, l)| *l)
                .collect();
            compiles_without_panic(&name, &variant.join("\n"));
            n_variants += 1;
        }
        let cuts: Vec<usize> = src.char_indices().map(|(i, _)| i).step_by(7).collect();
        for cut in cuts {
            compiles_without_panic(&name, &src[..cut]);
            n_variants += 1;
        }
    }
    assert!(n_variants > 1000, "only {n_variants} variants were tried");
}
