//! Call chains of a stopped thread: framehop's unwinder (the one the
//! runtime's sampler uses in-process) over the tracee's modules, their
//! `.eh_frame` read from the files, and its stack read through
//! `/proc/PID/mem`; where a module has no unwind entry for an address,
//! framehop follows the frame pointers.

use crate::image::LoadedModule;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// The most frames a backtrace shows (a corrupt stack must not loop).
pub const MAX_FRAMES: usize = 64;

type Bytes = Arc<[u8]>;

/// A module file's unwind sections, at their addresses in the file.
#[derive(Debug)]
struct Sections {
    text: Option<(Range<u64>, Bytes)>,
    eh_frame: Option<(Range<u64>, Bytes)>,
    eh_frame_hdr: Option<(Range<u64>, Bytes)>,
}

/// The unwind sections of the module files seen, read once each.
#[derive(Debug, Default)]
pub struct UnwindTables {
    files: HashMap<Arc<str>, Option<Arc<Sections>>>,
}

/// One frame of a backtrace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The pc (innermost frame) or the return address, as on the stack.
    pub address: u64,
    /// For an address in code of the tool's, the address of the
    /// program's own code it stands for, from which unwinding went on.
    pub stands_for: Option<u64>,
}

impl UnwindTables {
    /// The frames from the thread's `pc`, `sp` and `bp` outwards; `read`
    /// reads a word of its stack, and `translate` maps an address in code
    /// of the tool's (a trampoline) to the program's instruction it runs
    /// for and the bytes the tool's code pushed since the function's entry.
    pub fn backtrace(
        &mut self,
        modules: &[LoadedModule],
        (pc, sp, bp): (u64, u64, u64),
        mut read: impl FnMut(u64) -> Option<u64>,
        translate: impl Fn(u64) -> Option<(u64, u64)>,
    ) -> Vec<Frame> {
        let mut unwinder: UnwinderX86_64<Bytes> = UnwinderX86_64::new();
        for module in modules {
            if let Some(sections) = self.sections(&module.path) {
                unwinder.add_module(framehop_module(module, &sections));
            }
        }
        let mut cache = CacheX86_64::new();
        let mut read_stack = |addr: u64| read(addr).ok_or(());
        let mut regs = UnwindRegsX86_64::new(pc, sp, bp);
        let mut frames = Vec::new();
        let mut address = pc;
        while frames.len() < MAX_FRAMES {
            let (stands_for, pushed) = translate(address).unwrap_or((address, 0));
            let frame = if frames.is_empty() {
                regs.set_sp(regs.sp() + pushed);
                FrameAddress::from_instruction_pointer(stands_for)
            } else {
                match FrameAddress::from_return_address(stands_for) {
                    Some(frame) => frame,
                    None => break,
                }
            };
            frames.push(Frame { address, stands_for: (stands_for != address).then_some(stands_for) });
            match unwinder.unwind_frame(frame, &mut regs, &mut cache, &mut read_stack) {
                Ok(Some(ret)) if ret != 0 => address = ret,
                _ => break,
            }
        }
        frames
    }

    fn sections(&mut self, path: &Arc<str>) -> Option<Arc<Sections>> {
        self.files.entry(path.clone()).or_insert_with(|| read_sections(path).map(Arc::new)).clone()
    }
}

fn read_sections(path: &str) -> Option<Sections> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(data.as_slice()).ok()?;
    let section = |name: &str| {
        let s = file.section_by_name(name)?;
        let bytes: Bytes = Arc::from(s.data().ok()?);
        Some((s.address()..s.address() + bytes.len() as u64, bytes))
    };
    Some(Sections { text: section(".text"), eh_frame: section(".eh_frame"), eh_frame_hdr: section(".eh_frame_hdr") })
}

fn framehop_module(module: &LoadedModule, sections: &Sections) -> Module<Bytes> {
    let split = |s: &Option<(Range<u64>, Bytes)>| match s {
        Some((range, bytes)) => (Some(range.clone()), Some(bytes.clone())),
        None => (None, None),
    };
    let (text_svma, text) = split(&sections.text);
    let (eh_frame_svma, eh_frame) = split(&sections.eh_frame);
    let (eh_frame_hdr_svma, eh_frame_hdr) = split(&sections.eh_frame_hdr);
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma,
        text,
        eh_frame_svma,
        eh_frame,
        eh_frame_hdr_svma,
        eh_frame_hdr,
        ..Default::default()
    };
    Module::new(module.path.to_string(), module.low..module.high, module.bias, info)
}
