//! The failure contract under pipelined group commit, in process on the simulated
//! disk (LANGUAGE.md §8, §9): when a write fails while the log thread is syncing the
//! records of fibers that wait for their commit, that sync is let finish; the fibers
//! whose records it made durable go on, acknowledged, and only the later changes are
//! undone, with `IO` raised where they were made.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Buf;
use wo_vm::durable::{self, Fate, FaultKind, OpKind, Options, SimStorage};
use wo_vm::{Status, Vm};

const EIO: i32 = 5;

/// `writer` commits and waits for its sync; `main` lets that sync start (a round of
/// the scheduler ends when `main` yields), then writes while it runs.
const PROGRAM: &str = "@table
class Row {
  k: Int
}

fn writer() -> Int {
  insert Row { k: 1 }
  print(\"writer: acknowledged\")
  return 1
}

fn main() {
  let t = spawn writer()
  yield()
  yield()
  try {
    insert Row { k: 2 }
    print(\"main: acknowledged\")
  } catch (e) {
    print(\"main: ${e.kind}\")
  }
  print(\"joined ${join(t)}\")
  print(\"rows ${count(from r in Row select r)}\")
}
";

fn options(sim: &SimStorage) -> Options {
    Options {
        storage: Arc::new(sim.clone()),
        preallocate: 0,
        auto_checkpoint: false,
        ..Options::default()
    }
}

#[test]
fn a_write_failing_during_a_sync_keeps_the_commits_that_sync_made_durable() {
    let mut sources = wo_compiler::SourceMap::default();
    sources.add("fence.wo", PROGRAM);
    let image = wo_compiler::compile(&sources).expect("the program compiles");
    let out = Buf::default();
    let host = common::host(&out, image.classes.clone().into());
    let natives = |name: &str| wo_stdlib::lookup(name);
    let mut vm = Vm::new(&image, &natives, host).expect("the image links");
    let sim = SimStorage::new();
    let dir = Path::new("/data");
    vm.database_mut()
        .open_data_dir(dir, options(&sim), None)
        .expect("the directory opens");
    // Every sync sleeps long enough for `main` to write while the writer's runs; the
    // second write of the log (main's record) fails.
    sim.set_sync_delay(Duration::from_millis(500));
    sim.fail_nth(&[OpKind::Write], 2, FaultKind::Errno(EIO));
    let mut main = vm.fiber(image.entry.0, Vec::new()).expect("a fiber");
    let end = vm.run_to_end(&mut main);
    drop(vm);
    let printed = String::from_utf8(out.0.borrow().clone()).expect("UTF-8 output");
    assert!(matches!(end, Status::Done(_)), "{end:?}\n{printed}");
    assert!(sim.fault_fired().is_some(), "the fault fired\n{printed}");
    // The writer is woken as the fence reads the sync's answer; were the machine so
    // loaded that the sync ended before `main` wrote, it would be woken first: the
    // order of the first two lines is not what is checked.
    let mut lines: Vec<&str> = printed.lines().collect();
    let first_two = lines.len().min(2);
    lines[..first_two].sort_unstable();
    assert_eq!(
        lines,
        ["main: IO", "writer: acknowledged", "joined 1", "rows 1"],
        "the writer's commit was durable before the failure: acknowledged, kept\n{printed}"
    );
    // Recovery agrees: the acknowledged row, not the undone one, whatever the power
    // cut keeps of the unsynced writes.
    for fate in [Fate::DropAll, Fate::KeepAll] {
        let img = sim.crash_image(fate);
        let schema = durable::stored_schema(dir, &options(&img)).expect("a schema");
        let (_dd, db) = durable::open(dir, schema, options(&img)).expect("recovery");
        let rows: Vec<_> = db.rows(0).map(|(_, cells)| format!("{cells:?}")).collect();
        assert_eq!(rows, ["[Int(1)]"], "{fate:?}");
    }
}
