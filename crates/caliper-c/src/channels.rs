//! Runtime configuration, config sets, channels, flushing and
//! initialisation.

use crate::entry::{CALI_INV_ID, cali_id_t, guard, static_cstr, text};
use crate::setup::cali;
use caliper_data::{AttrType, Properties, Variant};
use runtime::channel::Channel;
use runtime::default_config;
use runtime::{Caliper, RuntimeConfig, log};
use std::ffi::{c_char, c_int};
use std::sync::Arc;

/// `CALI_FLUSH_CLEAR_BUFFERS`: drop what was gathered after flushing.
const CALI_FLUSH_CLEAR_BUFFERS: c_int = 1;
/// `CALI_CHANNEL_LEAVE_INACTIVE`: create the channel inactive.
const CALI_CHANNEL_LEAVE_INACTIVE: c_int = 1;
/// `CALI_CHANNEL_ALLOW_READ_ENV`: the channel's config reads `CALI_*`
/// environment variables.
const CALI_CHANNEL_ALLOW_READ_ENV: c_int = 2;

/// Channel `id` (not deleted); an unknown id is logged as an error of
/// `entry`.
pub(crate) fn channel(entry: &str, id: cali_id_t) -> Option<(&'static Caliper, Arc<Channel>)> {
    let c = cali()?;
    let found = usize::try_from(id).ok().and_then(|i| c.all_channels().get(i).cloned()).filter(|ch| !c.is_deleted(ch));
    match found {
        Some(ch) => Some((c, ch)),
        None => {
            log::error(format_args!("{entry}: invalid channel id {id}"));
            None
        }
    }
}

/// Changes the default configuration (before initialisation only).
fn configure(entry: &str, key: *const c_char, value: *const c_char, preset: bool) {
    guard(entry, (), || {
        // SAFETY: the C API passes NUL-terminated strings (NULL is checked).
        let (Some(key), Some(value)) = (unsafe { text(entry, key) }, unsafe { text(entry, value) }) else { return };
        default_config::update(&format!("{entry}(\"{key}\", \"{value}\")"), |cfg| {
            if preset { cfg.preset(&key, &value) } else { cfg.set(&key, &value) }
        });
    })
}

/// A low-priority default for `key` (config files, profiles and the
/// environment override it).
///
/// # Safety
/// `key` and `value` are NULL or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_config_preset(key: *const c_char, value: *const c_char) {
    configure("cali_config_preset", key, value, true)
}

/// Sets `key` with the highest priority.
///
/// # Safety
/// `key` and `value` are NULL or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_config_set(key: *const c_char, value: *const c_char) {
    configure("cali_config_set", key, value, false)
}

/// Allows or forbids the default configuration to read `CALI_*`
/// environment variables.
#[unsafe(no_mangle)]
pub extern "C" fn cali_config_allow_read_env(allow: c_int) {
    guard("cali_config_allow_read_env", (), || {
        default_config::update(&format!("cali_config_allow_read_env({allow})"), |cfg| cfg.allow_read_env(allow != 0));
    })
}

/// `cali_configset_t`: key/value settings for a new channel.
/// Presets are defaults below the environment and config files (the C++
/// `RuntimeConfig::preset`); the C API sets only top-priority pairs.
#[derive(Default)]
pub struct ConfigSet {
    pairs: Vec<(String, String)>,
    presets: Vec<(String, String)>,
}

impl ConfigSet {
    fn set(&mut self, key: String, value: String) {
        self.pairs.retain(|(k, _)| *k != key);
        self.pairs.push((key, value));
    }

    fn preset(&mut self, key: String, value: String) {
        self.presets.retain(|(k, _)| *k != key);
        self.presets.push((key, value));
    }
}

/// A config set from `{key, value}` pairs ended by `{NULL, NULL}`.
///
/// # Safety
/// `keyvallist` is NULL or such a list.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_create_configset(keyvallist: *const [*const c_char; 2]) -> *mut ConfigSet {
    guard("cali_create_configset", std::ptr::null_mut(), || {
        let mut set = ConfigSet::default();
        if !keyvallist.is_null() {
            for i in 0.. {
                // SAFETY: the list is terminated by a NULL key, per the caller.
                let [key, value] = unsafe { *keyvallist.add(i) };
                if key.is_null() {
                    break;
                }
                // SAFETY: non-NULL entries are NUL-terminated strings.
                if let (Some(k), Some(v)) =
                    unsafe { (text("cali_create_configset", key), text("cali_create_configset", value)) }
                {
                    set.set(k.into_owned(), v.into_owned());
                }
            }
        }
        Box::into_raw(Box::new(set))
    })
}

