//! The controllers of the built-in configs: how each turns its options
//! into channel settings, queries and output. Configs loaded from spec
//! files get the basic controller.

use super::controller::{ChannelController, Output};
use super::loop_report::LoopReport;
use super::options::{Options, get_setting, set_setting};
use super::spec::{ConfigSpec, QueryLevel};
use super::spot::SpotOutput;

/// The settings every config starts from: the spec's `config`, its
/// services, and no flush at exit (the manager flushes).
fn initial_config(spec: &ConfigSpec) -> Vec<(String, String)> {
    let mut config = spec.config.clone();
    set_setting(&mut config, "CALI_CHANNEL_FLUSH_ON_EXIT", "false");
    add_services(&mut config, &spec.services.iter().map(String::as_str).collect::<Vec<_>>());
    config
}

/// The `output` option as the file name of whichever writing service
/// the config has.
fn output_to_every_writer(options: &Options, config: &mut Vec<(String, String)>) {
    if let Some(output) = options.get("output") {
        for key in ["CALI_RECORDER_FILENAME", "CALI_REPORT_FILENAME", "CALI_MPIREPORT_FILENAME"] {
            set_setting(config, key, output);
        }
    }
}

fn remove_service(config: &mut Vec<(String, String)>, service: &str) {
    let list: Vec<&str> = get_setting(config, "CALI_SERVICES_ENABLE").split(',').filter(|s| *s != service).collect();
    let list = list.join(",");
    set_setting(config, "CALI_SERVICES_ENABLE", &list);
}

fn add_services(config: &mut Vec<(String, String)>, services: &[&str]) {
    let mut list = get_setting(config, "CALI_SERVICES_ENABLE").to_string();
    for service in services {
        if !list.is_empty() {
            list.push(',');
        }
        list.push_str(service);
    }
    set_setting(config, "CALI_SERVICES_ENABLE", &list);
}

/// The controller of a config instance, or the error of a config's own
/// rules on its options (beyond types and services), with the reference's
/// messages.
pub(crate) fn controller(spec: &ConfigSpec, options: &Options) -> Result<ChannelController, String> {
    let mut config = initial_config(spec);
    let output = match spec.name.as_str() {
        "runtime-report" => {
            runtime_report(options, &mut config);
            Output::Channel
        }
        "runtime-profile" => {
            runtime_profile(options, &mut config)?;
            Output::Channel
        }
        "openmp-report" => {
            openmp_report(options, &mut config);
            Output::Channel
        }
        "cuda-activity-report" => {
            cuda_activity_report(options, &mut config);
            Output::Channel
        }
        "cuda-activity-profile" => {
            cuda_activity_profile(options, &mut config)?;
            Output::Channel
        }
        "sample-report" => {
            sample_report(options, &mut config)?;
            Output::Channel
        }
        "sample-profile" => {
            sample_profile(options, &mut config)?;
            Output::Channel
        }
        "spot" => {
            options.update_channel_config(&mut config);
            Output::Own(Box::new(SpotOutput::new(options)?))
        }
        "event-trace" => {
            event_trace(options, &mut config)?;
            Output::Channel
        }
        "loop-report" => {
            if !options.is_set("iteration_interval") && !options.is_set("time_interval") {
                set_setting(&mut config, "CALI_LOOP_MONITOR_TIME_INTERVAL", "0.5");
            }
            options.update_channel_config(&mut config);
            Output::Own(Box::new(LoopReport::new(options)))
        }
        _ => {
            output_to_every_writer(options, &mut config);
            options.update_channel_config(&mut config);
            Output::Channel
        }
    };
    add_adiak_import(spec, options, &mut config);
    Ok(ChannelController::new(&spec.name, config, options.channel_metadata(), output))
}

/// Adds `adiak_import` where the reference's configs do when it is built
/// with Adiak: to the configs of category `adiak` (the profiles, `spot`)
/// and to reports that print their metadata (`print.metadata`), when the
/// program has Adiak. Without Adiak the config stays as it was, silently.
fn add_adiak_import(spec: &ConfigSpec, options: &Options, config: &mut Vec<(String, String)>) {
    let wanted = spec.categories.iter().any(|c| c == "adiak") || options.is_enabled("print.metadata");
    let present = get_setting(config, "CALI_SERVICES_ENABLE").split(',').any(|s| s == "adiak_import");
    if wanted && !present && crate::services::adiak_is_loaded() {
        add_services(config, &["adiak_import"]);
    }
}

