//! The cross-rank reduction of profiles and the broadcast of what to
//! reduce next: binary trees of point-to-point messages over a [`Comm`],
//! so that no rank holds more than its own profile and one other, and
//! rank 0 needs `log2(size)` rounds rather than `size - 1` receives.

use crate::mpi::Comm;
use caliper_data::cali::{CaliWriter, read_records};
use caliper_data::{MetadataDb, Record};
use caliper_query::aggregate::Aggregator;

/// Reduces aggregated profiles over `comm` into rank 0's `aggregator`: a
/// binary tree, `log2(size)` rounds. In round `s` (1, 2, 4, ...), a rank
/// that is a multiple of `2s` receives the profile of rank `rank + s` (if
/// there is one) and adds it to its own; a rank that is an odd multiple of
/// `s` sends its profile, as a `.cali` stream of the aggregator's results,
/// to `rank - s` and is done. Each message holds one merged profile, so
/// no rank holds more than its own profile and one other at a time.
///
/// On ranks other than 0 the aggregator is left empty.
pub fn reduce(comm: &dyn Comm, db: &mut MetadataDb, aggregator: &mut Aggregator) -> Result<(), String> {
    let (rank, size) = (comm.rank(), comm.size());
    let mut step = 1;
    while step < size {
        if rank % (2 * step) == 0 {
            if rank + step < size {
                let data = comm.recv(rank + step)?;
                // An empty profile (a rank that measured nothing) is no
                // stream at all.
                if !data.is_empty() {
                    let source = format!("rank {}", rank + step);
                    let records = read_records(db, &source, &data).map_err(|e| e.to_string())?;
                    for record in &records {
                        aggregator.add(db, record);
                    }
                }
            }
        } else if rank % step == 0 {
            let data = serialize(db, aggregator).map_err(|e| e.to_string())?;
            return comm.send(rank - step, &data);
        }
        step *= 2;
    }
    Ok(())
}

/// Sends rank 0's `data` to every rank of `comm` down a binary tree
/// (log2(size) rounds, the reduction's rounds in reverse); returns it on
/// every rank (`data` is ignored on the others).
pub fn broadcast(comm: &dyn Comm, data: Vec<u8>) -> Result<Vec<u8>, String> {
    let (rank, size) = (comm.rank(), comm.size());
    let mut step = size.next_power_of_two() / 2;
    let mut data = if rank == 0 { Some(data) } else { None };
    while step >= 1 {
        if rank % (2 * step) == 0 {
            if rank + step < size
                && let Some(d) = &data
            {
                comm.send(rank + step, d)?;
            }
        } else if rank % step == 0 && data.is_none() {
            data = Some(comm.recv(rank - step)?);
        }
        step /= 2;
    }
    data.ok_or_else(|| "broadcast: nothing received".to_string())
}

