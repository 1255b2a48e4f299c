//! A thread's state in one channel: its services' thread objects, and what
//! makes its event nodes cheap (the attributes' marks, the memo of the
//! nodes begun and ended under each node, the recent begins).

use super::*;

/// The event attributes of one marked attribute.
#[derive(Copy, Clone, Debug)]
pub struct EventAttributes {
    pub(super) begin: Attribute,
    pub(super) set: Attribute,
    pub(super) end: Attribute,
}

/// A page of attributes not looked up yet (see [`Sparse`]).
pub(super) static UNMARKED: [Option<Option<EventAttributes>>; PAGE] = [None; PAGE];

/// A thread's region counter (see [`Service::region_counters`]) and its
/// value at the thread's previous snapshot in the channel.
pub(super) struct CounterReading {
    counter: ThreadCounter,
    previous: u64,
    absolute: bool,
    delta: bool,
}

impl CounterReading {
    /// The calling thread's counter of `spec`, changed by nothing so far.
    pub(super) fn new(spec: &RegionCounter) -> CounterReading {
        let counter = (spec.counter)();
        let previous = counter.get();
        CounterReading { counter, previous, absolute: spec.absolute.is_some(), delta: spec.delta.is_some() }
    }
}

/// Reads the thread's region counters into its measurement buffer
/// `values` (in the order of [`RegionCounter::attributes`]): a load each,
/// no call, so that the fused path keeps its registers and a signal
/// handler may read them.
#[inline(always)]
pub(super) fn read_counters(readings: &mut [CounterReading], values: &mut [u64]) {
    let mut out = values.iter_mut();
    for reading in readings {
        let now = reading.counter.get();
        if reading.absolute
            && let Some(value) = out.next()
        {
            *value = now;
        }
        if reading.delta
            && let Some(value) = out.next()
        {
            *value = now.wrapping_sub(reading.previous);
        }
        reading.previous = now;
    }
}

/// A thread's state in one channel.
pub struct ChannelThread {
    /// Per service, its thread object (`()` for the inline timer and the
    /// inline processor).
    pub(super) states: Vec<ServiceState>,
    /// The channel's only processing service, kept inline (see
    /// [`InlineProcessor`]), with its index.
    pub(super) inline: Option<(usize, InlineProcessor)>,
    /// The channel's inline timer (see [`Service::inline_timer`]).
    pub(super) timer: Option<Stamps>,
    /// The thread's region counters (see [`Service::region_counters`]),
    /// as of its previous snapshot in the channel.
    pub(super) counters: Box<[CounterReading]>,
    /// The values of the region counters, overwritten by every snapshot.
    pub(super) measured: Box<[u64]>,
    /// Per attribute id: `None` not looked up, `Some(None)` not marked.
    pub(super) marks: Sparse<Option<Option<EventAttributes>>>,
    /// Per region-stack node (by id; the empty stack at 0).
    pub(super) memo: Memo,
    /// The express path's begins per call site (see [`Sites`]).
    pub(super) sites: Sites,
    /// Begins the memo has forgotten (see [`BeginCache`]).
    pub(super) begins: BeginCache,
    /// Per string value seen by the region filters: whether it passes the
    /// include/exclude lists (bit 0) and starts a branch (bit 1).
    pub(super) filtered: FxHashMap<ValueKey, u8>,
    /// The open regions that started an included branch.
    pub(super) branches: Vec<ValueKey>,
    /// Trigger entries of observing services (kept to reuse the buffer).
    pub(super) observed: Vec<Entry>,
}

impl ChannelThread {
    /// The thread object of service `i`.
    pub(super) fn state(&mut self, i: usize) -> &mut dyn ThreadService {
        match &mut self.inline {
            Some((j, p)) if *j == i => p.as_dyn(),
            _ => self.states[i].as_mut(),
        }
    }

    /// Takes the thread object of service `i` out (at thread exit).
    pub(super) fn take_state(&mut self, i: usize) -> ServiceState {
        match self.inline.take_if(|(j, _)| *j == i) {
            Some((_, p)) => p.into_boxed(),
            None => std::mem::replace(&mut self.states[i], Box::new(())),
        }
    }

    /// Whether an update passes the channel's region and branch filters
    /// (which look at string values only); keeps the branch stack.
    pub(super) fn passes_filters(
        &mut self,
        events: &EventConfig,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) -> bool {
        let bits = if attr.attr_type() == AttrType::String {
            *self.filtered.entry(value).or_insert_with(|| {
                let v = value.to_variant();
                let name = v.as_str().unwrap_or_default();
                u8::from(events.filter.pass(name)) | (u8::from(events.branches.matches(name)) << 1)
            })
        } else {
            1
        };
        let mut pass = bits & 1 != 0;
        if !events.branches.is_empty() {
            let starts_branch = bits & 2 != 0;
            if starts_branch && matches!(kind, EventKind::Begin | EventKind::Set) {
                self.branches.push(value);
            }
            pass &= !self.branches.is_empty();
            if starts_branch && kind == EventKind::End && self.branches.last() == Some(&value) {
                self.branches.pop();
            }
        }
        pass
    }

