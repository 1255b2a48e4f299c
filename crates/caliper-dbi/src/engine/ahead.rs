//! Instrumenting a module's functions at the first call into it, ahead of
//! their own first calls.
//!
//! A first call that finds an `int3` costs a ptrace stop (tens of
//! microseconds on a virtual machine), and a program's start-up calls
//! thousands of functions once each: under `fcount` those stops were most
//! of the tool's cost. So, when the counts need trampolines anyway, the
//! first hit in a module gives functions of the module their trampolines,
//! in batches of memory writes, while the world is stopped for that hit.
//! A module the program never calls costs nothing (a compiler loads
//! libraries of tens of thousands of functions that a small file never
//! needs). A function that cannot take a trampoline keeps its `int3`, and
//! its first hit decides as before.
//!
//! Which functions: those that earlier runs of the same program called,
//! where the module cache knows them ([`ModuleCache::called_before`]);
//! else every one. A compiler's run calls 4,300 of its 45,000 functions,
//! and giving all of them trampolines took most of the tool's start-up. A
//! function outside that set keeps its `int3` and gets its trampoline at
//! its first call, a stop; after [`MISSES_ALLOWED`] such stops in a module
//! (the run does what the earlier ones did not), every function of the
//! module gets its trampoline, as without the set.
//!
//! [`ModuleCache::called_before`]: crate::module_cache::ModuleCache::called_before

use super::Engine;
use super::probes::World;
use crate::image::{Ahead, ProbeState};
use std::collections::HashMap;
use std::sync::Arc;

/// Counter slots kept for what comes after: the functions of modules
/// loaded later that take a trampoline at their first call.
const SLOTS_KEPT: usize = crate::counters::SLOTS / 8;

/// The bytes of code whose entries are instrumented in one batch of memory
/// writes.
const STRETCH_BYTES: u64 = 64 << 10;

/// The first calls of functions that earlier runs did not call that a
/// module takes one stop each for, before the rest of it is instrumented.
const MISSES_ALLOWED: u32 = 16;

impl Engine {
    /// At a first hit in module `m` of image `image_id` (its threads
    /// stopped, as `world` says): at the module's first, a trampoline at
    /// each other armed function entry of the module that earlier runs of
    /// the program called, or at every one; after [`MISSES_ALLOWED`] more,
    /// at every one.
    pub(super) fn patch_module_ahead(&mut self, image_id: usize, m: usize, world: &mut World) {
        if !self.config.collect.counts() || self.config.breakpoints_only || self.config.lazy {
            return;
        }
        let Some(image) = self.images.get_mut(&image_id) else { return };
        let module = &mut image.modules[m];
        let called = match module.ahead {
            Ahead::All => return,
            Ahead::CalledBefore { misses } if misses + 1 < MISSES_ALLOWED => {
                module.ahead = Ahead::CalledBefore { misses: misses + 1 };
                return;
            }
            Ahead::CalledBefore { .. } => None,
            Ahead::NotEntered => {
                let (program, path) = (image.program.clone(), module.path.clone());
                let called = program.as_deref().and_then(|p| self.modules.called_before(p, &path));
                if let Some(program) = program {
                    self.entered_modules.insert((program, path));
                }
                called
            }
        };
        let Some(image) = self.images.get_mut(&image_id) else { return };
        let module = &mut image.modules[m];
        module.ahead = if called.is_some() { Ahead::CalledBefore { misses: 0 } } else { Ahead::All };
        let (low, high, bias) = (module.low, module.high, module.bias);
        // The entries in address order, the called ones (file addresses,
        // sorted) walked beside them: a compiler's 45,000 entries each looked
        // up its function's record (a cache miss) and searched the list.
        let mut called = called.as_deref().map(|c| c.iter().copied().peekable());
        let entries: Vec<(u64, usize)> = image
            .probes
            .range(low..high)
            .filter(|(_, p)| p.state == ProbeState::Armed && p.internal.is_none() && !p.user_break)
            .filter_map(|(&addr, p)| Some((addr, p.function?)))
            .filter(|&(addr, _)| {
                let Some(called) = called.as_mut() else { return true };
                let file = addr.wrapping_sub(bias);
                while called.next_if(|&c| c < file).is_some() {}
                called.next_if_eq(&file).is_some()
            })
            .collect();
        // A batch of memory writes per stretch of code: a batch keeps a copy
        // of each page it touches until it ends, and one batch for all of a
        // compiler's 4,300 functions faulted 2,000 fresh pages into the
        // tool; a stretch's copies are freed for the next.
        for stretch in entries.chunk_by(|a, b| a.0 / STRETCH_BYTES == b.0 / STRETCH_BYTES) {
            let image = &self.images[&image_id];
            image.memory.begin_batch();
            image.memory.prefetch(stretch.iter().map(|e| e.0));
            let mut go_on = true;
            for &(addr, f) in stretch {
                // One that cannot take a trampoline stays armed: its first
                // hit displaces its entry instruction or removes the
                // breakpoint. Without a trampoline region (no address space
                // for one near the module), none can.
                go_on = self.counters.free() >= SLOTS_KEPT
                    && (self.patch_function(image_id, addr, f, world).is_ok()
                        || self.images[&image_id].modules[m].region.is_some());
                if !go_on {
                    break;
                }
            }
            let image = &self.images[&image_id];
            if let Err(e) = image.memory.end_batch() {
                eprintln!("== CALIPER: cali-run: cannot instrument the functions of process {}: {e}", image.pid);
                return;
            }
            if !go_on {
                return;
            }
        }
    }

    /// Tells the module cache which functions of the modules that each
    /// program entered were called in this run (for the runs after it).
    /// The counts are per function, not per process: where several
    /// programs ran a library (a compiler driver, its compiler and its
    /// assembler), each is told of the library functions any of them
    /// called, a few more than its own.
    pub(super) fn note_called(&mut self) {
        let mut called: HashMap<&str, Vec<u64>> = HashMap::new();
        for r in self.functions.records.iter().filter(|r| r.covered) {
            called.entry(&r.module).or_default().push(r.address());
        }
        for (program, module) in &self.entered_modules {
            let addresses = called.get(&**module).into_iter().flatten().copied();
            self.modules.note_called(program, module, addresses);
        }
    }
}

/// A program and a module of it that a run entered, by path.
pub(super) type EnteredModule = (Arc<str>, Arc<str>);
