//! The scheduler: runs the program's fibers one at a time on its thread (LANGUAGE.md
//! §9). Cut here so that the interpreter knows only how to run one fiber until it
//! stops ([`Vm::resume`]), and this module alone decides who runs next, who waits for
//! what, and when the thread blocks.
//!
//! - Runnable fibers take turns in FIFO order. A fiber runs until it waits (a durable
//!   commit, `time.sleep`, `join` of an unfinished task, `yield()`) or its budget of
//!   [`BUDGET`](crate::interp::BUDGET) back edges and calls ([`Vm::set_turn`]) runs out; then it goes to the back of the queue (or
//!   to the waiters). A spawned fiber is queued when it is spawned.
//! - A fiber whose change was written to the log waits for the log thread's answer
//!   while the others run; the answer wakes every fiber whose record it covers, in log
//!   order. A failed sync (or write) raises `IO` in every fiber whose change was undone.
//! - When nothing can run, the thread blocks: on the log thread's answer when a
//!   commit is in flight (at most until the next sleeper is due), else until the next
//!   sleeper is due. Stdout is flushed first. If no fiber can ever run again (every
//!   one waits in `join`), `main`'s fiber gets `FAIL` ("deadlock").
//!
//! **Invariant:** without `--data` and `time.sleep`, the interleaving depends only on
//! the program and its input (no clock, no thread is consulted), so runs repeat.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::Write as _;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::database::{durability_message, Synced};
use crate::interp::{Fiber, Status, Vm, Wait};
use crate::value::{TaskCell, TaskState, Trap, TrapKind};
use crate::StackFrame;

/// With more fibers than this parked, a parked fiber gives back its spare registers
/// (they come back when it runs), so that many waiting fibers stay small.
const SHRINK_ABOVE: usize = 256;

/// The same for fibers waiting for their commit to be durable, which wake again
/// within a sync: giving back and taking again their registers at every commit costs
/// a third of the commit rate with 1,024 writers (576k durable commits/s against
/// 340k on one machine), so it waits for more of them. Up to here they cost ~6.5 KB
/// each (53 MB for 8,192); beyond it, as a sleeping fiber, a few hundred bytes:
/// 100,000 writers waiting for one sync took 655 MB before (helper-53).
const SHRINK_COMMITTING_ABOVE: usize = 8_192;

/// The fibers of a `wo repl` input, carried to the next one ([`Vm::take_fibers`]).
pub struct Fibers {
    sched: Sched,
    next_id: u64,
    /// The image's functions (name and code), to check that the next image keeps them.
    functions: Vec<(String, Vec<wo_bytecode::Op>)>,
}

impl Fibers {
    /// How many fibers are alive (running, ready, asleep or waiting): those the end
    /// of a `wo repl` session stops unfinished.
    pub fn alive(&self) -> usize {
        self.sched.fibers.len()
    }

    /// The same session's fibers with every fiber stopped (Ctrl-C in `wo repl`): the
    /// ids go on from where they were, so a task handle kept from before never names
    /// a fiber spawned after (its `join` can never complete: deadlock, `FAIL`).
    pub fn stopped(self) -> Fibers {
        for (_, task) in self.sched.fibers.values() {
            stopped_by_interrupt(task);
        }
        Fibers {
            sched: Sched::default(),
            ..self
        }
    }
}

/// The scheduler's queues. Every fiber but the one [`Vm::run_to_end`] drives (`main`)
/// lives in `fibers` while it is alive.
#[derive(Default)]
pub(crate) struct Sched {
    fibers: HashMap<u64, (Fiber, Rc<TaskCell>)>,
    runq: VecDeque<u64>,
    /// (when, order of arrival, fiber): the earliest first, ties in arrival order.
    sleepers: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    n_slept: u64,
    /// Fibers waiting for their commit, with the LSN each waits for, in log order.
    committing: VecDeque<(u64, u64)>,
    /// Tasks that trapped, in the order they did (joined ones are let go now and then).
    trapped: Vec<Rc<TaskCell>>,
    /// How many `trapped` held after joined ones were last let go.
    trapped_kept: usize,
    /// Fibers whose write waits for the checkpoint under way.
    gated: Vec<u64>,
    /// Turns left in the round at whose end the records written meanwhile are handed
    /// to the log thread.
    round_left: Option<usize>,
    /// Whether the fiber running now is one of `fibers` (taken out for its turn), not
    /// `main`.
    running_other: bool,
}

