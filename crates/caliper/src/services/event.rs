//! `event`: snapshots when annotated attributes begin, change or end. The
//! channel runs the trigger itself (it is the fast path), so this service
//! makes the channel's [`EventConfig`] rather than a service object.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Settings, Setup, Stage};
use crate::channel::EventConfig;
use crate::log;
use crate::region_filter::{NameFilter, RegionFilter};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "event",
    aliases: &[],
    description: "Take snapshots when annotated attributes begin, change or end",
    stage: Stage::Trigger,
    settings: &[
        SettingSpec {
            key: "trigger",
            kind: SettingKind::StringList,
            default: "",
            description: "Only these attributes trigger snapshots (all that do not skip events if empty)",
        },
        SettingSpec {
            key: "region_level",
            kind: SettingKind::String,
            default: "0",
            description: "Minimum region level (0-7, or \"phase\") that triggers snapshots",
        },
        SettingSpec {
            key: "enable_snapshot_info",
            kind: SettingKind::Bool,
            default: "true",
            description: "Add event.begin#, event.set# and event.end# entries to the snapshots",
        },
        SettingSpec {
            key: "include_regions",
            kind: SettingKind::String,
            default: "",
            description: "Region names that trigger snapshots: names, match(...), startswith(...), regex(...)",
        },
        SettingSpec {
            key: "exclude_regions",
            kind: SettingKind::String,
            default: "",
            description: "Region names that do not trigger snapshots (same forms)",
        },
        SettingSpec {
            key: "include_branches",
            kind: SettingKind::String,
            default: "",
            description: "Take snapshots only inside regions of these names (same forms)",
        },
    ],
    create,
};

fn create(setup: &Setup<'_>) -> Result<Created, NotCreated> {
    let s = &setup.settings;
    Ok(Created::Events(EventConfig {
        snapshot_info: s.bool("enable_snapshot_info"),
        level: region_level(&s.text("region_level")),
        triggers: s.list("trigger", true),
        filter: RegionFilter::from_lists(name_filter(s, "include_regions"), name_filter(s, "exclude_regions")),
        branches: name_filter(s, "include_branches"),
    }))
}

/// `CALI_EVENT_REGION_LEVEL`: a level 0–7 or `phase` (4).
fn region_level(text: &str) -> u32 {
    match text.trim() {
        "phase" => 4,
        v => match v.parse::<u32>() {
            Ok(l) if l <= 7 => l,
            _ => {
                log::error(format_args!("Invalid region level \"{text}\""));
                0
            }
        },
    }
}

/// A region filter setting (logged and ignored if malformed).
fn name_filter(settings: &Settings<'_>, key: &str) -> NameFilter {
    NameFilter::parse(&settings.text(key)).unwrap_or_else(|e| {
        log::error(format_args!("CALI_EVENT_{}: {e}", key.to_uppercase()));
        NameFilter::default()
    })
}