    /// The event attribute of a `kind` update of `attr`
    /// (`event.begin#attr`, ...), if `attr` triggers snapshots. Out of
    /// line: the fused path asks only when its memo misses, and this
    /// inlined there made the common case keep more in registers (about
    /// 15 instructions more per update).
    #[inline(never)]
    pub(super) fn event_attribute<H: Host>(
        &mut self,
        cali: &H,
        channel: &Channel,
        attr: Id,
        kind: EventKind,
    ) -> Option<Attribute> {
        let mark = match self.marks.get(attr as usize) {
            Some(Some(mark)) => mark,
            _ => self.look_up_mark(cali, channel, attr),
        };
        let attrs = mark.as_ref()?;
        Some(match kind {
            EventKind::Begin => attrs.begin,
            EventKind::Set => attrs.set,
            EventKind::End | EventKind::Explicit => attrs.end,
        })
    }

    /// The channel's decision for `attr`, remembered once it is made.
    #[cold]
    pub(super) fn look_up_mark<H: Host>(&mut self, cali: &H, channel: &Channel, attr: Id) -> &Option<EventAttributes> {
        let Some(mark) = channel.decide_mark(cali, attr) else { return &None };
        self.marks.get_mut(attr as usize).insert(mark)
    }

    /// The node of an update's event information `info = entry.value`
    /// under the node of `stack`, the stack of `entry`'s attribute
    /// (materialized by the snapshot); `None` if the attribute triggers no
    /// snapshots. A begin also tells the stack the node it is about to
    /// push. The event attribute (`info`) is asked for only when the node
    /// is not remembered: a remembered node was made with it. `on_top`:
    /// whether `entry` is the top of `stack` (always so for the end of a
    /// region, which the caller knows).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the parts of a thread's data an update borrows apart
    pub(super) fn event_node(
        &mut self,
        tree: &ContextTree,
        cache: &mut ChildCache,
        stack: &mut Stack,
        kind: EventKind,
        info: impl FnOnce(&mut ChannelThread) -> Option<Attribute>,
        entry: StackEntry,
        on_top: bool,
    ) -> Option<Id> {
        let parent = stack.node(tree, cache);
        match (kind, parent) {
            (EventKind::Begin, _) => {
                if let Some(event) = self.begun_last(stack, parent, entry) {
                    return Some(event);
                }
                if let Some(event) = self.recall_begin(stack, entry.attr.id(), entry.value, parent) {
                    return Some(event);
                }
                let info = info(self)?.id();
                Some(self.remember_begin(tree, cache, stack, info, entry.attr.id(), entry.value, parent))
            }
            // An entry ended is innermost, as a region always is: its event
            // node is remembered with the stack's node.
            (EventKind::End, Some(node)) if on_top => {
                self.memo.ended(node);
                match self.memo.end(node as usize) {
                    end if end != 0 => Some(Id::from(end)),
                    _ => {
                        let info = info(self)?.id();
                        Some(self.remember_end(tree, cache, node, info, entry.value))
                    }
                }
            }
            _ => Some(Self::other_event_node(tree, cache, parent, info(self)?.id(), entry.value)),
        }
    }

    /// The event node `info = value` of an update the memo does not cover
    /// (an end of an entry that is not on top of its stack): out of line,
    /// so that its child lookup (and the hash it computes) stays out of the
    /// common path. This and the other out-of-line steps take the parts of
    /// the entry they need, not the entry: the common path then builds no
    /// entry in memory.
    #[cold]
    #[inline(never)]
    pub(super) fn other_event_node(
        tree: &ContextTree,
        cache: &mut ChildCache,
        parent: Option<Id>,
        info: Id,
        value: ValueKey,
    ) -> Id {
        cache.child(tree, parent, info, value)
    }

    /// The event node `info = value` of ending the innermost entry (of
    /// value `value`) of stack node `node`, remembered.
    #[inline(never)]
    pub(super) fn remember_end(
        &mut self,
        tree: &ContextTree,
        cache: &mut ChildCache,
        node: Id,
        info: Id,
        value: ValueKey,
    ) -> Id {
        let event = cache.child(tree, Some(node), info, value);
        if let Ok(short) = u32::try_from(event) {
            self.memo.set_end(node as usize, short);
        }
        event
    }

