//! Values on the hot path: [`ValueKey`], a copyable stand-in for a
//! [`Variant`] whose strings are interned, so that begin/end never touch a
//! shared reference count.

use crate::id_index::{IdIndex, fold};
use crate::{log, sync};
use caliper_data::hash::FxHasher;
use caliper_data::{AttrType, Text, Variant};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

/// A value as the blackboard keeps it: the type and 64 bits of payload;
/// strings and blobs are interned and the payload is their symbol.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueKey {
    ty: AttrType,
    bits: u64,
}

impl ValueKey {
    /// No value (type `inv`): a placeholder in fixed-size tables.
    pub const EMPTY: ValueKey = ValueKey { ty: AttrType::Inv, bits: 0 };

    /// The key of a string value (interned on first use).
    pub fn string(s: &str) -> ValueKey {
        ValueKey { ty: AttrType::String, bits: u64::from(interner().intern_str(s)) }
    }

    /// The key of an already interned string.
    pub fn from_symbol(sym: Symbol) -> ValueKey {
        ValueKey { ty: AttrType::String, bits: u64::from(sym.0) }
    }

    /// The key of any value.
    pub fn from_variant(v: &Variant) -> ValueKey {
        let (ty, bits) = match *v {
            Variant::Empty => (AttrType::Inv, 0),
            Variant::Int(i) => (AttrType::Int, i as u64),
            Variant::Uint(u) => (AttrType::Uint, u),
            Variant::Addr(a) => (AttrType::Addr, a),
            Variant::Ptr(p) => (AttrType::Ptr, p),
            Variant::Double(d) => (AttrType::Double, d.to_bits()),
            Variant::Bool(b) => (AttrType::Bool, u64::from(b)),
            Variant::Type(t) => (AttrType::Type, u64::from(t as u8)),
            Variant::Str(ref s) => (AttrType::String, u64::from(interner().intern(Variant::Str(s.clone())))),
            Variant::Usr(ref b) => (AttrType::Usr, u64::from(interner().intern(Variant::Usr(b.clone())))),
        };
        ValueKey { ty, bits }
    }

    /// An integer value.
    pub fn int(i: i64) -> ValueKey {
        ValueKey { ty: AttrType::Int, bits: i as u64 }
    }

    /// A floating-point value.
    pub fn double(d: f64) -> ValueKey {
        ValueKey { ty: AttrType::Double, bits: d.to_bits() }
    }

    /// An unsigned integer value.
    #[inline]
    pub const fn uint(u: u64) -> ValueKey {
        ValueKey { ty: AttrType::Uint, bits: u }
    }

    /// The value, if it is an unsigned integer.
    #[inline]
    pub fn as_uint(self) -> Option<u64> {
        (self.ty == AttrType::Uint).then_some(self.bits)
    }

    /// The value as a memory address, if it is one (an address, a
    /// pointer, or an unsigned integer).
    #[inline]
    pub fn as_address(self) -> Option<u64> {
        matches!(self.ty, AttrType::Addr | AttrType::Ptr | AttrType::Uint).then_some(self.bits)
    }

    /// The payload: the value's bits, or the symbol of an interned string
    /// or blob (for compact encodings).
    #[inline]
    pub(crate) fn bits(self) -> u64 {
        self.bits
    }

    /// The key of a type and payload read back from a compact encoding (an
    /// unknown symbol reads as an empty value).
    #[inline]
    pub(crate) fn from_bits(ty: AttrType, bits: u64) -> ValueKey {
        ValueKey { ty, bits }
    }

    /// The payload mixed with the type, for cheap hashing.
    #[inline]
    pub fn hash_bits(self) -> u64 {
        self.bits ^ (u64::from(self.ty as u8) << 56)
    }

    /// The value's type.
    #[inline]
    pub fn attr_type(self) -> AttrType {
        self.ty
    }

    /// The value as a [`Variant`].
    pub fn to_variant(self) -> Variant {
        match self.ty {
            AttrType::Inv => Variant::Empty,
            AttrType::Int => Variant::Int(self.bits as i64),
            AttrType::Uint => Variant::Uint(self.bits),
            AttrType::Addr => Variant::Addr(self.bits),
            AttrType::Ptr => Variant::Ptr(self.bits),
            AttrType::Double => Variant::Double(f64::from_bits(self.bits)),
            AttrType::Bool => Variant::Bool(self.bits != 0),
            AttrType::Type => AttrType::from_code(self.bits as u8).map_or(Variant::Empty, Variant::Type),
            AttrType::String | AttrType::Usr => interner().get(self.bits as u32),
        }
    }
}

/// An interned string, cheap to copy and compare.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Symbol(u32);

impl Symbol {
    /// Interns `s`.
    pub fn new(s: &str) -> Symbol {
        Symbol(interner().intern_str(s))
    }

    /// The string.
    pub fn text(self) -> Text {
        match interner().get(self.0) {
            Variant::Str(t) => t,
            _ => Text::new(""),
        }
    }
}

/// An interned string or blob with its symbol, as the table keeps it:
/// never moved or freed, so that a cache of names (the C ABI's) can point
/// to it instead of keeping copies.
pub struct Interned {
    value: Variant,
    sym: u32,
}

