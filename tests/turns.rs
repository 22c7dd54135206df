//! `Vm::set_turn` (the calls and back edges a fiber runs per turn under the scheduler;
//! the fuzz harness shortens it so that a deadline takes effect soon): a shorter turn
//! moves where turns end, so fibers interleave more finely, but the interleaving
//! stays a function of the program (runs repeat) and the program computes the same.

mod common;

use common::Buf;
use wo_vm::{Status, Vm};

const FIBERS: &str = "fn count(name: Text) -> Int {
  let i = 0
  while i < 3 {
    print(name)
    i += 1
  }
  return i
}

fn main() {
  let t = spawn count(\"b\")
  let a = count(\"a\")
  print(a + join(t))
}
";

/// What `src` prints run under the scheduler, with turns of `turn` (the default
/// without).
fn run(src: &str, turn: Option<u32>) -> String {
    let mut sources = wo_compiler::SourceMap::default();
    sources.add("turns.wo", src);
    let image = wo_compiler::compile(&sources).expect("the program compiles");
    let out = Buf::default();
    let host = common::host(&out, image.classes.clone().into());
    let natives = |name: &str| wo_stdlib::lookup(name);
    let mut vm = Vm::new(&image, &natives, host).expect("the image links");
    if let Some(t) = turn {
        vm.set_turn(t);
    }
    let mut main = vm.fiber(image.entry.0, Vec::new()).expect("a fiber");
    match vm.run_to_end(&mut main) {
        Status::Done(_) => {}
        other => panic!("the program ended with {other:?}"),
    }
    drop(vm);
    let bytes = out.0.borrow().clone();
    String::from_utf8(bytes).expect("UTF-8 output")
}

#[test]
fn a_shorter_turn_interleaves_fibers_more_finely_and_still_repeats() {
    // A full turn: `main` runs its loop to the end before the spawned fiber starts.
    assert_eq!(run(FIBERS, None), "a\na\na\nb\nb\nb\n6\n");
    let short = run(FIBERS, Some(1));
    assert_ne!(
        short,
        run(FIBERS, None),
        "one back edge per turn interleaves"
    );
    assert_eq!(short, run(FIBERS, Some(1)), "the same turn, the same run");
    let mut lines: Vec<&str> = short.lines().collect();
    assert_eq!(
        lines.pop(),
        Some("6"),
        "the result does not change: {short}"
    );
    lines.sort_unstable();
    assert_eq!(lines, ["a", "a", "a", "b", "b", "b"], "{short}");
    // 0 means 1: a turn always makes progress.
    assert_eq!(run(FIBERS, Some(0)), short);
}
