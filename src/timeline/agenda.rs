//! The entries' next fire times, in two min-heaps (fixed-time and wildcard), so that handling a
//! minute costs in proportion to the entries due then, not to all entries. Carries out the
//! [`Step`]s of a plan. Pure: fire times come from `Schedule::next_after`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::ids::IdMap;

use jiff::Timestamp;

use super::{Classes, Cursors, Step, UtcMinute};
use crate::schedule::{Class, Schedule, Zone};

/// An entry's key in the agenda; never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(pub u64);

/// One run: this entry, for this minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Run {
    pub minute: UtcMinute,
    pub entry: EntryId,
}

/// One entry: 40 bytes, as the daemon keeps one per entry (its class is its schedule's).
#[derive(Debug)]
struct Slot {
    schedule: Schedule,
    /// `None`: the daemon's local zone (boxed: most entries have none).
    zone: Option<Box<Zone>>,
    /// The fire time queued in the heap, in UTC minutes; [`NEVER`] if it never fires again.
    next: i64,
}

/// [`Slot::next`] of an entry that never fires again.
const NEVER: i64 = i64::MAX;

impl Slot {
    fn next(&self) -> Option<i64> {
        (self.next != NEVER).then_some(self.next)
    }

    /// Sets the next fire time after `after`, in its own zone or `local`.
    fn reschedule(&mut self, local: &Zone, after: i64) -> Option<i64> {
        let zone = self.zone.as_deref().unwrap_or(local);
        self.next = next_fire(&self.schedule, zone, after).unwrap_or(NEVER);
        self.next()
    }
}

#[derive(Debug, Default)]
struct Heap {
    items: BinaryHeap<Reverse<(i64, EntryId)>>,
}

/// The scheduler's state: entries, their next fire times, the two cursors, the local zone.
#[derive(Debug)]
pub struct Agenda {
    slots: IdMap<EntryId, Slot>,
    fixed: Heap,
    wildcard: Heap,
    cursors: Cursors,
    local: Zone,
    next_id: u64,
}

fn minute_of(ts: Timestamp) -> i64 {
    ts.as_second().div_euclid(60)
}

fn next_fire(schedule: &Schedule, zone: &Zone, after: i64) -> Option<i64> {
    let at = Timestamp::from_second(after.checked_mul(60)?).ok()?;
    schedule.next_after(at, zone).map(minute_of)
}

impl Agenda {
    /// An empty agenda whose minutes up to `handled` count as handled.
    pub fn new(handled: UtcMinute, local: Zone) -> Agenda {
        Agenda {
            slots: IdMap::default(),
            fixed: Heap::default(),
            wildcard: Heap::default(),
            cursors: Cursors {
                fixed: handled,
                wildcard: handled,
            },
            local,
            next_id: 0,
        }
    }

