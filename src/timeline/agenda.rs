//! The entries' next fire times, in two min-heaps (fixed-time and wildcard), so that handling a
//! minute costs in proportion to the entries due then, not to all entries. Carries out the
//! [`Step`]s of a plan. Pure: fire times come from `Schedule::next_after`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use jiff::Timestamp;

use super::{Classes, Cursors, IdMap, Step, UtcMinute};
use crate::schedule::{Class, Schedule, Zone};

/// An entry's key in the agenda: its place in the agenda's table (low 32 bits) and that
/// place's generation (high 32 bits). A place is reused after its entry is removed, under a new
/// generation, so an id kept somewhere (a heap, a queued run, a running job) never names the
/// entry that took the place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(pub u64);

impl EntryId {
    fn new(index: u32, generation: u32) -> EntryId {
        EntryId((u64::from(generation) << 32) | u64::from(index))
    }

    fn index(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }

    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// One run: this entry, for this minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Run {
    pub minute: UtcMinute,
    pub entry: EntryId,
}

/// One entry: 24 bytes and what the owner of the agenda keeps with it (`payload`: the cycle's
/// job and delay). Its class is its schedule's; its zone, when it has one of its own
/// (`CRON_TZ`), is in [`Agenda::zones`].
#[derive(Debug)]
struct Slot<P> {
    schedule: Schedule,
    /// The fire time queued in the heap, in UTC minutes (32 bits, as the heap keeps it);
    /// [`NEVER`] if it never fires again, or not before the year 6053.
    next: i32,
    payload: P,
}

/// [`Slot::next`] of an entry that never fires again.
const NEVER: i32 = i32::MAX;

impl<P> Slot<P> {
    fn next(&self) -> Option<i64> {
        (self.next != NEVER).then_some(i64::from(self.next))
    }

    /// Sets the next fire time after `after`, in the entry's zone.
    fn reschedule(&mut self, zone: &Zone, after: i64) -> Option<i64> {
        self.next = next_fire(&self.schedule, zone, after)
            .and_then(|minute| i32::try_from(minute).ok())
            .unwrap_or(NEVER);
        self.next()
    }
}

/// A min-heap of (fire minute, place), 8 bytes an item: the minute as 32 bits (UTC minutes
/// reach 2^31 in the year 6053) above the place's index. An item names a place, not an id: it
/// counts only while the place's entry has that very fire time queued (`Slot::next`), and a
/// popped item marks its entry taken until it is queued again, so two items for one place and
/// minute (one left by a removed entry) can't run the entry twice.
#[derive(Debug, Default)]
struct Heap {
    items: BinaryHeap<Reverse<u64>>,
}

impl Heap {
    fn push(&mut self, minute: i64, index: usize) {
        // Beyond the year 6053: never (as a schedule that can't fire).
        let (Ok(minute), Ok(index)) = (i32::try_from(minute), u32::try_from(index)) else {
            return;
        };
        let biased = u64::from((minute as u32) ^ 0x8000_0000);
        self.items.push(Reverse((biased << 32) | u64::from(index)));
    }

    fn peek(&self) -> Option<(i64, usize)> {
        self.items.peek().map(|&Reverse(item)| unpack(item))
    }

    fn pop(&mut self) {
        self.items.pop();
    }
}

fn unpack(item: u64) -> (i64, usize) {
    let minute = ((item >> 32) as u32 ^ 0x8000_0000) as i32;
    (i64::from(minute), (item & 0xffff_ffff) as usize)
}