impl Sched {
    /// How many fibers are alive besides `main` (the one running included).
    pub(crate) fn alive(&self) -> usize {
        self.fibers.len() + usize::from(self.running_other)
    }
}

impl Vm<'_> {
    /// Runs `main` to its end together with every fiber it spawns (and those already
    /// queued: a `wo repl` session keeps its fibers between inputs). Before it returns,
    /// every commit in flight is finished. The other fibers stay queued.
    pub fn run_to_end(&mut self, main: &mut Fiber) -> Status {
        let main_id = main.id();
        self.sched.runq.push_back(main_id);
        loop {
            if self.interrupted() {
                // Between two turns no fiber is inside an instruction; the one holding
                // a transaction (if any) loses it.
                if let Some(tx) = self.database.tx {
                    self.database.fiber_ended(tx.fiber);
                }
                return self.finish(main, Status::Interrupted);
            }
            if let Some(end) = self.poll_syncs(main, Some(Duration::ZERO)) {
                return self.finish(main, end);
            }
            // A slice of the checkpoint under way between two turns: readers wait for
            // a slice at most, never for the whole snapshot.
            if let Some(Err(f)) = self.database.checkpoint_step() {
                self.checkpoint_ended(Some(f));
            }
            self.wake_sleepers();
            let Some(id) = self.sched.runq.pop_front() else {
                if let Some(end) = self.block(main) {
                    return self.finish(main, end);
                }
                continue;
            };
            let end = if id == main_id {
                let status = self.resume(main, self.turn);
                self.queue_spawned();
                self.after_turn(main, status)
            } else {
                let Some((mut fiber, task)) = self.sched.fibers.remove(&id) else {
                    continue;
                };
                self.sched.running_other = true;
                let status = self.resume(&mut fiber, self.turn);
                self.sched.running_other = false;
                self.queue_spawned();
                self.after_turn_of(fiber, task, status)
            };
            if let Some(f) = self.database.take_failure() {
                if let Some(end) = self.fail_committing(main, &f) {
                    return self.finish(main, end);
                }
            }
            if let Some(end) = end {
                return self.finish(main, end);
            }
            if let Some(end) = self.end_of_turn(main) {
                return self.finish(main, end);
            }
        }
    }

    /// Group commit's batching: records written during a round of the run queue (every
    /// fiber that was runnable when the first of them was written gets its turn) are
    /// handed to the log thread together at its end, or as soon as nothing else can
    /// run. A lone writer is never delayed: with no other fiber, its round ends at once.
    fn end_of_turn(&mut self, main: &mut Fiber) -> Option<Status> {
        if !self.database.sync_owed() {
            return None;
        }
        let left = self.sched.round_left.get_or_insert(self.sched.runq.len());
        if *left > 0 && !self.sched.runq.is_empty() {
            *left -= 1;
            return None;
        }
        self.request_owed_sync(main)
    }

    /// Hands the records written so far to the log thread; a failure to do so is a
    /// failed sync for every fiber waiting for one.
    fn request_owed_sync(&mut self, main: &mut Fiber) -> Option<Status> {
        self.sched.round_left = None;
        match self.database.request_owed_sync() {
            Ok(()) => None,
            Err(f) => self.fail_committing(main, &f),
        }
    }

    /// Queues the fibers spawned during the last turn, in the order they were spawned
    /// (ahead of the spawner, which goes to the back after them).
    fn queue_spawned(&mut self) {
        for (fiber, task) in std::mem::take(&mut self.spawned) {
            self.sched.runq.push_back(fiber.id());
            self.sched.fibers.insert(fiber.id(), (fiber, task));
        }
    }

    /// Files `main` after its turn; its final status ends the run.
    fn after_turn(&mut self, main: &mut Fiber, status: Status) -> Option<Status> {
        let id = main.id();
        match status {
            Status::Yield | Status::Wait(Wait::Yield) => self.sched.runq.push_back(id),
            Status::Wait(w) => self.park(id, w),
            end => return Some(end),
        }
        None
    }

    /// Files another fiber after its turn: back in the queue, waiting, or ended (its
    /// task then holds the result or the trap, and its joiners wake). `exit` and
    /// internal faults end the run.
    fn after_turn_of(
        &mut self,
        mut fiber: Fiber,
        task: Rc<TaskCell>,
        status: Status,
    ) -> Option<Status> {
        let id = fiber.id();
        match status {
            Status::Yield | Status::Wait(Wait::Yield) => {
                self.sched.runq.push_back(id);
            }
            Status::Wait(w) => {
                let above = match w {
                    Wait::Commit(_) => SHRINK_COMMITTING_ABOVE,
                    _ => SHRINK_ABOVE,
                };
                if self.sched.fibers.len() >= above {
                    fiber.shrink(self.image());
                }
                self.park(id, w);
            }
            Status::Done(v) => {
                self.end_task(&task, TaskState::Done(v));
                return None;
            }
            Status::Trap { trap, stack } => {
                self.end_task(&task, trapped(trap, stack));
                return None;
            }
            Status::Interrupted => {
                // (Inside its transaction: the fiber is not kept, so its task ends
                // here, as those of the fibers still queued end in `Fibers::stopped`.)
                stopped_by_interrupt(&task);
                return Some(Status::Interrupted);
            }
            end @ (Status::Exit(_) | Status::Fault(_)) => return Some(end),
        }
        self.sched.fibers.insert(id, (fiber, task));
        None
    }

    /// Records what fiber `id` waits for.
    fn park(&mut self, id: u64, w: Wait) {
        match w {
            Wait::Yield => self.sched.runq.push_back(id),
            Wait::Sleep(d) => {
                let n = self.sched.n_slept;
                self.sched.n_slept += 1;
                self.sched
                    .sleepers
                    .push(Reverse((Instant::now() + d, n, id)));
            }
            Wait::Commit(lsn) => self.sched.committing.push_back((lsn, id)),
            Wait::Join(task) => task.waiters.borrow_mut().push(id),
            Wait::Checkpoint => self.sched.gated.push(id),
        }
    }

    /// The checkpoint under way ended: the writers it held back go on. A failure
    /// before the new checkpoint replaced the old one is a warning (the log stays in
    /// charge, every commit durable); one after it fenced the log, which the warning
    /// says (the next change traps `IO`).
    fn checkpoint_ended(&mut self, failed: Option<wo_db::durable::Failure>) {
        let gated = std::mem::take(&mut self.sched.gated);
        self.sched.runq.extend(gated);
        let Some(f) = failed else { return };
        let fenced = self
            .database
            .data_dir()
            .is_some_and(|d| d.fence().is_some());
        let after = if fenced {
            // (Also at the end of a run, where no change comes after: helper-108.)
            "the log is closed for writing: every acknowledged commit is durable; a later change in this process traps IO, and the next run opens the directory as it is"
        } else {
            "the log keeps growing (every commit is still durable) and the checkpoint is tried again when it has grown by another threshold"
        };
        let _ = writeln!(
            self.host.err,
            "wo: warning: automatic checkpoint failed: {f}; {after}"
        );
    }

    fn end_task(&mut self, task: &Rc<TaskCell>, state: TaskState) {
        if matches!(state, TaskState::Trapped { .. }) {
            // Joined tasks no longer matter here: they are let go now and then (when
            // the list has doubled), so a long run of trapping tasks keeps only the
            // unjoined ones alive.
            if self.sched.trapped.len() >= self.sched.trapped_kept.max(64) * 2 {
                self.sched.trapped.retain(|t| {
                    !matches!(&*t.state.borrow(), TaskState::Trapped { joined: true, .. })
                });
                self.sched.trapped_kept = self.sched.trapped.len();
            }
            self.sched.trapped.push(task.clone());
        }
        let is_ref = matches!(&state, TaskState::Done(v) if crate::gc::is_ref(v));
        *task.state.borrow_mut() = state;
        if is_ref {
            crate::gc::wrote_task(task);
        }
        let waiters = std::mem::take(&mut *task.waiters.borrow_mut());
        self.sched.runq.extend(waiters);
    }

    /// Moves the sleepers that are due to the run queue.
    fn wake_sleepers(&mut self) {
        if self.sched.sleepers.is_empty() {
            return;
        }
        let now = Instant::now();
        while let Some(Reverse((when, _, id))) = self.sched.sleepers.peek().copied() {
            if when > now {
                break;
            }
            self.sched.sleepers.pop();
            self.sched.runq.push_back(id);
        }
    }

    /// Nothing can run: waits for the log thread or the next sleeper without spinning,
    /// or, when nothing can ever run again, raises the deadlock in `main`.
    fn block(&mut self, main: &mut Fiber) -> Option<Status> {
        if let Some(end) = self.request_owed_sync(main) {
            return Some(end);
        }
        let _ = self.host.out.flush();
        let due = self
            .sched
            .sleepers
            .peek()
            .map(|Reverse((when, _, _))| when.saturating_duration_since(Instant::now()));
        if self.database.checkpoint_encoding() {
            // Nothing else to do: the loop writes the next slice.
            return None;
        }
        if self.database.has_pending() {
            return self.poll_syncs(main, due);
        }
        if let Some(d) = due {
            // An interruptible run sleeps in slices, so Ctrl-C ends a long sleep.
            let d = if self.interruptible() {
                d.min(Duration::from_millis(50))
            } else {
                d
            };
            std::thread::sleep(d);
            return None;
        }
        // Every fiber waits in `join` for a task that cannot end.
        let trap = Trap::new(
            TrapKind::Fail,
            format!(
                "deadlock: every fiber is waiting in join for a task that can never end{}",
                self.who_waits(main)
            ),
        );
        // `main` no longer waits in that `join`: a trap caught there must not leave
        // it among the task's waiters (the next deadlock's chain would start from a
        // stale wait, and the task's end would wake `main` where it no longer waits).
        let m = main.id();
        for (_, task) in self.sched.fibers.values() {
            task.waiters.borrow_mut().retain(|&w| w != m);
        }
        self.raise(main, main.id(), trap)
    }

    /// Which fiber waits for which, from `main` along the chain of joins (helper-89:
    /// the report named only `main`'s `join`): `: main (at app.wo:9:3) waits for
    /// task 2 (f); task 2 (at app.wo:3:5) waits for task 3 (g); …`, four waits at most.
    fn who_waits(&self, main: &Fiber) -> String {
        const SHOWN: usize = 4;
        let mut waits_for: HashMap<u64, u64> = HashMap::new();
        for (&id, (_, task)) in &self.sched.fibers {
            for &w in task.waiters.borrow().iter() {
                waits_for.insert(w, id);
            }
        }
        let stack = |id: u64| match self.sched.fibers.get(&id) {
            _ if id == main.id() => Some(self.stack_of(main)),
            Some((fiber, _)) => Some(self.stack_of(fiber)),
            None => None,
        };
        let name = |id: u64| -> String {
            if id == main.id() {
                return "main".to_string();
            }
            match stack(id).and_then(|s| s.last().map(|f| f.function.clone())) {
                Some(f) => format!("task {id} ({f})"),
                None => format!("task {id}"),
            }
        };
        let mut shown = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut at = main.id();
        while let Some(&next) = waits_for.get(&at) {
            if shown.len() == SHOWN || !seen.insert(at) {
                break;
            }
            let pos = stack(at)
                .and_then(|s| {
                    s.first()
                        .map(|f| format!(" (at {}:{}:{})", f.file, f.line, f.col))
                })
                .unwrap_or_default();
            let who = if at == main.id() {
                "main".to_string()
            } else {
                format!("task {at}")
            };
            let whom = if next == at {
                "its own task".to_string()
            } else {
                name(next)
            };
            shown.push(format!("{who}{pos} waits for {whom}"));
            at = next;
        }
        if shown.is_empty() {
            return String::new();
        }
        let more = waits_for.len().saturating_sub(shown.len());
        let more = match more {
            0 => String::new(),
            n => format!("; {n} more fiber{} waiting", if n == 1 { "" } else { "s" }),
        };
        format!(": {}{more}", shown.join("; "))
    }

    /// Takes the log thread's answers, waiting up to `timeout` for the first (`None`:
    /// as long as it takes): wakes the fibers whose commits are durable, or raises
    /// `IO` in every fiber whose commit was undone. Returns `main`'s end if that ended it.
    fn poll_syncs(&mut self, main: &mut Fiber, timeout: Option<Duration>) -> Option<Status> {
        let mut timeout = timeout;
        while let Some(answer) = self.database.poll_sync(timeout) {
            timeout = Some(Duration::ZERO);
            match answer {
                Synced::Durable {
                    lsn,
                    checkpoint_failed,
                } => {
                    self.wake_committed(lsn);
                    if let Some(f) = checkpoint_failed {
                        self.checkpoint_ended(Some(f));
                    }
                }
                Synced::Checkpoint(failed) => self.checkpoint_ended(failed),
                Synced::Failed(f) => {
                    if let Some(end) = self.fail_committing(main, &f) {
                        return Some(end);
                    }
                }
            }
        }
        None
    }

    /// Wakes the fibers waiting for a commit whose record is durable (LSN up to `lsn`;
    /// `committing` is in LSN order, as the commits were made).
    fn wake_committed(&mut self, lsn: u64) {
        while let Some(&(l, id)) = self.sched.committing.front() {
            if l > lsn {
                break;
            }
            self.sched.committing.pop_front();
            self.sched.runq.push_back(id);
        }
    }

    /// After the log was fenced: wakes every fiber whose commit the log made durable
    /// before it stopped (a sync under way when a write failed is let finish), and
    /// raises `IO` in every other fiber waiting for a commit (their changes were undone).
    fn fail_committing(&mut self, main: &mut Fiber, f: &wo_db::durable::Failure) -> Option<Status> {
        let msg = durability_message(f);
        let durable = self
            .database
            .data_dir()
            .map_or(0, wo_db::durable::DataDir::durable_lsn);
        self.wake_committed(durable);
        let mut end = None;
        for (_, id) in std::mem::take(&mut self.sched.committing) {
            let trap = Trap::new(TrapKind::Io, msg.clone());
            if let Some(e) = self.raise(main, id, trap) {
                end.get_or_insert(e);
            }
        }
        end
    }

    /// Delivers `trap` to the waiting fiber `id` as if its current instruction had
    /// raised it: caught, the fiber is runnable again; uncaught, its task ends with it
    /// (for `main`: the run's end, returned).
    fn raise(&mut self, main: &mut Fiber, id: u64, trap: Trap) -> Option<Status> {
        if id == main.id() {
            return match self.unwind(main, trap) {
                None => {
                    self.sched.runq.push_back(id);
                    None
                }
                end => end,
            };
        }
        let (mut fiber, task) = self.sched.fibers.remove(&id)?;
        match self.unwind(&mut fiber, trap) {
            None => {
                self.sched.runq.push_back(id);
                self.sched.fibers.insert(id, (fiber, task));
                None
            }
            Some(Status::Trap { trap, stack }) => {
                self.end_task(&task, trapped(trap, stack));
                None
            }
            end => end,
        }
    }

    /// Ends the run: finishes the commits in flight (LANGUAGE.md §9: outstanding
    /// commits are finished first), and the automatic checkpoint under way, then
    /// returns `end`.
    ///
    /// A checkpoint under way, or one that the last commits' syncs make due, is
    /// written to its end: the rest of its slices now, then its syncs on the log
    /// thread, waited for as commits are. Abandoned, a program whose every run is
    /// short (a batch, `cat orders | wo run app --data d`) never got one, and its log
    /// grew without bound from run to run, each start replaying it all (helper-106:
    /// five runs of one 300,000-row transaction left 14.5 MB of log and no
    /// checkpoint), against LANGUAGE.md §8. Only an interrupt (Ctrl-C: the user wants
    /// out) abandons it: its `checkpoint.tmp` is ignored, and removed by the next open.
    fn finish(&mut self, main: &mut Fiber, end: Status) -> Status {
        let _ = self.request_owed_sync(main);
        // (Stdout is flushed by the caller, which reads a failed flush as the
        // program's: not here, before the checkpoint.)
        loop {
            // An interrupt, also one that comes while the checkpoint is written
            // (helper-107: a Ctrl-C then was swallowed, and a second one ended the
            // REPL), abandons it; one already handed to the log thread is waited for.
            if matches!(end, Status::Interrupted) || self.interrupted() {
                self.database.abandon_checkpoint();
            }
            while let Some(res) = self.database.checkpoint_step() {
                if let Err(f) = res {
                    self.checkpoint_ended(Some(f));
                }
                if self.interrupted() {
                    self.database.abandon_checkpoint();
                }
            }
            if !self.database.has_pending() {
                break;
            }
            if self.poll_syncs(main, None).is_some() {
                // `main` has ended already; a failure now is reported through the
                // tasks it undid (see `unjoined_trap`).
            }
        }
        end
    }

    /// Calls `f` with each task that trapped and was not joined (yet), in the order
    /// they trapped (its fiber's id, trap and stack, not copied), until `f` returns
    /// something: the one walk the questions below ask.
    fn find_unjoined<R>(
        &self,
        mut f: impl FnMut(u64, &Trap, &[StackFrame]) -> Option<R>,
    ) -> Option<R> {
        self.sched
            .trapped
            .iter()
            .find_map(|t| match &*t.state.borrow() {
                TaskState::Trapped {
                    trap,
                    stack,
                    joined: false,
                } => f(t.fiber, trap, stack),
                _ => None,
            })
    }

    /// Every task that trapped and was not joined (yet), in the order they trapped,
    /// with its fiber's id (a `wo repl` session reports each once, after the input in
    /// which it trapped).
    pub fn unjoined_task_traps(&self) -> Vec<(u64, Trap, Vec<StackFrame>)> {
        let mut all = Vec::new();
        self.find_unjoined(|fiber, trap, stack| {
            all.push((fiber, trap.clone(), stack.to_vec()));
            None::<()>
        });
        all
    }

    /// Calls `f` with each task that trapped and was not joined (yet), in the order
    /// they trapped, without copying its trap or stack.
    pub fn each_unjoined_trap(&self, mut f: impl FnMut(&Trap, &[StackFrame])) {
        self.find_unjoined(|_, trap, stack| {
            f(trap, stack);
            None::<()>
        });
    }

    /// The trap of the first task (in the order they trapped) that trapped and was
    /// never joined: it decides the exit status of a program whose `main` returned.
    pub fn unjoined_trap(&self) -> Option<(Trap, Vec<StackFrame>)> {
        self.find_unjoined(|_, trap, stack| Some((trap.clone(), stack.to_vec())))
    }

    /// The durability failure (an `IO` trap) of the first task that trapped with one
    /// and was never joined, which neither the report of another task's trap nor a
    /// status chosen by `exit(n)` must hide: it decides what a restart recovers.
    pub fn unjoined_durability_failure(&self) -> Option<Trap> {
        self.find_unjoined(|_, trap, _| {
            crate::database::is_durability_failure(trap).then(|| trap.clone())
        })
    }

    /// Takes the fibers a `wo repl` session keeps from one input (one image) to the
    /// next: every fiber but the input's `main`, with its task, queue and waits.
    pub fn take_fibers(&mut self) -> Fibers {
        Fibers {
            sched: std::mem::take(&mut self.sched),
            next_id: self.next_fiber.get(),
            functions: self
                .image()
                .functions
                .iter()
                .map(|f| (f.name.clone(), f.code.clone()))
                .collect(),
        }
    }

    /// Continues the fibers of the previous input in this image. A session's images
    /// grow by appending, so the functions the fibers are in keep their places; a fiber
    /// in a function that did not (same index, same name and code) is dropped, and a
    /// `join` of its task can then never complete (deadlock, `FAIL`).
    pub fn adopt_fibers(&mut self, fibers: Fibers) {
        self.next_fiber
            .set(self.next_fiber.get().max(fibers.next_id));
        let image = self.image();
        let kept = |i: u32| {
            let i = i as usize;
            fibers.functions.get(i).is_some_and(|(name, code)| {
                image
                    .functions
                    .get(i)
                    .is_some_and(|g| g.name == *name && g.code == *code)
            })
        };
        let mut sched = fibers.sched;
        // A fiber in a function declared again is dropped, and its task says so to a
        // later `join` (helper-94: the task vanished without a word, and `join`
        // reported a deadlock).
        sched.fibers.retain(|_, (f, task)| {
            let Some(changed) = f.funcs().find(|&i| !kept(i)) else {
                return true;
            };
            let name = fibers
                .functions
                .get(changed as usize)
                .map_or("?", |(n, _)| n.as_str());
            stopped_by_redeclaration(task, name);
            false
        });
        let alive: std::collections::HashSet<u64> = sched.fibers.keys().copied().collect();
        sched.runq.retain(|id| alive.contains(id));
        self.sched = sched;
    }
}

