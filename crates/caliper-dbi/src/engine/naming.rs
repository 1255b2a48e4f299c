//! Naming an ended program's call sites on a thread of the tool's own.
//!
//! When a program image ends, the entries its arc trampolines claimed in
//! the table of call arcs are read and freed at once (others may claim
//! them), but naming their call sites (the call before each return
//! address, the function holding it, the arc it makes) takes a compiler's
//! 35,000 sites 10 to 20 ms. The event loop, meanwhile, serves the
//! programs that run on: the assembler that follows the compiler stops at
//! each first call of a function, and waited for the naming. So the image
//! and its entries go to a thread that names them into a table of arcs of
//! its own, while the loop goes on (the tool is otherwise single-threaded,
//! and one of the machine's processors mostly idle); at the end the two
//! tables are one (see [`ArcTable::absorb`]). The thread blocks every
//! signal: the loop's timers and the user's signals must interrupt the
//! loop's waits, not the thread's. Without the thread (it could not be
//! started), images are named in the loop as before.

use super::arcs::{SiteEntry, name_entries};
use crate::functions::ArcTable;
use crate::image::Image;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// An ended image and the entries of its call sites to name.
struct Job {
    image: Image,
    entries: Vec<SiteEntry>,
}

/// The naming thread, once an image has ended, and the arcs it has named.
#[derive(Default)]
pub(super) struct SiteNaming {
    named: Arc<Mutex<ArcTable>>,
    /// The jobs sent and not yet done.
    pending: Arc<AtomicUsize>,
    worker: Option<(Sender<Job>, JoinHandle<()>)>,
    /// Whether starting the thread failed (the loop names images itself).
    unstarted: bool,
}

impl SiteNaming {
    /// Names the call sites of the ended `image`'s `entries` (see
    /// [`name_entries`]), on the naming thread when there is one.
    pub(super) fn name(&mut self, image: Image, entries: Vec<SiteEntry>) {
        if entries.is_empty() {
            return;
        }
        let job = Job { image, entries };
        self.start();
        let Some((jobs, _)) = &self.worker else {
            return name_entries(&job.image, &mut lock(&self.named), &job.entries);
        };
        self.pending.fetch_add(1, Ordering::SeqCst);
        if let Err(mpsc::SendError(job)) = jobs.send(job) {
            // The thread is gone: named here.
            self.pending.fetch_sub(1, Ordering::SeqCst);
            name_entries(&job.image, &mut lock(&self.named), &job.entries);
        }
    }

    /// Starts the thread, at the first image.
    fn start(&mut self) {
        if self.worker.is_none() && !self.unstarted {
            match spawn_without_signals(Arc::clone(&self.named), Arc::clone(&self.pending)) {
                Ok(worker) => self.worker = Some(worker),
                Err(e) => {
                    eprintln!("== CALIPER: cali-run: call sites are named in the event loop ({e})");
                    self.unstarted = true;
                }
            }
        }
    }

    /// The arcs named so far, once the images sent are all named.
    pub(super) fn snapshot(&self) -> ArcTable {
        while self.pending.load(Ordering::SeqCst) > 0 && self.worker.as_ref().is_some_and(|(_, t)| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(1));
        }
        lock(&self.named).clone()
    }

    /// Every arc named, the thread ended.
    pub(super) fn finish(&mut self) -> ArcTable {
        if let Some((jobs, thread)) = self.worker.take() {
            drop(jobs);
            let _ = thread.join();
        }
        std::mem::take(&mut lock(&self.named))
    }
}

/// The table, whatever a panic of the thread left in it.
fn lock(named: &Mutex<ArcTable>) -> std::sync::MutexGuard<'_, ArcTable> {
    named.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the naming thread with every signal blocked (it inherits the
/// mask of the thread that starts it, which is restored after).
fn spawn_without_signals(
    named: Arc<Mutex<ArcTable>>,
    pending: Arc<AtomicUsize>,
) -> std::io::Result<(Sender<Job>, JoinHandle<()>)> {
    let (jobs, inbox) = mpsc::channel::<Job>();
    let work = move || {
        // Only where a processor would idle: ahead of the programs and the
        // loop, the thread slowed the assembler after a compiler by as
        // much as it saved it (three threads on two processors, each stop
        // of the program a wait for one of them).
        let idle = libc::sched_param { sched_priority: 0 };
        // SAFETY: sets the calling thread's policy from a valid struct.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle) };
        for job in inbox {
            let named = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                name_entries(&job.image, &mut lock(&named), &job.entries);
            }));
            if named.is_err() {
                eprintln!("== CALIPER: cali-run: the call sites of an ended program could not all be named");
            }
            // The image's memory and maps go here too, off the loop.
            drop(job);
            pending.fetch_sub(1, Ordering::SeqCst);
        }
    };
    // SAFETY: the sets are local values; pthread_sigmask changes the
    // calling thread's mask only, and the old one is put back.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        let spawned = std::thread::Builder::new().name("cali-run-names".into()).spawn(work);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        Ok((jobs, spawned?))
    }
}
