//! Shared helpers of the fuzz targets (docs/fuzzing.md): a sandboxed set of natives,
//! running a verified image under an instruction budget with its output captured,
//! and re-sealing the CRCs of a mutated data directory.

pub mod durable;
pub mod gen;

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use wo_bytecode::{Image, Op};
use wo_vm::{Host, NativeFn, Status, Stop, Trap, TrapKind, Value, Vm};

/// Calls and loop back edges an image without fibers may run (over `init` and `main`
/// together).
pub const BUDGET: u32 = 20_000;

/// The memory of the simulated machine in the `datadir` and `durable` targets
/// (`SimStorage::set_memory_limit`): recovery refuses a stored id counter whose row
/// slots would not fit (W1). At the default 256 MiB, a 284-byte checkpoint whose
/// counter sat just under it cost seconds of slot allocation in the instrumented build
/// and timed out on a loaded machine (H3, docs/fuzzing.md).
pub const SIM_MEMORY: u64 = 16 << 20;

/// Bytes of output kept per run (the rest is counted, not stored).
pub const OUTPUT_CAP: usize = 1 << 20;

/// The size limit of one Text or list in a fuzzed run (`wo_vm::limit`, LANGUAGE.md
/// §10; 1 GiB in `wo run`), past which the VM traps `LIMIT`. With 1 GiB, a fuzzed
/// image printed 2.4 GB of texts of tens of megabytes within one second's slices and
/// went past libFuzzer's 2 GB (H2 in docs/fuzzing.md).
pub const MAX_BYTES: usize = 1 << 20;

/// The fibers alive at once in a fuzzed run (`wo_vm::limit::set_max_fibers`; 1,000,000
/// in `wo run`), past which `spawn` traps `LIMIT`. Generated programs spawn in nested
/// loops: one spawned 3,900 fibers that each counted a table they all grew, 24
/// million row visits per run, and such programs were a fifth of `gen`'s corpus and
/// most of its time (December 4: 92 inputs a second on an idle core).
pub const MAX_FIBERS: usize = 64;

/// Sets the fuzzed runs' limits ([`MAX_BYTES`], [`MAX_FIBERS`]) on this thread.
pub fn set_limits() {
    wo_vm::limit::set_max_bytes(MAX_BYTES);
    wo_vm::limit::set_max_fibers(MAX_FIBERS);
}

fn denied(_: &mut Host, _: &[Value]) -> Result<Value, Stop> {
    Err(Stop::Trap(Trap::new(
        TrapKind::Io,
        "denied by the fuzz sandbox",
    )))
}

fn zero_time(_: &mut Host, _: &[Value]) -> Result<Value, Stop> {
    Ok(Value::Int(0))
}

/// The stdlib, except that the file system, the environment and sleeping trap `IO`
/// (a fuzzed image must not touch the machine) and the clocks read 0 (runs repeat).
pub fn natives(name: &str) -> Option<NativeFn> {
    if name.starts_with("fs.") || name.starts_with("env.") || name == "time.sleep" {
        return Some(denied);
    }
    if name == "time.now" || name == "time.ticks" {
        return Some(zero_time);
    }
    wo_stdlib::lookup(name)
}

/// A writer that keeps the first [`OUTPUT_CAP`] bytes and counts the rest.
#[derive(Clone, Default)]
pub struct Capture(pub Rc<RefCell<(Vec<u8>, usize)>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut g = self.0.borrow_mut();
        let room = OUTPUT_CAP.saturating_sub(g.0.len());
        g.0.extend_from_slice(&buf[..buf.len().min(room)]);
        g.1 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How a budgeted run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// The image did not link.
    Link(String),
    /// `main` returned or `exit` was called.
    Exit(i32),
    /// An uncaught trap, its kind name and message.
    Trap(&'static str, String),
    /// The image broke an interpreter invariant.
    Fault(String),
    /// The budget ran out.
    Budget,
    /// A run under the scheduler was stopped at its deadline.
    Deadline,
}

/// What a run printed and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub end: End,
    pub out: Vec<u8>,
    pub out_len: usize,
}

/// How long a run under the scheduler may take (wall clock) in the `image` target,
/// where most such runs are fuzzed images that loop.
pub const IMAGE_DEADLINE: Duration = Duration::from_millis(2);

