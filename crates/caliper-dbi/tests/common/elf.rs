//! A module file's functions and code, from its symbol table and
//! sections, as the file has them (before any probe).

use iced_x86::{Decoder, DecoderOptions};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use std::path::Path;

pub struct Elf {
    data: Vec<u8>,
    /// (address, size, name) of the functions with a size, by address.
    pub functions: Vec<(u64, u64, String)>,
}

impl Elf {
    pub fn read(path: &Path) -> Elf {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = object::File::parse(&*data).unwrap();
        let mut functions: Vec<(u64, u64, String)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
            .map(|s| (s.address(), s.size(), s.name().unwrap_or("").to_string()))
            .collect();
        functions.sort();
        functions.dedup_by_key(|f| f.0);
        Elf { data, functions }
    }

    /// The code at `address` (`size` bytes at most, within its section).
    pub fn code(&self, address: u64, size: u64) -> Option<&[u8]> {
        let file = object::File::parse(&*self.data).ok()?;
        let section = file.sections().find(|s| s.address() <= address && address < s.address() + s.size())?;
        let size = size.min(section.address() + section.size() - address);
        let range = section.data_range(address, size).ok()??;
        let start = range.as_ptr() as usize - self.data.as_ptr() as usize;
        Some(&self.data[start..start + range.len()])
    }

    /// The address after the instruction at `address`.
    pub fn next_instruction(&self, address: u64) -> Option<u64> {
        let code = self.code(address, 16)?;
        Some(Decoder::with_ip(64, code, address, DecoderOptions::NONE).decode().next_ip())
    }

    /// The name of the function that starts at `address`, or "?".
    pub fn name_of(&self, address: u64) -> &str {
        let i = self.functions.partition_point(|f| f.0 <= address);
        self.functions[..i].last().filter(|f| f.0 == address).map_or("?", |f| f.2.as_str())
    }

    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.functions.iter().find(|f| f.2 == name).map(|f| f.0)
    }
}
