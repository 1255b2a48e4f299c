//! Instrumenting a module's functions as it loads, ahead of their first
//! calls.
//!
//! A first call that finds an `int3` costs a ptrace stop (tens of
//! microseconds on a virtual machine), and a program's start-up calls
//! thousands of functions once each: under `fcount` that was most of the
//! tool's cost. So, when the counts need trampolines anyway, every
//! function of a module that can take one gets it while the module's code
//! cannot run yet (at the program's exec, when the dynamic linker has
//! mapped a library, or with the world stopped at a delayed start), in
//! one batch of memory writes. A function that cannot take a trampoline
//! keeps its `int3`, and its first hit decides as before.

use super::Engine;
use super::probes::World;
use crate::image::ProbeState;
use crate::ptrace::{self, Pid};
use std::sync::Arc;

/// Counter slots kept for what comes after: call sites learned at traps,
/// functions of modules loaded later that take a trampoline at their
/// first call.
const SLOTS_KEPT: usize = crate::counters::SLOTS / 4;

impl Engine {
    /// [`Engine::patch_ahead`] for the modules `paths` of image
    /// `image_id`, whose threads are all stopped (none of them running,
    /// or in a job control stop, which cannot run system calls for the
    /// tool).
    pub(super) fn patch_stopped_image(&mut self, image_id: usize, paths: &[Arc<str>]) {
        let threads: Vec<Pid> = self
            .threads
            .iter()
            .filter(|(_, t)| !t.running && !t.listening)
            .filter(|(_, t)| self.processes.get(&t.pid).is_some_and(|p| p.image == image_id))
            .map(|(&tid, _)| tid)
            .collect();
        let Some(&tid) = threads.iter().min() else { return };
        // A thread stopped in a system call goes back two bytes, to its
        // `syscall`, if the call restarts.
        let mut busy: Vec<u64> = threads
            .iter()
            .filter_map(|&t| ptrace::registers(t).ok())
            .flat_map(|r| [r.rip, r.rip.wrapping_sub(2)])
            .collect();
        busy.extend(self.held_at(image_id));
        self.patch_ahead(image_id, tid, paths, &busy);
    }

    /// Puts counting trampolines at the armed function entries of the
    /// modules `paths` of image `image_id`, thread `tid` (stopped) lending
    /// itself to map trampoline memory; `busy` are the program counters of
    /// the image's stopped threads. Signals that arrive meanwhile are
    /// delivered after.
    pub(super) fn patch_ahead(&mut self, image_id: usize, tid: Pid, paths: &[Arc<str>], busy: &[u64]) {
        if !self.config.collect.counts() || self.config.breakpoints_only || self.config.lazy {
            return;
        }
        let Some(image) = self.images.get(&image_id) else { return };
        let modules: Vec<usize> =
            (0..image.modules.len()).filter(|&m| paths.contains(&image.modules[m].path)).collect();
        let mut entries: Vec<(u64, usize, usize)> = image
            .probes
            .iter()
            .filter(|(_, p)| p.state == ProbeState::Armed && p.internal.is_none() && !p.user_break)
            .filter_map(|(&addr, p)| Some((addr, image.module_of(addr).filter(|m| modules.contains(m))?, p.function?)))
            .collect();
        entries.sort_unstable();
        let mut deferred = Vec::new();
        // A module without a trampoline region (no address space for one
        // near it) is left to the first hits, which say why.
        let mut without_region = Vec::new();
        image.memory.begin_batch();
        for (addr, m, f) in entries {
            if self.counters.free() < SLOTS_KEPT {
                break;
            }
            if without_region.contains(&m) {
                continue;
            }
            let sites = if self.config.collect.arcs {
                match self.first_sites(image_id, f, addr, None) {
                    Some(list) => Some(list),
                    None => break,
                }
            } else {
                None
            };
            let mut world = World { tid, busy, deferred: &mut deferred };
            // One that cannot take a trampoline stays armed: its first hit
            // displaces its entry instruction or removes the breakpoint.
            if self.patch_function(image_id, addr, f, sites, &mut world).is_err()
                && self.images[&image_id].modules[m].region.is_none()
            {
                without_region.push(m);
            }
        }
        let image = &self.images[&image_id];
        if let Err(e) = image.memory.end_batch() {
            eprintln!("== CALIPER: cali-run: cannot instrument the functions of process {}: {e}", image.pid);
        }
        self.redeliver(tid, deferred);
    }
}
