//! Driving an interactive program through a pseudo-terminal, as a user
//! at a terminal would: lines typed, output awaited.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long to wait for output before the test fails with the transcript
/// (a guard against a hang, not a measurement).
const PATIENCE: Duration = Duration::from_secs(120);

/// A program running on the slave side of a pseudo-terminal.
pub struct Terminal {
    pub child: Child,
    master: File,
    output: Arc<(Mutex<String>, Condvar)>,
    /// How much of the output `expect` has consumed.
    seen: usize,
}

impl Terminal {
    /// Starts `command` with the terminal as its standard input, output
    /// and error, and as its controlling terminal.
    pub fn spawn(mut command: Command) -> Terminal {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes the two descriptors only.
        let ret =
            unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(ret, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: fresh descriptors that nothing else owns.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and ioctl are async-signal-safe system calls.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let child = command.spawn().expect("the program starts");
        // The parent's copies of the slave side close with the command.
        drop(command);
        let output = Arc::new((Mutex::new(String::new()), Condvar::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), output.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // The read fails (EIO) once the program and its children closed
            // the terminal.
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                sink.0.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
                sink.1.notify_all();
            }
        });
        Terminal { child, master, output, seen: 0 }
    }

    /// Types a line.
    pub fn send(&mut self, line: &str) {
        self.type_keys(&format!("{line}\n"));
    }

    /// Types `keys` as they are (a control character, no newline).
    pub fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
    }

    /// Waits until `needle` appears in the output not consumed yet, and
    /// returns the output up to its end.
    pub fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        let (lock, ready) = &*self.output;
        let mut text = lock.lock().unwrap();
        loop {
            if let Some(at) = text[self.seen..].find(needle) {
                let end = self.seen + at + needle.len();
                let got = text[self.seen..end].to_string();
                self.seen = end;
                return got;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "`{needle}` never came; the terminal showed:\n{}", &*text);
            text = ready.wait_timeout(text, left).unwrap().0;
        }
    }

    /// Types `command` and returns its output, up to the next prompt.
    pub fn run(&mut self, command: &str) -> String {
        self.send(command);
        // The echo of the line first, then the command's output.
        self.expect(&format!("{command}\r\n"));
        self.expect("(cdb) ")
    }

    /// Everything the terminal showed.
    pub fn transcript(&self) -> String {
        self.output.0.lock().unwrap().clone()
    }
}

impl Drop for Terminal {
    /// A test that fails leaves no program running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
