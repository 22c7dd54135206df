//! Structure-aware, with the database durable: fuzzer bytes -> a fault plan and a
//! well-typed program (`wo_fuzz::gen`: fibers that commit at once share syncs, group
//! commit), run as `wo run --data` runs it on the simulated disk (`wo_fuzz::durable`),
//! checkpointing as soon as the log passes 4 KiB. The plan is one of: no fault; the
//! k-th sync failing (`EIO`); the k-th write failing (`ENOSPC`, or short); the k-th
//! operation of any kind failing (`EIO`); a power cut before the k-th operation (the
//! disk freezes, every later operation fails; then what was synced survives, and of
//! the writes not synced all, none, or each kept, dropped or garbled by sector).
//!
//! What must hold (LANGUAGE.md §8, the failure contract): the directory opens again
//! afterwards (from the disk as the run left it, or from the power cut's image), and
//! recovery restores exactly the rows the program's database held when it ended:
//! every acknowledged change, none that was undone (a failed sync undoes, in memory,
//! every change not yet durable and cuts its records from the log). After a power
//! cut the cut fails, and a sync may have made records durable that the program never
//! heard were (written while it ran): such in-doubt records may come back, after
//! every record the program knew durable; then the log cut where the program knew it
//! ended must recover exactly what the program held. A program whose
//! directory did not open (a fault while it was created) held nothing. And without a
//! fault, a program that spawns no fiber prints and ends exactly as it does with its
//! database in memory (a durable commit is invisible but for time).
#![no_main]
use std::path::Path;

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use wo_db::durable::{self, Fate, FaultKind, OpKind, OpenError, SimStorage, Storage};
use wo_fuzz::durable::{options, rows, run_durable, DIR};
use wo_fuzz::gen::{program_of, TABLE_ATTR, TABLE_VARIANTS};
use wo_fuzz::{
    compile, run_budgeted, spawns, End, BUDGET, DURABLE_DEADLINE, GEN_ALONE_DEADLINE, GEN_DEADLINE,
};

const EIO: i32 = 5;
const ENOSPC: i32 = 28;

/// How long each sync takes for one input in four (`SimStorage::set_sync_delay`): long
/// enough for the program to go on and write more records while a sync is in flight
/// (group commit's second batch), short enough to keep the run cheap.
const SLOW_SYNC: std::time::Duration = std::time::Duration::from_micros(300);