    /// The node of a region snapshot in a channel without snapshot info:
    /// the node of `stack` before the update (`Some(None)` for a begin on
    /// an empty stack); `None` if the attribute triggers no snapshots
    /// (`triggers` is asked for a begin only when its node is not
    /// remembered). A begin tells the stack the node it is about to push,
    /// remembered as [`Self::event_node`] remembers begins, with the child
    /// standing for the event node that is not made.
    #[inline(always)]
    pub(super) fn region_node(
        &mut self,
        tree: &ContextTree,
        cache: &mut ChildCache,
        stack: &mut Stack,
        kind: EventKind,
        triggers: impl FnOnce(&mut ChannelThread) -> bool,
        entry: StackEntry,
    ) -> Option<Option<Id>> {
        let parent = stack.node(tree, cache);
        if kind == EventKind::Begin {
            let (attr, value) = (entry.attr.id(), entry.value);
            if self.begun_last(stack, parent, entry).is_none()
                && self.recall_begin(stack, attr, value, parent).is_none()
            {
                if !triggers(self) {
                    return None;
                }
                let child = cache.child(tree, parent, attr, value);
                self.remember(stack, parent, attr, value, (child, child));
            }
            return Some(parent);
        }
        // An end: its snapshot's node is the node ended, remembered as its
        // end once it is known to trigger snapshots.
        let Some(node) = parent else { return triggers(self).then_some(parent) };
        self.memo.ended(node);
        if !self.memo.ends_at_itself(node) {
            if !triggers(self) {
                return None;
            }
            self.memo.set_end(node as usize, u32::try_from(node).unwrap_or(0));
        }
        Some(parent)
    }

    /// The event node of beginning `entry` under `parent` if the memo
    /// predicts it (the common case: a loop begins the same children again,
    /// in the same order), telling the stack the node its push makes.
    #[inline(always)]
    fn begun_last(&mut self, stack: &mut Stack, parent: Option<Id>, entry: StackEntry) -> Option<Id> {
        let (child, event) = self.memo.foresee(parent.unwrap_or(0), entry.attr.id(), entry.value)?;
        stack.expect_push(child);
        Some(event)
    }

    /// The event node of beginning `attr = value` under `parent` when it is
    /// not the child last begun there but a recent begin (see
    /// [`BeginCache`]); it becomes the child last begun.
    #[inline(never)]
    pub(super) fn recall_begin(
        &mut self,
        stack: &mut Stack,
        attr: Id,
        value: ValueKey,
        parent: Option<Id>,
    ) -> Option<Id> {
        let (parent, attr) = (u32::try_from(parent.unwrap_or(0)).ok()?, u32::try_from(attr).ok()?);
        let (child, event) = self.begins.get(parent, attr, value)?;
        self.begun(stack, parent, attr, value, (child, event));
        Some(event)
    }

    /// The event node `info = value` of beginning `attr = value` under
    /// `parent` when it is neither the child last begun there nor a recent
    /// begin; it becomes both.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)] // the entry's parts, see `other_event_node`
    pub(super) fn remember_begin(
        &mut self,
        tree: &ContextTree,
        cache: &mut ChildCache,
        stack: &mut Stack,
        info: Id,
        attr: Id,
        value: ValueKey,
        parent: Option<Id>,
    ) -> Id {
        let (child, event) = (cache.child(tree, parent, attr, value), cache.child(tree, parent, info, value));
        self.remember(stack, parent, attr, value, (child, event));
        event
    }

    /// Makes the begin of `attr = value` under `parent`, which makes node
    /// `child` with event node `event`, both the child last begun there
    /// and a recent begin, and tells the stack the node its push makes.
    fn remember(&mut self, stack: &mut Stack, parent: Option<Id>, attr: Id, value: ValueKey, (child, event): (Id, Id)) {
        let ids = [parent.unwrap_or(0), attr, child, event].map(|id| u32::try_from(id).ok());
        if let [Some(parent), Some(attr), Some(c), Some(e)] = ids {
            self.begins.put(parent, attr, value, c, e);
            self.begun(stack, parent, attr, value, (child, event));
        } else {
            stack.expect_push(child);
        }
    }

    /// Makes the begin of `attr = value` under `parent` (0: the empty
    /// stack), which makes node `child` with event node `event`, what the
    /// memo predicts next time, and tells the stack the node its push
    /// makes.
    pub(super) fn begun(
        &mut self,
        stack: &mut Stack,
        parent: u32,
        attr: u32,
        value: ValueKey,
        (child, event): (Id, Id),
    ) {
        stack.expect_push(child);
        if let Some(begin) = ChildMemo::new(Id::from(parent), Id::from(attr), value, (child, event)) {
            self.memo.begun(begin);
        }
    }
}
