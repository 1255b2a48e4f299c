//! Values made once per shared name, found by the name's place in memory.
//!
//! The tool's names are `Arc<str>`s that its records share (a function's
//! name, a caller's, a module's path): hashing a name's address instead of
//! its text, and keeping the last one asked for at hand (the records of one
//! caller or module come in runs), took a fifth off writing a compiler's
//! 36,000 call arcs and a third off naming their sites. Two names of the
//! same text at two places are two keys: a caller that needs one value per
//! text looks the text up on a miss.

use caliper_data::hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::convert::Infallible;
use std::sync::Arc;

/// Values by the place in memory of a name.
#[derive(Debug, Clone)]
pub struct ByPlace<V> {
    made: FxHashMap<usize, V>,
    last: Option<(usize, V)>,
}

impl<V> Default for ByPlace<V> {
    fn default() -> Self {
        ByPlace { made: FxHashMap::default(), last: None }
    }
}

impl<V: Copy> ByPlace<V> {
    /// The value of `name`, made by `make` the first time.
    pub fn get_or_make(&mut self, name: &Arc<str>, make: impl FnOnce() -> V) -> V {
        match self.get_or_try_make(name, || Ok::<V, Infallible>(make())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// The value of `name`, made by `make` the first time; `make`'s error,
    /// with nothing kept, where it fails.
    pub fn get_or_try_make<E>(&mut self, name: &Arc<str>, make: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let at = Arc::as_ptr(name).cast::<u8>() as usize;
        if let Some((last, value)) = self.last
            && last == at
        {
            return Ok(value);
        }
        let value = match self.made.entry(at) {
            Entry::Occupied(made) => *made.get(),
            Entry::Vacant(vacant) => *vacant.insert(make()?),
        };
        self.last = Some((at, value));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_made_once_at_each_place() {
        let (a, b) = (Arc::<str>::from("f"), Arc::<str>::from("f"));
        let mut values = ByPlace::default();
        let mut made = 0;
        let mut value = |name: &Arc<str>| {
            values.get_or_make(name, || {
                made += 1;
                made
            })
        };
        assert_eq!([value(&a), value(&a), value(&b), value(&a), value(&b.clone())], [1, 1, 2, 1, 2]);
    }

    #[test]
    fn a_failed_make_keeps_nothing() {
        let name = Arc::<str>::from("g");
        let mut values = ByPlace::default();
        assert_eq!(values.get_or_try_make(&name, || Err("no")), Err("no"));
        assert_eq!(values.get_or_try_make(&name, || Ok::<_, &str>(7)), Ok(7));
        assert_eq!(values.get_or_try_make(&name, || Err("not asked")), Ok(7));
    }
}
