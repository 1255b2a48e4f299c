//! A Rust MPI program on the `mpi` crate: a region per rank, a barrier,
//! and `runtime-report` across the ranks, written by rank 0 to the file
//! given as the argument (default: standard output).
//!
//!     CALI_CONFIG=... mpirun -np 4 target/debug/examples/rsmpi report.txt

use mpi::traits::*;

fn main() {
    caliper_mpi::rsmpi::start();
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let output = std::env::args().nth(1).unwrap_or_else(|| "stdout".to_string());
    let mut mgr = runtime::ConfigManager::new();
    if !mgr.add(&format!("runtime-report(output={output},profile.mpi,region.count)")) {
        eprintln!("{}", mgr.error_msg());
        std::process::exit(1);
    }
    mgr.start();
    {
        let _work = runtime::region!("work");
        std::thread::sleep(std::time::Duration::from_millis(5 * (world.rank() as u64 + 1)));
        world.barrier();
    }
    caliper_mpi::rsmpi::collective_flush(&world, || mgr.flush());
}
