//! A synthetic event trace shaped like a real one, for benchmarks.
//!
//! The shape: a region tree 10 deep with 20 names per level (the
//! annotation perftest's `-d 10 -w 20` table); each iteration enters 10
//! nested regions and leaves them again, one snapshot per begin and end;
//! every snapshot references its region node and carries two uint
//! immediates, `time.offset.ns` and `time.duration.ns`. Nodes are written
//! before first use, as Caliper writes them. Two million records make a
//! file of about 108 MB.
//!
//! The marked variant is what the `event-trace` config writes: each begin
//! snapshot references `event.begin#region=<name>` under the enclosing
//! region, each end snapshot `event.end#region=<name>` under the region
//! it leaves, so that timeline tools see every region instance.

use std::io::{self, Write};

/// Depth of the region tree.
pub const DEPTH: u64 = 10;
/// Region names per level.
pub const WIDTH: u64 = 20;

/// Writes a trace of `n_records` snapshot records (plus node records and a
/// globals record) and returns the number of bytes written.
pub fn write_event_trace(out: &mut impl Write, n_records: u64) -> io::Result<u64> {
    write_trace(out, n_records, false)
}

/// [`write_event_trace`] with begin and end markers on the snapshots.
pub fn write_marked_event_trace(out: &mut impl Write, n_records: u64) -> io::Result<u64> {
    write_trace(out, n_records, true)
}

fn write_trace(out: &mut impl Write, n_records: u64, markers: bool) -> io::Result<u64> {
    let mut w = CountingWriter { out, bytes: 0 };
    // Attributes as the reference writes them: region (nested, thread
    // scope), time.unit metadata, then the two timer attributes.
    writeln!(w, "__rec=node,id=18,attr=10,data=276,parent=3")?;
    writeln!(w, "__rec=node,id=20,attr=8,data=region,parent=18")?;
    writeln!(w, "__rec=node,id=88,attr=10,data=84,parent=3")?;
    writeln!(w, "__rec=node,id=89,attr=8,data=time.unit,parent=88")?;
    writeln!(w, "__rec=node,id=90,attr=89,data=nsec,parent=2")?;
    writeln!(w, "__rec=node,id=91,attr=10,data=85,parent=90")?;
    writeln!(w, "__rec=node,id=92,attr=8,data=time.offset.ns,parent=91")?;
    writeln!(w, "__rec=node,id=93,attr=10,data=2133,parent=90")?;
    writeln!(w, "__rec=node,id=94,attr=8,data=time.duration.ns,parent=93")?;
    if markers {
        writeln!(w, "__rec=node,id=95,attr=10,data=84,parent=3")?;
        writeln!(w, "__rec=node,id=96,attr=8,data=event.begin#region,parent=95")?;
        writeln!(w, "__rec=node,id=97,attr=8,data=event.end#region,parent=95")?;
    }

    // Node id of (level, name) on the current path: the tree has one chain
    // per name index, since iteration i uses name i % WIDTH on every level.
    let node_id = |level: u64, name: u64| 1000 + name * DEPTH + level;
    let slots = WIDTH * DEPTH;
    // The marker nodes of (level, name), after the region nodes' ids.
    let begin_id = |level: u64, name: u64| 1000 + slots + name * DEPTH + level;
    let end_id = |level: u64, name: u64| 1000 + 2 * slots + name * DEPTH + level;
    let mut written = vec![false; slots as usize];
    let mut offset: u64 = 1_795_284_690_000;
    let mut state: u64 = 0x2545F4914F6CDD1D;
    let mut records = 0;
    let mut iteration = 0;
    'outer: loop {
        let name = iteration % WIDTH;
        // Enter levels 0..DEPTH, then leave them: 2 * DEPTH snapshots.
        for step in 0..2 * DEPTH {
            if records == n_records {
                break 'outer;
            }
            let level = if step < DEPTH { step } else { 2 * DEPTH - 1 - step };
            let id = node_id(level, name);
            let slot = (name * DEPTH + level) as usize;
            if !written[slot] {
                written[slot] = true;
                write!(w, "__rec=node,id={id},attr=20,data=r{level}.{name}")?;
                if level > 0 {
                    write!(w, ",parent={}", node_id(level - 1, name))?;
                }
                writeln!(w)?;
                if markers {
                    write!(w, "__rec=node,id={},attr=96,data=r{level}.{name}", begin_id(level, name))?;
                    if level > 0 {
                        write!(w, ",parent={}", node_id(level - 1, name))?;
                    }
                    writeln!(w)?;
                    writeln!(w, "__rec=node,id={},attr=97,data=r{level}.{name},parent={id}", end_id(level, name))?;
                }
            }
            let reference = match (markers, step < DEPTH) {
                (false, _) => id,
                (true, true) => begin_id(level, name),
                (true, false) => end_id(level, name),
            };
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let duration = 1000 + state % 9000;
            offset += duration;
            writeln!(w, "__rec=ctx,ref={reference},attr=92=94,data={offset}={duration}")?;
            records += 1;
        }
        iteration += 1;
    }
    writeln!(w, "__rec=node,id=25,attr=10,data=1612,parent=3")?;
    writeln!(w, "__rec=node,id=26,attr=8,data=cali.caliper.version,parent=25")?;
    writeln!(w, "__rec=node,id=27,attr=26,data=2.15.0-dev")?;
    writeln!(w, "__rec=globals,ref=27")?;
    Ok(w.bytes)
}

/// Writes a region profile shaped to stress tree output: under one root
/// region `main`, a chain of `depth` nested regions `d0`, `d1`, ... and
/// `siblings` leaf regions `s0`, `s1`, ... side by side. `main`, every
/// sibling, the deepest chain region and every `step`-th one (none if
/// `step` is 0) have one record with a `count` equal to their index, as an
/// aggregated profile has. Formats that print each record's whole path
/// (expand, json, table) print text quadratic in the depth when every
/// chain region has a record; `step` keeps that in check. Returns the
/// number of bytes written.
pub fn write_region_tree(out: &mut impl Write, depth: u64, siblings: u64, step: u64) -> io::Result<u64> {
    let mut w = CountingWriter { out, bytes: 0 };
    writeln!(w, "__rec=node,id=34,attr=10,data=276,parent=3")?;
    writeln!(w, "__rec=node,id=35,attr=8,data=region,parent=34")?;
    writeln!(w, "__rec=node,id=60,attr=10,data=2113,parent=2")?;
    writeln!(w, "__rec=node,id=61,attr=8,data=count,parent=60")?;
    writeln!(w, "__rec=node,id=100,attr=35,data=main")?;
    writeln!(w, "__rec=ctx,ref=100,attr=61,data=1")?;
    let mut id = 100;
    let mut parent = 100;
    for i in 0..depth {
        id += 1;
        writeln!(w, "__rec=node,id={id},attr=35,data=d{i},parent={parent}")?;
        if i + 1 == depth || (step > 0 && i % step == 0) {
            writeln!(w, "__rec=ctx,ref={id},attr=61,data={i}")?;
        }
        parent = id;
    }
    for i in 0..siblings {
        id += 1;
        writeln!(w, "__rec=node,id={id},attr=35,data=s{i},parent=100")?;
        writeln!(w, "__rec=ctx,ref={id},attr=61,data={i}")?;
    }
    Ok(w.bytes)
}

struct CountingWriter<'a, W> {
    out: &'a mut W,
    bytes: u64,
}

impl<W: Write> Write for CountingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
