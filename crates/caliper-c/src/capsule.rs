//! Shroud capsules for the wrapper classes of `typesCaliper.h`
//! (`cali_Annotation`, `cali_ScopeAnnotation`,
//! `cali_BufferedRegionProfile`): `{ void* addr; int idtor; }` structs the
//! caller owns (a C local, a Fortran derived type), filled by a `_new`
//! function and emptied by `_delete`.
//!
//! `idtor` says which class a capsule holds (in the reference, the index
//! of its destructor), so a capsule of one class passed to a function of
//! another is refused with a message instead of being misread. An empty
//! capsule (never filled, zeroed, or already deleted) is refused the same
//! way.
//!
//! A capsule with an address and `idtor` 0 borrows an object it does not
//! own: the Fortran types' `set_instance` fills one so (as Shroud's does),
//! to make a second handle on an object. Its class is taken at its word,
//! as the reference does; deleting through it forgets the object and
//! leaves it to its owner, so that deleting both handles frees it once.

use runtime::log;
use std::ffi::{c_int, c_void};

/// A capsule: the layout every `s_cali_<Class>` struct shares.
#[repr(C)]
pub struct Capsule {
    addr: *mut c_void,
    idtor: c_int,
}

/// A class held in capsules: its name (for messages) and its `idtor`.
pub(crate) trait Class: Sized {
    const NAME: &'static str;
    /// Distinct per class, and not 0 (empty or borrowed) nor 1 (the strings
    /// `cali_SHROUD_memory_destructor` releases).
    const IDTOR: c_int;
}

/// The `idtor` of a capsule that borrows its object.
const BORROWED: c_int = 0;

/// Moves `value` into the capsule `rv` and returns `rv`; a NULL `rv` is
/// logged and `value` dropped.
///
/// # Safety
/// `rv` is NULL or points to a capsule (its old content is overwritten,
/// not released: the caller passes a fresh one).
pub(crate) unsafe fn fill<T: Class>(entry: &str, rv: *mut Capsule, value: T) -> *mut Capsule {
    // SAFETY: per the caller.
    match unsafe { rv.as_mut() } {
        Some(cap) => {
            cap.addr = Box::into_raw(Box::new(value)) as *mut c_void;
            cap.idtor = T::IDTOR;
        }
        None => log::error(format_args!("{entry}: NULL capsule, call ignored")),
    }
    rv
}

/// The object in capsule `cap`; NULL, empty or another class's capsules
/// are logged as an error of `entry`.
///
/// # Safety
/// `cap` is NULL or points to a capsule that is zeroed or was filled by
/// [`fill`]; the object is not used through another reference meanwhile.
pub(crate) unsafe fn get<'a, T: Class>(entry: &str, cap: *mut Capsule) -> Option<&'a mut T> {
    // SAFETY: per the caller.
    let cap = unsafe { cap.as_ref() }.filter(|c| !c.addr.is_null());
    match cap {
        // SAFETY: filled by `fill::<T>` (the tag says so), not yet released,
        // or borrowed from such a capsule (see the module's doc).
        Some(c) if c.idtor == T::IDTOR || c.idtor == BORROWED => Some(unsafe { &mut *(c.addr as *mut T) }),
        Some(_) => {
            log::error(format_args!("{entry}: not a {} capsule, call ignored", T::NAME));
            None
        }
        None => {
            log::error(format_args!("{entry}: no {} (NULL or deleted), call ignored", T::NAME));
            None
        }
    }
}

/// Takes the object out of capsule `cap`, leaving it empty; `None` (and
/// logged) as for [`get`], and `None` (silently) for a borrowed object,
/// which stays with its owner.
///
/// # Safety
/// As [`get`].
pub(crate) unsafe fn take<T: Class>(entry: &str, cap: *mut Capsule) -> Option<T> {
    // SAFETY: per the caller.
    let object = unsafe { get::<T>(entry, cap) }? as *mut T;
    // SAFETY: `get` found a filled capsule, so `cap` is valid.
    let cap = unsafe { &mut *cap };
    let owned = cap.idtor == T::IDTOR;
    cap.addr = std::ptr::null_mut();
    cap.idtor = 0;
    // SAFETY: the pointer came from Box::into_raw in `fill`, and the
    // capsule (the only owner) no longer holds it.
    owned.then(|| *unsafe { Box::from_raw(object) })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct A(u32);
    impl Class for A {
        const NAME: &'static str = "A";
        const IDTOR: c_int = 10;
    }
    struct B;
    impl Class for B {
        const NAME: &'static str = "B";
        const IDTOR: c_int = 11;
    }

    #[test]
    fn a_capsule_holds_its_class_until_taken() {
        let mut cap = Capsule { addr: std::ptr::null_mut(), idtor: 0 };
        let p = &mut cap as *mut Capsule;
        assert!(unsafe { get::<A>("t", p) }.is_none(), "empty");
        assert_eq!(unsafe { fill("t", p, A(7)) }, p);
        assert_eq!(unsafe { get::<A>("t", p) }.map(|a| a.0), Some(7));
        assert!(unsafe { get::<B>("t", p) }.is_none(), "another class");
        assert_eq!(unsafe { take::<A>("t", p) }.map(|a| a.0), Some(7));
        assert!(cap.addr.is_null() && cap.idtor == 0);
        assert!(unsafe { take::<A>("t", p) }.is_none(), "taken twice");

        // A second handle borrows the object: it reads it, and taking
        // through it empties the handle only.
        unsafe { fill("t", p, A(8)) };
        let mut borrowed = Capsule { addr: cap.addr, idtor: 0 };
        let b = &mut borrowed as *mut Capsule;
        assert_eq!(unsafe { get::<A>("t", b) }.map(|a| a.0), Some(8));
        assert!(unsafe { take::<A>("t", b) }.is_none() && borrowed.addr.is_null());
        assert_eq!(unsafe { take::<A>("t", p) }.map(|a| a.0), Some(8));
        assert!(unsafe { get::<A>("t", std::ptr::null_mut()) }.is_none());
        assert!(unsafe { fill("t", std::ptr::null_mut(), A(1)) }.is_null());
    }
}