impl Interned {
    /// The interned string `s`; none if the table is full.
    pub fn of(s: &str) -> Option<&'static Interned> {
        let table = interner();
        table.entry(table.intern_str(s))
    }

    /// The bytes of the string or blob.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match &self.value {
            Variant::Str(t) => t.as_str().as_bytes(),
            Variant::Usr(b) => b.as_bytes(),
            _ => &[],
        }
    }

    /// The value's key.
    #[inline]
    pub fn key(&self) -> ValueKey {
        let ty = if let Variant::Usr(_) = self.value { AttrType::Usr } else { AttrType::String };
        ValueKey { ty, bits: u64::from(self.sym) }
    }
}

const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;
const MAX_CHUNKS: usize = 1 << 14;

/// Interned strings and blobs: appended under a lock, read without one
/// (chunks are never moved or freed, as in the context tree). The index
/// keeps symbols, not a second copy of each value (see [`IdIndex`]).
struct Interner {
    chunks: Box<[AtomicPtr<Interned>]>,
    len: AtomicU32,
    index: Mutex<IdIndex>,
    /// Whether a value was refused for want of room (said once).
    full: AtomicBool,
}

/// The symbol of every value refused by a full table: past any symbol in
/// use, so it reads as an empty value.
const FULL: u32 = u32::MAX;

/// Whether another thread is interning a string (see
/// [`crate::sync::is_held`]).
pub(crate) fn interner_is_locked() -> bool {
    crate::sync::is_held(&interner().index)
}

/// The number of interned strings and blobs (for the statistics logged
/// at verbosity 2).
pub(crate) fn interned_count() -> u32 {
    interner().len.load(Ordering::Relaxed)
}

fn interner() -> &'static Interner {
    static INTERNER: OnceLock<Interner> = OnceLock::new();
    INTERNER.get_or_init(|| Interner::with_chunks(MAX_CHUNKS))
}

impl Interner {
    /// A table with room for `chunks` chunks (tests fill a small one).
    fn with_chunks(chunks: usize) -> Interner {
        Interner {
            chunks: (0..chunks).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            len: AtomicU32::new(0),
            index: Mutex::new(IdIndex::default()),
            full: AtomicBool::new(false),
        }
    }

    fn intern_str(&self, s: &str) -> u32 {
        self.intern(Variant::string(s))
    }

    fn intern(&self, value: Variant) -> u32 {
        let mut hasher = FxHasher::default();
        value.hash(&mut hasher);
        let hash = fold(hasher.finish());
        let mut index = sync::lock(&self.index);
        if let Some(sym) = index.find(hash, |sym| self.entry(sym).is_some_and(|e| e.value == value)) {
            return sym;
        }
        let sym = self.len.load(Ordering::Relaxed);
        let chunk_no = (sym >> CHUNK_BITS) as usize;
        let Some(slot) = self.chunks.get(chunk_no) else {
            // Full: the value is not kept; its symbol reads as an empty
            // value, and the host goes on.
            if !self.full.swap(true, Ordering::Relaxed) {
                log::error(format_args!("String table full ({sym} strings): new strings read as empty"));
            }
            return FULL;
        };
        let mut chunk = slot.load(Ordering::Relaxed);
        if chunk.is_null() {
            let storage: Box<[Interned]> = (0..CHUNK).map(|_| Interned { value: Variant::Empty, sym: 0 }).collect();
            chunk = Box::leak(storage).as_mut_ptr();
            slot.store(chunk, Ordering::Release);
        }
        // SAFETY: the slot is past `len`: no reader looks at it yet, and the
        // index lock keeps other writers out.
        unsafe { *chunk.add(sym as usize & (CHUNK - 1)) = Interned { value, sym } };
        self.len.store(sym + 1, Ordering::Release);
        index.insert(hash, sym);
        sym
    }

    fn get(&self, sym: u32) -> Variant {
        self.entry(sym).map(|e| e.value.clone()).unwrap_or_default()
    }

    /// The value of a symbol, borrowed: written once before the symbol was
    /// published, never changed or freed after.
    fn entry(&self, sym: u32) -> Option<&Interned> {
        if sym >= self.len.load(Ordering::Acquire) {
            return None;
        }
        // In range: `len` never passes the chunks' capacity.
        let chunk = self.chunks[(sym >> CHUNK_BITS) as usize].load(Ordering::Acquire);
        // SAFETY: published before `len` was advanced; never written again
        // nor freed while the table lives.
        Some(unsafe { &*chunk.add(sym as usize & (CHUNK - 1)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        for v in [
            Variant::Int(-5),
            Variant::Uint(7),
            Variant::Double(0.25),
            Variant::Bool(true),
            Variant::string("région"),
            Variant::Type(AttrType::Double),
            Variant::Addr(0xff),
            Variant::Empty,
        ] {
            assert_eq!(ValueKey::from_variant(&v).to_variant(), v);
        }
        assert_eq!(ValueKey::string("main"), ValueKey::string("main"));
        assert_ne!(ValueKey::string("main"), ValueKey::string("foo"));
        assert_eq!(Symbol::new("x").text(), "x");
    }

    #[test]
    fn a_full_table_reads_new_strings_as_empty() {
        let table = Interner::with_chunks(1);
        for i in 0..CHUNK {
            assert_eq!(table.intern_str(&i.to_string()), i as u32);
        }
        let refused = table.intern_str("one too many");
        assert_eq!(table.get(refused), Variant::Empty);
        assert_eq!(table.get(5), Variant::string("5"), "earlier strings stay");
    }
}
