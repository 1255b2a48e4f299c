//! What a breakpoint hit does: the first hit of a function decides how
//! it is counted from then on (removed for coverage, a trampoline, or the
//! breakpoint kept), later hits count or pass through.

use super::Engine;
use crate::functions::Mode;
use crate::image::{Counting, Image, Internal, ProbeState, Stopped};
use crate::ptrace::{self, Pid};
use crate::relocate::{Increment, Unpatchable};

/// The stopped address space a patch is made in.
pub(super) struct World<'a> {
    /// The thread that runs the system calls that map trampoline memory.
    pub tid: Pid,
    /// The program counters of the stopped threads (none may be inside
    /// the bytes a patch replaces).
    pub busy: &'a [u64],
    /// Signals that arrived meanwhile, to deliver later.
    pub deferred: &'a mut Vec<i32>,
}

impl Engine {
    /// Handles an `int3` hit; false if it was not one of ours.
    pub(super) fn on_breakpoint(&mut self, tid: Pid) -> bool {
        let hit = super::signals::count_hit();
        super::signals::debug_panic_point(hit);
        let Some(image_id) = self.image_of(tid) else { return false };
        let Ok(mut regs) = ptrace::registers(tid) else { return false };
        let addr = regs.rip.wrapping_sub(1);
        if self.debug_breakpoint_hit(tid, image_id, addr) {
            return true;
        }
        self.at_breakpoint = Some((tid, addr));
        let passed = self.pass_int3(tid, image_id, addr, regs.rsp);
        self.at_breakpoint = None;
        let Some(resume_at) = passed else { return false };
        regs.rip = resume_at;
        if ptrace::set_registers(tid, &regs).is_err() {
            return true;
        }
        if !self.debug_failure_stop(tid) && !super::signals::debug_lose_stop(hit) {
            self.resume(tid, 0);
        }
        true
    }

    /// The image of thread `tid`'s address space.
    pub(super) fn image_of(&self, tid: Pid) -> Option<usize> {
        self.threads.get(&tid).and_then(|t| self.processes.get(&t.pid)).map(|p| p.image)
    }

    /// Does what the `int3` of ours at `addr` stands for, for thread
    /// `tid` that reached it with stack pointer `rsp`: counts, instruments
    /// on a first hit, reads the loaded libraries at the linker's
    /// rendezvous. Where the thread goes on; None if the `int3` is not ours.
    pub(super) fn pass_int3(&mut self, tid: Pid, image_id: usize, addr: u64, rsp: u64) -> Option<u64> {
        let image = self.images.get(&image_id)?;
        let probe = image.probes.get(&addr).cloned()?;
        if probe.internal == Some(Internal::LinkerRendezvous) {
            let image = self.images.get_mut(&image_id).expect("image of a live process");
            let arm = self.config.collect.probes();
            let pid = image.pid;
            match image.scan(arm, &self.config.filter, &mut self.functions, &mut self.modules) {
                Ok(loaded) => self.notify_loads(pid, &loaded),
                Err(e) => eprintln!("== CALIPER: cali-run: cannot read the loaded libraries: {e}"),
            }
        }
        Some(match (probe.function, &probe.state) {
            (_, ProbeState::Patched(patch)) => patch.trampoline,
            (_, ProbeState::Removed) => addr,
            (function, ProbeState::Displaced { resume }) => {
                if let Some(f) = function {
                    self.count_trap_hit(image_id, f, rsp);
                }
                *resume
            }
            (function, ProbeState::Armed) => {
                // A debugger's breakpoint at a counted entry stays over its
                // trampoline's jump; elsewhere it is kept as a breakpoint.
                let counted_entry = function.is_some() && self.config.collect.counts();
                let kept = probe.internal.is_some() || probe.user_break && !counted_entry;
                self.first_hit(tid, image_id, addr, function, kept, rsp)
            }
        })
    }

    /// Counts a call of function `f` that the tool saw at its breakpoint
    /// (the stack pointer `rsp` at its entry, where the return address is).
    pub(super) fn count_trap_hit(&mut self, image_id: usize, f: usize, rsp: u64) {
        self.functions.records[f].counts_mut().trap_hits += 1;
        if !self.config.collect.arcs {
            return;
        }
        let Some(ret) = self.images.get(&image_id).and_then(|i| i.memory.read_u64(rsp).ok()) else { return };
        let arc = self.arc_of(image_id, f, ret);
        self.arcs().records[arc].trap_hits += 1;
    }

