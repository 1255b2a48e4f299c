//! `cali-run --script FILE.py [--] ARGS...`: runs a Python script that
//! drives the engine through the `caliper.dbi` package, with `ARGS` as its
//! `sys.argv[1:]` (the program to measure and its arguments).
//!
//! The package is built into `cali-run` and unpacked for each run into a
//! temporary directory put first on `PYTHONPATH`, and `CALI_DBI_LIBRARY`
//! names the `libcaliper-dbi.so` installed beside `cali-run`: a script
//! always gets the package and the engine of the `cali-run` that runs it,
//! with nothing to install.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The `caliper` package's files, by path under the package root.
const PACKAGE: &[(&str, &str)] = &[
    ("caliper/__init__.py", include_str!("../python/caliper/__init__.py")),
    ("caliper/dbi/__init__.py", include_str!("../python/caliper/dbi/__init__.py")),
    ("caliper/dbi/_lib.py", include_str!("../python/caliper/dbi/_lib.py")),
    ("caliper/dbi/collectors.py", include_str!("../python/caliper/dbi/collectors.py")),
    ("caliper/dbi/process.py", include_str!("../python/caliper/dbi/process.py")),
    ("caliper/dbi/results.py", include_str!("../python/caliper/dbi/results.py")),
];

/// The library's names beside `cali-run`: as cargo builds it, and as
/// `make install` installs it (in `lib/` beside `bin/`).
const LIBRARY_PLACES: &[&str] = &["libcaliper_dbi.so", "libcaliper-dbi.so", "../lib/libcaliper-dbi.so"];

/// A script run.
#[derive(Debug, PartialEq, Eq)]
pub struct Script {
    pub file: PathBuf,
    /// The script's arguments.
    pub args: Vec<OsString>,
}

/// Why a script could not be run.
#[derive(Debug)]
pub enum ScriptError {
    /// The script file is not readable.
    Unreadable(PathBuf, std::io::Error),
    /// No libcaliper-dbi.so beside cali-run, nor `CALI_DBI_LIBRARY`.
    NoLibrary(PathBuf),
    /// The package could not be unpacked.
    Package(std::io::Error),
    /// The interpreter could not be started.
    Python(String, std::io::Error),
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScriptError::Unreadable(file, e) => write!(f, "cannot read the script {}: {e}", file.display()),
            ScriptError::NoLibrary(dir) => write!(
                f,
                "libcaliper-dbi.so is not beside cali-run in {} (set CALI_DBI_LIBRARY to its path)",
                dir.display()
            ),
            ScriptError::Package(e) => write!(f, "cannot unpack the caliper package: {e}"),
            ScriptError::Python(python, e) => write!(f, "cannot run {python} (set CALI_RUN_PYTHON): {e}"),
        }
    }
}

impl std::error::Error for ScriptError {}

/// Runs the script with `python3` (or `$CALI_RUN_PYTHON`) to its end;
/// SIGINT and SIGQUIT are the script's meanwhile (`cali-run` ignores them).
pub fn run(script: &Script) -> Result<ExitStatus, ScriptError> {
    std::fs::File::open(&script.file).map_err(|e| ScriptError::Unreadable(script.file.clone(), e))?;
    let library = match std::env::var_os("CALI_DBI_LIBRARY") {
        Some(library) => PathBuf::from(library),
        None => library_beside_tool()?,
    };
    let package = tempfile::Builder::new().prefix("cali-run-script").tempdir().map_err(ScriptError::Package)?;
    unpack(package.path()).map_err(ScriptError::Package)?;
    let mut python_path = OsString::from(package.path());
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        python_path.push(":");
        python_path.push(old);
    }
    let python = std::env::var("CALI_RUN_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut command = Command::new(&python);
    command.arg(&script.file).args(&script.args).env("PYTHONPATH", python_path).env("CALI_DBI_LIBRARY", library);
    let mut child = command.spawn().map_err(|e| ScriptError::Python(python.clone(), e))?;
    // SAFETY: ignoring a signal has no preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    child.wait().map_err(|e| ScriptError::Python(python, e))
}

fn library_beside_tool() -> Result<PathBuf, ScriptError> {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().unwrap_or(Path::new(".")).to_path_buf();
    LIBRARY_PLACES.iter().map(|name| dir.join(name)).find(|p| p.is_file()).ok_or(ScriptError::NoLibrary(dir))
}

/// Writes the package's files under `root`.
fn unpack(root: &Path) -> std::io::Result<()> {
    for (path, text) in PACKAGE {
        let file = root.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(file, text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_package_is_the_whole_package() {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
        let mut on_disk = Vec::new();
        for dir in ["caliper", "caliper/dbi"] {
            for entry in std::fs::read_dir(source.join(dir)).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                if name.ends_with(".py") {
                    on_disk.push(format!("{dir}/{name}"));
                }
            }
        }
        on_disk.sort();
        let mut built_in: Vec<String> = PACKAGE.iter().map(|(p, _)| p.to_string()).collect();
        built_in.sort();
        assert_eq!(built_in, on_disk, "every module of python/caliper is in PACKAGE");
    }
}
