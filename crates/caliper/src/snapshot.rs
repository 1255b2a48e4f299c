//! Snapshots as the pipeline passes them between services.
//!
//! A snapshot is taken on every triggering update, so it must be cheap to
//! build, read and drop. It holds plain copyable values (strings are
//! interned, see [`ValueKey`]): building one writes a few words, clearing
//! it runs no destructor and touches no reference count. Nodes and
//! attribute values are kept apart, each in the order added, because the
//! services read them apart (an aggregation key is made of the nodes, the
//! metrics are values); the `.cali` format keeps them apart too. A
//! snapshot becomes a [`Record`] of [`Variant`](caliper_data::Variant)s
//! only when it leaves the runtime (at flush).

use crate::clock::Clock;
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{Entry, Record};

/// A snapshot: context-tree nodes (each standing for the
/// `attribute=value` pairs on its path to the root) and attribute values.
#[derive(Default, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Snapshot {
    nodes: Vec<Id>,
    values: Vec<(Id, ValueKey)>,
}

impl Snapshot {
    /// Removes every entry, keeping the allocations.
    #[inline]
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.values.clear();
    }

    /// Adds a node.
    #[inline]
    pub fn push_node(&mut self, node: Id) {
        self.nodes.push(node);
    }

    /// Adds an attribute's value.
    #[inline]
    pub fn push_value(&mut self, attr: Id, value: ValueKey) {
        self.values.push((attr, value));
    }

    /// Adds `extra` to the unsigned value of `attr`, if the snapshot has one.
    pub fn add_to_value(&mut self, attr: Id, extra: u64) {
        if let Some((_, value)) = self.values.iter_mut().find(|(a, _)| *a == attr)
            && let Some(v) = value.as_uint()
        {
            *value = ValueKey::uint(v.saturating_add(extra));
        }
    }

    /// Adds a record entry (interning a string value).
    pub fn push_entry(&mut self, entry: &Entry) {
        match entry {
            Entry::Reference(n) => self.push_node(*n),
            Entry::Immediate(a, v) => self.push_value(*a, ValueKey::from_variant(v)),
        }
    }

    /// Orders the values by attribute (stable: a key's values in one order
    /// whatever order the snapshot had them in).
    pub fn sort_values_by_attribute(&mut self) {
        self.values.sort_by_key(|&(a, _)| a);
    }

    /// Adds another snapshot's entries.
    #[inline]
    pub fn append(&mut self, other: &Snapshot) {
        // Element by element: the lists are short, shorter than a memcpy
        // call is worth.
        for &n in &other.nodes {
            self.nodes.push(n);
        }
        for &v in &other.values {
            self.values.push(v);
        }
    }

    /// The nodes, in the order added.
    #[inline]
    pub fn nodes(&self) -> &[Id] {
        &self.nodes
    }

    /// The attribute values, in the order added.
    #[inline]
    pub fn values(&self) -> &[(Id, ValueKey)] {
        &self.values
    }

    /// Replaces `record`'s entries with this snapshot's: the nodes, then
    /// the values.
    pub fn to_record(&self, record: &mut Record) {
        record.clear();
        record.entries.extend(self.nodes.iter().map(|&n| Entry::Reference(n)));
        record.entries.extend(self.values.iter().map(|&(a, v)| Entry::Immediate(a, v.to_variant())));
    }
}

/// The timer's values in a [`RegionSnapshot`].
#[derive(Copy, Clone, Debug)]
pub struct Time {
    /// `time.offset.ns`.
    pub offset_attr: Id,
    /// Nanoseconds since the timer started.
    pub offset: u64,
    /// `time.duration.ns`.
    pub duration_attr: Id,
    /// Nanoseconds since the thread's previous snapshot in the channel.
    pub duration: u64,
}

impl Time {
    /// Adds the offset and the duration to `snapshot`.
    pub fn write_to(&self, snapshot: &mut Snapshot) {
        snapshot.push_value(self.offset_attr, ValueKey::uint(self.offset));
        snapshot.push_value(self.duration_attr, ValueKey::uint(self.duration));
    }
}

/// A thread's readings of a channel's timer: offsets since the timer
/// started and durations since the thread's previous reading. The channel
/// keeps a plain timer's readings inline (see
/// [`Service::inline_timer`](crate::service::Service::inline_timer)).
pub struct Stamps {
    clock: &'static Clock,
    start: u64,
    offset: Id,
    duration: Id,
    last: u64,
}

impl Stamps {
    /// Readings of a timer that started at `start` (on the process's
    /// clock), written as `offset` and `duration` values.
    pub fn new(start: u64, offset: Id, duration: Id) -> Stamps {
        Stamps { clock: crate::clock::clock(), start, offset, duration, last: 0 }
    }

    /// The attributes of the offset and the duration.
    pub fn attributes(&self) -> (Id, Id) {
        (self.offset, self.duration)
    }

    /// Reads the clock: the offset and the duration since the previous
    /// reading.
    #[inline(always)]
    pub fn stamp(&mut self) -> Time {
        let now = self.clock.now_ns().saturating_sub(self.start);
        let duration = now.saturating_sub(self.last);
        self.last = now;
        Time { offset_attr: self.offset, offset: now, duration_attr: self.duration, duration }
    }
}