/// `event-trace`: the trace as `.cali` through the recorder, or, with
/// `output.format=trace-event` or `perfetto`, converted as it is written
/// (the `report` service running the timeline formatter over the flushed
/// records), to `output` or an automatic name in `outdir`. The timelines
/// tell threads apart by `pthread.id`, which the reference's event trace
/// lacks: there every thread's regions would pair up on thread 0.
fn event_trace(options: &Options, config: &mut Vec<(String, String)>) -> Result<(), String> {
    let (formatter, extension) = match options.get_or("output.format", "cali") {
        "cali" => {
            output_to_every_writer(options, config);
            options.update_channel_config(config);
            return Ok(());
        }
        "trace-event" => ("trace-event", ".json"),
        "perfetto" => ("perfetto", ".perfetto-trace"),
        other => return Err(format!("event-trace: Invalid output format \"{other}\"")),
    };
    options.update_channel_config(config);
    remove_service(config, "recorder");
    // A timeline needs each thread's regions apart: pthread.id is the tid.
    add_services(config, &["pthread", "report"]);
    let name = match options.get("output") {
        Some(name) => with_extension(name, extension),
        None => {
            let auto = crate::services::output::auto_name();
            let stem = auto.strip_suffix(".cali").unwrap_or(&auto).to_string();
            match options.get("outdir") {
                Some(dir) => format!("{dir}/{stem}{extension}"),
                None => format!("{stem}{extension}"),
            }
        }
    };
    set_setting(config, "CALI_REPORT_FILENAME", &name);
    set_setting(config, "CALI_REPORT_CONFIG", &format!("format {formatter}"));
    Ok(())
}

/// The tree format of report configs: `tree(column-width=N,print-globals)`.
pub(crate) fn tree_format(options: &Options) -> String {
    tree_format_with_path(options, None)
}

/// [`tree_format`] with the tree's levels made of `path_attributes`
/// instead of the nested attributes.
fn tree_format_with_path(options: &Options, path_attributes: Option<&str>) -> String {
    let mut args = Vec::new();
    if let Some(names) = path_attributes {
        args.push(format!("path-attributes=\"{names}\""));
    }
    if let Some(width) = options.get("max_column_width") {
        args.push(format!("column-width={width}"));
    }
    if options.is_enabled("print.metadata") {
        args.push("print-globals".to_string());
    }
    format!("tree({})", args.join(","))
}

/// Whether a config reduces its output across MPI ranks: in an MPI
/// program (see [`crate::mpi`]), unless its option `option`
/// (`aggregate_across_ranks`, `use.mpi`) is false.
fn across_ranks(options: &Options, option: &str) -> bool {
    crate::mpi::layer().is_some() && options.get(option) != Some("false")
}

/// Makes `mpireport` the config's output: `local` per rank, `cross` over
/// the ranks, written by rank 0 to `filename` when the config manager
/// flushes.
fn mpireport(config: &mut Vec<(String, String)>, local: &str, cross: &str, filename: &str, append: &str) {
    add_services(config, &["mpi", "mpireport"]);
    set_setting(config, "CALI_MPIREPORT_FILENAME", filename);
    set_setting(config, "CALI_MPIREPORT_APPEND", append);
    set_setting(config, "CALI_MPIREPORT_WRITE_ON_FINALIZE", "false");
    set_setting(config, "CALI_MPIREPORT_LOCAL_CONFIG", local);
    set_setting(config, "CALI_MPIREPORT_CONFIG", cross);
}

