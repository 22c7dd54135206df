//! Running a program as `wo run --data` does, on the simulated disk, for the `durable`
//! target: the log, group commit of fibers' records, automatic checkpoints, and the
//! failure contract (LANGUAGE.md §8) under injected faults and power cuts.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wo_bytecode::Image;
use wo_db::durable::{Options, SimStorage};
use wo_db::{Cell, RowId};
use wo_vm::Vm;

use crate::{host, outcome, run_vm, watchdog_start, watchdog_stop, Capture, End, Outcome};

/// The data directory on the simulated disk.
pub const DIR: &str = "/d";

/// The rows of every table by table name, in id order; a Float by its bits (so NaN
/// equals itself).
pub type Rows = Vec<(String, Vec<(RowId, Vec<Cell>)>)>;

/// Cells as the checks compare them: a Float by its bits (so NaN equals itself, and
/// `-0.0` differs from `0.0`).
pub fn comparable(cells: &[Cell]) -> Vec<Cell> {
    cells
        .iter()
        .map(|c| match c {
            Cell::Float(x) => Cell::Int(x.to_bits() as i64),
            c => c.clone(),
        })
        .collect()
}

/// How the data directory is opened: on `storage`, with a checkpoint as soon as the
/// log passes 4 KiB (so generated programs checkpoint, under faults too) and a small
/// preallocation (so a full disk turns it off mid-run).
pub fn options(storage: &SimStorage) -> Options {
    Options {
        storage: Arc::new(storage.clone()),
        auto_checkpoint: true,
        checkpoint_min: 4096,
        preallocate: 8192,
        pid: 1,
        ..Options::default()
    }
}

/// The rows of `db`, as [`Rows`].
pub fn rows(db: &wo_db::Db) -> Rows {
    db.schema()
        .tables
        .iter()
        .enumerate()
        .filter(|(_, t)| t.durable)
        .map(|(i, t)| {
            let rows = db
                .rows(i as u32)
                .map(|(id, cells)| (id, comparable(&cells)))
                .collect();
            (t.name.clone(), rows)
        })
        .collect()
}

/// What a durable run did: its output and ending, and the rows its database held when
/// it ended (every acknowledged change, every undone one gone), or `None` when the
/// data directory did not open.
pub struct DurableRun {
    pub outcome: Outcome,
    pub rows: Option<Rows>,
    /// The last record the run knew durable when it ended: its LSN, and where it ends
    /// in the log file then current (0 and 0 when the directory did not open).
    pub durable_lsn: u64,
    pub durable_end: u64,
}

/// Runs `image` under the VM's scheduler (`Vm::run_to_end`, as `wo run` does) with
/// its database durable in [`DIR`] on `storage`, stopped through the interrupt flag
/// after `deadline`. Before it returns, every commit in flight has its answer (the
/// scheduler finishes them), and the data directory is closed.
pub fn run_durable(image: &Image, storage: &SimStorage, deadline: Duration) -> DurableRun {
    crate::set_limits();
    let out = Capture::default();
    let mut vm = match Vm::new(image, &crate::natives, host(&out)) {
        Ok(vm) => vm,
        Err(e) => {
            return DurableRun {
                outcome: outcome(End::Link(e.to_string()), &out),
                rows: None,
                durable_lsn: 0,
                durable_end: 0,
            }
        }
    };
    if let Err(e) = vm
        .database_mut()
        .open_data_dir(Path::new(DIR), options(storage), None)
    {
        return DurableRun {
            outcome: outcome(End::Link(format!("data directory: {e}")), &out),
            rows: None,
            durable_lsn: 0,
            durable_end: 0,
        };
    }
    vm.set_turn(crate::SCHEDULER_TURN);
    vm.set_interrupt(watchdog_start(deadline));
    let end = run_vm(&mut vm, image, &mut |vm, fiber| vm.run_to_end(fiber));
    watchdog_stop();
    let rows = rows(vm.database().db());
    let (durable_lsn, durable_end) = vm
        .database()
        .data_dir()
        .map_or((0, 0), |d| (d.durable_lsn(), d.durable_log_end()));
    drop(vm);
    DurableRun {
        outcome: outcome(end, &out),
        rows: Some(rows),
        durable_lsn,
        durable_end,
    }
}