/// The scheduler's state: entries, their next fire times, the two cursors, the local zone.
///
/// The entries sit in one table indexed by their id's place: no hashing, no spare buckets, and
/// a file's entries next to each other (a reload compares them in order).
#[derive(Debug)]
pub struct Agenda<P = ()> {
    slots: Vec<Option<Slot<P>>>,
    /// Each place's generation; never shortened, so an old id stays wrong for good.
    generations: Vec<u32>,
    /// Free places, lowest first: a file's new entries take places in line order.
    free: BinaryHeap<Reverse<u32>>,
    live: usize,
    fixed: Heap,
    wildcard: Heap,
    cursors: Cursors,
    local: Zone,
    /// The entries with a zone of their own: few, so not a field of every slot.
    zones: IdMap<EntryId, Zone>,
    /// While a large load adds entries ([`Agenda::reserve`]), the first fire times worked out
    /// so far; dropped by [`Agenda::shrink`].
    first_fires: Option<FirstFires>,
    /// Entries the last step ran for the minute it ended at, whose next fire time is not
    /// computed yet (the entry, the minute to look after): a minute's first job can start
    /// before 10,000 next fire times are worked out. [`Agenda::settle`] queues them; every
    /// method that reads the heaps or the cursors settles first.
    taken: Vec<(EntryId, i64)>,
}

/// The first fire times of entries in the daemon's zone, by schedule and the minute they follow
/// (in UTC minutes, as [`Slot::next`]): a file's entries mostly share a few schedules, so a large
/// load works each out once. The keys are hashed with std's keyed hash, so schedules written to
/// collide cost no more than others; at most [`FIRST_FIRES_MAX`] are kept (about 116 KiB), and
/// the others are worked out each time.
type FirstFires = HashMap<(Schedule, i32), i32>;

/// A load adding at least this many entries keeps [`FirstFires`].
const FIRST_FIRES_FROM: usize = 1024;

/// The most first fire times a load keeps: as many as a table of 4,096 places holds.
const FIRST_FIRES_MAX: usize = 3584;

fn minute_of(ts: Timestamp) -> i64 {
    ts.as_second().div_euclid(60)
}

fn next_fire(schedule: &Schedule, zone: &Zone, after: i64) -> Option<i64> {
    let at = Timestamp::from_second(after.checked_mul(60)?).ok()?;
    schedule.next_after(at, zone).map(minute_of)
}

impl<P> Agenda<P> {
    /// An empty agenda whose minutes up to `handled` count as handled.
    pub fn new(handled: UtcMinute, local: Zone) -> Agenda<P> {
        Agenda {
            slots: Vec::new(),
            generations: Vec::new(),
            free: BinaryHeap::new(),
            live: 0,
            fixed: Heap::default(),
            wildcard: Heap::default(),
            cursors: Cursors {
                fixed: handled,
                wildcard: handled,
            },
            local,
            zones: IdMap::default(),
            first_fires: None,
            taken: Vec::new(),
        }
    }

    /// Room for `additional` entries about to be added at once (a load): the table grows
    /// once, not by doubling, and a large load works out each distinct schedule's first fire
    /// time once ([`FirstFires`], kept until [`Agenda::shrink`]).
    pub fn reserve(&mut self, additional: usize) {
        let new_places = additional.saturating_sub(self.free.len());
        self.slots.reserve(new_places);
        self.generations
            .reserve((self.slots.len() + new_places).saturating_sub(self.generations.len()));
        if additional >= FIRST_FIRES_FROM && self.first_fires.is_none() {
            self.first_fires = Some(FirstFires::new());
        }
    }

    /// Queues the next fire time of each entry taken by the last step and not queued since.
    pub fn settle(&mut self) {
        for (id, after) in std::mem::take(&mut self.taken) {
            self.requeue(id, after);
        }
    }