/// Where a report config writes (`output`, `output.append`): in an MPI
/// program (unless `aggregate_across_ranks=false`), each rank's `local`
/// query reduced by `cross` on rank 0; else this process's `alone` query.
/// The options' own query parts are added to each.
fn report_output(options: &Options, config: &mut Vec<(String, String)>, local: &str, cross: &str, alone: &str) {
    let (filename, append) = (options.get_or("output", "stderr"), options.get_or("output.append", "false"));
    if across_ranks(options, "aggregate_across_ranks") {
        let (local, cross) =
            (options.build_query(QueryLevel::Local, local), options.build_query(QueryLevel::Cross, cross));
        mpireport(config, &local, &cross, filename, append);
    } else {
        add_services(config, &["report"]);
        set_setting(config, "CALI_REPORT_FILENAME", filename);
        set_setting(config, "CALI_REPORT_APPEND", append);
        set_setting(config, "CALI_REPORT_CONFIG", &options.build_query(QueryLevel::Local, alone));
    }
}

fn runtime_report(options: &Options, config: &mut Vec<(String, String)>) {
    options.update_channel_config(config);
    let format = tree_format(options);
    let local = "let report.t=scale(sum#time.duration.ns,1e-9),report.l=leaf() where report.l group by path \
                 select sum(report.t),inclusive_sum(report.t)";
    let cross = format!(
        "select min(inclusive#report.t) as \"Min time/rank\" unit sec,\
         max(inclusive#report.t) as \"Max time/rank\" unit sec,\
         avg(inclusive#report.t) as \"Avg time/rank\" unit sec,\
         inclusive_percent_total(sum#report.t) as \"Time %\" group by path format {format}"
    );
    let alone = format!(
        "let report.t=scale(sum#time.duration.ns,1e-9),report.l=leaf() where report.l group by path \
         select sum(report.t) as \"Time (E)\",inclusive_sum(report.t) as \"Time (I)\",\
         percent_total(report.t) as \"Time % (E)\",inclusive_percent_total(report.t) as \"Time % (I)\" format {format}"
    );
    report_output(options, config, local, &cross, &alone);
}

/// `openmp-report`: per region (`show_regions`, a tree) or for the whole
/// run (a table), the team size, the initial thread's time and all
/// threads' time; the `openmp.*` options add the work and barrier times.
/// The reference's cross-rank query lacks its `select` keyword: here it
/// has it.
fn openmp_report(options: &Options, config: &mut Vec<(String, String)>) {
    options.update_channel_config(config);
    let format = if options.is_enabled("show_regions") { tree_format(options) } else { "table".to_string() };
    let local = "let sum#time.duration=scale(sum#time.duration.ns,1e-9),n.threads=first(omp.num.threads),\
                 t.initial=first(sum#time.duration) if omp.thread.type=initial \
                 select max(n.threads) as \"#Threads\",inclusive_sum(t.initial) as \"Time (thread)\" unit sec,\
                 inclusive_sum(sum#time.duration) as \"Time (total)\" unit sec";
    let cross = format!(
        "select max(max#n.threads) as \"#Threads\",avg(inclusive#t.initial) as \"Time (thread) (avg)\" unit sec,\
         avg(inclusive#sum#time.duration) as \"Time (total) (avg)\" unit sec format {format}"
    );
    report_output(options, config, local, &cross, &format!("{local} format {format}"));
}

/// `cuda-activity-report`: per region, the host time (CUPTI's clock,
/// between the thread's snapshots) and the GPU time of the device work
/// the region launched, both inclusive, and their ratio.
fn cuda_activity_report(options: &Options, config: &mut Vec<(String, String)>) {
    options.update_channel_config(config);
    let format = tree_format(options);
    let local = "select inclusive_scale(sum#cupti.host.duration,1e-9),inclusive_scale(cupti.activity.duration,1e-9) \
                 group by path";
    let cross = format!(
        "select avg(iscale#sum#cupti.host.duration) as \"Avg Host Time\" unit sec,\
         max(iscale#sum#cupti.host.duration) as \"Max Host Time\" unit sec,\
         avg(iscale#cupti.activity.duration) as \"Avg GPU Time\" unit sec,\
         max(iscale#cupti.activity.duration) as \"Max GPU Time\" unit sec,\
         ratio(iscale#cupti.activity.duration,iscale#sum#cupti.host.duration,100.0) as \"GPU %\" \
         group by path format {format}"
    );
    let alone = format!(
        "select inclusive_scale(sum#cupti.host.duration,1e-9) as \"Host Time\" unit sec,\
         inclusive_scale(cupti.activity.duration,1e-9) as \"GPU Time\" unit sec,\
         inclusive_ratio(cupti.activity.duration,sum#cupti.host.duration,100.0) as \"GPU %\" \
         group by path format {format}"
    );
    report_output(options, config, local, &cross, &alone);
}

