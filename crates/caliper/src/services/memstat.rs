//! `memstat`: the process's memory at every snapshot, read from
//! `/proc/self/statm` (in pages): `memstat.vmsize` (virtual size),
//! `memstat.vmrss` (resident) and `memstat.data` (data and stack), each
//! aggregatable, so that profiles keep their maximum per region (the
//! `mem.pages` option). The file is opened once and read with one
//! `pread` per snapshot.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "memstat",
    aliases: &["memusage"],
    description: "Record the process's memory pages (/proc/self/statm) at every snapshot",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        match File::open("/proc/self/statm") {
            Ok(statm) => Ok(Created::Service(Arc::new(MemStat::new(setup.cali, Arc::new(statm))))),
            Err(e) => {
                log::error(format_args!("memstat: cannot open /proc/self/statm ({e}); memstat disabled"));
                Err(NotCreated::BadSettings)
            }
        }
    },
};

struct MemStat {
    statm: Arc<File>,
    /// `memstat.vmsize`, `memstat.vmrss`, `memstat.data`.
    attrs: [Attribute; 3],
}

impl MemStat {
    fn new(cali: &dyn Runtime, statm: Arc<File>) -> MemStat {
        let props =
            Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS | Properties::SCOPE_PROCESS;
        let attr = |name| cali.create_attribute(name, AttrType::Uint, props, &[]);
        MemStat { statm, attrs: [attr("memstat.vmsize"), attr("memstat.vmrss"), attr("memstat.data")] }
    }
}

impl Service for MemStat {
    fn name(&self) -> &'static str {
        "memstat"
    }

    fn measures(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(Reader { statm: self.statm.clone(), attrs: self.attrs, buffer: [0; 128] })
    }
}

/// A thread's reader of the shared file.
struct Reader {
    statm: Arc<File>,
    attrs: [Attribute; 3],
    buffer: [u8; 128],
}

impl ThreadService for Reader {
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        let Ok(n) = self.statm.read_at(&mut self.buffer, 0) else { return };
        let Some(pages) = statm_pages(&self.buffer[..n]) else { return };
        for (attr, value) in self.attrs.iter().zip(pages) {
            snapshot.push_value(attr.id(), ValueKey::uint(value));
        }
    }
}

/// The virtual size, resident size and data pages of a `statm` line
/// (`size resident shared text lib data dt`).
/// Parsed in place, without allocating: a sampler's snapshot reads it in
/// a signal handler.
fn statm_pages(line: &[u8]) -> Option<[u64; 3]> {
    let mut fields = line.split(u8::is_ascii_whitespace).filter(|f| !f.is_empty()).map(parse_decimal);
    let size = fields.next()??;
    let resident = fields.next()??;
    let data = fields.nth(3)??;
    Some([size, resident, data])
}

fn parse_decimal(digits: &[u8]) -> Option<u64> {
    digits
        .iter()
        .try_fold(0u64, |n, &d| d.is_ascii_digit().then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statm_line_gives_its_size_resident_and_data_pages() {
        assert_eq!(statm_pages(b"6541 1024 512 200 0 3100 0\n"), Some([6541, 1024, 3100]));
        assert_eq!(statm_pages(b"6541 1024\n"), None);
        assert_eq!(statm_pages(b"1 2 3 4 5"), None);
        assert_eq!(statm_pages(b"x y z"), None);
    }
}
