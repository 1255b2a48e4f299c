//! The progress bar of `cali-query` on big inputs: bytes read of all the
//! input files, on standard error, only where a person watches it (standard
//! error is a terminal) and the results do not go to that same terminal
//! (where the redrawn bar would garble streamed output). Anywhere else,
//! such as in scripts, pipes and CI logs, nothing is drawn.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Read};
use std::path::Path;

/// Inputs smaller than this, together, are read too fast for a bar.
const MIN_BYTES: u64 = 8 << 20;

/// A progress bar over the inputs, or nothing.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar for reading `inputs` (file names, `-` for standard input),
    /// if standard error is a terminal and `output_to_terminal` is false.
    pub fn new(inputs: &[String], output_to_terminal: bool) -> Progress {
        if !std::io::stderr().is_terminal() || output_to_terminal {
            return Progress { bar: None };
        }
        Progress::drawn(inputs)
    }

    /// The bar as drawn on a terminal: with a length when every input is a
    /// file, a byte count otherwise; none for small inputs.
    fn drawn(inputs: &[String]) -> Progress {
        let sizes: Option<u64> = inputs
            .iter()
            .map(|i| if i == "-" { None } else { std::fs::metadata(Path::new(i)).ok().map(|m| m.len()) })
            .sum();
        let bar = match sizes {
            Some(total) if total < MIN_BYTES => return Progress { bar: None },
            Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template(
                    "{msg} [{wide_bar}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            ),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template("{msg} {spinner} {binary_bytes} ({binary_bytes_per_sec})")
                    .expect("a valid template"),
            ),
        };
        Progress { bar: Some(bar) }
    }

    /// Prints a line on standard error, above the bar if there is one.
    pub fn eprintln(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// `reader` of the input `name`, counting its bytes on the bar.
    pub fn wrap<'a>(&self, name: &str, reader: Box<dyn Read + Send + 'a>) -> Box<dyn Read + Send + 'a> {
        match &self.bar {
            Some(bar) => {
                bar.set_message(name.to_string());
                Box::new(bar.wrap_read(reader))
            }
            None => reader,
        }
    }

    /// Removes the bar, leaving the terminal as it was.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