/// # Safety
/// `cfg` is NULL or a config set from [`cali_create_configset`], not yet
/// deleted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_delete_configset(cfg: *mut ConfigSet) {
    if !cfg.is_null() {
        // SAFETY: per the caller.
        drop(unsafe { Box::from_raw(cfg) });
    }
}

/// # Safety
/// `cfg` is NULL or a live config set; `key` and `value` are NULL or
/// NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_configset_set(cfg: *mut ConfigSet, key: *const c_char, value: *const c_char) {
    const ENTRY: &str = "cali_configset_set";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        let (Some(set), Some(k), Some(v)) =
            (unsafe { cfg.as_mut() }, unsafe { text(ENTRY, key) }, unsafe { text(ENTRY, value) })
        else {
            log::error(format_args!("{ENTRY}: NULL argument, call ignored"));
            return;
        };
        set.set(k.into_owned(), v.into_owned());
    })
}

/// A low-priority default in a config set: the environment (when the
/// channel reads it) and config files override it. Under the C++
/// `RuntimeConfig::preset`.
///
/// # Safety
/// As [`cali_configset_set`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_configset_preset(cfg: *mut ConfigSet, key: *const c_char, value: *const c_char) {
    const ENTRY: &str = "cali_configset_preset";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        let (Some(set), Some(k), Some(v)) =
            (unsafe { cfg.as_mut() }, unsafe { text(ENTRY, key) }, unsafe { text(ENTRY, value) })
        else {
            log::error(format_args!("{ENTRY}: NULL argument, call ignored"));
            return;
        };
        set.preset(k.into_owned(), v.into_owned());
    })
}

/// The configuration a channel made from `set` reads: its pairs first,
/// then the environment and config files (if `read_env`), then its presets.
fn runtime_config(set: Option<&ConfigSet>, read_env: bool) -> RuntimeConfig {
    let pairs = set.map(|s| s.pairs.as_slice()).unwrap_or_default();
    let mut config = RuntimeConfig::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())), read_env);
    for (k, v) in set.map(|s| s.presets.as_slice()).unwrap_or_default() {
        config.preset(k, v);
    }
    config
}

/// The value of setting `key` (e.g. `CALI_SERVICES_ENABLE`) in the
/// configuration a channel made from `cfg` (which may be NULL) would read,
/// the environment included if `read_env`; else the default a service
/// declares for it; else empty. Written NUL-terminated to `buf` if it fits
/// in `len` bytes; returns its length. Under the C++ `RuntimeConfig::get`.
///
/// # Safety
/// `cfg` is NULL or live; `key` is NULL or a NUL-terminated string; `buf`
/// is NULL or has `len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_configset_get(
    cfg: *const ConfigSet,
    read_env: c_int,
    key: *const c_char,
    buf: *mut c_char,
    len: usize,
) -> usize {
    const ENTRY: &str = "cali_configset_get";
    guard(ENTRY, 0, || {
        // SAFETY: per the caller.
        let Some(key) = (unsafe { text(ENTRY, key) }) else { return 0 };
        // SAFETY: per the caller.
        let config = runtime_config(unsafe { cfg.as_ref() }, read_env != 0);
        let value = config
            .get(&key)
            .or_else(|| runtime::services::registry::setting_default(&key).map(str::to_string))
            .unwrap_or_default();
        if !buf.is_null() && value.len() < len {
            // SAFETY: `buf` has `len` > value.len() writable bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(value.as_ptr(), buf.cast::<u8>(), value.len());
                *buf.add(value.len()) = 0;
            }
        }
        value.len()
    })
}

/// Creates a channel with the settings of `cfg` (which may be NULL);
/// returns its id. It reads the environment only with
/// `CALI_CHANNEL_ALLOW_READ_ENV` and starts active unless
/// `CALI_CHANNEL_LEAVE_INACTIVE`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `cfg` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_create_channel(name: *const c_char, flags: c_int, cfg: *const ConfigSet) -> cali_id_t {
    const ENTRY: &str = "cali_create_channel";
    guard(ENTRY, CALI_INV_ID, || {
        // SAFETY: per the caller.
        let Some(name) = (unsafe { text(ENTRY, name) }) else { return CALI_INV_ID };
        let Some(c) = cali() else { return CALI_INV_ID };
        // SAFETY: per the caller.
        let config = runtime_config(unsafe { cfg.as_ref() }, flags & CALI_CHANNEL_ALLOW_READ_ENV != 0);
        let channel = c.create_channel(&name, config);
        if flags & CALI_CHANNEL_LEAVE_INACTIVE == 0 {
            c.set_channel_active(&channel, true);
        }
        channel.id() as cali_id_t
    })
}

/// The number of channel ids handed out so far: channels are numbered
/// from 0 in creation order, and deleted ones keep their number. Lets the
/// C++ `Caliper::get_all_channels` list them.
#[unsafe(no_mangle)]
pub extern "C" fn cali_num_channels() -> usize {
    guard("cali_num_channels", 0, || cali().map_or(0, |c| c.all_channels().len()))
}