/// `cuda-activity-profile`: host and GPU time per region, kernel and
/// activity kind, in a file (`cuda_profile.cali` by default; `hatchet`
/// is json-split here, as in the reference).
fn cuda_activity_profile(options: &Options, config: &mut Vec<(String, String)>) -> Result<(), String> {
    let (format, extension) = profile_format("cuda-activity-profile", options, Hatchet::JsonSplit)?;
    options.update_channel_config(config);
    let filename = with_extension(options.get_or("output", "cuda_profile"), extension);
    let base = format!(
        "select *,scale(cupti.activity.duration,1e-9) as \"time (gpu)\" unit sec,\
         scale(sum#cupti.host.duration,1e-9) as \"time\" unit sec \
         group by path,cupti.kernel.name,cupti.activity.kind,mpi.rank format {format}"
    );
    profile_output(options, config, &filename, &options.build_query(QueryLevel::Local, &base));
    Ok(())
}

/// What a profile config's `output.format=hatchet` writes: `.cali` (the
/// region and sample profiles) or json-split (`cuda-activity-profile`), as
/// in the reference.
#[derive(Clone, Copy)]
enum Hatchet {
    Cali,
    JsonSplit,
}

/// The CalQL formatter and file extension of a profile config's
/// (`config`'s) `output.format`.
fn profile_format(config: &str, options: &Options, hatchet: Hatchet) -> Result<(&'static str, &'static str), String> {
    match options.get_or("output.format", "cali") {
        "cali" => Ok(("cali", ".cali")),
        "hatchet" => Ok(match hatchet {
            Hatchet::Cali => ("cali", ".cali"),
            Hatchet::JsonSplit => ("json-split", ".json"),
        }),
        "json" => Ok(("json", ".json")),
        "json-split" => Ok(("json-split", ".json")),
        other => Err(format!("{config}: Invalid output format \"{other}\"")),
    }
}

/// The seconds one sample stands for, from `sample.frequency` (`None`
/// for a frequency that is not a positive number).
fn sample_interval(config: &str, options: &Options) -> Result<Option<f64>, String> {
    let text = options.get_or("sample.frequency", "200");
    let frequency: f64 = text.parse().map_err(|_| format!("{config}: Invalid sample.frequency \"{text}\""))?;
    Ok((frequency > 0.0).then(|| 1.0 / frequency))
}

/// `sample-report`: samples per region path (and function, by default),
/// with the time they stand for, printed as a tree.
fn sample_report(options: &Options, config: &mut Vec<(String, String)>) -> Result<(), String> {
    let interval = sample_interval("sample-report", options)?.unwrap_or(0.0);
    options.update_channel_config(config);
    // A tree of call paths, or of region paths with the functions as the
    // last level: the reference's tree leaves out samples outside every
    // region, which in a program that was not annotated are all of them.
    let (group, levels) = match options.is_enabled("callpath") {
        true => ("source.function#callpath.address", Some("source.function#callpath.address")),
        false => {
            ("path", options.is_enabled("source.function").then_some("prop:nested,source.function#cali.sampler.pc"))
        }
    };
    let format = match options.get_or("output.format", "tree") {
        "tree" => tree_format_with_path(options, levels),
        "folded" | "flamegraph" => stacks_format("sample-report", options, levels)?,
        other => return Err(format!("sample-report: Invalid output format \"{other}\"")),
    };
    let (filename, append) = (options.get_or("output", "stderr"), options.get_or("output.append", "false"));
    if across_ranks(options, "aggregate_across_ranks") {
        let local = format!("select count(),scale_count({interval}) group by {group}");
        // `scount`: the local query's time (its samples scaled).
        let cross = format!(
            "select min(scount) as \"Min time/rank\" unit sec,max(scount) as \"Max time/rank\" unit sec,\
             avg(scount) as \"Avg time/rank\" unit sec,sum(scount) as \"Total time\" unit sec,\
             percent_total(scount) as \"Time %\" group by {group} format {format}"
        );
        let (local, cross) =
            (options.build_query(QueryLevel::Local, &local), options.build_query(QueryLevel::Cross, &cross));
        mpireport(config, &local, &cross, filename, append);
        return Ok(());
    }
    add_services(config, &["report"]);
    set_setting(config, "CALI_REPORT_FILENAME", filename);
    set_setting(config, "CALI_REPORT_APPEND", append);
    let base = format!(
        "select count() as \"Samples\",scale_count({interval}) as \"Time (sec)\" unit sec group by {group} format {format}"
    );
    set_setting(config, "CALI_REPORT_CONFIG", &options.build_query(QueryLevel::Local, &base));
    Ok(())
}

