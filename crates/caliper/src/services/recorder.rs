//! `recorder`: writes the flushed records to a `.cali` file
//! (`CALI_RECORDER_FILENAME`, with `%attr%` fields; an automatic name if
//! unset; `stdout`/`stderr`; in `CALI_RECORDER_DIRECTORY` if set).

use super::output;
use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::log;
use crate::service::Service;
use crate::service::{ChannelView, Runtime};
use caliper_data::cali::CaliWriter;
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "recorder",
    aliases: &[],
    description: "Write flushed records to a .cali file",
    stage: Stage::Output,
    settings: &[
        SettingSpec {
            key: "filename",
            kind: SettingKind::String,
            default: "",
            description: "File name (stdout, stderr, or a name with %attr% fields); automatic if unset",
        },
        SettingSpec { key: "directory", kind: SettingKind::String, default: "", description: "Directory for the file" },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(Recorder::new(setup)))) },
};

pub struct Recorder {
    filename: Option<String>,
    directory: Option<String>,
}

impl Recorder {
    pub fn new(setup: &Setup<'_>) -> Recorder {
        Recorder {
            filename: setup.settings.get("filename").filter(|f| !f.is_empty()),
            directory: setup.settings.get("directory").filter(|d| !d.is_empty()),
        }
    }
}

impl Service for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn writes_output(&self) -> bool {
        true
    }

    fn write_output(&self, cali: &dyn Runtime, channel: &dyn ChannelView) {
        let mut name = match &self.filename {
            Some(pattern) => output::substitute(cali, pattern),
            None => output::auto_name(),
        };
        if let Some(dir) = &self.directory
            && name != "stdout"
            && name != "stderr"
        {
            name = format!("{dir}/{name}");
        }
        let Some(out) = output::open(&name, false) else { return };
        let mut writer = CaliWriter::new(out);
        let mut failed = None;
        channel.records(&mut |record| {
            if failed.is_none()
                && let Err(e) = writer.write_record(cali.tree(), record)
            {
                failed = Some(e);
            }
        });
        let result = match failed {
            Some(e) => Err(e),
            None => writer.write_record(cali.tree(), &channel.globals()).map(|()| writer.lines_written()),
        };
        let lines = writer.lines_written();
        match result.and_then(|_| writer.finish().and_then(|mut w| w.flush())) {
            Ok(()) => log::info(format_args!("{}: Recorder: Wrote {lines} records.", channel.name())),
            Err(e) => log::error(format_args!("{}: Recorder: could not write {name}: {e}", channel.name())),
        }
    }
}