/// The attributes of a channel's [`RegionSnapshot`]s, the same in all of
/// them: services resolve them once per thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionAttributes {
    /// `region.count`, on ends.
    pub count: Id,
    /// `time.offset.ns` and `time.duration.ns`, if the channel has a timer.
    pub time: Option<(Id, Id)>,
    /// The attributes of the other measurements, in the order of
    /// [`RegionSnapshot::measured`]'s values.
    pub measured: Vec<Id>,
}

/// The measurements of a [`RegionSnapshot`] besides the timer's: one
/// unsigned value per attribute, read from the channel's region counters
/// (see [`Service::region_counters`](crate::service::Service::region_counters)).
/// The attributes are the channel's, fixed when it starts; the values are
/// a per-thread buffer the channel overwrites on every snapshot, so that
/// measuring allocates nothing.
#[derive(Copy, Clone, Debug, Default)]
pub struct Measured<'a> {
    attrs: &'a [Id],
    values: &'a [u64],
}

impl<'a> Measured<'a> {
    /// The values of `attrs`, one each.
    #[inline]
    pub fn new(attrs: &'a [Id], values: &'a [u64]) -> Measured<'a> {
        let n = attrs.len().min(values.len());
        Measured { attrs: &attrs[..n], values: &values[..n] }
    }

    /// Whether there are no measurements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// How many measurements there are.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// The attributes, in order.
    pub fn attrs(&self) -> &'a [Id] {
        self.attrs
    }

    /// The values, in the order of [`attrs`](Measured::attrs).
    #[inline(always)]
    pub fn values(&self) -> &'a [u64] {
        self.values
    }

    /// (attribute, value) pairs, in order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (Id, u64)> + 'a {
        self.attrs.iter().copied().zip(self.values.iter().copied())
    }
}

/// The snapshot of a region begin or end in the shape nearly every
/// snapshot has: the process's context nodes, the event node
/// (`event.begin#region=foo` under the region's parent, or
/// `event.end#region=foo` under the region), `region.count` on an end and
/// the timer's values. A channel whose snapshots take this shape hands it
/// to the processing services as is, so that they need not rediscover the
/// shape in a [`Snapshot`] (see [`ThreadService::process_region`](crate::service::ThreadService::process_region)).
#[derive(Copy, Clone, Debug)]
pub struct RegionSnapshot<'a> {
    /// The thread's unaligned node if it has one, then the process
    /// context's nodes.
    pub context: &'a [Id],
    /// The process context's as-value entries (e.g. `mpi.rank`); most
    /// processes have none.
    pub values: &'a [(Id, ValueKey)],
    /// The version of the process context `values` are from (from 1 on):
    /// snapshots of one version have the same values, so that a service
    /// may look at them once.
    pub values_version: u64,
    /// The event node; in a channel without snapshot info, the region
    /// stack's node before the update, none for a begin on an empty
    /// stack (the snapshot then has the context only).
    pub event: Option<Id>,
    /// `region.count`, on an end.
    pub count: Option<Id>,
    /// The timer's values, if the channel has a timer.
    pub time: Option<Time>,
    /// The other measuring services' values.
    pub measured: Measured<'a>,
}

impl RegionSnapshot<'_> {
    /// The snapshot's nodes: the context's, then the event node.
    #[inline]
    pub fn nodes(&self) -> impl Iterator<Item = Id> + '_ {
        self.context.iter().copied().chain(self.event)
    }

    /// Replaces `snapshot`'s entries with this snapshot's, as the generic
    /// pipeline would have built them: the context nodes, the event node,
    /// the process's values, `region.count`, the timer's values, then the
    /// other measurements.
    pub fn write_to(&self, snapshot: &mut Snapshot) {
        snapshot.clear();
        snapshot.nodes.extend(self.nodes());
        snapshot.values.extend_from_slice(self.values);
        if let Some(count) = self.count {
            snapshot.push_value(count, ValueKey::uint(1));
        }
        if let Some(t) = self.time {
            t.write_to(snapshot);
        }
        for (attr, value) in self.measured.iter() {
            snapshot.push_value(attr, ValueKey::uint(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::Variant;

    #[test]
    fn time_added_to_a_value_of_the_attribute_only() {
        let mut s = Snapshot::default();
        s.push_value(7, ValueKey::uint(3));
        s.push_value(8, ValueKey::uint(10));
        s.add_to_value(8, 5);
        s.add_to_value(9, 5);
        assert_eq!(s.values(), [(7, ValueKey::uint(3)), (8, ValueKey::uint(15))]);
    }

    #[test]
    fn converts_to_a_record_nodes_first() {
        let mut s = Snapshot::default();
        s.push_node(5);
        s.push_value(7, ValueKey::uint(3));
        s.push_entry(&Entry::Immediate(9, Variant::string("x")));
        let mut other = Snapshot::default();
        other.push_node(2);
        s.append(&other);
        assert_eq!(s.nodes(), [5, 2]);
        assert_eq!(s.values().iter().map(|(a, _)| *a).collect::<Vec<_>>(), [7, 9]);
        let mut r = Record::ctx();
        s.to_record(&mut r);
        assert_eq!(
            r.entries,
            [
                Entry::Reference(5),
                Entry::Reference(2),
                Entry::Immediate(7, Variant::Uint(3)),
                Entry::Immediate(9, Variant::string("x")),
            ]
        );
    }
}
