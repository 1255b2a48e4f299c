//! The `sample` collector's side of the loop: the kernel's samples drained
//! and their call chains named by the functions of the sampled process's
//! modules.

use super::Engine;
use crate::image::Image;

impl Engine {
    /// Drains the sampling buffer into the stack counts.
    pub(super) fn take_samples(&mut self) {
        let Some(sampler) = self.sampler.as_mut() else { return };
        for sample in sampler.drain() {
            let image = self.processes.get(&sample.pid).and_then(|p| self.images.get(&p.image));
            // Innermost first; a return address names its caller through
            // the call before it.
            let mut stack: Vec<String> = sample
                .chain
                .iter()
                .enumerate()
                .map(|(i, &ip)| frame_name(image, if i == 0 { ip } else { ip.wrapping_sub(1) }))
                .collect();
            stack.reverse();
            *self.stacks.entry(stack).or_default() += 1;
        }
    }
}

/// The function at `addr`, or the module and offset, or the address.
fn frame_name(image: Option<&Image>, addr: u64) -> String {
    let Some(image) = image else { return format!("{addr:#x}") };
    if let Some((_, f)) = image.function_at(addr) {
        return f.name.clone();
    }
    let Some(m) = image.module_of(addr) else { return format!("{addr:#x}") };
    let module = &image.modules[m];
    format!("{}+{:#x}", short(&module.path), addr.wrapping_sub(module.bias))
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