#[derive(Debug, Clone, Copy)]
enum Plan {
    None,
    Fail(&'static [OpKind], u64, FaultKind),
    /// A power cut before operation k, and what becomes of the writes not synced.
    PowerCut(usize, Fate),
}

/// The fault plan, and whether syncs are slow.
fn plan(u: &mut Unstructured<'_>) -> Result<(Plan, bool)> {
    const SYNC: &[OpKind] = &[OpKind::Sync];
    const WRITE: &[OpKind] = &[OpKind::Write];
    let (mode, k): (u8, u8) = (u.arbitrary()?, u.arbitrary()?);
    let k64 = u64::from(k);
    let slow = (mode / 6) % 4 == 0;
    let plan = match mode % 6 {
        0 => Plan::None,
        1 => Plan::Fail(SYNC, k64 % 24 + 1, FaultKind::Errno(EIO)),
        2 => Plan::Fail(WRITE, k64 % 48 + 1, FaultKind::Errno(ENOSPC)),
        3 => Plan::Fail(WRITE, k64 % 48 + 1, FaultKind::ShortWrite),
        4 => Plan::Fail(&OpKind::ALL, k64 + 1, FaultKind::Errno(EIO)),
        _ => Plan::PowerCut(
            usize::from(k),
            match (mode / 24) % 3 {
                0 => Fate::DropAll,
                1 => Fate::KeepAll,
                _ => Fate::Random(u64::from(k) << 8 | u64::from(mode)),
            },
        ),
    };
    Ok((plan, slow))
}

/// The worker's insert, in `wo_fuzz::gen`'s fixed helper.
const WORKER_INSERT: &str = "    insert Row { k: n + i, t: t }\n";

/// The program with acknowledgements the check can read: the fixed helper `worker`
/// (run by fibers, several of whose commits share a sync) also inserts into a table
/// `Ack` that nothing else touches, and prints `@ack:N` once that insert is
/// acknowledged (the statement completed, so its record is durable).
fn with_acks(src: &str) -> String {
    let ack = "    insert Ack { n: n * 10 + i }\n    print(\"@ack:${n * 10 + i}\")\n";
    let mut out = src.replacen(WORKER_INSERT, &format!("{WORKER_INSERT}{ack}"), 1);
    out.push_str("\n@table\nclass Ack {\n  n: Int\n}\n");
    out
}

/// The `@ack:N` lines of an output: each N an acknowledged insert into `Ack`. Whole
/// lines only: the capture keeps the first `wo_fuzz::OUTPUT_CAP` bytes, and a line it
/// cut acknowledges nothing (H6: `@ack:4620` cut to `@ack:46`, an insert never made).
fn acks(out: &[u8]) -> Vec<i64> {
    String::from_utf8_lossy(out)
        .split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n')?.strip_prefix("@ack:")?.parse().ok())
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok((plan, slow)) = plan(&mut u) else {
        return;
    };
    let Ok(variant) = u.arbitrary::<u8>() else {
        return;
    };
    let consumed = data.len() - u.len();
    let Ok(prog) = program_of(data, consumed, &mut u) else {
        return;
    };
    let src = with_acks(&prog.replace(
        TABLE_ATTR,
        TABLE_VARIANTS[usize::from(variant) % TABLE_VARIANTS.len()],
    ));
    if std::env::var_os("WO_FUZZ_PRINT").is_some() {
        eprintln!("{plan:?}\n{src}");
    }
    let image = match compile(&src) {
        Ok(i) => i,
        Err(d) => panic!("a generated program does not compile: {d:?}\n{src}"),
    };
    let storage = SimStorage::new();
    storage.set_memory_limit(wo_fuzz::SIM_MEMORY);
    if slow {
        storage.set_sync_delay(SLOW_SYNC);
    }
    match plan {
        Plan::None => {}
        Plan::Fail(kinds, n, fault) => storage.fail_nth(kinds, n, fault),
        Plan::PowerCut(k, _) => storage.crash_before(k),
    }
    let run = run_durable(&image, &storage, DURABLE_DEADLINE);
    if std::env::var_os("WO_FUZZ_PRINT").is_some() {
        let n = |r: &Option<wo_fuzz::durable::Rows>| {
            r.as_ref()
                .map(|r| r.iter().map(|(_, v)| v.len()).sum::<usize>())
        };
        eprintln!(
            "=> {:?}, {} acks, rows held {:?}, fault fired at op {:?}, crashed {}",
            run.outcome.end,
            acks(&run.outcome.out).len(),
            n(&run.rows),
            storage.fault_fired(),
            storage.crashed()
        );
    }
    // A detached copy: a fault planned for an operation the run never reached must
    // not fire in the check's own recovery.
    let disk = storage.crash_image(match plan {
        Plan::PowerCut(_, fate) if storage.crashed() => fate,
        _ => Fate::KeepAll,
    });
    let dir = Path::new(DIR);
    let Some(held) = run.rows else {
        // The directory was not created: what is there is no data directory, or one
        // that opens with no rows.
        match durable::stored_schema(dir, &options(&disk)) {
            Err(OpenError::NotADataDirectory { .. }) => {}
            Err(e) => panic!(
                "{plan:?}: what a failed creation left is neither a data directory nor none: {e}\n{src}"
            ),
            Ok(schema) => match durable::open(dir, schema, options(&disk)) {
                Ok((_, db)) => assert!(
                    rows(&db).iter().all(|(_, r)| r.is_empty()),
                    "{plan:?}: a directory that failed to open at the start recovers rows\n{src}"
                ),
                Err(e) => panic!(
                    "{plan:?}: a directory whose creation failed does not open again: {e}\n{src}"
                ),
            },
        }
        return;
    };
    // A copy for the in-doubt check below, taken before recovery writes to the disk.
    let cut = disk.crash_image(Fate::KeepAll);
    let recover = |disk: &SimStorage, what: &str| {
        let schema = match durable::stored_schema(dir, &options(disk)) {
            Ok(s) => s,
            Err(e) => panic!("{plan:?}: the directory's schema does not read {what}: {e}\n{src}"),
        };
        match durable::open(dir, schema, options(disk)) {
            Ok((dd, db)) => (rows(&db), dd.durable_lsn()),
            Err(e) => panic!(
                "{plan:?}: the directory does not open {what} ({:?}): {e}\n{src}",
                run.outcome.end
            ),
        }
    };
    let (recovered, last) = recover(&disk, "after the run");
    // In doubt (LANGUAGE.md §8): after a failure the log is cut back to its last
    // durable record, but a frozen disk (the power cut) refuses the cut, and a sync
    // that ran while later records were written made them durable too, unknown to the
    // program, which undid them. They come back whole, in log order, after every
    // record the program knew durable. What the program held must then be what
    // recovery gives from the log cut where the program knew it ended.
    let nonempty = |r: &wo_fuzz::durable::Rows| {
        r.iter()
            .filter(|(_, rows)| !rows.is_empty())
            .cloned()
            .collect::<Vec<_>>()
    };
    // A checkpoint whose directory sync failed after it renamed its new log
    // generation into place leaves that generation's first record (synced before the
    // rename; it holds the schema, no row) past what the writer knew durable (D1 in
    // docs/fuzzing.md): allowed when the records past it change no row.
    let extra_rows_only_schema = !storage.crashed() && nonempty(&recovered) == nonempty(&held);
    let expected = if last > run.durable_lsn && !extra_rows_only_schema {
        assert!(
            storage.crashed(),
            "{plan:?}: recovery passes the last record the program knew durable ({last} > {}), though the disk never froze and the log could be cut\n{src}",
            run.durable_lsn
        );
        let cut_log = cut
            .open(&dir.join("wal"), false)
            .and_then(|mut f| f.truncate(run.durable_end));
        if let Err(e) = cut_log {
            panic!("{plan:?}: the log cannot be cut for the check: {e}");
        }
        let (rows, at) = recover(&cut, "with the log cut where the program knew it durable");
        assert_eq!(
            at, run.durable_lsn,
            "{plan:?}: the log cut at byte {} does not end with the last record the program knew durable\n{src}",
            run.durable_end
        );
        rows
    } else {
        recovered.clone()
    };
    assert!(
        nonempty(&expected) == nonempty(&held),
        "{plan:?}: recovery differs from what the program held when it ended ({:?})\nheld {held:?}\nrecovered {expected:?}\n{src}",
        run.outcome.end
    );
    // Every insert acknowledged to the program survives: an acknowledgement given
    // before the record was durable, then undone by a failed sync, leaves the same
    // final state, but not the same output. (Inside a `transaction`, an insert is
    // acknowledged only at the commit, after the print: not checked then.)
    if !src.contains("transaction") {
        let mut acked = acks(&run.outcome.out);
        let mut stored: Vec<i64> = recovered
            .iter()
            .filter(|(t, _)| t == "Ack")
            .flat_map(|(_, rows)| rows.iter().map(|(_, cells)| cells[0].clone()))
            .filter_map(|c| match c {
                wo_db::Cell::Int(n) => Some(n),
                _ => None,
            })
            .collect();
        acked.sort_unstable();
        stored.sort_unstable();
        let mut missing = Vec::new();
        let mut it = stored.iter().peekable();
        for a in &acked {
            while it.next_if(|s| *s < a).is_some() {}
            if it.next_if(|s| *s == a).is_none() {
                missing.push(*a);
            }
        }
        assert!(
            missing.is_empty(),
            "{plan:?}: inserts acknowledged to the program are not recovered: {missing:?} ({:?})\n{src}",
            run.outcome.end
        );
    }
    if matches!(plan, Plan::None) && !spawns(&image) && run.outcome.end != End::Deadline {
        let mem = run_budgeted(&image, BUDGET, GEN_ALONE_DEADLINE, Some(GEN_DEADLINE));
        if !matches!(mem.end, End::Budget | End::Deadline) {
            assert!(
                mem.end == run.outcome.end && mem.out == run.outcome.out,
                "durable and in-memory runs differ: {:?} vs {:?}\n{}\n---\n{}\n{src}",
                run.outcome.end,
                mem.end,
                String::from_utf8_lossy(&run.outcome.out),
                String::from_utf8_lossy(&mem.out)
            );
        }
    }
});
