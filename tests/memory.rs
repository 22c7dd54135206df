//! The cycle collector (`vm/src/gc.rs`) seen from outside: reference cycles nothing
//! refers to any more are freed, so a program that makes and drops them runs in flat
//! memory.

mod common;

use std::rc::Rc;

use common::Buf;
use wo_compiler::SourceMap;
use wo_vm::{gc, RunResult};

/// Compiles and runs `src` in this thread (whose collector the test then inspects);
/// its stdout.
fn run_here(src: &str, args: &[&str]) -> String {
    let mut sources = SourceMap::default();
    sources.add("main.wo", src);
    let image = wo_compiler::compile(&sources).expect("the program compiles");
    let out = Buf::default();
    let host = common::host(&out, Rc::from(Vec::new()));
    let args = args.iter().map(|a| a.to_string()).collect();
    let res = wo_vm::run(&image, &wo_stdlib::lookup, args, host).expect("the image links");
    assert_eq!(res, RunResult::Exit(0));
    let text = String::from_utf8(out.0.borrow().clone()).expect("UTF-8 output");
    text
}

const PAIRS: &str = r#"
class Pair {
  id: Int
  other: ?Pair
  bag: multi Pair
  index: map<Int, Pair>
}

fn main(args: multi Text) {
  let n = unwrap(parse_int(args[0]))
  let i = 0
  while i < n {
    -- through fields
    let a = Pair { id: i, bag: [], index: {} }
    let b = Pair { id: i, other: a, bag: [], index: {} }
    a.other = b
    -- through a list, and a map; and an object that refers to itself
    let c = Pair { id: i, bag: [], index: {} }
    push(c.bag, c)
    c.index[i] = a
    i += 1
  }
  print("done")
}
"#;

#[test]
fn dropped_cycles_are_freed_as_the_program_runs() {
    let n = 100_000;
    assert_eq!(run_here(PAIRS, &[&n.to_string()]), "done\n");
    let stats = gc::stats();
    // 3 objects, 3 lists and 3 maps a round, all in cycles: without the collector
    // every one would still be alive.
    assert!(stats.freed > 8 * n, "{stats:?}");
    assert!(
        stats.peak_tracked < 4 * gc::YOUNG,
        "the registry grew with the garbage: {stats:?}"
    );
    gc::collect();
    assert!(gc::live() < 10, "{} still alive", gc::live());
}

/// The program's peak resident memory in kB after `n` cycles.
fn peak_kb(n: u32) -> u64 {
    let dir = common::root().join("tests/memory");
    let out = common::run_wo(&dir, &["run", "cycles.wo", "--", &n.to_string()]);
    out.stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("a number of kB:\n{}", out.snapshot()))
}

#[cfg(target_os = "linux")]
#[test]
fn peak_memory_stays_flat_with_ten_times_the_cycles() {
    // Leaked, 270k more pairs would take over 50 MB.
    let small = peak_kb(30_000);
    let big = peak_kb(300_000);
    assert!(
        big < small + 8 * 1024,
        "peak RSS {small} kB with 30k cycles, {big} kB with 300k"
    );
}

/// `for c in t` walks the text by a byte cursor: a 10-million-character text takes its
/// own 10 MB, not a list of its characters (24 bytes each, 240 MB).
#[cfg(target_os = "linux")]
#[test]
fn walking_a_text_makes_no_list_of_its_characters() {
    let dir = common::root().join("tests/memory");
    let out = common::run_wo(&dir, &["run", "text_walk.wo", "--", "10000000"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"1000000"), "{}", out.snapshot());
    let peak: u64 = lines
        .get(1)
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("a number of kB:\n{}", out.snapshot()));
    assert!(peak < 80 * 1024, "peak RSS {peak} kB");
}

/// 100,000 writer fibers waiting for their commits at once (helper-53): a fiber
/// waiting for a sync kept its whole register file, ~6.5 KB, so they took 655 MB;
/// past 8,192 waiting they give back their spare registers as sleeping fibers do
/// (~67 MB).
#[cfg(target_os = "linux")]
#[test]
fn many_fibers_waiting_for_a_sync_stay_small() {
    let dir = common::scratch_dir("commit-waiters");
    let prog = common::root().join("tests/memory/commit_waiters.wo");
    let out = common::run_wo(
        &dir,
        &["run", prog.to_str().unwrap(), "--data", "d", "--", "100000"],
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"100000"), "{}", out.snapshot());
    let peak: u64 = lines
        .get(1)
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("a number of kB:\n{}", out.snapshot()));
    assert!(peak < 200 * 1024, "peak RSS {peak} kB");
}
