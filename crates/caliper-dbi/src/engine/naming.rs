//! The call sites of the images that have ended, named on a thread of
//! the tool's own while the program goes on.
//!
//! When a process exits (or runs another program), the entries its
//! trampolines claimed in the table of call arcs are named: each return
//! address's call site and the function holding it, from the module
//! files, then joined to its arc. For a compiler's run that is 18,000 to
//! 60,000 entries and 10 to 20 ms; done on the tool's thread, it held up
//! the driver that had started the compiler, which then waited at its
//! next `vfork` for the tool to start the assembler. The tool's thread
//! only copies the image's entries out of the table and frees them (the
//! image's arc ids can then be given to the next program at once); one
//! thread names the copies, image after image in the order they ended (a
//! forked child that ended first joins entries that its parent's end then
//! banks), holding the table of arcs locked for a thousand entries at a
//! time. The results wait for it.

use super::arcs::{ImageIds, join_entries};
use super::lock;
use crate::arc_table::Entry;
use crate::functions::ArcTable;
use crate::image::Image;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// An image that has ended, with what naming its call sites needs.
pub(super) struct Ended {
    pub image: Image,
    pub ids: ImageIds,
    /// The function of each arc id, at id - 1.
    pub callees: Vec<usize>,
    /// The image's entries of the table of call arcs, as they were at its
    /// end.
    pub entries: Vec<Entry>,
}

/// The ended images being named, and the thread that names them (made at
/// the first).
#[derive(Default)]
pub(super) struct EndedImages {
    worker: Option<Worker>,
    busy: Arc<Busy>,
}

/// The naming thread and its queue.
struct Worker {
    queue: Sender<Ended>,
    thread: JoinHandle<()>,
}

/// How many images were sent to be named and are not yet, for a look at
/// the results meanwhile to wait for.
#[derive(Default)]
struct Busy {
    images: Mutex<usize>,
    idle: Condvar,
}

impl Busy {
    fn add(&self) {
        *lock(&self.images) += 1;
    }

    fn done(&self) {
        *lock(&self.images) -= 1;
        self.idle.notify_all();
    }
}

impl EndedImages {
    /// Names the call sites of `ended` into `arcs` on the naming thread,
    /// made if there is none yet; here where none can be made.
    pub fn name(&mut self, ended: Ended, arcs: &Arc<Mutex<ArcTable>>) {
        if self.worker.is_none() {
            self.worker = Worker::spawn(arcs.clone(), self.busy.clone());
        }
        self.busy.add();
        let ended = match &self.worker {
            Some(worker) => match worker.queue.send(ended) {
                Ok(()) => return,
                Err(unsent) => unsent.0,
            },
            None => ended,
        };
        name(ended, arcs);
        self.busy.done();
    }

    /// Waits until every image sent has been named.
    pub fn wait_idle(&self) {
        let mut images = lock(&self.busy.images);
        while *images > 0 {
            images = self.busy.idle.wait(images).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Waits until every image sent has been named, and ends the thread.
    pub fn finish(&mut self) {
        if let Some(Worker { queue, thread }) = self.worker.take() {
            drop(queue);
            if thread.join().is_err() {
                eprintln!("== CALIPER: cali-run: the thread naming call sites failed; some arcs are missing");
            }
        }
    }
}

impl Worker {
    /// The naming thread, or None where none can be made.
    fn spawn(arcs: Arc<Mutex<ArcTable>>, busy: Arc<Busy>) -> Option<Worker> {
        let (queue, images) = mpsc::channel::<Ended>();
        let run = move || {
            for ended in images {
                // A bug here costs the arcs of one image, not the tool's
                // run (nor a wait for the image for ever).
                let named = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| name(ended, &arcs)));
                busy.done();
                if named.is_err() {
                    eprintln!("== CALIPER: cali-run: naming the call sites of a program failed; its arcs are missing");
                }
            }
        };
        let thread = std::thread::Builder::new().name("naming".into()).spawn(run).ok()?;
        Some(Worker { queue, thread })
    }
}

/// Names the call sites of `ended`'s entries, joining them to their arcs
/// in `arcs`; the image is freed here too.
fn name(ended: Ended, arcs: &Mutex<ArcTable>) {
    join_entries(&ended.image, ended.entries, &ended.ids, &ended.callees, arcs);
}
