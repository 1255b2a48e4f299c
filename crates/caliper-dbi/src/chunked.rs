//! A list that grows by chunks and never moves what it holds.
//!
//! The tool's table of functions takes a record for every function of every
//! module a program loads: a compiler adds 45,000 at once, and its
//! assembler's libraries more after. A `Vec` grown past its capacity copies
//! all of them into fresh memory (the copy of a compiler's records, seven
//! megabytes, was 1,700 page faults of the tool's 8,000 in a `gcc -c`);
//! chunks of fixed size are each allocated once and filled in place. The
//! table of call arcs keeps its records so too.

use std::ops::{Index, IndexMut};

/// Items per chunk: a chunk of records of 80 bytes is 320 KiB.
const CHUNK: usize = 4096;

/// A list indexed from 0 whose items stay where they were put.
#[derive(Debug, Clone)]
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { chunks: Vec::new(), len: 0 }
    }
}

impl<T> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `item`, its index `len()` before.
    pub fn push(&mut self, item: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(item),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(item);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    pub fn get(&self, index: usize) -> Option<&T> {
        self.chunks.get(index / CHUNK)?.get(index % CHUNK)
    }

    pub fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.chunks.get_mut(index / CHUNK)?.get_mut(index % CHUNK)
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }

    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut T> + '_ {
        self.chunks.iter_mut().flatten()
    }
}

impl<T> Index<usize> for Chunked<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        let len = self.len;
        self.get(index).unwrap_or_else(|| panic!("index {index} out of a list of {len}"))
    }
}

impl<T> IndexMut<usize> for Chunked<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        let len = self.len;
        self.get_mut(index).unwrap_or_else(|| panic!("index {index} out of a list of {len}"))
    }
}

impl<'a, T> IntoIterator for &'a Chunked<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

impl<'a, T> IntoIterator for &'a mut Chunked<T> {
    type Item = &'a mut T;
    type IntoIter = std::iter::Flatten<std::slice::IterMut<'a, Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter_mut().flatten()
    }
}

impl<T> IntoIterator for Chunked<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

impl<T> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut list = Chunked::default();
        for item in items {
            list.push(item);
        }
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_keep_their_index_and_place_across_chunks() {
        let mut list = Chunked::default();
        for i in 0..CHUNK + 10 {
            list.push(i);
        }
        let first = &list[0] as *const usize;
        for i in 0..3 * CHUNK {
            list.push(CHUNK + 10 + i);
        }
        assert_eq!(first, &list[0] as *const usize, "the first item did not move");
        assert_eq!(list.len(), 4 * CHUNK + 10);
        assert!((0..list.len()).all(|i| list[i] == i));
        assert!(list.iter().copied().eq(0..list.len()));
        assert_eq!(list.get(list.len()), None);
        list[CHUNK] = 7;
        assert_eq!(list.get(CHUNK), Some(&7));
        assert_eq!(list.iter().next_back(), Some(&(4 * CHUNK + 9)));
        assert!(list.into_iter().eq((0..4 * CHUNK + 10).map(|i| if i == CHUNK { 7 } else { i })));
    }

    #[test]
    fn an_empty_list_has_nothing() {
        let list: Chunked<u8> = Chunked::default();
        assert!(list.is_empty());
        assert_eq!(list.get(0), None);
        assert_eq!(list.iter().count(), 0);
    }

    #[test]
    #[should_panic(expected = "index 3 out of a list of 2")]
    fn an_index_past_the_end_panics_with_the_length() {
        let list: Chunked<u8> = [1, 2].into_iter().collect();
        let _ = list[3];
    }
}
