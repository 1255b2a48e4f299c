//! Shared, immutable strings and byte blobs behind a thin pointer.
//!
//! A [`crate::Variant`] must stay two words wide so records and context-tree
//! nodes stay compact; `Arc<str>` is a fat pointer and would make it three.
//! These types keep the length next to the bytes in one reference-counted
//! allocation and are a single pointer wide.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use triomphe::ThinArc;

/// Shared immutable bytes, one pointer wide.
#[derive(Clone)]
struct ThinBytes(ThinArc<(), u8>);

impl PartialEq for ThinBytes {
    fn eq(&self, other: &ThinBytes) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl Eq for ThinBytes {}

impl PartialOrd for ThinBytes {
    fn partial_cmp(&self, other: &ThinBytes) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ThinBytes {
    /// Byte-wise, which for UTF-8 text is also code-point order.
    fn cmp(&self, other: &ThinBytes) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl ThinBytes {
    fn new(bytes: &[u8]) -> ThinBytes {
        ThinBytes(ThinArc::from_header_and_slice((), bytes))
    }

    fn as_bytes(&self) -> &[u8] {
        &self.0.slice
    }
}

/// A shared, immutable UTF-8 string (the value of `string` attributes and
/// attribute names). Cloning is a reference-count increment.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Text(ThinBytes);

impl Text {
    /// A new string with a copy of `s`.
    pub fn new(s: &str) -> Text {
        Text(ThinBytes::new(s.as_bytes()))
    }

    /// The string.
    pub fn as_str(&self) -> &str {
        // SAFETY: a `Text` is only ever built from a `&str` (see `new`).
        unsafe { std::str::from_utf8_unchecked(self.0.as_bytes()) }
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::new(&s)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Hashes like `str`, so that maps keyed by `Text` can be searched with a
/// `&str` (see the `Borrow<str>` impl).
impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Shared immutable bytes (the value of `usr` attributes).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Blob(ThinBytes);

impl Blob {
    /// A new blob with a copy of `bytes`.
    pub fn new(bytes: &[u8]) -> Blob {
        Blob(ThinBytes::new(bytes))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<&[u8]> for Blob {
    fn from(b: &[u8]) -> Blob {
        Blob::new(b)
    }
}

impl Hash for Blob {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Blob(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pointer_wide() {
        assert_eq!(std::mem::size_of::<Text>(), std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Blob>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn text_behaves_like_a_string() {
        let a = Text::new("région_ü→µ");
        let b = a.clone();
        assert_eq!(a, b);
        assert_eq!(&*a, "région_ü→µ");
        assert!(Text::new("abc") < Text::new("abd"));
        assert!(Text::new("ab") < Text::new("abc"));
        assert_eq!(Text::new(""), "");
    }

    #[test]
    fn blob_keeps_bytes() {
        let b = Blob::new(&[0, 255, 7]);
        assert_eq!(b.as_bytes(), &[0, 255, 7]);
        assert_eq!(format!("{b:?}"), "Blob(00ff07)");
    }
}