/// How long a run under the budget may take (wall clock) in the `image` target. The
/// budget counts calls and back edges, not work: a loop that inserts rows and
/// aggregates over the table each time is quadratic within it (a fuzzed image did
/// 20,000 such iterations, minutes of work), and inside a transaction the VM does not
/// stop at a budget (LANGUAGE.md §9: the budget does not preempt there).
pub const ALONE_DEADLINE: Duration = Duration::from_secs(1);

/// The same for a generated program (`gen`, `durable`). A run cut short is not
/// compared, and the generator's loops over query results that insert into the table
/// they walk grow it cubically: with 1 s (and 200 ms under the scheduler) a fifth of
/// a campaign's corpus ran into a deadline and took 95% of the time (a median input
/// took 6 ms, the mean 123 ms), so `gen` ran 28 inputs a second. With 100 ms (and
/// 50 ms) the corpus of December 4 did it again (a fifth of 500 inputs ran into a
/// deadline, two thirds of the time): with 40 ms (and 20 ms) 3% more of them are cut
/// short and the runs take a third of the time.
pub const GEN_ALONE_DEADLINE: Duration = Duration::from_millis(40);

/// The calls and back edges of a fiber's turn under the scheduler in fuzzed runs
/// (`Vm::set_turn`; `wo run` uses 65,536): the deadline is read between two turns, so
/// this bounds how far a run can go past it. With full turns, one turn of an image
/// that collects cycles in a loop took up to a second, and the fuzzer bred many such
/// images, so `image` could afford the scheduler for one waiting input in eight only.
pub const SCHEDULER_TURN: u32 = 1_000;

/// The calls and back edges between two reads of the interrupt flag inside a
/// transaction in the run under the budget, where the VM goes on past a slice (it does
/// not preempt there) and reads the flag once a turn. The budget counts no work, so
/// a turn can be long: a generated program that grew its table inside a transaction
/// (`fuzz/regressions/gen/g1-…`) ran 37 s past its one-second deadline with full
/// turns (65,536), 2.8 s with turns of 1,000.
pub const ALONE_TURN: u32 = 64;

/// The same for a generated program (`gen`, `durable`), which ends by construction
/// (see [`GEN_ALONE_DEADLINE`]).
pub const GEN_DEADLINE: Duration = Duration::from_millis(20);

/// The deadline of `durable`'s run on the simulated disk, whose syncs can be slow
/// (300 µs each for one input in four): what the run acknowledged is checked however
/// it ended, so it is not shortened with [`GEN_DEADLINE`].
pub const DURABLE_DEADLINE: Duration = Duration::from_millis(50);

/// Runs `image` (`init`, then `main` with no arguments) with the database in memory.
///
/// First on its own, for at most `budget` calls and back edges in all, resumed slice
/// by slice: deterministic, and [`End::Budget`] when the budget runs out. That is the
/// whole run unless the program waits (`yield()`, `join`): a fiber it spawned runs
/// only when its spawner waits, or after a scheduler turn of at least 65,536 back
/// edges, more than `budget`. If it waits, it runs again from the start under the
/// VM's scheduler (`Vm::run_to_end`, as `wo run` runs it), so the spawned fibers run,
/// interleave and are joined. The scheduler has no instruction budget, so that run
/// is stopped through the VM's interrupt flag once `deadline` (wall clock) has passed
/// ([`End::Deadline`], the only timing-dependent ending; the flag is read between
/// two turns, so the run can last a turn longer). Without a `deadline`, a program
/// that waits is not run again: it ends in [`End::Budget`]. The run under the budget
/// is stopped likewise after `alone` ([`End::Deadline`]), checked between slices of
/// [`SLICE`] calls and back edges (and by the VM inside a transaction).
pub fn run_budgeted(
    image: &Image,
    budget: u32,
    alone: Duration,
    deadline: Option<Duration>,
) -> Outcome {
    set_limits();
    let out = Capture::default();
    let mut waited = false;
    let end = match Vm::new(image, &natives, host(&out)) {
        Err(e) => End::Link(e.to_string()),
        Ok(mut vm) => {
            let flag = watchdog_start(alone);
            vm.set_interrupt(flag.clone());
            vm.set_turn(ALONE_TURN);
            let mut left = budget;
            let end = run_vm(&mut vm, image, &mut |vm, fiber| {
                let status = resume_budgeted(vm, fiber, &mut left, &flag);
                waited |= matches!(status, Status::Wait(_));
                status
            });
            watchdog_stop();
            end
        }
    };
    let Some(deadline) = deadline.filter(|_| waited) else {
        return outcome(end, &out);
    };
    let out = Capture::default();
    let end = match Vm::new(image, &natives, host(&out)) {
        Err(e) => End::Link(e.to_string()),
        Ok(mut vm) => {
            vm.set_turn(SCHEDULER_TURN);
            vm.set_interrupt(watchdog_start(deadline));
            let end = run_vm(&mut vm, image, &mut |vm, fiber| vm.run_to_end(fiber));
            watchdog_stop();
            end
        }
    };
    outcome(end, &out)
}

