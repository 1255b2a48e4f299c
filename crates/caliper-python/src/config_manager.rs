//! `pycaliper.config_manager.ConfigManager`: measurement configs from a
//! config string (`runtime-report,calc.inclusive`), through libcaliper's
//! C ConfigManager.
//!
//! As in the reference, a bad config string is not an exception: `add`
//! returns False and `error()` / `err_msg()` say why. Arguments of the
//! wrong type, or strings holding a NUL, raise.

use crate::runtime::{Capsule, api};
use crate::text::{from_c, owned};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::ffi::{c_char, c_void};
use std::sync::Mutex;

/// The C manager's handle.
struct Handle(Capsule);

// SAFETY: the C manager may be used from any thread, one call at a time,
// which the mutex around the handle ensures.
unsafe impl Send for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the capsule `cali_ConfigManager_new` filled.
        unsafe { (api().cali_ConfigManager_delete)(&mut self.0) }
    }
}

#[pyclass(module = "pycaliper.config_manager", frozen)]
pub(crate) struct ConfigManager {
    handle: Mutex<Handle>,
}

impl ConfigManager {
    /// Runs `f` on the C handle.
    fn with<R>(&self, f: impl FnOnce(*mut Capsule) -> R) -> R {
        let mut handle = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut handle.0)
    }

    /// Runs `f` on the C handle with the GIL released (for calls that
    /// measure or write, which may take a while).
    fn detached(&self, py: Python<'_>, f: unsafe extern "C" fn(*mut Capsule)) {
        // SAFETY (of `f`): the handle is live and ours for the call.
        py.detach(|| self.with(|cap| unsafe { f(cap) }))
    }
}

#[pymethods]
impl ConfigManager {
    /// `ConfigManager(config_str=None)`: a manager, given a config string
    /// to `add` if one is passed.
    #[new]
    #[pyo3(signature = (config_str = None))]
    fn new(config_str: Option<&str>) -> PyResult<Self> {
        let mut capsule = Capsule { addr: std::ptr::null_mut(), idtor: 0 };
        // SAFETY: a capsule to fill.
        unsafe { (api().cali_ConfigManager_new)(&mut capsule) };
        if capsule.addr.is_null() {
            return Err(PyRuntimeError::new_err("cannot create a ConfigManager"));
        }
        let mgr = ConfigManager { handle: Mutex::new(Handle(capsule)) };
        if let Some(config) = config_str {
            mgr.add(config)?;
        }
        Ok(mgr)
    }

    /// Adds the configs of a config string; False on error (see `err_msg`).
    fn add(&self, config_str: &str) -> PyResult<bool> {
        let config = owned(config_str)?;
        // SAFETY: a live handle and a NUL-terminated string.
        Ok(self.with(|cap| unsafe { (api().cali_ConfigManager_add)(cap, config.as_ptr()) }))
    }

    /// Registers a config spec (JSON).
    fn add_config_spec(&self, spec: &str) -> PyResult<()> {
        self.call_str(spec, api().cali_ConfigManager_add_config_spec)
    }

    /// Registers option specs (a JSON list).
    fn add_option_spec(&self, spec: &str) -> PyResult<()> {
        self.call_str(spec, api().cali_ConfigManager_add_option_spec)
    }

    /// Reads config and option specs from a JSON file.
    fn load(&self, filename: &str) -> PyResult<()> {
        self.call_str(filename, api().cali_ConfigManager_load)
    }

    /// Sets a parameter for every config (arguments in the config string
    /// take precedence).
    fn set_default_parameter(&self, key: &str, value: &str) -> PyResult<()> {
        let (key, value) = (owned(key)?, owned(value)?);
        // SAFETY: a live handle and NUL-terminated strings.
        self.with(|cap| unsafe { (api().cali_ConfigManager_set_default_parameter)(cap, key.as_ptr(), value.as_ptr()) });
        Ok(())
    }

    /// Sets a parameter for one config.
    fn set_default_parameter_for_config(&self, config: &str, key: &str, value: &str) -> PyResult<()> {
        let (config, key, value) = (owned(config)?, owned(key)?, owned(value)?);
        self.with(|cap| {
            // SAFETY: a live handle and NUL-terminated strings.
            unsafe {
                (api().cali_ConfigManager_set_default_parameter_for_config)(
                    cap,
                    config.as_ptr(),
                    key.as_ptr(),
                    value.as_ptr(),
                )
            }
        });
        Ok(())
    }

    /// Whether an error occurred (the first one sticks).
    fn error(&self) -> bool {
        // SAFETY: a live handle.
        self.with(|cap| unsafe { (api().cali_ConfigManager_error)(cap) })
    }

    /// The first error's message ("" if none).
    fn err_msg(&self) -> String {
        // SAFETY: a live handle; the message is copied before the next call.
        self.with(|cap| unsafe { from_c((api().cali_ConfigManager_error_msg)(cap)) })
    }

    /// Checks a config string without side effects: the error message, or
    /// "" if it is fine.
    #[pyo3(signature = (config_str, allow_extra_kv_pairs = false))]
    fn check(&self, config_str: &str, allow_extra_kv_pairs: bool) -> PyResult<String> {
        let config = owned(config_str)?;
        // SAFETY: a live handle and a NUL-terminated string; the message
        // is copied before the next call.
        Ok(self.with(|cap| unsafe {
            from_c((api().cali_ConfigManager_check)(cap, config.as_ptr(), allow_extra_kv_pairs))
        }))
    }

    /// The names of the configs that can run here.
    fn available_config_specs(&self) -> Vec<String> {
        unsafe extern "C" fn push(names: *mut c_void, name: *const c_char) {
            // SAFETY: the vector passed below, and a NUL-terminated name.
            unsafe { (*(names as *mut Vec<String>)).push(from_c(name)) }
        }
        let mut names: Vec<String> = Vec::new();
        // SAFETY: a live handle; `push` gets the vector for the call only.
        self.with(|cap| unsafe {
            (api().cali_ConfigManager_available_config_specs)(cap, Some(push), &mut names as *mut _ as *mut c_void)
        });
        names
    }

    /// A config's documentation: description and options.
    fn get_documentation_for_spec(&self, name: &str) -> PyResult<String> {
        let name = owned(name)?;
        // SAFETY: a live handle and a NUL-terminated name; copied at once.
        Ok(self
            .with(|cap| unsafe { from_c((api().cali_ConfigManager_get_documentation_for_spec)(cap, name.as_ptr())) }))
    }

    /// Starts measuring with every config added.
    fn start(&self, py: Python<'_>) {
        self.detached(py, api().cali_ConfigManager_start)
    }

    /// Stops measuring.
    fn stop(&self, py: Python<'_>) {
        self.detached(py, api().cali_ConfigManager_stop)
    }

    /// Writes every config's output (reports, files).
    fn flush(&self, py: Python<'_>) {
        self.detached(py, api().cali_ConfigManager_flush)
    }
}

impl ConfigManager {
    /// Calls a one-string function of the C manager.
    fn call_str(&self, s: &str, f: unsafe extern "C" fn(*mut Capsule, *const c_char)) -> PyResult<()> {
        let s = owned(s)?;
        // SAFETY: a live handle and a NUL-terminated string.
        self.with(|cap| unsafe { f(cap, s.as_ptr()) });
        Ok(())
    }
}
