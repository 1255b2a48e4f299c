//! Where `cdb` talks: the terminal (commands from standard input, output
//! on standard error, so that the program's standard output stays its
//! own), or a Unix domain socket for a program that needs the terminal's
//! standard input, served to one client at a time.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The prompt.
pub const PROMPT: &str = "(cdb) ";

/// The debugger's side of the conversation.
pub enum Console {
    Terminal,
    Socket { listener: UnixListener, path: PathBuf, client: Option<BufReader<UnixStream>> },
}

impl Console {
    /// The console on a socket at `path` (a stale socket there is
    /// replaced), for its owner only: a client controls the program. The
    /// socket appears at `path` listening already: it is bound under a
    /// name of its own beside it and renamed (a client that saw the path
    /// between the bind and the listen was refused, and the program waited
    /// at its entry for a client that had given up).
    pub fn listen(path: &Path) -> io::Result<Console> {
        if std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_socket()) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "a file that is no socket is there"));
        }
        let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        let mut binding = std::ffi::OsString::from(".");
        binding.push(name);
        binding.push(format!(".{}", std::process::id()));
        let binding = path.with_file_name(binding);
        if std::fs::symlink_metadata(&binding).is_ok_and(|m| m.file_type().is_socket()) {
            std::fs::remove_file(&binding)?;
        }
        // Made with the owner's permissions only from the start (the tool
        // has one thread while it starts, so the mask changes nothing else).
        // SAFETY: umask only swaps the process's file mode mask.
        let mask = unsafe { libc::umask(0o177) };
        let bound = UnixListener::bind(&binding);
        // SAFETY: as above.
        unsafe { libc::umask(mask) };
        let listener = bound?;
        if let Err(e) = std::fs::rename(&binding, path) {
            let _ = std::fs::remove_file(&binding);
            return Err(e);
        }
        Ok(Console::Socket { listener, path: path.to_path_buf(), client: None })
    }

    /// Writes `text`; a client that went away is dropped (the next
    /// command waits for another).
    pub fn write(&mut self, text: &str) {
        match self {
            Console::Terminal => {
                let mut err = io::stderr().lock();
                let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
            }
            Console::Socket { client, .. } => {
                if let Some(stream) = client.as_mut()
                    && stream.get_mut().write_all(text.as_bytes()).is_err()
                {
                    *client = None;
                }
            }
        }
    }

    /// Makes sure someone listens before a stop is reported: on a socket,
    /// waits for a client if none is connected.
    pub fn wait_for_listener(&mut self) -> io::Result<()> {
        let Console::Socket { listener, path, client } = self else { return Ok(()) };
        if client.is_none() {
            eprintln!(
                "== CALIPER: cali-run: the program is stopped; waiting for a debugger on {} \
                 (cali-run debug --connect {})",
                path.display(),
                path.display()
            );
            wait_readable(listener.as_raw_fd())?;
            let (stream, _) = listener.accept()?;
            *client = Some(BufReader::new(stream));
        }
        Ok(())
    }

    /// Shows the prompt and reads a command line; None at the end of the
    /// terminal's input. A socket client that leaves is replaced by the
    /// next to connect, who is told `context` (where the program stands).
    pub fn read_command(&mut self, context: &str) -> Option<String> {
        loop {
            self.write(PROMPT);
            match self {
                Console::Terminal => return read_terminal_line(),
                Console::Socket { client, .. } => {
                    let mut line = String::new();
                    let read = |c: &mut BufReader<UnixStream>| {
                        if c.buffer().is_empty() {
                            wait_readable(c.get_ref().as_raw_fd())?;
                        }
                        c.read_line(&mut line)
                    };
                    match client.as_mut().map(read) {
                        Some(Ok(n)) if n > 0 => return Some(line),
                        _ => *client = None,
                    }
                }
            }
            if self.wait_for_listener().is_err() {
                return None;
            }
            self.write(context);
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        if let Console::Socket { path, .. } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// One line of standard input, read a byte at a time so that nothing the
/// program is to read is taken; None at its end.
fn read_terminal_line() -> Option<String> {
    let mut line = Vec::new();
    let mut stdin = io::stdin().lock();
    let mut byte = [0u8];
    loop {
        match stdin.read(&mut byte) {
            Ok(0) => return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned()),
            Ok(_) if byte[0] == b'\n' => return Some(String::from_utf8_lossy(&line).into_owned()),
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted && !crate::engine::ending_signal_pending() => {}
            Err(_) => return None,
        }
    }
}

/// Waits until `fd` has something to read (a client to accept, a line);
/// an error when a signal that ends the measurement has come (the
/// standard library's waits go back to waiting after a signal's handler,
/// and a `SIGTERM` to a tool waiting for a debugger client went unheard).
/// The signal is looked for at least every half second as well, in case
/// it came just before the wait began.
fn wait_readable(fd: RawFd) -> io::Result<()> {
    let mut wanted = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    loop {
        if crate::engine::ending_signal_pending() {
            return Err(io::ErrorKind::Interrupted.into());
        }
        // SAFETY: one valid pollfd, for the call's length.
        match unsafe { libc::poll(&mut wanted, 1, 500) } {
            0 => {}
            ready if ready > 0 => return Ok(()),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// `cali-run debug --connect PATH`: the terminal's lines go to the socket
/// and what comes back to standard output, until the debugger ends the
/// conversation.
pub fn connect(path: &Path) -> io::Result<()> {
    let mut replies = UnixStream::connect(path)?;
    let mut commands = replies.try_clone()?;
    std::thread::spawn(move || {
        let _ = io::copy(&mut io::stdin().lock(), &mut commands);
        let _ = commands.shutdown(std::net::Shutdown::Write);
    });
    let mut out = io::stdout().lock();
    let mut buf = [0u8; 4096];
    loop {
        match replies.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                out.write_all(&buf[..n])?;
                out.flush()?;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_appears_listening_and_alone_and_no_other_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cdb.sock");
        let console = Console::listen(&path).unwrap();
        UnixStream::connect(&path).expect("listening as soon as it is there");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["cdb.sock"], "no name it was bound under is left");
        drop(console);
        assert!(!path.exists(), "removed at the end");
        std::fs::write(&path, "data").unwrap();
        assert!(Console::listen(&path).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "data", "a file that is no socket stays");
    }
}
