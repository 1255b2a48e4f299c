//! The process's default configuration as the program shapes it before
//! the runtime starts: `cali_config_preset`, `cali_config_set` and
//! `cali_config_allow_read_env` of the C API. The runtime takes it once,
//! when it initialises; later changes have no effect (and say so).

use crate::config::RuntimeConfig;
use crate::log;
use std::sync::Mutex;

/// The configuration the runtime will start with, until it takes it.
static PENDING: Mutex<Option<RuntimeConfig>> = Mutex::new(None);
/// Set once the runtime has taken the configuration.
static TAKEN: Mutex<bool> = Mutex::new(false);

/// Applies `change` to the default configuration if the runtime has not
/// started yet; otherwise logs that `what` has no effect. Returns whether
/// it applied.
pub fn update(what: &str, change: impl FnOnce(&mut RuntimeConfig)) -> bool {
    let taken = TAKEN.lock().unwrap_or_else(|e| e.into_inner());
    if *taken {
        log::error(format_args!("Caliper is already initialized. {what} has no effect."));
        return false;
    }
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    change(pending.get_or_insert_with(RuntimeConfig::with_env));
    true
}

/// The default configuration, for the runtime's initialisation: what the
/// program set, or the environment-reading default.
pub(crate) fn take() -> RuntimeConfig {
    let mut taken = TAKEN.lock().unwrap_or_else(|e| e.into_inner());
    *taken = true;
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_else(RuntimeConfig::with_env)
}
