//! `Vm::set_turn` (the calls and back edges a fiber runs per turn under the scheduler;
//! the fuzz harness shortens it so that a deadline takes effect soon): a shorter turn
//! moves where turns end, so fibers interleave more finely, but the interleaving
//! stays a function of the program (runs repeat) and the program computes the same.
//! Also the scheduler's bound on fibers alive at once.

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

/// A recursion through `spawn` and `join` is bounded as calls are (LANGUAGE.md §10):
/// past the fiber limit `spawn` traps `LIMIT`, and the trap, raised again by every
/// `join` on the way out, keeps both ends of its stack, not every fiber's frames.
/// Before, it took all memory and aborted (found by trying wo from the outside).
#[test]
fn spawning_past_the_fiber_limit_traps_limit_with_a_short_stack() {
    let src = "fn down(n: Int) -> Int {\n  let t = spawn down(n + 1)\n  return join(t)\n}\n\nfn main() {\n  print(join(spawn down(0)))\n}\n";
    let mut sources = wo_compiler::SourceMap::default();
    sources.add("chain.wo", src);
    let image = wo_compiler::compile(&sources).expect("the program compiles");
    let out = Buf::default();
    let host = common::host(&out, image.classes.clone().into());
    let natives = |name: &str| wo_stdlib::lookup(name);
    wo_vm::limit::set_max_fibers(500);
    let mut vm = Vm::new(&image, &natives, host).expect("the image links");
    let mut main = vm.fiber(image.entry.0, Vec::new()).expect("a fiber");
    let status = vm.run_to_end(&mut main);
    wo_vm::limit::set_max_fibers(wo_vm::limit::MAX_FIBERS);
    let Status::Trap { trap, stack } = status else {
        panic!("the program ended with {status:?}");
    };
    assert_eq!(trap.kind, wo_vm::TrapKind::Limit);
    assert_eq!(
        trap.message,
        "more than 500 fibers alive at once (spawned and not ended)"
    );
    let half = wo_vm::interp::MAX_JOINED_FRAMES / 2;
    assert_eq!(stack.len(), 2 * half + 1, "{stack:?}");
    assert_eq!(&*stack[0].function, "down");
    // `down(0)` to `down(499)` (500 fibers besides `main`, the most allowed) and `main`.
    assert_eq!(stack[half].left_out(), Some(500 + 1 - 2 * half));
    assert_eq!(stack.last().map(|f| &*f.function), Some("main"));
}
