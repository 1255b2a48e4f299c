//! Call chains of a stopped thread: framehop's unwinder (the one the
//! runtime's sampler uses in-process) over the tracee's modules, their
//! `.eh_frame` read from the files, and its stack read through
//! `/proc/PID/mem`; where a module has no unwind entry for an address,
//! framehop follows the frame pointers.

use crate::image::{self, LoadedModule};
use crate::maps;
use crate::ptrace::Pid;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment};
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
    /// The page of the lowest loaded segment, from which the load bias follows.
    first_page: u64,
}

/// A file whose code is mapped into the process, with its load bias.
#[derive(Debug, Clone)]
pub struct CodeFile {
    pub path: Arc<str>,
    pub low: u64,
    pub high: u64,
    pub bias: u64,
}

impl CodeFile {
    /// `file+0xOFFSET` for an address in the file's code.
    pub fn offset_name(&self, addr: u64) -> String {
        let file = self.path.rsplit('/').next().unwrap_or(&self.path);
        format!("{file}+{:#x}", addr.wrapping_sub(self.bias))
    }
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
    /// The code files of process `pid`: the modules of its image, and the
    /// files it does not instrument (left out with `-x`), whose bias
    /// follows from where their first page is mapped.
    pub fn code_files(&mut self, pid: Pid, modules: &[LoadedModule]) -> Vec<CodeFile> {
        let mut files: Vec<CodeFile> =
            modules.iter().map(|m| CodeFile { path: m.path.clone(), low: m.low, high: m.high, bias: m.bias }).collect();
        let Ok(mappings) = maps::read(pid) else { return files };
        for (path, low, high) in image::executable_files(&mappings) {
            if files.iter().any(|f| f.low == low) {
                continue;
            }
            let path: Arc<str> = Arc::from(path);
            let first = mappings.iter().find(|m| *m.path == *path && m.offset == 0).map(|m| m.start);
            if let (Some(first), Some(sections)) = (first, self.sections(&path)) {
                files.push(CodeFile { path, low, high, bias: first.wrapping_sub(sections.first_page) });
            }
        }
        files
    }

    /// The frames from the thread's `pc`, `sp` and `bp` outwards; `read`
    /// reads a word of its stack, and `translate` maps an address in code
    /// of the tool's (a trampoline) to the program's instruction it runs
    /// for and the bytes the tool's code pushed since the function's entry.
    pub fn backtrace(
        &mut self,
        files: &[CodeFile],
        (pc, sp, bp): (u64, u64, u64),
        mut read: impl FnMut(u64) -> Option<u64>,
        translate: impl Fn(u64) -> Option<(u64, u64)>,
    ) -> Vec<Frame> {
        let mut unwinder: UnwinderX86_64<Bytes> = UnwinderX86_64::new();
        for file in files {
            if let Some(sections) = self.sections(&file.path) {
                unwinder.add_module(framehop_module(file, &sections));
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
    Some(Sections {
        text: section(".text"),
        eh_frame: section(".eh_frame"),
        eh_frame_hdr: section(".eh_frame_hdr"),
        first_page: file.segments().map(|s| s.address() & !0xfff).min().unwrap_or(0),
    })
}

fn framehop_module(file: &CodeFile, sections: &Sections) -> Module<Bytes> {
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
    Module::new(file.path.to_string(), file.low..file.high, file.bias, info)
}