    /// At a process's first new thread or fork, when the counters have a copy
    /// per processor: every trampoline of the image of thread `tid` (which
    /// is stopped) rebuilt to count in the running processor's copy, so
    /// that threads on different processors do not contend for one
    /// counter. (The old trampolines' increments are locked by then.)
    pub(super) fn spread_counters(&mut self, tid: Pid) {
        let increment = self.counters.increment(true);
        if !matches!(increment, Increment::PerCpu { .. }) {
            return;
        }
        let Some(image_id) = self.threads.get(&tid).and_then(|t| self.processes.get(&t.pid)).map(|p| p.image) else {
            return;
        };
        let stopped = self.stop_world(image_id, tid);
        let mut deferred = Vec::new();
        let patched: Vec<(u64, usize, usize)> = self.images[&image_id]
            .probes
            .iter()
            .filter(|(_, p)| matches!(p.state, ProbeState::Patched(_)))
            .filter_map(|(&entry, p)| Some((entry, p.function?)))
            .filter_map(|(entry, f)| Some((entry, f, self.slot_of(image_id, f)?)))
            .collect();
        let image = self.images.get_mut(&image_id).expect("live image");
        image.memory.begin_batch();
        for (entry, f, slot) in patched {
            let id = self.arc_ids.get(&image_id).and_then(|ids| ids.get(&entry));
            let counting = match id {
                Some(&id) => Counting::Arcs { slot, id },
                None => Counting::Calls { slot },
            };
            let mut thread = Stopped { tid, counters: &self.counters, deferred: &mut deferred };
            if let Err(e) = image.repatch(entry, &counting, increment, &mut thread) {
                let name = self.functions.records[f].name();
                eprintln!("== CALIPER: cali-run: cannot give {name} per-processor counters: {e}");
            }
        }
        if let Err(e) = image.memory.end_batch() {
            eprintln!("== CALIPER: cali-run: cannot give process {} per-processor counters: {e}", image.pid);
        }
        self.resume_world(&stopped);
        self.redeliver(tid, deferred);
    }

    pub(super) fn redeliver(&self, tid: Pid, deferred: Vec<i32>) {
        let pid = self.threads.get(&tid).map_or(tid, |t| t.pid);
        for sig in deferred {
            let _ = ptrace::kill_thread(pid, tid, sig);
        }
    }

    /// Decides how the probe at `addr` works from its first hit on, and
    /// where the hitting thread resumes.
    pub(super) fn first_hit(
        &mut self,
        tid: Pid,
        image_id: usize,
        addr: u64,
        function: Option<usize>,
        internal: bool,
        rsp: u64,
    ) -> u64 {
        if let Some(f) = function {
            self.functions.records[f].covered = true;
        }
        let counts = function.is_some() && self.config.collect.counts();
        if !counts && !internal {
            if let Some(f) = function {
                self.functions.records[f].mode = Mode::Covered;
            }
            let _ = self.images.get_mut(&image_id).expect("live image").remove(addr);
            return addr;
        }
        let stopped = self.stop_world(image_id, tid);
        let busy = self.busy_at(image_id);
        let mut deferred = Vec::new();
        let mut world = World { tid, busy: &busy, deferred: &mut deferred };
        let patched = match function {
            Some(f) if !internal && !self.config.breakpoints_only => self.patch_function(image_id, addr, f, &mut world),
            _ => Err(Unpatchable::Unencodable("breakpoint counting chosen".into())),
        };
        super::signals::debug_panic_after_patch();
        if function.is_some()
            && !internal
            && let Some(m) = self.images[&image_id].module_of(addr)
        {
            self.patch_module_ahead(image_id, m, &mut world);
        }
        let image = self.images.get_mut(&image_id).expect("live image");
        let mut thread = Stopped { tid, counters: &self.counters, deferred: &mut deferred };
        let mut counted_here = false;
        let mut displaced = false;
        let mut failure = None;
        let resume_at = match patched {
            Ok(trampoline) => trampoline,
            Err(why) => match image.displace(addr, &mut thread) {
                Ok(resume) => {
                    if let Some(f) = function {
                        self.functions.records[f].mode = Mode::Breakpoint(Box::new(why));
                        counted_here = true;
                        displaced = !internal;
                    }
                    resume
                }
                Err(cannot_move) => {
                    let _ = image.remove(addr);
                    if let Some(f) = function {
                        let name = self.functions.records[f].name();
                        failure = Some(format!("{name} is no longer counted: {cannot_move}"));
                        self.functions.records[f].mode = Mode::Uncounted(Box::new(cannot_move));
                        counted_here = true;
                    }
                    addr
                }
            },
        };
        if displaced && let Some(f) = function {
            self.redirect_callers_of(image_id, addr, f, tid, &mut deferred);
        }
        self.resume_world(&stopped);
        self.redeliver(tid, deferred);
        if let Some(failure) = failure {
            self.debug_note_failure(failure);
        }
        if counted_here && let Some(f) = function {
            self.count_trap_hit(image_id, f, rsp);
        }
        resume_at
    }

