//! Call sites that count their own calls. An arc trampoline finds its
//! call's arc by hashing the return address into the table of call arcs
//! (see [`crate::arc_table`]): a dozen instructions, two branches and a
//! load from a table of megabytes at every call, where `fcount` has one
//! increment. Yet nine in ten of a compiler's calls are direct
//! `call rel32`s, whose callee the site itself says. So, as a program
//! runs, the engine sends the hottest direct call sites (those whose arcs
//! the table has counted most) to trampolines of their own: each counts
//! its site's calls in a counter slot of its own, then runs the callee's
//! moved entry instructions and the rest of the callee, without the
//! callee's trampoline. The site's slot counts for its arc and for the
//! callee: an arc's calls are those of its entries in the table (before)
//! and of its site's slot (after); a function's, those of its
//! trampoline's slot and of its sites'. (A call through a site's own
//! trampoline takes one jump fewer than one through the callee's.)
//!
//! Passes choose the sites [`FIRST_PASS`] into an image's life, and again
//! at each doubling of its age, with every thread of the image stopped
//! (as at a first call): `gcc -O2 -c lvm.c` (Lua's interpreter loop,
//! cc1 makes 133 million calls) sends 85 million of its calls through
//! 9,000 to 12,000 sites' trampolines, the passes taking 3.5 µs a site. A
//! pass that finds no hot site without one stops nothing. The site's
//! slot is given back, its count kept by its arc and its callee, when the
//! image has ended (as the functions' slots are); the trampoline's
//! increment is locked with the others' when another thread or a forked
//! copy runs it; a detach puts the calls back.

use super::Engine;
use super::probes::World;
use super::timer::PeriodicTimer;
use crate::counters::ArcCounts;
use crate::image::{CALL_LEN, CountedSite, Stopped};
use crate::relocate::{Increment, PltCall};
use caliper_data::hash::FxHashMap;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How often the loop wakes to see whether an image is due a pass.
const PERIOD: Duration = Duration::from_millis(10);

/// An image's age at its first pass (from the loop's first sight of it).
/// A short program's hot sites are hot from its first milliseconds, and a
/// pass over the few entries an image has claimed by then costs a
/// millisecond: `sqlite3` filling a table of 20,000 rows (10 million calls
/// from 5,700 sites, 20 ms natively) ran 3 ms faster with its first pass
/// at 10 ms than at 50, Lua's interpreter 3 ms; `gcc -c` of a small file
/// and of `lvm.c` took the same time either way.
const FIRST_PASS: Duration = Duration::from_millis(10);

/// The calls an arc must have made in the table to get its site a
/// trampoline of its own: a site costs its pass microseconds, which calls
/// a nanosecond cheaper win back after a few thousand, and a site this hot
/// early on mostly goes on being called.
const HOT_CALLS: u64 = 256;

/// The timer and when each image (by id) is due its next pass, with the
/// wait after that.
#[derive(Default)]
pub(super) struct SitePasses {
    timer: Option<PeriodicTimer>,
    due: HashMap<usize, (Instant, Duration)>,
    /// The call sites given trampolines of their own so far.
    pub(super) counted: usize,
    /// Of those, the calls of PLT entries whose trampolines count the
    /// function behind the entry too.
    pub(super) through_plt: usize,
}

impl Engine {
    /// Starts the passes' timer (on `SIGRTMIN + 3`), with `arcs` and
    /// trampolines, outside the debugger (which holds threads as its user
    /// says).
    pub(super) fn start_site_passes(&mut self) {
        if !self.config.collect.arcs || self.config.breakpoints_only || self.debugger.is_some() {
            return;
        }
        match PeriodicTimer::start(PERIOD, libc::SIGRTMIN() + 3) {
            Ok(timer) => self.site_passes.timer = Some(timer),
            Err(e) => eprintln!("== CALIPER: cali-run: call sites are not given trampolines of their own ({e})"),
        }
    }

    /// Runs the passes that are due: each image's first [`FIRST_PASS`]
    /// after the loop first saw it here, the next when its age has doubled.
    pub(super) fn pass_sites_when_due(&mut self) {
        if !self.site_passes.timer.as_ref().is_some_and(PeriodicTimer::fired) || self.debugger.is_some() {
            return;
        }
        let now = Instant::now();
        let live: Vec<usize> = self.images.keys().copied().collect();
        self.site_passes.due.retain(|image, _| live.contains(image));
        // One read of the table for the images due at once.
        let mut counts = None;
        for image_id in live {
            let (at, wait) = *self.site_passes.due.entry(image_id).or_insert((now + FIRST_PASS, FIRST_PASS));
            if now < at {
                continue;
            }
            self.site_passes.due.insert(image_id, (now + wait, 2 * wait));
            let counts = counts.get_or_insert_with(|| self.read_arc_counts());
            self.pass_sites(image_id, counts);
        }
    }

