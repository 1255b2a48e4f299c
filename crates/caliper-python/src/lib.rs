//! `pycaliper._native`: the Python bindings of the Caliper runtime, the
//! native half of the `pycaliper` package (python/pycaliper), a drop-in
//! for the reference's `pycaliper`. The package's submodules
//! (`annotation`, `instrumentation`, `loop`, `config_manager`, `types`,
//! `high_level`) re-export what is defined here.
//!
//! Every call goes to libcaliper's C ABI through the table that `runtime`
//! binds at import, so that a process has one runtime whether the program
//! annotates from Python, from C libraries it loads, or both. Layers:
//! `runtime` (the table) and `text`/`value` (Python strings and values as
//! C's), then one module per Python class or submodule.

use pyo3::exceptions::{PyImportError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

// The C ABI and its runtime, linked in and exported (see `runtime`).
use libcaliper as _;

mod annotation;
mod config_manager;
mod instrumentation;
mod loops;
mod regions;
mod runtime;
mod text;
mod value;

use runtime::api;
use text::{from_c, owned};

/// Initialises Caliper now (it otherwise starts at the first annotation).
#[pyfunction]
fn init(py: Python<'_>) {
    // SAFETY: no arguments; the runtime starts with the GIL released, as
    // its start may flush an earlier configuration or start threads.
    py.detach(|| unsafe { (api().cali_init)() })
}

/// Whether Caliper has been initialised.
#[pyfunction]
fn is_initialized() -> bool {
    // SAFETY: no arguments.
    unsafe { (api().cali_is_initialized)() != 0 }
}

/// Presets configuration values, before Caliper is initialised: either
/// `config_preset(key, value)` or `config_preset({key: value, ...})`. Config
/// files, profiles and `CALI_*` environment variables override them.
#[pyfunction]
#[pyo3(signature = (preset, value = None))]
fn config_preset(preset: &Bound<'_, PyAny>, value: Option<&str>) -> PyResult<()> {
    let preset_one = |key: &str, value: &str| -> PyResult<()> {
        let (key, value) = (owned(key)?, owned(value)?);
        // SAFETY: NUL-terminated strings.
        unsafe { (api().cali_config_preset)(key.as_ptr(), value.as_ptr()) };
        Ok(())
    };
    match (preset.cast::<PyDict>(), preset.cast::<PyString>(), value) {
        (Ok(map), _, None) => {
            for (key, value) in map.iter() {
                preset_one(&key.extract::<String>()?, &value.extract::<String>()?)?;
            }
            Ok(())
        }
        (_, Ok(key), Some(value)) => preset_one(key.to_str()?, value),
        _ => Err(PyTypeError::new_err("config_preset takes a dict of str to str, or a key and a value")),
    }
}

/// The file of the libcaliper whose runtime this process uses: this
/// module's own, or one the process had loaded before importing it.
#[pyfunction]
fn _library_path() -> &'static str {
    runtime::library_path()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    runtime::bind().map_err(|e| PyImportError::new_err(format!("pycaliper: {e}")))?;
    // SAFETY: the version string lives as long as the library.
    m.add("__version__", unsafe { from_c((api().cali_caliper_version)()) })?;
    m.add_function(wrap_pyfunction!(init, m)?)?;
    m.add_function(wrap_pyfunction!(is_initialized, m)?)?;
    m.add_function(wrap_pyfunction!(config_preset, m)?)?;
    m.add_function(wrap_pyfunction!(_library_path, m)?)?;
    regions::add_to(m)?;
    m.add_function(wrap_pyfunction!(instrumentation::begin_byname, m)?)?;
    m.add_function(wrap_pyfunction!(instrumentation::set_byname, m)?)?;
    m.add_function(wrap_pyfunction!(instrumentation::end_byname, m)?)?;
    m.add_function(wrap_pyfunction!(instrumentation::set_global_byname, m)?)?;
    m.add_class::<instrumentation::Attribute>()?;
    m.add_class::<annotation::Annotation>()?;
    m.add_class::<loops::Loop>()?;
    m.add_class::<config_manager::ConfigManager>()?;
    Ok(())
}