    /// The counter slot that image `image_id` counts the calls of function
    /// `f` in, if it has one: the image's own (see
    /// [`crate::image::Image::slots`]; a forked child's are its parent's),
    /// or the one the images without slots of their own share.
    pub(super) fn slot_of(&self, image_id: usize, f: usize) -> Option<usize> {
        let slots = self.images.get(&image_id).and_then(|i| i.slots.as_ref()).unwrap_or(&self.shared_slots);
        slots.get(&f).copied()
    }

    /// The counter slot for the calls of function `f` in image `image_id`:
    /// its slot there if it has one (see [`Engine::slot_of`]), else the
    /// next free one, which [`Engine::keep_slot`] takes once a trampoline
    /// counts there.
    fn calls_slot(&self, image_id: usize, f: usize) -> Option<usize> {
        self.slot_of(image_id, f).or(self.counters.peek_next())
    }

    /// Function `f`'s calls in image `image_id` are counted in `slot` from
    /// now on.
    fn keep_slot(&mut self, image_id: usize, f: usize, slot: usize) {
        if self.counters.peek_next() == Some(slot)
            && let Some(taken) = self.counters.allocate()
        {
            self.functions.records[f].counts_mut().slots.push(taken);
        }
        let slots = match self.images.get_mut(&image_id).and_then(|i| i.slots.as_mut()) {
            Some(slots) => slots,
            None => &mut self.shared_slots,
        };
        slots.insert(f, slot);
    }

    /// Gives back the slots of its own that image `image_id` counted in and
    /// no other image does (its forked copies share them, and run the same
    /// trampolines), once its process has exited or run another program:
    /// its functions' slots (see [`crate::image::Image::slots`]) and its call
    /// sites' (see [`crate::image::Image::sites`]). Each count there is
    /// kept by what it counted (a function; a site's arc and callee), and
    /// the slot goes to the next that needs one (a build runs a compiler
    /// hundreds of times, and each run's 5,000 slots would take the counter
    /// file's million in the end).
    pub(super) fn release_slots(&mut self, image_id: usize) {
        let Some(image) = self.images.get(&image_id) else { return };
        let others = self.images.iter().filter(|&(&other, _)| other != image_id).map(|(_, other)| other);
        let shared = super::in_use(self.counters.high_water(), others.flat_map(Image::slots_taken));
        let functions = image.slots.iter().flatten().map(|(&f, &slot)| (slot, SlotUser::Function(f)));
        let sites = image.sites.values().chain(image.sites_behind_plt.values());
        let sites = sites.map(|site| (site.slot, SlotUser::Site(site.arc)));
        let released: Vec<(usize, SlotUser)> = functions.chain(sites).filter(|&(slot, _)| !shared[slot]).collect();
        let slots: Vec<usize> = released.iter().map(|r| r.0).collect();
        // Unread, the slots are not given back: their counts are read at the end.
        let values = match self.counters.read_slots(&slots) {
            Ok(values) => values,
            Err(e) => return eprintln!("== CALIPER: cali-run: cannot read the counters: {e}"),
        };
        for ((slot, user), value) in released.into_iter().zip(values) {
            let f = match user {
                SlotUser::Function(f) => f,
                SlotUser::Site(arc) => {
                    let mut arcs = self.arcs();
                    let arc = &mut arcs.records[arc];
                    if let Some(counters) = &mut arc.counters {
                        bank(&mut counters.slots, &mut arc.banked, slot, value);
                    }
                    arc.callee
                }
            };
            let counts = self.functions.records[f].counts_mut();
            bank(&mut counts.slots, &mut counts.banked, slot, value);
            self.counters.recycle(slot, value);
        }
    }

