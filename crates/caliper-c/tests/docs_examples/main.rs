//! The examples of the README and of the user guide (`docs/`), run as a
//! reader would run them, so that a changed flag, header or output breaks
//! the build rather than the reader: the programs under `docs/examples`
//! are built against the installed library and run (`programs`), and
//! every command of a ```` ```console ```` block is run and its output
//! compared with the block's (`console`).
//!
//! Both run against one `make install-mpi` and `make install-dbi` prefix
//! (`$PREFIX` in the examples), with the release tools on the PATH.

mod console;
mod programs;

use caliper_testutil::install::{make_install, must, require_tools, target_dir};
use caliper_testutil::workspace_root;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The prefix the library, the MPI wrappers and cali-run are installed
/// into, once for both tests.
fn prefix() -> &'static PathBuf {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        require_tools(&["gcc", "g++", "gfortran", "mpicc", "make"]);
        let prefix = make_install("docs-examples", "install-mpi");
        must(
            Command::new("make")
                .arg("-C")
                .arg(workspace_root())
                .arg("install-dbi")
                .arg(format!("PREFIX={}", prefix.display())),
        );
        prefix
    })
}

/// The Python virtualenv of `scripts/test-all.sh`, which holds pycaliper
/// and the reference's Python clients.
fn venv() -> PathBuf {
    target_dir().join("test-venv")
}
