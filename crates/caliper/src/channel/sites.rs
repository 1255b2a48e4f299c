//! What the express path remembers per call site of a region begin. A
//! wrapped MPI function begins its region from one site (the function's
//! index), and a message loop calls it again and again under the same
//! parent: the site remembers that begin's node and the aggregation
//! entries of both its snapshots (the begin's, at the parent; the end's, at
//! the region's own node), so that the next begin from the site, and the
//! end that follows, find both without the memo's or the aggregation's
//! lookups. A site is only a place to look: what it remembers is checked
//! against the begin's parent, attribute and value before it is used.
//!
//! Entries are indices into the channel's aggregation, valid while it is
//! not cleared and the process context (the other part of their keys)
//! stays the same: the sites forget them when either changes.

use super::memo::ChildMemo;
use crate::value::ValueKey;
use caliper_data::node::Id;

/// Site numbers past this one are not remembered (the table grows to the
/// largest site seen; the MPI function set has some 400).
const MAX_SITES: usize = 4096;

/// A begin from a site, with the entries of its snapshots.
#[derive(Copy, Clone)]
struct SiteMemo {
    begin: ChildMemo,
    /// Entry index + 1 of the begin's snapshot (at the parent); 0: none.
    parent_entry: u32,
    /// Entry index of the end's snapshot (at the begun node).
    child_entry: u32,
}

/// A thread's remembered begins per site in a channel, and the region the
/// last of them opened.
#[derive(Default)]
pub(crate) struct Sites {
    memos: Vec<SiteMemo>,
    /// The node the last remembered begin pushed and the entry of its
    /// end's snapshot, until that end (node 0: none).
    open: (u32, u32),
    /// The aggregation's generation and the process context's version
    /// the entries belong to.
    valid_for: (u64, u64),
}

/// A begin the sites remember.
pub(super) struct SiteBegin {
    /// The node the begin pushes.
    pub child: Id,
    /// The entry of the begin's snapshot.
    pub entry: usize,
}

impl Sites {
    /// Forgets the entries unless they belong to aggregation generation
    /// and process context version `valid_for`.
    #[inline(always)]
    pub fn keep_if(&mut self, valid_for: (u64, u64)) {
        if self.valid_for != valid_for {
            self.forget(valid_for);
        }
    }

    #[cold]
    fn forget(&mut self, valid_for: (u64, u64)) {
        self.memos.clear();
        self.open = (0, 0);
        self.valid_for = valid_for;
    }

    /// The begin of `attr = value` under `parent` from `site`, if the site
    /// remembers it; the region it opens is then the one [`Sites::end`]
    /// knows.
    #[inline(always)]
    pub fn begin(&mut self, site: usize, parent: Id, attr: Id, value: ValueKey) -> Option<SiteBegin> {
        let memo = self.memos.get(site)?;
        let (child, _) = memo.begin.of(parent, attr, value)?;
        let entry = (memo.parent_entry as usize).checked_sub(1)?;
        self.open = (memo.begin.child, memo.child_entry);
        Some(SiteBegin { child, entry })
    }

    /// Remembers the begin `begin` from `site` (ids in 32 bits), whose
    /// snapshots go to entries `parent_entry` and `child_entry`, and
    /// notes the region it opens.
    pub fn remember(&mut self, site: usize, begin: ChildMemo, parent_entry: Option<usize>, child_entry: usize) {
        let entries = (parent_entry.map_or(Some(0), |e| u32::try_from(e + 1).ok()), u32::try_from(child_entry));
        let (Some(parent_entry), Ok(child_entry)) = entries else { return };
        if site >= MAX_SITES || begin.child == 0 {
            return;
        }
        if self.memos.len() <= site {
            let none = SiteMemo { begin: ChildMemo::NONE, parent_entry: 0, child_entry: 0 };
            self.memos.resize(site + 1, none);
        }
        self.memos[site] = SiteMemo { begin, parent_entry, child_entry };
        self.open = (begin.child, child_entry);
    }

    /// The entry of the end's snapshot if `node`, ending, is the region
    /// the last remembered begin opened.
    #[inline(always)]
    pub fn end(&mut self, node: Id) -> Option<usize> {
        let (open, entry) = std::mem::take(&mut self.open);
        (open != 0 && Id::from(open) == node).then_some(entry as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn begin(parent: u32, child: u32, value: ValueKey) -> ChildMemo {
        ChildMemo { parent, child, child_attr: 7, begin: child, child_value: value }
    }

    #[test]
    fn a_site_knows_its_begin_under_its_parent_only() {
        let mut sites = Sites::default();
        let (send, recv) = (ValueKey::string("MPI_Send"), ValueKey::string("MPI_Recv"));
        assert!(sites.begin(3, 5, 7, send).is_none());
        sites.remember(3, begin(5, 10, send), Some(40), 41);
        let known = sites.begin(3, 5, 7, send).expect("remembered");
        assert_eq!((known.child, known.entry), (10, 40));
        assert_eq!(sites.end(10), Some(41));
        assert_eq!(sites.end(10), None, "ended once");
        // Another parent, attribute or value is another begin.
        assert!(sites.begin(3, 6, 7, send).is_none());
        assert!(sites.begin(3, 5, 8, send).is_none());
        assert!(sites.begin(3, 5, 7, recv).is_none());
        assert!(sites.begin(4, 5, 7, send).is_none(), "another site");
    }

    #[test]
    fn an_end_is_known_for_the_region_last_opened() {
        let mut sites = Sites::default();
        let v = ValueKey::uint(1);
        sites.remember(0, begin(5, 10, v), None, 30);
        sites.remember(1, begin(10, 11, v), Some(30), 31);
        assert_eq!(sites.end(10), None, "not the region opened last");
        assert!(sites.begin(0, 5, 7, v).is_none(), "no entry at the empty stack's node");
        assert!(sites.begin(1, 10, 7, v).is_some());
        assert_eq!(sites.end(11), Some(31));
    }

    #[test]
    fn entries_are_forgotten_with_their_aggregation_or_context() {
        let mut sites = Sites::default();
        let v = ValueKey::uint(1);
        sites.keep_if((1, 1));
        sites.remember(0, begin(5, 10, v), Some(20), 21);
        sites.keep_if((1, 1));
        assert!(sites.begin(0, 5, 7, v).is_some());
        for valid_for in [(2, 1), (2, 2)] {
            sites.remember(0, begin(5, 10, v), Some(20), 21);
            sites.keep_if(valid_for);
            assert!(sites.begin(0, 5, 7, v).is_none(), "{valid_for:?}");
            assert_eq!(sites.end(10), None, "{valid_for:?}");
        }
        sites.remember(usize::MAX, begin(5, 10, v), Some(20), 21);
        assert!(sites.begin(usize::MAX, 5, 7, v).is_none(), "a site past the table");
    }
}