    /// Every entry, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.slots
            .iter()
            .zip(&self.generations)
            .enumerate()
            .filter(|(_, (slot, _))| slot.is_some())
            .map(|(i, (_, &generation))| EntryId::new(i as u32, generation))
    }

    fn slot(&self, id: EntryId) -> Option<&Slot<P>> {
        let i = id.index();
        if self.generations.get(i) != Some(&id.generation()) {
            return None;
        }
        self.slots.get(i)?.as_ref()
    }

    fn slot_mut(&mut self, id: EntryId) -> Option<&mut Slot<P>> {
        let i = id.index();
        if self.generations.get(i) != Some(&id.generation()) {
            return None;
        }
        self.slots.get_mut(i)?.as_mut()
    }

    /// The wall minute handled last (the wildcard cursor: after the clock went back, that is
    /// the repeated minute, behind the fixed-time cursor).
    pub fn handled(&self) -> UtcMinute {
        self.cursors.wildcard
    }

    pub fn len(&self) -> usize {
        self.live
    }

    /// The daemon's local zone (entries without a `CRON_TZ`).
    pub fn local_zone(&self) -> &Zone {
        &self.local
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Gives back spare room after a reload: the free places at the end of the table, and the
    /// room the table and the heaps hold beyond twice what they use (after a file shrank or
    /// went). Less is left alone: reallocating the table is a copy of all of it, and the
    /// room a vector reserved but never wrote costs no memory.
    pub fn shrink(&mut self) {
        self.first_fires = None;
        while matches!(self.slots.last(), Some(None)) {
            self.slots.pop();
        }
        let len = self.slots.len() as u32;
        self.free.retain(|&Reverse(i)| i < len);
        fn roomy(len: usize, capacity: usize) -> bool {
            capacity > 2 * len + 1024
        }
        if roomy(self.slots.len(), self.slots.capacity()) {
            self.slots.shrink_to_fit();
        }
        if roomy(self.free.len(), self.free.capacity()) {
            self.free.shrink_to_fit();
        }
        for heap in [&mut self.fixed, &mut self.wildcard] {
            if roomy(heap.items.len(), heap.items.capacity()) {
                heap.items.shrink_to_fit();
            }
        }
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
    pub fn insert(&mut self, schedule: Schedule, zone: Option<Zone>, payload: P) -> EntryId {
        let index = match self.free.pop() {
            Some(Reverse(i)) => i as usize,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        if self.generations.len() <= index {
            self.generations.resize(index + 1, 0);
        }
        // At most 2^32 places: the table would need 2^32 entries (hundreds of GiB) first.
        let id = EntryId::new(index as u32, self.generations[index]);
        let class = schedule.class();
        let mut slot = Slot {
            schedule,
            next: NEVER,
            payload,
        };
        let after = self.cursor(class).0;
        // Past the year 6053 a first fire time is worked out each time.
        let key = i32::try_from(after).ok().map(|after| (schedule, after));
        let next = match (&zone, &mut self.first_fires, key) {
            (None, Some(memo), Some(key)) => {
                if let Some(&next) = memo.get(&key) {
                    slot.next = next;
                    slot.next()
                } else {
                    let next = slot.reschedule(&self.local, after);
                    if memo.len() < FIRST_FIRES_MAX {
                        memo.insert(key, slot.next);
                    }
                    next
                }
            }
            _ => slot.reschedule(zone.as_ref().unwrap_or(&self.local), after),
        };
        if let Some(zone) = zone {
            self.zones.insert(id, zone);
        }
        if let Some(minute) = next {
            self.heap(class).push(minute, index);
        }
        self.slots[index] = Some(slot);
        self.live += 1;
        id
    }

    /// An entry's schedule, its own zone (`None`: the local zone) and its payload.
    pub fn get(&self, id: EntryId) -> Option<(&Schedule, Option<&Zone>, &P)> {
        self.slot(id)
            .map(|slot| (&slot.schedule, self.zones.get(&id), &slot.payload))
    }

    /// The entry's first fire time after minute `after`, in its zone, without changing what
    /// is queued (`CRON_MISSED` asks whether a run fell in a span the daemon did not see).
    pub fn fire_after(&self, id: EntryId, after: UtcMinute) -> Option<UtcMinute> {
        let slot = self.slot(id)?;
        let zone = self.zones.get(&id).unwrap_or(&self.local);
        next_fire(&slot.schedule, zone, after.0).map(UtcMinute)
    }

    /// An entry's payload, to change.
    pub fn payload_mut(&mut self, id: EntryId) -> Option<&mut P> {
        self.slot_mut(id).map(|slot| &mut slot.payload)
    }

    /// Removes an entry (its queued fire time is dropped lazily); returns its payload.
    pub fn remove(&mut self, id: EntryId) -> Option<P> {
        self.slot(id)?;
        let i = id.index();
        let slot = self.slots[i].take()?;
        self.zones.remove(&id);
        self.generations[i] = self.generations[i].wrapping_add(1);
        self.free.push(Reverse(i as u32));
        self.live -= 1;
        self.compact_if_stale();
        Some(slot.payload)
    }

    fn compact_if_stale(&mut self) {
        for class in [Class::FixedTime, Class::Wildcard] {
            let live = self.live;
            if self.heap(class).items.len() > 2 * live + 64 {
                self.rebuild(class, None);
            }
        }
    }

    /// A new local zone: every entry without its own zone gets new fire times.
    pub fn set_local_zone(&mut self, zone: Zone) {
        self.local = zone;
        // Worked out in the old zone.
        self.first_fires = None;
        self.rebuild(Class::FixedTime, None);
        self.rebuild(Class::Wildcard, None);
    }

    /// Recomputes every fire time of a class after `at` (or its cursor).
    fn rebuild(&mut self, class: Class, at: Option<UtcMinute>) {
        self.settle();
        let after = at.unwrap_or(self.cursor(class));
        let mut items = Vec::new();
        for (i, place) in self.slots.iter_mut().enumerate() {
            let Some(slot) = place else {
                continue;
            };
            if slot.schedule.class() != class {
                continue;
            }
            let id = EntryId::new(i as u32, self.generations[i]);
            let zone = self.zones.get(&id).unwrap_or(&self.local);
            if let Some(m) = slot.reschedule(zone, after.0) {
                items.push((m, i));
            }
        }
        let mut heap = Heap {
            items: BinaryHeap::with_capacity(items.len()),
        };
        for (m, i) in items {
            heap.push(m, i);
        }
        *self.heap(class) = heap;
        match class {
            Class::FixedTime => self.cursors.fixed = after,
            Class::Wildcard => self.cursors.wildcard = after,
        }
    }

    /// Whether the place `index` holds an entry whose queued fire time is `minute`.
    fn live(&self, index: usize, minute: i64) -> bool {
        matches!(self.slots.get(index), Some(Some(s)) if i64::from(s.next) == minute)
    }

    /// The earliest fire time queued, if any (drops stale heap tops on the way).
    pub fn next_due(&mut self) -> Option<UtcMinute> {
        self.settle();
        let mut best: Option<i64> = None;
        for class in [Class::FixedTime, Class::Wildcard] {
            while let Some((minute, index)) = self.heap(class).peek() {
                if self.live(index, minute) {
                    best = Some(best.map_or(minute, |b| b.min(minute)));
                    break;
                }
                self.heap(class).pop();
            }
        }
        best.map(UtcMinute)
    }

    /// Pops the next live fire time of a class at or before `to`; its entry is taken (no fire
    /// time queued) until [`Agenda::requeue`].
    fn pop_due(&mut self, class: Class, to: UtcMinute) -> Option<(i64, EntryId)> {
        loop {
            let (minute, index) = self.heap(class).peek()?;
            if minute > to.0 {
                return None;
            }
            self.heap(class).pop();
            if self.live(index, minute) {
                if let Some(Some(slot)) = self.slots.get_mut(index) {
                    slot.next = NEVER;
                }
                return Some((minute, EntryId::new(index as u32, self.generations[index])));
            }
        }
    }

    /// Queues the entry's fire time after `after`.
    fn requeue(&mut self, id: EntryId, after: i64) {
        let i = id.index();
        if self.generations.get(i) != Some(&id.generation()) {
            return;
        }
        let Some(Some(slot)) = self.slots.get_mut(i) else {
            return;
        };
        let class = slot.schedule.class();
        let zone = self.zones.get(&id).unwrap_or(&self.local);
        if let Some(m) = slot.reschedule(zone, after) {
            let heap = match class {
                Class::FixedTime => &mut self.fixed,
                Class::Wildcard => &mut self.wildcard,
            };
            heap.push(m, i);
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
    /// Entries run for the step's last minute are left taken (see [`Agenda::taken`]): their
    /// next fire time is after that minute, so this step would not pop them again.
    pub fn apply(&mut self, step: Step) -> Vec<Run> {
        self.settle();
        let mut runs = Vec::new();
        match step {
            Step::RunEach { classes, to } => {
                for class in Self::classes(classes) {
                    while let Some((minute, id)) = self.pop_due(class, to) {
                        runs.push(Run {
                            minute: UtcMinute(minute),
                            entry: id,
                        });
                        if minute == to.0 {
                            self.taken.push((id, minute));
                        } else {
                            // An earlier minute of a span: the entry may be due again in it.
                            self.requeue(id, minute);
                        }
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
                    self.taken.push((id, to.0));
                }
                self.set_cursor(class, to.max(self.cursor(class)));
            }
            Step::Skip { classes, to } => {
                for class in Self::classes(classes) {
                    let mut due = Vec::new();
                    while let Some((_, id)) = self.pop_due(class, to) {
                        due.push(id);
                    }
                    self.taken.extend(due.into_iter().map(|id| (id, to.0)));
                    self.set_cursor(class, to.max(self.cursor(class)));
                }
            }
            Step::Reset { classes, at } => {
                for class in Self::classes(classes) {
                    self.rebuild(class, Some(at));
                }
            }
        }
        // (minute, entry) pairs are unique: an unstable sort is the stable one, and needs no
        // scratch memory (the heaps' order is nearly sorted already).
        runs.sort_unstable();
        runs
    }

    /// Carries out a whole plan.
    pub fn carry_out(&mut self, plan: &super::Plan) -> Vec<Run> {
        if let [step] = plan.steps[..] {
            // The usual wake: one step, its runs in order already.
            return self.apply(step);
        }
        let mut runs: Vec<Run> = plan.steps.iter().flat_map(|s| self.apply(*s)).collect();
        runs.sort_unstable();
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
    fn an_entry_is_forty_eight_bytes_in_the_agendas_table() {
        use crate::job::JobSpec;
        assert_eq!(std::mem::size_of::<crate::schedule::Schedule>(), 20);
        assert_eq!(std::mem::size_of::<super::Slot<()>>(), 24);
        assert_eq!(std::mem::size_of::<JobSpec>(), 16);
        // The daemon's place: slot, job and delay, and an empty place costs no more.
        assert_eq!(
            std::mem::size_of::<Option<super::Slot<(JobSpec, u32)>>>(),
            48
        );
    }
}

#[cfg(test)]
mod places {
    use super::*;

    fn every_minute() -> Schedule {
        match crate::schedule::parse_expression("* * * * *", 0).unwrap() {
            crate::schedule::When::Periodic(s) => s,
            other => unreachable!("{other}"),
        }
    }

    fn schedule(expr: &str) -> Schedule {
        match crate::schedule::parse_expression(expr, 0).unwrap() {
            crate::schedule::When::Periodic(s) => s,
            other => unreachable!("{other}"),
        }
    }

    #[test]
    fn a_large_loads_remembered_first_fire_times_are_the_ones_each_entry_gets_alone() {
        // 1,440 fixed times, a wildcard, one that never fires: each many times over.
        let schedules: Vec<Schedule> = (0..3_000)
            .map(|i| match i % 100 {
                0 => schedule("*/7 * * * *"),
                1 => schedule("0 0 30 2 *"),
                _ => schedule(&format!("{} {} * * *", i % 60, (i / 60) % 24)),
            })
            .collect();
        let mut alone: Agenda<()> = Agenda::new(UtcMinute(0), Zone::utc());
        let mut loaded: Agenda<()> = Agenda::new(UtcMinute(0), Zone::utc());
        let fire_times = |a: &Agenda<()>| -> Vec<Option<i32>> {
            a.slots.iter().map(|s| s.as_ref().map(|s| s.next)).collect()
        };
        let add_all = |alone: &mut Agenda<()>, loaded: &mut Agenda<()>| {
            loaded.reserve(schedules.len());
            assert!(loaded.first_fires.is_some());
            for &s in &schedules {
                alone.insert(s, None, ());
                loaded.insert(s, None, ());
            }
            assert_eq!(fire_times(alone), fire_times(loaded));
        };
        add_all(&mut alone, &mut loaded);
        // The cursor moved: what the load worked out before counts for no entry added now.
        alone.advance(UtcMinute(90));
        loaded.advance(UtcMinute(90));
        add_all(&mut alone, &mut loaded);
        // Nor after the daemon's zone changed.
        let zone = Zone::get("America/New_York").unwrap();
        alone.set_local_zone(zone.clone());
        loaded.set_local_zone(zone);
        add_all(&mut alone, &mut loaded);
        loaded.shrink();
        assert!(loaded.first_fires.is_none());
    }

    #[test]
    fn a_load_of_many_distinct_schedules_keeps_a_bounded_number_of_first_fire_times() {
        let mut loaded: Agenda<()> = Agenda::new(UtcMinute(0), Zone::utc());
        let mut alone: Agenda<()> = Agenda::new(UtcMinute(0), Zone::utc());
        // 10,080 distinct schedules (minute, hour, day of week), more than are kept.
        let schedules: Vec<Schedule> = (0..10_080)
            .map(|i| schedule(&format!("{} {} * * {}", i % 60, i / 60 % 24, i / 1440)))
            .collect();
        loaded.reserve(schedules.len());
        for &s in &schedules {
            loaded.insert(s, None, ());
            alone.insert(s, None, ());
        }
        let memo = loaded.first_fires.as_ref().expect("kept during the load");
        assert_eq!(memo.len(), FIRST_FIRES_MAX);
        // The table never grew past 4,096 places (what docs/limits.md states).
        assert_eq!(memo.capacity(), 4096 / 8 * 7);
        assert_eq!(std::mem::size_of::<((Schedule, i32), i32)>(), 28);
        // The entries past the bound got their own first fire times.
        let fire_times = |a: &Agenda<()>| -> Vec<Option<i32>> {
            a.slots.iter().map(|s| s.as_ref().map(|s| s.next)).collect()
        };
        assert_eq!(fire_times(&loaded), fire_times(&alone));
    }

    #[test]
    fn a_removed_entrys_id_never_names_the_entry_in_its_place() {
        let mut agenda: Agenda<&str> = Agenda::new(UtcMinute(0), Zone::utc());
        let old = agenda.insert(every_minute(), None, "old");
        assert_eq!(agenda.remove(old), Some("old"));
        let new = agenda.insert(every_minute(), None, "new");
        assert_eq!(new.index(), old.index(), "the place is reused");
        assert_ne!(new, old);
        assert!(agenda.get(old).is_none());
        assert_eq!(agenda.remove(old), None);
        assert_eq!(agenda.get(new).map(|e| *e.2), Some("new"));
        // The old id's fire time left in the heap is not the new entry's run twice.
        let (_, runs) = agenda.advance(UtcMinute(1));
        assert_eq!(runs.iter().map(|r| r.entry).collect::<Vec<_>>(), [new]);
    }

    #[test]
    fn a_minutes_entries_get_their_next_fire_time_after_its_runs_are_out_and_before_any_look() {
        let mut agenda: Agenda<u32> = Agenda::new(UtcMinute(0), Zone::utc());
        let ids: Vec<EntryId> = (0..3)
            .map(|i| agenda.insert(every_minute(), None, i))
            .collect();
        let (_, runs) = agenda.advance(UtcMinute(1));
        assert_eq!(runs.len(), 3);
        // Out, and not queued again yet: the heap holds nothing live.
        assert_eq!(agenda.taken.len(), 3);
        assert!(
            ids.iter()
                .all(|&id| agenda.slot(id).unwrap().next().is_none())
        );
        // Removing one of them meanwhile: it is not queued again.
        agenda.remove(ids[1]);
        // The next look settles them first.
        assert_eq!(agenda.next_due(), Some(UtcMinute(2)));
        assert!(agenda.taken.is_empty());
        assert_eq!(agenda.slot(ids[0]).unwrap().next(), Some(2));
        // A wake without a look in between runs them again, once each.
        agenda.advance(UtcMinute(2));
        let (_, runs) = agenda.advance(UtcMinute(3));
        assert_eq!(
            runs.iter().map(|r| r.entry).collect::<Vec<_>>(),
            [ids[0], ids[2]]
        );
        // A span of minutes (a late wake): each minute's runs, as before.
        let (_, runs) = agenda.advance(UtcMinute(6));
        assert_eq!(
            runs.iter().map(|r| r.minute.0).collect::<Vec<_>>(),
            [4, 4, 5, 5, 6, 6]
        );
    }

    #[test]
    fn heap_items_order_by_minute_then_place_before_and_after_1970() {
        let mut heap = Heap::default();
        for (minute, index) in [(5, 2), (-3, 9), (5, 1), (i64::from(i32::MAX), 0), (0, 7)] {
            heap.push(minute, index);
        }
        heap.push(i64::from(i32::MAX) + 1, 3); // past the year 6053: never
        let mut order = Vec::new();
        while let Some(item) = heap.peek() {
            order.push(item);
            heap.pop();
        }
        assert_eq!(
            order,
            [(-3, 9), (0, 7), (5, 1), (5, 2), (i64::from(i32::MAX), 0)]
        );
    }

    #[test]
    fn a_stale_item_for_a_reused_place_never_runs_its_new_entry_twice_even_run_once() {
        let daily = match crate::schedule::parse_expression("0 1 * * *", 0).unwrap() {
            crate::schedule::When::Periodic(s) => s,
            other => unreachable!("{other}"),
        };
        let mut agenda: Agenda<&str> = Agenda::new(UtcMinute(0), Zone::utc());
        let old = agenda.insert(daily, None, "old");
        agenda.remove(old);
        // The new entry takes the place and the same next fire time: two items, one place.
        let new = agenda.insert(daily, None, "new");
        assert_eq!(agenda.fixed.items.len(), 2);
        let runs = agenda.apply(Step::RunOnce {
            class: Class::FixedTime,
            to: UtcMinute(180),
        });
        assert_eq!(runs.iter().map(|r| r.entry).collect::<Vec<_>>(), [new]);
        assert_eq!(agenda.next_due(), Some(UtcMinute(60 + 1440)));
    }

    #[test]
    fn an_entrys_own_zone_goes_with_it_and_not_to_the_entry_in_its_place() {
        let midnight = match crate::schedule::parse_expression("0 0 * * *", 0).unwrap() {
            crate::schedule::When::Periodic(s) => s,
            other => unreachable!("{other}"),
        };
        let tokyo = Zone::get("Asia/Tokyo").unwrap();
        let mut agenda: Agenda<&str> = Agenda::new(UtcMinute(0), Zone::utc());
        let zoned = agenda.insert(midnight, Some(tokyo), "tokyo");
        assert_eq!(
            agenda.get(zoned).and_then(|e| e.1).map(Zone::name),
            Some("Asia/Tokyo")
        );
        // Midnight in Tokyo is 15:00 UTC.
        assert_eq!(agenda.next_due(), Some(UtcMinute(15 * 60)));
        agenda.remove(zoned);
        let local = agenda.insert(midnight, None, "utc");
        assert_eq!(local.index(), zoned.index(), "the place is reused");
        assert!(agenda.get(local).is_some_and(|e| e.1.is_none()));
        assert!(agenda.zones.is_empty());
        assert_eq!(agenda.next_due(), Some(UtcMinute(24 * 60)));
    }

    #[test]
    fn free_places_are_taken_lowest_first_and_the_table_shrinks_from_its_end() {
        let mut agenda: Agenda<u32> = Agenda::new(UtcMinute(0), Zone::utc());
        let ids: Vec<EntryId> = (0..6)
            .map(|i| agenda.insert(every_minute(), None, i))
            .collect();
        for &id in &ids[1..] {
            agenda.remove(id);
        }
        let (a, b) = (
            agenda.insert(every_minute(), None, 10),
            agenda.insert(every_minute(), None, 11),
        );
        assert_eq!(
            (a.index(), b.index()),
            (1, 2),
            "a file's entries in line order"
        );
        agenda.shrink();
        assert_eq!(agenda.slots.len(), 3);
        assert_eq!(agenda.len(), 3);
        let c = agenda.insert(every_minute(), None, 12);
        assert_eq!(c.index(), 3);
        assert_ne!(
            c, ids[3],
            "a place past the shrunk end keeps its generation"
        );
    }
}