/// The name of channel `chn` (a string that lives as long as the
/// process), or NULL if there is no such channel or it was deleted. Not
/// an error: the C++ classes ask it to learn whether a channel exists.
#[unsafe(no_mangle)]
pub extern "C" fn cali_channel_name(chn: cali_id_t) -> *const c_char {
    guard("cali_channel_name", std::ptr::null(), || {
        let Some(c) = cali() else { return std::ptr::null() };
        let found = usize::try_from(chn).ok().and_then(|i| c.all_channels().get(i).cloned());
        match found {
            Some(ch) if !c.is_deleted(&ch) => static_cstr(ch.name()).as_ptr(),
            _ => std::ptr::null(),
        }
    })
}

/// Sets the global (run metadata) entry `key=value` on channel `chn`'s own
/// blackboard, as the ConfigManager's controllers do with `opts:*` and
/// `metadata(...)`: it appears in that channel's globals only. Under the
/// C++ `ChannelController` with a metadata map.
///
/// # Safety
/// `key` and `value` are NULL or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_channel_set_metadata(chn: cali_id_t, key: *const c_char, value: *const c_char) {
    const ENTRY: &str = "cali_channel_set_metadata";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        let (Some(key), Some(value)) = (unsafe { text(ENTRY, key) }, unsafe { text(ENTRY, value) }) else { return };
        let Some((c, ch)) = channel(ENTRY, chn) else { return };
        let props = Properties::GLOBAL | Properties::SKIP_EVENTS | Properties::UNALIGNED;
        let attr = c.create_attribute(&key, AttrType::String, props, &[]);
        c.set_channel_global(&ch, attr, &Variant::string(&value));
    })
}

/// Deletes channel `chn`: it stops measuring and writes nothing at exit.
#[unsafe(no_mangle)]
pub extern "C" fn cali_delete_channel(chn: cali_id_t) {
    guard("cali_delete_channel", (), || {
        if let Some((c, ch)) = channel("cali_delete_channel", chn) {
            c.delete_channel(&ch);
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_activate_channel(chn: cali_id_t) {
    guard("cali_activate_channel", (), || {
        if let Some((c, ch)) = channel("cali_activate_channel", chn) {
            c.set_channel_active(&ch, true);
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_deactivate_channel(chn: cali_id_t) {
    guard("cali_deactivate_channel", (), || {
        if let Some((c, ch)) = channel("cali_deactivate_channel", chn) {
            c.set_channel_active(&ch, false);
        }
    })
}

/// 1 if channel `chn` is active, else 0.
#[unsafe(no_mangle)]
pub extern "C" fn cali_channel_is_active(chn: cali_id_t) -> c_int {
    guard("cali_channel_is_active", 0, || {
        channel("cali_channel_is_active", chn).map_or(0, |(_, ch)| c_int::from(ch.is_active()))
    })
}

/// Flushes channel `chn` and writes its outputs; with
/// `CALI_FLUSH_CLEAR_BUFFERS`, drops what it gathered.
#[unsafe(no_mangle)]
pub extern "C" fn cali_channel_flush(chn: cali_id_t, flush_opts: c_int) {
    guard("cali_channel_flush", (), || {
        if let Some((c, ch)) = channel("cali_channel_flush", chn) {
            c.flush_and_write(&ch);
            if flush_opts & CALI_FLUSH_CLEAR_BUFFERS != 0 {
                c.clear(&ch);
            }
        }
    })
}

/// Flushes channel 0 (the `default` channel when `CALI_SERVICES_ENABLE`
/// created it), as the reference does.
#[unsafe(no_mangle)]
pub extern "C" fn cali_flush(flush_opts: c_int) {
    cali_channel_flush(0, flush_opts)
}

/// Initialises the runtime now (it otherwise initialises on first use).
#[unsafe(no_mangle)]
pub extern "C" fn cali_init() {
    guard("cali_init", (), || {
        cali();
    })
}

/// Ends measurement as at program exit: every channel that flushes on
/// exit writes its output now, and later annotations do nothing. Behind
/// the C++ `Caliper::release()`; an extension of the C API.
#[unsafe(no_mangle)]
pub extern "C" fn cali_release() {
    guard("cali_release", (), || {
        // A runtime that never started has nothing to release.
        if let Some(c) = Caliper::is_initialized().then(Caliper::instance).flatten() {
            c.release();
        }
    })
}

/// 1 once the runtime is initialised.
#[unsafe(no_mangle)]
pub extern "C" fn cali_is_initialized() -> c_int {
    guard("cali_is_initialized", 0, || c_int::from(Caliper::is_initialized()))
}
