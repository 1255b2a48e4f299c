//! Exports the reference's C++ API from the cdylib: the out-of-line
//! members of `cali::Annotation`, `cali::ConfigManager`, ... that
//! `cxx/*.cpp` defines (see build.rs), which programs built against the
//! reference's headers call by their mangled names.
//!
//! rustc links a cdylib with a version script that makes global only the
//! symbols Rust code exports, written one a line as they are named; in a
//! version script a name with `*` is a glob. Each static below is exported
//! under such a name: its line makes every symbol of the C++ API global,
//! and no other (the sources keep their helpers in anonymous namespaces,
//! and their inline functions hidden). The statics themselves are one
//! byte each, exported under names no C++ program can refer to.

/// The members of namespace `cali` (`_ZN4cali...`).
#[unsafe(export_name = "_ZN4cali*")]
pub static CXX_MEMBERS: u8 = 0;

/// The const member functions (`_ZNK4cali...`).
#[unsafe(export_name = "_ZNK4cali*")]
pub static CXX_CONST_MEMBERS: u8 = 0;
