//! The simulated-crash matrix: random workloads (inserts, updates, deletes,
//! transactions, statements the engine refuses, automatic checkpoints), a power cut
//! before every operation the data directory makes (so at every sync point, before
//! and after it), and each unsynced write kept, dropped or garbled by several fates.
//! Recovery must bring back every acknowledged commit and at most the one batch in
//! flight, whole: the recovered state equals the acknowledged state or the
//! acknowledged state plus the in-flight batch, row for row.

mod durable_support;

use std::path::PathBuf;

use durable_support::*;
use wo_db::durable::{self, Fate, OpKind, SimStorage};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

struct Run {
    sim: SimStorage,
    acked: State,
    inflight: Option<State>,
    ops: usize,
}

fn run(seed: u64, steps: usize, prealloc: bool, crash: Option<usize>) -> Run {
    let sim = SimStorage::new();
    if let Some(k) = crash {
        sim.crash_before(k);
    }
    let empty = State(vec![(1, vec![]), (1, vec![])]);
    let (mut dd, mut db) = match durable::open(&dir(), schema(), crash_options(&sim, prealloc)) {
        Ok(x) => x,
        Err(e) => {
            assert!(sim.crashed(), "open failed without a crash: {e}");
            return Run {
                sim,
                acked: empty,
                inflight: None,
                ops: 0,
            };
        }
    };
    let mut rng = Rng(seed);
    let mut acked = state(&db);
    let mut inflight = None;
    let mut cand = acked.clone();
    for _ in 0..steps {
        match step(&mut dd, &mut db, &mut rng, &mut cand) {
            Step::Refused => {}
            Step::Committed(o) => {
                acked = cand.clone();
                if o.checkpoint_error.is_some() {
                    assert!(
                        sim.crashed(),
                        "checkpoint failed without a crash: {:?}",
                        o.checkpoint_error
                    );
                }
            }
            Step::Failed(f) => {
                assert!(sim.crashed(), "commit failed without a crash: {f}");
                assert_eq!(state(&db), acked, "the failed batch was undone in memory");
                inflight = Some(cand.clone());
                break;
            }
        }
    }
    let ops = sim.op_count();
    Run {
        sim,
        acked,
        inflight,
        ops,
    }
}

/// Returns whether the in-flight batch came back.
fn check(r: &Run, fate: Fate, what: &str) -> bool {
    let img = r.sim.crash_image(fate);
    let (_dd, db) = match durable::open(&dir(), schema(), crash_options(&img, false)) {
        Ok(x) => x,
        Err(e) => panic!("{what} {fate:?}: recovery refused: {e}"),
    };
    let got = state(&db);
    assert!(
        got == r.acked || Some(&got) == r.inflight.as_ref(),
        "{what} {fate:?}: recovered state is neither the acknowledged one nor it plus the in-flight batch"
    );
    got != r.acked
}

fn matrix(seeds: &[u64], steps: usize, prealloc: bool) {
    let mut cases = 0;
    let mut sync_points = 0;
    let mut came_back = 0;
    let mut checkpoints = 0;
    for &seed in seeds {
        let full = run(seed, steps, prealloc, None);
        let ops = full.sim.ops();
        checkpoints += ops
            .iter()
            .filter(|o| o.kind == OpKind::Rename && o.path.ends_with("checkpoint"))
            .count();
        for k in 0..=full.ops {
            let r = run(seed, steps, prealloc, Some(k));
            let what = format!(
                "seed {seed}, crash before op {k} ({:?})",
                ops.get(k).map(|o| o.kind)
            );
            if ops
                .get(k)
                .is_some_and(|o| matches!(o.kind, OpKind::Sync | OpKind::DirSync))
            {
                sync_points += 1;
            }
            for fate in [
                Fate::KeepAll,
                Fate::DropAll,
                Fate::Random(seed * 7919 + k as u64),
                Fate::Random(k as u64),
            ] {
                came_back += usize::from(check(&r, fate, &what));
                cases += 1;
            }
        }
    }
    eprintln!(
        "crash matrix (prealloc {prealloc}): {cases} recoveries ({came_back} brought the in-flight batch back), \
         {sync_points} sync points, {checkpoints} checkpoints, seeds {seeds:?}"
    );
    assert!(
        came_back > 0 && came_back < cases,
        "both outcomes of an in-flight batch occur"
    );
    assert!(checkpoints >= seeds.len(), "the workloads checkpoint");
}

#[test]
fn crash_anywhere_recovers_acked_and_at_most_the_inflight_batch() {
    matrix(&[1, 2, 3, 6, 7, 8], 150, false);
}

#[test]
fn crash_anywhere_with_preallocation() {
    matrix(&[4, 5, 9], 150, true);
}

#[test]
fn long_crash_matrix() {
    if std::env::var_os("WO_LONG_TESTS").is_none() {
        return;
    }
    matrix(&(10..30).collect::<Vec<_>>(), 400, false);
    matrix(&(30..40).collect::<Vec<_>>(), 400, true);
}