    /// The calls of function `f` (entry `addr` in image `image_id`, which
    /// keeps its breakpoint) that the code shows go to a counting
    /// trampoline instead (see [`crate::image::Image::redirect_callers`]):
    /// a one-byte `ret` function called a million times would stop the
    /// program a million times. Calls through other pointers still stop.
    fn redirect_callers_of(&mut self, image_id: usize, addr: u64, f: usize, tid: Pid, deferred: &mut Vec<i32>) {
        if !self.config.collect.counts() || self.config.breakpoints_only {
            return;
        }
        let Some((slot, counting)) = self.counting(image_id, addr, f) else { return };
        let increment = self.counters.increment(self.images[&image_id].shared);
        let name = self.functions.records[f].name().clone();
        let image = self.images.get_mut(&image_id).expect("live image");
        let mut thread = Stopped { tid, counters: &self.counters, deferred };
        let Ok(redirected) = image.redirect_callers(addr, &name, &counting, increment, &mut thread) else {
            return;
        };
        if redirected == 0 {
            return;
        }
        self.keep_slot(image_id, f, slot);
        let record = &mut self.functions.records[f];
        if let Mode::Breakpoint(why) = &record.mode {
            record.mode = Mode::CallSites(why.clone());
        }
    }

    /// How the trampoline of function `f` at `entry` in image `image_id`
    /// counts, with the slot of its calls (see [`Engine::calls_slot`]):
    /// with `arcs`, the call arcs too, under the trampoline's arc id. None
    /// when no slot is left for the calls.
    fn counting(&mut self, image_id: usize, entry: u64, f: usize) -> Option<(usize, Counting)> {
        let slot = self.calls_slot(image_id, f)?;
        let counting = if self.config.collect.arcs {
            Counting::Arcs { slot, id: self.arc_id(image_id, entry, f) }
        } else {
            Counting::Calls { slot }
        };
        Some((slot, counting))
    }

    /// Replaces the entry `addr` of function `f` in image `image_id` with
    /// a jump to a counting trampoline. The trampoline's address.
    pub(super) fn patch_function(
        &mut self,
        image_id: usize,
        addr: u64,
        f: usize,
        world: &mut World,
    ) -> Result<u64, Unpatchable> {
        let (slot, counting) = self
            .counting(image_id, addr, f)
            .ok_or_else(|| Unpatchable::Unencodable("counter slots exhausted".into()))?;
        let extent = self.functions.records[f].extent();
        let increment = self.counters.increment(self.images[&image_id].shared);
        let image = self.images.get_mut(&image_id).expect("live image");
        let mut thread = Stopped { tid: world.tid, counters: &self.counters, deferred: world.deferred };
        let trampoline = image.patch(addr, extent, &counting, increment, world.busy, &mut thread)?;
        self.keep_slot(image_id, f, slot);
        self.functions.records[f].mode = Mode::Trampoline;
        Ok(trampoline)
    }
}

/// What a counter slot counts: a function's calls, or a call site's (its
/// arc's, by id, and its callee's).
#[derive(Clone, Copy)]
enum SlotUser {
    Function(usize),
    Site(usize),
}

/// Moves what `slot` counted beyond its base, now that it holds `value`,
/// from `slots` to `banked`.
fn bank(slots: &mut Vec<(usize, u64)>, banked: &mut u64, slot: usize, value: u64) {
    if let Some(n) = slots.iter().position(|&(s, _)| s == slot) {
        let (_, base) = slots.swap_remove(n);
        *banked += value.wrapping_sub(base);
    }
}