    /// The wall minute handled last (the wildcard cursor: after the clock went back, that is
    /// the repeated minute, behind the fixed-time cursor).
    pub fn handled(&self) -> UtcMinute {
        self.cursors.wildcard
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Gives back the heaps' spare room (after a reload: a heap doubles as it grows).
    pub fn shrink(&mut self) {
        self.fixed.items.shrink_to_fit();
        self.wildcard.items.shrink_to_fit();
    }

    fn cursor(&self, class: Class) -> UtcMinute {
        match class {
            Class::FixedTime => self.cursors.fixed,
            Class::Wildcard => self.cursors.wildcard,
        }
    }

    fn heap(&mut self, class: Class) -> &mut Heap {
        match class {
            Class::FixedTime => &mut self.fixed,
            Class::Wildcard => &mut self.wildcard,
        }
    }

    /// Adds an entry; its first fire time is the first after its class's cursor.
    pub fn insert(&mut self, schedule: Schedule, zone: Option<Zone>) -> EntryId {
        let id = EntryId(self.next_id);
        self.next_id += 1;
        let class = schedule.class();
        let mut slot = Slot {
            schedule,
            zone: zone.map(Box::new),
            next: NEVER,
        };
        if let Some(minute) = slot.reschedule(&self.local, self.cursor(class).0) {
            self.heap(class).items.push(Reverse((minute, id)));
        }
        self.slots.insert(id, slot);
        id
    }

    /// An entry's schedule and its own zone (`None`: the local zone).
    pub fn get(&self, id: EntryId) -> Option<(&Schedule, Option<&Zone>)> {
        self.slots
            .get(&id)
            .map(|slot| (&slot.schedule, slot.zone.as_deref()))
    }

    /// Removes an entry (its queued fire time is dropped lazily).
    pub fn remove(&mut self, id: EntryId) {
        self.slots.remove(&id);
        self.compact_if_stale();
    }

    fn compact_if_stale(&mut self) {
        for class in [Class::FixedTime, Class::Wildcard] {
            let live = self.slots.len();
            if self.heap(class).items.len() > 2 * live + 64 {
                self.rebuild(class, None);
            }
        }
    }

    /// A new local zone: every entry without its own zone gets new fire times.
    pub fn set_local_zone(&mut self, zone: Zone) {
        self.local = zone;
        self.rebuild(Class::FixedTime, None);
        self.rebuild(Class::Wildcard, None);
    }

    /// Recomputes every fire time of a class after `at` (or its cursor).
    fn rebuild(&mut self, class: Class, at: Option<UtcMinute>) {
        let after = at.unwrap_or(self.cursor(class));
        let mut items = Vec::new();
        let local = &self.local;
        for (id, slot) in self.slots.iter_mut() {
            if slot.schedule.class() != class {
                continue;
            }
            if let Some(m) = slot.reschedule(local, after.0) {
                items.push(Reverse((m, *id)));
            }
        }
        self.heap(class).items = BinaryHeap::from(items);
        match class {
            Class::FixedTime => self.cursors.fixed = after,
            Class::Wildcard => self.cursors.wildcard = after,
        }
    }

    /// The earliest fire time queued, if any (drops stale heap tops on the way).
    pub fn next_due(&mut self) -> Option<UtcMinute> {
        let mut best: Option<i64> = None;
        for class in [Class::FixedTime, Class::Wildcard] {
            while let Some(&Reverse((minute, id))) = self.heap(class).items.peek() {
                if self.slots.get(&id).is_some_and(|s| s.next == minute) {
                    best = Some(best.map_or(minute, |b| b.min(minute)));
                    break;
                }
                self.heap(class).items.pop();
            }
        }
        best.map(UtcMinute)
    }

    /// Pops the next live fire time of a class at or before `to`.
    fn pop_due(&mut self, class: Class, to: UtcMinute) -> Option<(i64, EntryId)> {
        loop {
            let Reverse((minute, id)) = *self.heap(class).items.peek()?;
            if minute > to.0 {
                return None;
            }
            self.heap(class).items.pop();
            if self.slots.get(&id).is_some_and(|s| s.next == minute) {
                return Some((minute, id));
            }
        }
    }

    /// Queues the entry's fire time after `after`.
    fn requeue(&mut self, id: EntryId, after: i64) {
        let local = &self.local;
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        let class = slot.schedule.class();
        if let Some(m) = slot.reschedule(local, after) {
            self.heap(class).items.push(Reverse((m, id)));
        }
    }

    fn set_cursor(&mut self, class: Class, to: UtcMinute) {
        match class {
            Class::FixedTime => self.cursors.fixed = to,
            Class::Wildcard => self.cursors.wildcard = to,
        }
    }

    fn classes(classes: Classes) -> impl Iterator<Item = Class> {
        [Class::FixedTime, Class::Wildcard]
            .into_iter()
            .filter(move |c| classes.contains(*c))
    }

    /// Carries out one step; returns the runs it produces in time order (then entry order).
    pub fn apply(&mut self, step: Step) -> Vec<Run> {
        let mut runs = Vec::new();
        match step {
            Step::RunEach { classes, to } => {
                for class in Self::classes(classes) {
                    while let Some((minute, id)) = self.pop_due(class, to) {
                        runs.push(Run {
                            minute: UtcMinute(minute),
                            entry: id,
                        });
                        self.requeue(id, minute);
                    }
                    self.set_cursor(class, to.max(self.cursor(class)));
                }
            }
            Step::RunOnce { class, to } => {
                let mut due = Vec::new();
                while let Some((_, id)) = self.pop_due(class, to) {
                    due.push(id);
                }
                for id in due {
                    runs.push(Run {
                        minute: to,
                        entry: id,
                    });
                    self.requeue(id, to.0);
                }
                self.set_cursor(class, to.max(self.cursor(class)));
            }
            Step::Skip { classes, to } => {
                for class in Self::classes(classes) {
                    let mut due = Vec::new();
                    while let Some((_, id)) = self.pop_due(class, to) {
                        due.push(id);
                    }
                    for id in due {
                        self.requeue(id, to.0);
                    }
                    self.set_cursor(class, to.max(self.cursor(class)));
                }
            }
            Step::Reset { classes, at } => {
                for class in Self::classes(classes) {
                    self.rebuild(class, Some(at));
                }
            }
        }
        runs.sort();
        runs
    }

    /// Carries out a whole plan.
    pub fn carry_out(&mut self, plan: &super::Plan) -> Vec<Run> {
        let mut runs: Vec<Run> = plan.steps.iter().flat_map(|s| self.apply(*s)).collect();
        runs.sort();
        runs
    }

    /// What the daemon does at each wake (timer fired, clock set, resume): plans minute `now`
    /// from the cursors and the quiet span before the next fire time, then carries it out.
    pub fn advance(&mut self, now: UtcMinute) -> (super::Movement, Vec<Run>) {
        let quiet = self.next_due().map(|m| m.plus(-1));
        let plan = super::plan(self.cursors, now, quiet);
        let runs = self.carry_out(&plan);
        (plan.movement, runs)
    }
}

#[cfg(test)]
mod size {
    /// The daemon holds one slot per entry: its size is part of the memory budget
    /// (docs/daemon.md, "Figures").
    #[test]
    fn an_entry_is_a_forty_byte_slot_and_a_thirty_two_byte_job() {
        assert_eq!(std::mem::size_of::<crate::schedule::Schedule>(), 24);
        assert_eq!(std::mem::size_of::<super::Slot>(), 40);
        // And its job, beside it in the cycle.
        assert_eq!(std::mem::size_of::<crate::job::JobSpec>(), 32);
    }
}
