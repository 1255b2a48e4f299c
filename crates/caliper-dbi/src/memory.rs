//! Reading and writing a tracee's memory through `/proc/PID/mem`: one
//! system call per block whatever its size, and writes to read-only code
//! pages work (the kernel forces them for a tracer), so breakpoints and
//! jumps need no `mprotect` in the tracee.

use crate::ptrace::Pid;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;

/// The address space of one traced process.
#[derive(Debug)]
pub struct Memory {
    file: File,
}

impl Memory {
    /// Opens the memory of process `pid` (which must be traced by us).
    pub fn open(pid: Pid) -> io::Result<Memory> {
        let file = OpenOptions::new().read(true).write(true).open(format!("/proc/{pid}/mem"))?;
        Ok(Memory { file })
    }

    /// Fills `buf` from address `addr`; an error if any byte is unmapped.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, addr)
    }

    /// Reads as many bytes as are mapped from `addr`, up to `buf.len()`.
    pub fn read_partial(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read_at(buf, addr)
    }

    /// Writes `bytes` at address `addr`.
    pub fn write(&self, addr: u64, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all_at(bytes, addr)
    }

    /// Reads a little-endian u64.
    pub fn read_u64(&self, addr: u64) -> io::Result<u64> {
        let mut b = [0; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
}
