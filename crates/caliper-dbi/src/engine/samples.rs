//! The `sample` collector's side of the loop: the kernel's samples drained
//! and their call chains named by the functions of the sampled process's
//! modules.
//!
//! A sample's chain is unwound by the modules' CFI (`.eh_frame`) from the
//! registers and the copy of the stack it carries, so that code built
//! without frame pointers shows its callers. Where that gives no caller
//! (no copy, or no unwind entry), the chain is the kernel's, walked by
//! frame pointers, which in code built without them reads whatever lies
//! on the stack (text, -1, a pointer to data) as return addresses. Either
//! way a caller frame is kept only where its return address lies in code
//! of the process; the chain is cut at the first one that does not, and
//! the cut counted: every frame shown is then a function or a module and
//! offset.

use super::Engine;
use super::debug::stands_for;
use super::timer::PeriodicTimer;
use crate::debugger::unwind::{CodeFile, UnwindTables};
use crate::image::Image;
use crate::maps::{self, Mapping};
use crate::ptrace::Pid;
use crate::sample::Sample;
use std::collections::HashMap;
use std::time::Duration;

/// How often the loop drains the sampling buffers: with its stack copy a
/// sample takes about 8 KiB, so at 1 kHz a processor's buffer fills in
/// about 2 s, and a program that runs without stopping for the tool
/// would lose samples between drains at its stops.
const DRAIN_PERIOD: Duration = Duration::from_millis(200);

impl Engine {
    /// Starts the drain timer (on `SIGRTMIN + 2`; the observer's timer has
    /// `SIGRTMIN`, the watchdog's `SIGRTMIN + 1`). Without it samples are
    /// drained at the program's stops only.
    pub(super) fn start_sample_drain(&mut self) {
        match PeriodicTimer::start(DRAIN_PERIOD, libc::SIGRTMIN() + 2) {
            Ok(timer) => self.sample_drain = Some(timer),
            Err(e) => eprintln!("== CALIPER: cali-run: samples drained at the program's stops only ({e})"),
        }
    }

    /// Drains the sampling buffers when the drain timer has fired.
    pub(super) fn drain_samples_when_due(&mut self) {
        if self.sample_drain.as_ref().is_some_and(PeriodicTimer::fired) {
            self.take_samples();
        }
    }

    /// Drains the sampling buffer into the stack counts.
    pub(super) fn take_samples(&mut self) {
        let Some(sampler) = self.sampler.as_mut() else { return };
        // Read once a drain, for an address outside the modules known.
        let mut mapped: HashMap<Pid, Vec<Mapping>> = HashMap::new();
        let mut files: HashMap<Pid, Vec<CodeFile>> = HashMap::new();
        for sample in sampler.drain() {
            let image = self.processes.get(&sample.pid).and_then(|p| self.images.get(&p.image));
            let files = files
                .entry(sample.pid)
                .or_insert_with(|| self.unwind.code_files(sample.pid, image.map_or(&[], |i| &i.modules)));
            let chain = unwound_chain(&mut self.unwind, files, image, &sample).unwrap_or(sample.chain);
            let mut name = |addr: u64| {
                module_name(image, addr).or_else(|| {
                    let code = mapped.entry(sample.pid).or_insert_with(|| executable_mappings(sample.pid));
                    mapping_name(code, addr)
                })
            };
            // Innermost first; a return address names its caller through
            // the call before it.
            let mut stack = Vec::with_capacity(chain.len());
            for (i, &ip) in chain.iter().enumerate() {
                match name(if i == 0 { ip } else { ip.wrapping_sub(1) }) {
                    Some(frame) => stack.push(frame),
                    // The sampled instruction ran, named or not (its
                    // process gone).
                    None if i == 0 => stack.push(format!("{ip:#x}")),
                    None => {
                        self.samples_truncated += 1;
                        break;
                    }
                }
            }
            stack.reverse();
            *self.stacks.entry(stack).or_default() += 1;
        }
    }
}

/// The chain of `sample` unwound by CFI from its registers and stack copy,
/// where that finds a caller; an address in a trampoline stands for the
/// program's instruction it runs for, from which unwinding goes on.
fn unwound_chain(
    tables: &mut UnwindTables,
    files: &[CodeFile],
    image: Option<&Image>,
    sample: &Sample,
) -> Option<Vec<u64>> {
    let user = sample.user.as_ref()?;
    let translate = |addr| image.filter(|i| i.in_trampolines(addr)).and_then(|i| stands_for(i, addr));
    let frames = tables.backtrace(files, (user.pc, user.sp, user.bp), |addr| user.read(addr), translate);
    (frames.len() > 1).then(|| frames.iter().map(|f| f.stands_for.unwrap_or(f.address)).collect())
}

/// The function at `addr`, or the module and offset, where `addr` is in
/// the code of a module of `image`. A function known only from the unwind
/// tables, named by its address in the file, is named with its module
/// too, as a frame has no other.
fn module_name(image: Option<&Image>, addr: u64) -> Option<String> {
    let image = image?;
    if let Some((module, f)) = image.function_at(addr) {
        return Some(if *f.name == format!("{:#x}", f.address) {
            format!("{}+{}", short(&module.path), f.name)
        } else {
            f.name.to_string()
        });
    }
    let module = &image.modules[image.module_of(addr)?];
    Some(format!("{}+{:#x}", short(&module.path), addr.wrapping_sub(module.bias)))
}

/// The executable mappings of process `pid` (none where it is gone).
fn executable_mappings(pid: Pid) -> Vec<Mapping> {
    maps::read(pid).unwrap_or_default().into_iter().filter(|m| m.executable).collect()
}

/// `[vdso]+0xOFFSET`, or a file left out of the modules and the offset in
/// it, where `addr` is in one of the executable mappings `code`.
fn mapping_name(code: &[Mapping], addr: u64) -> Option<String> {
    let m = code.iter().find(|m| (m.start..m.end).contains(&addr))?;
    let path = if m.path.is_empty() { "[anonymous]" } else { short(&m.path) };
    Some(format!("{path}+{:#x}", addr - m.start + m.offset))
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
