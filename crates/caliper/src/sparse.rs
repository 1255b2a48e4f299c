//! A table indexed by context-tree node or attribute id that costs memory
//! for the ids a thread uses, not for every id of the process.
//!
//! Ids are global: a thread's first region after a million nodes has an
//! id past a million, and a dense vector per thread (and per channel) would
//! cost memory for every node the other threads made. A page table costs a
//! pointer per [`PAGE`] ids and the pages of ids written. Pages never
//! written point to a shared page of empty entries, so that a lookup is
//! one bounds check and two loads, as few branches as a vector's.

use std::ptr::NonNull;

/// Ids per page.
pub(crate) const PAGE: usize = 64;

/// Entries of type `T` by id, each empty (as in the empty page the table
/// is made with) until written.
pub(crate) struct Sparse<T: 'static> {
    /// Per page of ids: `empty` or one of `owned`.
    pages: Vec<NonNull<[T; PAGE]>>,
    /// The pages written, from `Box::into_raw`.
    owned: Vec<NonNull<[T; PAGE]>>,
    /// Never written through.
    empty: &'static [T; PAGE],
}

// SAFETY: the table owns its pages (the empty one is shared but never
// written), as a `Vec<Box<[T; PAGE]>>` would.
unsafe impl<T: Send + Sync> Send for Sparse<T> {}

impl<T: Copy> Sparse<T> {
    /// A table of the entries of `empty` (all the same).
    pub(crate) const fn new(empty: &'static [T; PAGE]) -> Sparse<T> {
        Sparse { pages: Vec::new(), owned: Vec::new(), empty }
    }

    /// The entry of `id`; `None` past the pages made so far (as if empty).
    #[inline(always)]
    pub(crate) fn get(&self, id: usize) -> Option<&T> {
        let page = self.pages.get(id / PAGE)?;
        // SAFETY: a page pointer points to the empty page or to one of
        // `owned`, which live as long as the table.
        Some(unsafe { &page.as_ref()[id % PAGE] })
    }

    /// The entry of `id`, to write.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: usize) -> &mut T {
        let empty = NonNull::from(self.empty);
        match self.pages.get_mut(id / PAGE) {
            // SAFETY: the page is one of `owned`, borrowed through `&mut self`.
            Some(page) if *page != empty => unsafe { &mut page.as_mut()[id % PAGE] },
            _ => self.new_page(id),
        }
    }

    /// [`Sparse::get_mut`] of an id whose page is not written yet.
    #[cold]
    fn new_page(&mut self, id: usize) -> &mut T {
        let p = id / PAGE;
        let empty = NonNull::from(self.empty);
        if self.pages.len() <= p {
            self.pages.resize(p + 1, empty);
        }
        let mut page = NonNull::from(Box::leak(Box::new(*self.empty)));
        self.owned.push(page);
        self.pages[p] = page;
        // SAFETY: the page was just made, and is borrowed through `&mut self`.
        unsafe { &mut page.as_mut()[id % PAGE] }
    }
}

impl<T: 'static> Sparse<T> {
    /// Every entry back to empty, the memory freed.
    pub(crate) fn clear(&mut self) {
        self.pages.clear();
        for page in self.owned.drain(..) {
            // SAFETY: made by `Box::leak` in `get_mut`, and no longer
            // pointed to by `pages`.
            drop(unsafe { Box::from_raw(page.as_ptr()) });
        }
    }
}

impl<T: 'static> Drop for Sparse<T> {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static ZEROES: [u32; PAGE] = [0; PAGE];

    #[test]
    fn a_far_id_costs_one_page() {
        let mut t = Sparse::new(&ZEROES);
        assert_eq!(t.get(5), None);
        *t.get_mut(1_000_000) = 7;
        assert_eq!(t.get(1_000_000), Some(&7));
        assert_eq!(t.get(1_000_001), Some(&0));
        assert_eq!(t.get(5), Some(&0));
        assert_eq!(t.owned.len(), 1);
        assert_eq!(ZEROES[1_000_000 % PAGE], 0, "the empty page is never written");
        t.clear();
        assert_eq!(t.get(1_000_000), None);
    }
}