pub(crate) fn host(out: &Capture) -> Host {
    Host {
        out: Box::new(out.clone()),
        err: Box::new(std::io::sink()),
        input: Box::new(std::io::empty()),
        classes: Rc::from(Vec::new()),
        rng: 1,
        started: Instant::now(),
    }
}

pub(crate) fn outcome(end: End, out: &Capture) -> Outcome {
    let g = out.0.borrow();
    Outcome {
        end,
        out: g.0.clone(),
        out_len: g.1,
    }
}

/// Whether any function of `image` has a `SPAWN` instruction.
pub fn spawns(image: &Image) -> bool {
    image
        .functions
        .iter()
        .any(|f| f.code.iter().any(|op| matches!(op, Op::Spawn { .. })))
}

/// `init`, then `main`, each run to its end by `run`; as `wo run` does, a `main` that
/// returns with a task that trapped and was never joined ends with that trap.
pub(crate) fn run_vm(
    vm: &mut Vm<'_>,
    image: &Image,
    run: &mut dyn FnMut(&mut Vm<'_>, &mut wo_vm::Fiber) -> Status,
) -> End {
    if let Some(init) = image.init {
        if let Err(end) = run_fiber(vm, init.0, Vec::new(), run) {
            return end;
        }
    }
    let arity = image
        .functions
        .get(image.entry.index())
        .map_or(0, |f| f.arity);
    let args = if arity == 1 {
        vec![Value::new_list(Vec::new())]
    } else {
        Vec::new()
    };
    match run_fiber(vm, image.entry.0, args, run) {
        Ok(v) => match vm.unjoined_trap() {
            Some((trap, _)) => End::Trap(trap.kind.name(), trap.message),
            None => match v {
                Value::Int(v) => End::Exit((v & 0xff) as i32),
                _ => End::Exit(0),
            },
        },
        Err(end) => end,
    }
}

fn run_fiber(
    vm: &mut Vm<'_>,
    func: u32,
    args: Vec<Value>,
    run: &mut dyn FnMut(&mut Vm<'_>, &mut wo_vm::Fiber) -> Status,
) -> Result<Value, End> {
    let mut fiber = vm.fiber(func, args).map_err(End::Fault)?;
    match run(vm, &mut fiber) {
        Status::Done(v) => Ok(v),
        Status::Exit(c) => Err(End::Exit(c)),
        Status::Trap { trap, .. } => Err(End::Trap(trap.kind.name(), trap.message)),
        Status::Fault(m) => Err(End::Fault(m)),
        Status::Interrupted => Err(End::Deadline),
        Status::Yield => Err(End::Budget),
        // Only from `resume_budgeted`: the run goes on under the scheduler.
        Status::Wait(_) => Err(End::Budget),
    }
}

/// Budget handed to one `resume` call.
pub const SLICE: u32 = 100;

/// Resumes `fiber` slice by slice until it ends, waits (`Wait`: nothing else runs
/// here), `left` runs out (`Yield`) or `interrupt` is raised (`Interrupted`).
fn resume_budgeted(
    vm: &mut Vm<'_>,
    fiber: &mut wo_vm::Fiber,
    left: &mut u32,
    interrupt: &AtomicBool,
) -> Status {
    loop {
        if *left == 0 {
            return Status::Yield;
        }
        if interrupt.load(Ordering::Relaxed) {
            return Status::Interrupted;
        }
        let slice = SLICE.min(*left);
        *left -= slice;
        match vm.resume(fiber, slice) {
            Status::Yield => continue,
            end => return end,
        }
    }
}

/// The watchdog of a run's deadline: one thread for the process, which wakes every
/// millisecond and raises the interrupt flag of the run under way once its deadline
/// has passed. A run arms and disarms it under a lock the thread takes only briefly,
/// without waking it (no system call per run).
type Armed = Mutex<Option<(Instant, Arc<AtomicBool>)>>;

fn watchdog() -> &'static Armed {
    static W: OnceLock<&'static Armed> = OnceLock::new();
    W.get_or_init(|| {
        let w: &'static Armed = Box::leak(Box::new(Mutex::new(None)));
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(1));
            let mut g = w.lock().expect("watchdog lock");
            if g.as_ref().is_some_and(|(due, _)| Instant::now() >= *due) {
                if let Some((_, flag)) = g.take() {
                    flag.store(true, Ordering::Relaxed);
                }
            }
        });
        w
    })
}

