//! The `sample` collector's side of the loop: the kernel's samples drained
//! and their call chains named by the functions of the sampled process's
//! modules.
//!
//! The kernel walks a user call chain by frame pointers, so in code built
//! without them it reads whatever lies on the stack (text, -1, a pointer
//! to data) as return addresses. A caller frame is kept only where its
//! return address lies in code of the process; the chain is cut at the
//! first one that does not, and the cut counted: every frame shown is
//! then a function or a module and offset.

use super::Engine;
use crate::image::Image;
use crate::maps::{self, Mapping};
use crate::ptrace::Pid;
use std::collections::HashMap;

impl Engine {
    /// Drains the sampling buffer into the stack counts.
    pub(super) fn take_samples(&mut self) {
        let Some(sampler) = self.sampler.as_mut() else { return };
        // Read once a drain, for an address outside the modules known.
        let mut mapped: HashMap<Pid, Vec<Mapping>> = HashMap::new();
        for sample in sampler.drain() {
            let image = self.processes.get(&sample.pid).and_then(|p| self.images.get(&p.image));
            let mut name = |addr: u64| {
                module_name(image, addr).or_else(|| {
                    let code = mapped.entry(sample.pid).or_insert_with(|| executable_mappings(sample.pid));
                    mapping_name(code, addr)
                })
            };
            // Innermost first; a return address names its caller through
            // the call before it.
            let mut stack = Vec::with_capacity(sample.chain.len());
            for (i, &ip) in sample.chain.iter().enumerate() {
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

/// The function at `addr`, or the module and offset, where `addr` is in
/// the code of a module of `image`. A function known only from the unwind
/// tables, named by its address in the file, is named with its module
/// too, as a frame has no other.
fn module_name(image: Option<&Image>, addr: u64) -> Option<String> {
    let image = image?;
    if let Some((module, f)) = image.function_at(addr) {
        return Some(if f.name == format!("{:#x}", f.address) {
            format!("{}+{}", short(&module.path), f.name)
        } else {
            f.name.clone()
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
