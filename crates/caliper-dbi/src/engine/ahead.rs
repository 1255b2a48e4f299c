//! Instrumenting a module's functions at the first call into it, ahead of
//! their own first calls.
//!
//! A first call that finds an `int3` costs a ptrace stop (tens of
//! microseconds on a virtual machine), and a program's start-up calls
//! thousands of functions once each: under `fcount` those stops were most
//! of the tool's cost. So, when the counts need trampolines anyway, the
//! first hit in a module gives every function of the module that can take
//! one its trampoline, in one batch of memory writes, while the world is
//! stopped for that hit. A module the program never calls costs nothing
//! (a compiler loads libraries of tens of thousands of functions that a
//! small file never needs). A function that cannot take a trampoline
//! keeps its `int3`, and its first hit decides as before.

use super::Engine;
use super::probes::World;
use crate::image::ProbeState;

/// Counter slots kept for what comes after: the functions of modules
/// loaded later that take a trampoline at their first call.
const SLOTS_KEPT: usize = crate::counters::SLOTS / 8;

impl Engine {
    /// At a first hit in module `m` of image `image_id` (its threads
    /// stopped, as `world` says): if it is the module's first, a
    /// trampoline at every other armed function entry of the module.
    pub(super) fn patch_module_ahead(&mut self, image_id: usize, m: usize, world: &mut World) {
        if !self.config.collect.counts() || self.config.breakpoints_only || self.config.lazy {
            return;
        }
        let Some(image) = self.images.get_mut(&image_id) else { return };
        let module = &mut image.modules[m];
        if std::mem::replace(&mut module.entered, true) {
            return;
        }
        let (low, high) = (module.low, module.high);
        let entries: Vec<(u64, usize)> = image
            .probes
            .range(low..high)
            .filter(|(_, p)| p.state == ProbeState::Armed && p.internal.is_none() && !p.user_break)
            .filter_map(|(&addr, p)| Some((addr, p.function?)))
            .collect();
        image.memory.begin_batch();
        image.memory.prefetch(entries.iter().map(|e| e.0));
        for (addr, f) in entries {
            if self.counters.free() < SLOTS_KEPT {
                break;
            }
            // One that cannot take a trampoline stays armed: its first hit
            // displaces its entry instruction or removes the breakpoint.
            // Without a trampoline region (no address space for one near
            // the module), none can.
            if self.patch_function(image_id, addr, f, world).is_err()
                && self.images[&image_id].modules[m].region.is_none()
            {
                break;
            }
        }
        let image = &self.images[&image_id];
        if let Err(e) = image.memory.end_batch() {
            eprintln!("== CALIPER: cali-run: cannot instrument the functions of process {}: {e}", image.pid);
        }
    }
}