/// The aggregator's results as a `.cali` stream (their nodes, then the
/// records); the aggregator is emptied.
fn serialize(db: &mut MetadataDb, aggregator: &mut Aggregator) -> std::io::Result<Vec<u8>> {
    let mut records: Vec<Record> = Vec::new();
    aggregator.flush(db, |_, r| records.push(r.clone()));
    let mut writer = CaliWriter::new(Vec::new());
    for record in &records {
        writer.write_record(&*db, record)?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::{AttrType, Properties, Variant};
    use caliper_query::parse_query;
    use std::collections::HashMap;
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::sync::{Arc, Mutex};

    /// Ranks as threads, messages over channels.
    struct ThreadComm {
        rank: usize,
        size: usize,
        senders: Arc<Vec<Vec<Sender<Vec<u8>>>>>,
        receivers: Mutex<HashMap<usize, Receiver<Vec<u8>>>>,
    }

    fn comms(size: usize) -> Vec<ThreadComm> {
        // senders[to][from]
        let mut senders = vec![Vec::new(); size];
        let mut receivers: Vec<HashMap<usize, Receiver<Vec<u8>>>> = (0..size).map(|_| HashMap::new()).collect();
        for (to, row) in senders.iter_mut().enumerate() {
            for from in 0..size {
                let (s, r) = channel();
                row.push(s);
                receivers[to].insert(from, r);
            }
        }
        let senders = Arc::new(senders);
        receivers
            .into_iter()
            .enumerate()
            .map(|(rank, r)| ThreadComm { rank, size, senders: senders.clone(), receivers: Mutex::new(r) })
            .collect()
    }

    impl Comm for ThreadComm {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.size
        }
        fn send(&self, to: usize, data: &[u8]) -> Result<(), String> {
            self.senders[to][self.rank].send(data.to_vec()).map_err(|e| e.to_string())
        }
        fn recv(&self, from: usize) -> Result<Vec<u8>, String> {
            self.receivers.lock().unwrap()[&from].recv().map_err(|e| e.to_string())
        }
    }

    /// Each rank's profile: region `main` with time `rank + 1`, region
    /// `main/r<rank % 3>` with time 10.
    fn local_records(db: &mut MetadataDb, rank: usize) -> Vec<Record> {
        let region = db.create_attribute("region", AttrType::String, Properties::NESTED, &[]);
        let t = db.create_attribute("t", AttrType::Int, Properties::ASVALUE, &[]);
        let main = db.get_or_create_node(region, Variant::string("main"), None);
        let inner = db.get_or_create_node(region, Variant::string(&format!("r{}", rank % 3)), Some(main));
        let record = |node, time: i64| {
            let mut r = Record::ctx();
            r.push_ref(node);
            r.push_imm(t, Variant::Int(time));
            r
        };
        vec![record(main, rank as i64 + 1), record(inner, 10)]
    }

    #[test]
    fn tree_reduction_gives_what_one_aggregation_of_all_ranks_gives() {
        let query = "aggregate min(t),max(t),sum(t),avg(t),count() group by region";
        for size in [1, 2, 3, 4, 7, 8] {
            let results: Vec<Option<Vec<String>>> = std::thread::scope(|s| {
                let handles: Vec<_> = comms(size)
                    .into_iter()
                    .map(|comm| {
                        s.spawn(move || {
                            let mut db = MetadataDb::new();
                            let mut agg = Aggregator::new(&parse_query(query).unwrap()).unwrap();
                            for r in local_records(&mut db, comm.rank()).into_iter().filter(|_| comm.rank() != 2) {
                                agg.add(&mut db, &r);
                            }
                            reduce(&comm, &mut db, &mut agg).unwrap();
                            (comm.rank() == 0).then(|| summary(&mut db, &mut agg))
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut db = MetadataDb::new();
            let mut agg = Aggregator::new(&parse_query(query).unwrap()).unwrap();
            // Rank 2 measured nothing.
            for rank in (0..size).filter(|&r| r != 2) {
                for r in local_records(&mut db, rank) {
                    agg.add(&mut db, &r);
                }
            }
            assert_eq!(results[0].as_ref().unwrap(), &summary(&mut db, &mut agg), "{size} ranks");
            assert!(results[1..].iter().all(Option::is_none));
        }
    }

    #[test]
    fn broadcast_reaches_every_rank() {
        for size in [1, 2, 3, 5, 8] {
            let got: Vec<Vec<u8>> = std::thread::scope(|s| {
                let handles: Vec<_> = comms(size)
                    .into_iter()
                    .map(|comm| {
                        s.spawn(move || {
                            let mine = if comm.rank() == 0 { b"loops".to_vec() } else { Vec::new() };
                            broadcast(&comm, mine).unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(got.iter().all(|d| d == b"loops"), "{size} ranks: {got:?}");
        }
    }

    /// The aggregator's results as sorted `expand` lines.
    fn summary(db: &mut MetadataDb, agg: &mut Aggregator) -> Vec<String> {
        #[derive(Clone, Default)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().write(buf)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Shared::default();
        let spec = parse_query("format expand").unwrap();
        let mut formatter =
            caliper_query::format::make_formatter(&spec, caliper_query::spec::Formatter::Expand, Box::new(out.clone()))
                .unwrap();
        agg.flush(db, |db, r| formatter.process(db, r).unwrap());
        formatter.finish(db).unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    }
}
