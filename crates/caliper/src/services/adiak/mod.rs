//! Adiak, LLNL's library of run metadata (`adiak_namevalue`,
//! `adiak_user`, `adiak_launchdate`, ...), in both directions:
//! `adiak_import` turns the program's Adiak values into globals at each
//! flush, `adiak_export` hands the channel's globals to Adiak.
//!
//! Adiak is found in the process at run time ([`api`]), so that
//! `libcaliper` never requires it: a program that links Adiak gets both
//! services, one that does not loses nothing.

mod api;
mod decode;
mod export;
mod import;

pub(super) use export::SPEC as EXPORT_SPEC;
pub(super) use import::SPEC as IMPORT_SPEC;

/// Whether the program has Adiak (its tool interface is loaded): the
/// built-in configs add `adiak_import` then, as the reference's do when
/// built with Adiak.
pub(crate) fn is_loaded() -> bool {
    api::Tool::find().is_some()
}
