//! The functions seen in any traced process, with what is known of each:
//! coverage, the calls counted by breakpoint, the counter slot of its
//! trampoline, and how it is instrumented. One record per (module, entry
//! address in the file), so a forked child or a re-executed program adds
//! to the same record.

use crate::relocate::Unpatchable;
use std::collections::HashMap;
use std::sync::Arc;

/// How a function's calls are counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Breakpoint in place, never hit.
    Armed,
    /// Hit once and the breakpoint removed (coverage only).
    Covered,
    /// The entry jumps to a trampoline that counts each call.
    Trampoline,
    /// The breakpoint stays and the tool counts each hit (exact, slower).
    Breakpoint(Unpatchable),
    /// Not counted after the first call: its first instruction could not
    /// be moved, so the breakpoint was removed.
    Uncounted(Unpatchable),
}

/// One function.
#[derive(Debug, Clone)]
pub struct FunctionRecord {
    pub module: Arc<str>,
    pub name: String,
    /// Entry address in the module file.
    pub address: u64,
    pub size: u64,
    pub covered: bool,
    /// Calls counted by the tool at a breakpoint.
    pub trap_hits: u64,
    /// The counter slot of its trampoline.
    pub slot: Option<usize>,
    pub mode: Mode,
}

/// Every function, by id (an index).
#[derive(Debug, Default)]
pub struct FunctionTable {
    pub records: Vec<FunctionRecord>,
    index: HashMap<(Arc<str>, u64), usize>,
}

impl FunctionTable {
    /// The id of a function, added if new.
    pub fn intern(&mut self, module: &Arc<str>, name: &str, address: u64, size: u64) -> usize {
        if let Some(&id) = self.index.get(&(module.clone(), address)) {
            return id;
        }
        let id = self.records.len();
        self.records.push(FunctionRecord {
            module: module.clone(),
            name: name.to_string(),
            address,
            size,
            covered: false,
            trap_hits: 0,
            slot: None,
            mode: Mode::Armed,
        });
        self.index.insert((module.clone(), address), id);
        id
    }

    /// The total calls of function `id`, given the counter values.
    pub fn calls(&self, id: usize, counters: &[u64]) -> u64 {
        let r = &self.records[id];
        r.trap_hits + r.slot.and_then(|s| counters.get(s).copied()).unwrap_or(0)
    }
}