/// The `folded` or `flamegraph` format of a sample config's
/// `output.format`: one stack per path (`levels`, or the region path), the
/// sample count its number.
fn stacks_format(config: &str, options: &Options, levels: Option<&str>) -> Result<String, String> {
    let formatter = options.get_or("output.format", "folded");
    let levels = levels.unwrap_or("prop:nested");
    let title = match formatter {
        "flamegraph" => format!(",title=\"{config}\""),
        _ => String::new(),
    };
    Ok(format!("{formatter}(path-attributes=\"{levels}\",metric=count{title})"))
}

/// `sample-profile`: samples per region path (and function and module, by
/// default) with their time, as a file for Hatchet or cali-query.
fn sample_profile(options: &Options, config: &mut Vec<(String, String)>) -> Result<(), String> {
    let levels = match options.is_enabled("callpath") {
        true => "source.function#callpath.address",
        false => "prop:nested,source.function#cali.sampler.pc",
    };
    let (format, extension) = match options.get_or("output.format", "cali") {
        "folded" => (stacks_format("sample-profile", options, Some(levels))?, ".folded"),
        "flamegraph" => (stacks_format("sample-profile", options, Some(levels))?, ".svg"),
        _ => profile_format("sample-profile", options, Hatchet::Cali).map(|(f, e)| (f.to_string(), e))?,
    };
    let time = match sample_interval("sample-profile", options)? {
        Some(interval) => format!(",scale_count({interval}) as time unit sec"),
        None => String::new(),
    };
    options.update_channel_config(config);
    let filename = with_extension(options.get_or("output", "sample_profile"), extension);
    let base = format!("select path,count(){time} group by path,mpi.rank format {format}");
    profile_output(options, config, &filename, &options.build_query(QueryLevel::Local, &base));
    Ok(())
}

/// An output file name with `extension` added unless it has it already
/// (or is `stdout`/`stderr`).
pub(crate) fn with_extension(name: &str, extension: &str) -> String {
    if name == "stdout" || name == "stderr" || name.ends_with(extension) {
        name.to_string()
    } else {
        format!("{name}{extension}")
    }
}

fn runtime_profile(options: &Options, config: &mut Vec<(String, String)>) -> Result<(), String> {
    let (format, extension) = profile_format("runtime-profile", options, Hatchet::Cali)?;
    options.update_channel_config(config);
    let filename = with_extension(options.get_or("output", "region_profile"), extension);
    let base = format!(
        "let sum#time.duration=scale(sum#time.duration.ns,1e-9) \
         select *,sum(sum#time.duration) as time unit sec group by path,mpi.rank format {format}"
    );
    profile_output(options, config, &filename, &options.build_query(QueryLevel::Local, &base));
    Ok(())
}

/// The output of a profile config: one file per process (`report`), or in
/// an MPI program (unless `use.mpi=false`) one file for the job with each
/// rank's records (the query groups by `mpi.rank`), written by rank 0.
fn profile_output(options: &Options, config: &mut Vec<(String, String)>, filename: &str, query: &str) {
    if across_ranks(options, "use.mpi") {
        set_setting(config, "CALI_AGGREGATE_KEY", "mpi.rank");
        mpireport(config, query, query, filename, "false");
    } else {
        add_services(config, &["report"]);
        set_setting(config, "CALI_REPORT_FILENAME", filename);
        set_setting(config, "CALI_REPORT_CONFIG", query);
    }
}