/// Arms the watchdog for a run starting now; returns the run's interrupt flag.
pub(crate) fn watchdog_start(deadline: Duration) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    *watchdog().lock().expect("watchdog lock") = Some((Instant::now() + deadline, flag.clone()));
    flag
}

/// Disarms it (the run ended).
pub(crate) fn watchdog_stop() {
    *watchdog().lock().expect("watchdog lock") = None;
}

/// Compiles one source file.
pub fn compile(src: &str) -> Result<Image, Vec<wo_compiler::Diagnostic>> {
    let mut sources = wo_compiler::SourceMap::default();
    sources.add("fuzz.wo", src);
    wo_compiler::compile(&sources)
}

/// The formatter's contract (docs/tools.md) on a source that parses: `wo fmt` formats
/// it, formatting the result changes nothing, and when the source compiled (`image`)
/// the formatted one compiles to the same image, source positions aside.
pub fn check_format(src: &str, image: Option<&Image>) {
    if !wo_compiler::parse_file(src, wo_compiler::FileId(0))
        .1
        .is_empty()
    {
        return;
    }
    let once = wo_compiler::fmt::format(src)
        .unwrap_or_else(|d| panic!("wo fmt refused a source that parses: {d:?}\n{src}"));
    let twice = wo_compiler::fmt::format(&once)
        .unwrap_or_else(|d| panic!("wo fmt refused its own output: {d:?}\n{once}"));
    assert!(
        twice == once,
        "wo fmt is not idempotent\n{src}\n---\n{once}\n---\n{twice}"
    );
    if let Some(image) = image {
        let again = compile(&once)
            .unwrap_or_else(|d| panic!("the formatted program does not compile: {d:?}\n{once}"));
        let strip = |i: &Image| {
            let mut i = i.clone();
            for f in &mut i.functions {
                f.pos.clear();
            }
            i
        };
        assert!(
            strip(&again) == strip(image),
            "the formatted program compiles differently\n{src}\n---\n{once}"
        );
    }
}

/// The data-directory target's input: `[u32 LE wal length][wal][checkpoint]`, the
/// length clamped to what is there; an empty part means no such file.
pub fn split_datadir(data: &[u8]) -> (&[u8], &[u8]) {
    if data.len() < 4 {
        return (data, &[]);
    }
    let n = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
    let rest = &data[4..];
    let n = n.min(rest.len());
    rest.split_at(n)
}