/// The state of a task whose function a trap left: kept for `join`, not yet joined.
/// Ends the task of a fiber an interrupt stopped (`wo repl`'s Ctrl-C) in a trap that
/// says so, raised by a later `join` (not a "deadlock"), and counted as reported: the
/// interrupt said it already.
fn stopped_by_interrupt(task: &TaskCell) {
    *task.state.borrow_mut() = TaskState::Trapped {
        trap: Trap::new(
            TrapKind::Fail,
            "the task was stopped by an interrupt (Ctrl-C) of an earlier input",
        ),
        stack: Vec::new(),
        joined: true,
    };
}

/// Marks `task` as stopped because `function`, which its fiber was running, was
/// declared again by a later `wo repl` input. Counted as reported, as an interrupted
/// one is.
fn stopped_by_redeclaration(task: &TaskCell, function: &str) {
    *task.state.borrow_mut() = TaskState::Trapped {
        trap: Trap::new(
            TrapKind::Fail,
            format!("the task was stopped: `{function}`, which it was running, was declared again by a later input"),
        ),
        stack: Vec::new(),
        joined: true,
    };
}

fn trapped(trap: Trap, stack: Vec<StackFrame>) -> TaskState {
    TaskState::Trapped {
        trap,
        stack,
        joined: false,
    }
}
