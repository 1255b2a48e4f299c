//! Random record streams for round-trip and interoperability tests.

#![allow(dead_code)] // each test binary uses a different part

use caliper_data::node::Id;
use caliper_data::{AttrType, Blob, MetadataDb, Properties, Record, Variant};

/// A small deterministic PRNG (splitmix64): the tests must be reproducible
/// from the seed they print.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What the generated strings may contain.
#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Alphabet {
    /// Everything: separators, escapes, UTF-8, control characters.
    Full,
    /// What the reference's Python reader reads back unchanged: no control
    /// characters but newline (it reads our `\t` as `t`), never empty and
    /// never ending in whitespace (it strips each line and drops a record's
    /// values when the line's last value is empty).
    PythonSafe,
}

const PIECES: &[&str] = &[
    "main",
    "foo",
    "loop",
    "a",
    "Z",
    "0",
    "42",
    " ",
    "=",
    ",",
    "\\",
    "\\n",
    "\n",
    "é",
    "→",
    "中",
    "µs",
    "\"",
    "'",
    "%",
    "#",
    "/",
    ":",
    "__rec=",
    "ctx",
    "-",
    ".",
    "\u{1F600}",
];
const CONTROL_PIECES: &[&str] = &["\t", "\r", "\x00", "\x07", "\x1b", "\x1f"];

pub fn random_string(rng: &mut Rng, alphabet: Alphabet) -> String {
    let len = rng.below(6) + usize::from(alphabet == Alphabet::PythonSafe);
    let mut s = String::new();
    for _ in 0..len {
        let pieces = if alphabet == Alphabet::Full && rng.chance(15) { CONTROL_PIECES } else { PIECES };
        let piece = pieces[rng.below(pieces.len())];
        s.push_str(piece);
    }
    if alphabet == Alphabet::PythonSafe && s.ends_with(char::is_whitespace) {
        s.push('x');
    }
    s
}

/// Every type but `inv`.
const TYPES: &[AttrType] = AttrType::ALL.split_at(1).1;

pub fn random_value(rng: &mut Rng, ty: AttrType, alphabet: Alphabet) -> Variant {
    match ty {
        AttrType::Usr => {
            let len = rng.below(5) + 1;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            Variant::Usr(Blob::new(&bytes))
        }
        AttrType::Int => Variant::Int(if rng.chance(50) { rng.next() as i64 } else { rng.below(100) as i64 - 50 }),
        AttrType::Uint => Variant::Uint(if rng.chance(50) { rng.next() } else { rng.below(1000) as u64 }),
        AttrType::String => Variant::string(&random_string(rng, alphabet)),
        AttrType::Addr => Variant::Addr(rng.next()),
        AttrType::Double => Variant::Double(random_double(rng)),
        AttrType::Bool => Variant::Bool(rng.chance(50)),
        AttrType::Type => Variant::Type(*rng.pick(&AttrType::ALL)),
        AttrType::Ptr => Variant::Ptr(rng.next()),
        AttrType::Inv => Variant::Empty,
    }
}

fn random_double(rng: &mut Rng) -> f64 {
    match rng.below(6) {
        0 => Some(f64::from_bits(rng.next())).filter(|d| !d.is_nan()).unwrap_or(1.5),
        1 => *rng.pick(&[0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, 5e-324, f64::MAX]),
        2 => rng.below(1_000_000) as f64 / 1e6,
        3 => (rng.next() as f64) * 1e-30,
        _ => rng.below(100_000) as f64 - 50_000.0,
    }
}

/// A generated stream: the database that owns its nodes and its records in
/// write order (snapshots, then one globals record at the end).
pub struct Workload {
    pub db: MetadataDb,
    pub records: Vec<Record>,
}

pub fn generate(seed: u64, n_records: usize, alphabet: Alphabet) -> Workload {
    let mut rng = Rng::new(seed);
    let mut db = MetadataDb::new();
    let unit = db.unit_attribute();
    let alias = db.alias_attribute();

    // Attributes.
    let mut attrs: Vec<(Id, AttrType, Properties)> = Vec::new();
    for i in 0..rng.below(10) + 2 {
        let ty = *rng.pick(TYPES);
        let mut props = Properties::from_bits(if rng.chance(50) { 20 } else { 12 });
        for (flag, percent) in [
            (Properties::ASVALUE, 40),
            (Properties::NESTED, 30),
            (Properties::GLOBAL, 10),
            (Properties::HIDDEN, 10),
            (Properties::AGGREGATABLE, 20),
            (Properties::SKIP_EVENTS, 20),
        ] {
            if rng.chance(percent) {
                props |= flag;
            }
        }
        let mut meta = Vec::new();
        if rng.chance(30) {
            meta.push((unit, Variant::string(&random_string(&mut rng, alphabet))));
        }
        if rng.chance(30) {
            meta.push((alias, Variant::string(&random_string(&mut rng, alphabet))));
        }
        let name = format!("{}{i}", random_string(&mut rng, alphabet));
        let id = db.create_attribute(&name, ty, props, &meta);
        attrs.push((id, ty, props));
    }

    // A context tree over the attributes.
    let mut nodes: Vec<Id> = Vec::new();
    for _ in 0..rng.below(30) + 1 {
        let &(attr, ty, _) = rng.pick(&attrs);
        let parent = if nodes.is_empty() || rng.chance(30) { None } else { Some(*rng.pick(&nodes)) };
        let value = random_value(&mut rng, ty, alphabet);
        nodes.push(db.get_or_create_node(attr, value, parent));
    }

    // Snapshot records, never empty.
    let mut records = Vec::new();
    for _ in 0..n_records {
        let mut rec = Record::ctx();
        for _ in 0..rng.below(7) + 1 {
            if rng.chance(40) {
                rec.push_ref(*rng.pick(&nodes));
            } else {
                let &(attr, ty, _) = rng.pick(&attrs);
                rec.push_imm(attr, random_value(&mut rng, ty, alphabet));
            }
        }
        records.push(rec);
    }

    // Globals: some tree nodes and some immediates.
    let mut globals = Record::globals();
    globals.push_ref(*rng.pick(&nodes));
    let &(attr, ty, _) = rng.pick(&attrs);
    globals.push_imm(attr, random_value(&mut rng, ty, alphabet));
    records.push(globals);

    Workload { db, records }
}