    /// Gives the hot direct call sites of image `image_id` (by the table's
    /// entries `counts`) trampolines of their own, every thread of the image
    /// stopped meanwhile.
    fn pass_sites(&mut self, image_id: usize, counts: &ArcCounts) {
        let (Some(ids), Some(image)) = (self.arc_ids.get(&image_id), self.images.get(&image_id)) else { return };
        let entries: FxHashMap<u32, u64> = ids.iter().map(|(&entry, &id)| (id, entry)).collect();
        let mut hot: Vec<(u64, u64, usize)> = counts
            .entries
            .iter()
            .filter(|e| e.count >= HOT_CALLS && !image.sites.contains_key(&e.ret.wrapping_sub(CALL_LEN)))
            .filter_map(|e| Some((e.ret, *entries.get(&e.id)?, *self.arc_callees.get(e.id as usize - 1)?)))
            .collect();
        if hot.is_empty() {
            return;
        }
        // In the order of their call sites, each code page is read once.
        hot.sort_unstable();
        // Every thread stopped: those the loop has yet to hear from too.
        let stopped = self.stop_world(image_id, 0);
        let Some(&tid) = stopped.first() else { return };
        let busy = self.busy_at(image_id);
        let mut deferred = Vec::new();
        let mut world = World { tid, busy: &busy, deferred: &mut deferred };
        self.count_sites(image_id, &hot, &mut world);
        self.resume_world(&stopped);
        self.redeliver(tid, deferred);
    }

    /// Sends each of the `hot` (return address, callee's entry, callee)
    /// calls of image `image_id` that is a direct call of a patched entry
    /// to a trampoline of its own, whose counter slot both the call's arc
    /// and the callee count.
    fn count_sites(&mut self, image_id: usize, hot: &[(u64, u64, usize)], world: &mut World) {
        let increment = self.counters.increment(self.images[&image_id].shared);
        let memory = &self.images[&image_id].memory;
        memory.begin_batch();
        // The calls' pages read in runs of neighbours, not one by one.
        memory.prefetch(hot.iter().map(|&(ret, ..)| ret.wrapping_sub(CALL_LEN)));
        for &(ret, entry, f) in hot {
            let image = &self.images[&image_id];
            let Some(call) = image.countable_site(ret, entry, world.busy) else { continue };
            let Some(m) = image.module_of(call) else { continue };
            // Only a PLT entry's code is worth decoding for its jump
            // (every hot site's callee's took 8 of the 65 ms sampled in
            // cc1's passes on `lvm.c`).
            let behind_plt =
                self.functions.records[f].name().ends_with("@plt").then(|| image.plt_call(entry)).flatten();
            let Some((slot, base)) = self.counters.allocate() else { break };
            let arc = self.arc_of_call(image_id, m, f, call);
            let site = CountedSite { slot, arc };
            let through_plt = behind_plt.is_some_and(|(plt, g)| {
                self.count_site_through_plt(image_id, m, call, (site, plt, g), increment, world)
            });
            let counted = through_plt || {
                let image = self.images.get_mut(&image_id).expect("live image");
                let mut thread = Stopped { tid: world.tid, counters: &self.counters, deferred: world.deferred };
                image.count_site(call, entry, site, increment, &mut thread).is_ok()
            };
            if counted {
                self.arcs().records[arc].counters_mut().slots.push((slot, base));
                self.functions.records[f].counts_mut().slots.push((slot, base));
                self.site_passes.counted += 1;
            } else {
                self.counters.recycle(slot, base);
            }
        }
        let image = &self.images[&image_id];
        if let Err(e) = image.memory.end_batch() {
            eprintln!("== CALIPER: cali-run: cannot give call sites of process {} trampolines: {e}", image.pid);
        }
    }

    /// Sends the call at `call` (in module `m` of image `image_id`) of a
    /// PLT entry, whose site counts in `site`, to a trampoline that counts
    /// the function `g` behind the entry too, as `plt` says (see
    /// [`Image::count_site_through_plt`]), in a slot of its own: whether it
    /// did (not where no slot is left or the function's trampoline is out
    /// of the call's reach).
    fn count_site_through_plt(
        &mut self,
        image_id: usize,
        m: usize,
        call: u64,
        (site, plt, g): (CountedSite, PltCall, usize),
        increment: Increment,
        world: &mut World,
    ) -> bool {
        let Some((slot, base)) = self.counters.allocate() else { return false };
        let behind = CountedSite { slot, arc: self.arc_of_call(image_id, m, g, call) };
        let image = self.images.get_mut(&image_id).expect("live image");
        let mut thread = Stopped { tid: world.tid, counters: &self.counters, deferred: world.deferred };
        if image.count_site_through_plt(call, plt, [site, behind], increment, &mut thread).is_err() {
            self.counters.recycle(slot, base);
            return false;
        }
        self.arcs().records[behind.arc].counters_mut().slots.push((slot, base));
        self.functions.records[g].counts_mut().slots.push((slot, base));
        self.site_passes.through_plt += 1;
        true
    }
}