/// The inverse of [`split_datadir`] (for building seeds).
pub fn join_datadir(wal: &[u8], ckpt: &[u8]) -> Vec<u8> {
    let mut v = (wal.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(wal);
    v.extend_from_slice(ckpt);
    v
}

const WAL_HEADER: usize = 36;
const FRAME: usize = 24;

/// Rewrites every CRC of a log (docs/wal-format.md) so that a mutation reaches the
/// decoder behind them: the header's, then each record's, walking the lengths as
/// written (a length past the end stops the walk).
pub fn reseal_wal(wal: &mut [u8]) {
    reseal_wal_but(wal, None);
}

/// [`reseal_wal`], leaving the CRC of the record with index `skip` as it is: a
/// mutation inside that record stays damage in the middle of the log, with valid
/// records after it (what recovery must tell apart from a torn write: by a later
/// record's proof, or by the lock file's note, [`lock_file_for`]).
pub fn reseal_wal_but(wal: &mut [u8], skip: Option<usize>) {
    if wal.len() < WAL_HEADER {
        return;
    }
    let crc = crc32fast::hash(&wal[..32]);
    wal[32..36].copy_from_slice(&crc.to_le_bytes());
    let salt: [u8; 8] = wal[16..24].try_into().expect("8 bytes");
    for (index, (off, n)) in frames(wal).into_iter().enumerate() {
        if skip == Some(index) {
            continue;
        }
        let mut h = crc32fast::Hasher::new();
        h.update(&salt);
        h.update(&wal[off..off + 4]);
        h.update(&wal[off + 8..off + 24]);
        h.update(&wal[off + FRAME..off + FRAME + n]);
        let crc = h.finalize();
        wal[off + 4..off + 8].copy_from_slice(&crc.to_le_bytes());
    }
}

/// The frames of a log, walking the lengths as written: each frame's offset and its
/// payload's length, up to the first length that is 0 or runs past the end. The one
/// walk [`reseal_wal_but`], [`record_count`] and [`lock_file_for`] share.
fn frames(wal: &[u8]) -> Vec<(usize, usize)> {
    let mut frames = Vec::new();
    let mut off = WAL_HEADER;
    while off + FRAME <= wal.len() {
        let n = u32::from_le_bytes(wal[off..off + 4].try_into().expect("4 bytes")) as usize;
        if n == 0 || off + FRAME + n > wal.len() {
            break;
        }
        frames.push((off, n));
        off += FRAME + n;
    }
    frames
}

/// The number of records of a log (those [`reseal_wal_but`] reseals).
pub fn record_count(wal: &[u8]) -> usize {
    frames(wal).len()
}

/// The LSN of each record of a log.
fn record_lsns(wal: &[u8]) -> Vec<u64> {
    frames(wal)
        .into_iter()
        .map(|(off, _)| u64::from_le_bytes(wal[off + 8..off + 16].try_into().expect("8 bytes")))
        .collect()
}

/// The lock file the data-directory target puts beside a log, chosen by `pick` (a
/// hash of the input): one time in three empty (no note); otherwise a whole durable
/// note (docs/wal-format.md, the `lock` file; pid 1) naming one of the log's records,
/// as a writer's after a sync, or, one time in eight, a record past the log's last
/// (a log cut short, or another log's note); with the log's own salt (half the
/// time), another salt, or none (an earlier version's note).
pub fn lock_file_for(wal: &[u8], pick: u32) -> Vec<u8> {
    let lsns = record_lsns(wal);
    if pick.is_multiple_of(3) || lsns.is_empty() {
        return Vec::new();
    }
    let pick = (pick / 3) as usize;
    let lsn = if pick.is_multiple_of(8) {
        lsns.iter().max().expect("a record").saturating_add(1)
    } else {
        lsns[pick / 8 % lsns.len()]
    };
    let own = u64::from_le_bytes(wal[16..24].try_into().expect("8 bytes"));
    let salt = match pick / 64 % 4 {
        0 => None,
        1 => Some(own ^ 1),
        _ => Some(own),
    };
    let line = wo_db::durable::note_line(1, wo_db::durable::Noted { lsn, salt });
    format!("1\n{line}").into_bytes()
}

/// Rewrites a checkpoint's body length (to what the file holds), header CRC and body
/// CRC.
pub fn reseal_checkpoint(ck: &mut [u8]) {
    if ck.len() < 40 {
        return;
    }
    let b = ck.len() - 40;
    ck[24..32].copy_from_slice(&(b as u64).to_le_bytes());
    let crc = crc32fast::hash(&ck[..32]);
    ck[32..36].copy_from_slice(&crc.to_le_bytes());
    let crc = crc32fast::hash(&ck[36..36 + b]);
    ck[36 + b..].copy_from_slice(&crc.to_le_bytes());
}

/// Rewrites an image's format version to this build's (so the corpus outlives a version
/// bump) and its CRC32 trailer (docs/image-format.md: the last 4 bytes, over every
/// byte before them).
pub fn reseal_image(bytes: &mut [u8]) {
    if bytes.len() < 12 {
        return;
    }
    bytes[4..6].copy_from_slice(&wo_bytecode::FORMAT_VERSION.to_le_bytes());
    let n = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..n]);
    bytes[n..].copy_from_slice(&crc.to_le_bytes());
}
