//! The program's allocator: glibc's, except in a job child, which allocates from memory of
//! its own (an arena mapped after the fork) so that it copies none of the daemon's heap.
//!
//! Why: a job child is a forked copy of the daemon and shares its heap pages until one of the
//! two writes a page. glibc's malloc hands the child the free chunks the daemon left all over
//! its heap, and writes each chunk's header, so each small allocation of the child copied a
//! page of the daemon: 17 of the 53 page faults of a `--no-pam` job child (`perf record -e
//! page-faults` over a burst: docs/daemon.md). Allocated one after the other from fresh pages,
//! the same allocations touch a few pages that the kernel hands out zeroed.
//!
//! The arena: [`ARENA_BYTES`] of address space mapped without reserve (a page costs only once
//! it is written). A small block (16 B to 2 KiB) is rounded up to its size class and, freed,
//! waits on its class's list for the next block of that size; a larger one is cut from the
//! cursor, which moves up, and gives its room back only when it is freed as the last block (a
//! short process frees its latest temporaries first). So the arena bounds what a child holds
//! in it; past that, and for a block glibc gave (the daemon's, before the fork), the child goes
//! to glibc as before. A spin lock keeps the state whole should a thread ever allocate; a job
//! child has one thread. A process that never calls [`enter`] (the daemon, crontab(1)) pays
//! one load of a zero per call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The arena's size: what a job child's allocations reach (a 64 KiB output buffer, the clone
/// stack of the shell's start, the environment, the log lines and the mail's header) many
/// times over; beyond it, glibc.
pub const ARENA_BYTES: usize = 1 << 20;

/// Small blocks are rounded up to one of these sizes (16 bytes to 2 KiB, powers of two), and
/// a freed one waits on its size's list for the next block of that size: a loop that makes and
/// drops small temporaries (a poll's registry each time round) reuses the same few blocks.
const CLASSES: usize = 8;
const SMALLEST: usize = 16;
const LARGEST_SMALL: usize = SMALLEST << (CLASSES - 1);

/// The class of a block of `layout`, if it is small (and needs no more than 16-byte
/// alignment, which every small block has).
fn class_of(layout: Layout) -> Option<usize> {
    if layout.size() > LARGEST_SMALL || layout.align() > SMALLEST {
        return None;
    }
    let rounded = layout.size().max(SMALLEST).next_power_of_two();
    Some(rounded.trailing_zeros() as usize - SMALLEST.trailing_zeros() as usize)
}

/// What the arena's lock guards.
#[derive(Debug)]
struct State {
    /// Where the next block may start.
    next: usize,
    /// The highest the cursor has been: memory below it may have been written, memory above
    /// it is as the kernel mapped it (zeros).
    high: usize,
    /// The first freed small block of each class (0: none); each holds the address of the
    /// next in its first word.
    free: [usize; CLASSES],
}

/// A range of memory allocated from by a cursor, with lists of freed small blocks.
#[derive(Debug)]
struct Arena {
    /// The range, set once before the first block; `end` is 0 while there is none, and is read
    /// without the lock (the one cost to a process that has no arena).
    start: AtomicUsize,
    end: AtomicUsize,
    locked: AtomicBool,
    state: UnsafeCell<State>,
}

// SAFETY: `state` is only reached through `Arena::locked`, which gives one thread at a time
// the state (an acquire swap to take it, a release store to give it back); the range is set
// through atomics.
unsafe impl Sync for Arena {}

impl Arena {
    const fn none() -> Arena {
        Arena {
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            locked: AtomicBool::new(false),
            state: UnsafeCell::new(State {
                next: 0,
                high: 0,
                free: [0; CLASSES],
            }),
        }
    }

    /// Allocates from `[start, start + len)`, which must be zeroed memory of this process that
    /// nothing else uses for as long as the arena's blocks are in use.
    fn set(&self, start: usize, len: usize) {
        self.locked(|state| {
            state.next = start;
            state.high = start;
            state.free = [0; CLASSES];
        });
        self.start.store(start, Ordering::Release);
        self.end.store(start + len, Ordering::Release);
    }

    /// Runs `f` on the state, alone. `f` allocates nothing and does not panic.
    fn locked<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: the lock is ours until the store below, so no other reference to the state
        // exists meanwhile.
        let result = f(unsafe { &mut *self.state.get() });
        self.locked.store(false, Ordering::Release);
        result
    }

    #[inline]
    fn holds(&self, block: *mut u8) -> bool {
        let at = block as usize;
        at >= self.start.load(Ordering::Acquire) && at < self.end.load(Ordering::Acquire)
    }

    /// A block for `layout`, or None when there is no range or no room left. A block that must
    /// read as zeros is zeroed here if it was used before, and otherwise starts above every
    /// byte given out before.
    ///
    /// Only the look at `end` is inlined where a program allocates: the rest, once, out of
    /// line (inlined into every allocation, it made the daemon's code 236 KiB larger).
    #[inline]
    fn alloc(&self, layout: Layout, zeroed: bool) -> Option<*mut u8> {
        let end = self.end.load(Ordering::Acquire);
        if end == 0 {
            return None;
        }
        self.alloc_within(end, layout, zeroed)
    }

    #[inline(never)]
    fn alloc_within(&self, end: usize, layout: Layout, zeroed: bool) -> Option<*mut u8> {
        let class = class_of(layout);
        let (block, reused) = self.locked(|state| {
            if let Some(class) = class {
                let first = state.free[class];
                if first != 0 {
                    // SAFETY: a block on a list is a freed block of the arena, at least 16
                    // bytes long and aligned to 16, whose first word its free wrote.
                    state.free[class] = unsafe { *(first as *const usize) };
                    return Some((first, true));
                }
            }
            let (size, align) = match class {
                Some(class) => (SMALLEST << class, SMALLEST),
                None => (layout.size(), layout.align()),
            };
            let from = if zeroed {
                state.next.max(state.high)
            } else {
                state.next
            };
            let start = from.checked_add(align - 1)? & !(align - 1);
            let stop = start.checked_add(size)?;
            if stop > end {
                return None;
            }
            state.next = stop;
            state.high = state.high.max(stop);
            Some((start, false))
        })?;
        if zeroed && reused {
            // SAFETY: the block is ours alone now, and at least layout.size() bytes long.
            unsafe { ptr::write_bytes(block as *mut u8, 0, layout.size()) };
        }
        Some(block as *mut u8)
    }

    /// Puts a small block on its list; a large one gives its room back if it is the last.
    #[inline(never)]
    fn free(&self, block: *mut u8, layout: Layout) {
        let start = block as usize;
        self.locked(|state| match class_of(layout) {
            Some(class) => {
                // SAFETY: a freed small block of the arena, 16 bytes or more, aligned to 16:
                // its first word is ours to write until it is given out again.
                unsafe { *(start as *mut usize) = state.free[class] };
                state.free[class] = start;
            }
            None => {
                if state.next == start + layout.size() {
                    state.next = start;
                }
            }
        });
    }

    /// Makes the block `new_size` long where it is, if it can: a small block within its class,
    /// a large one if it is the last and the room is there (and stays large).
    #[inline(never)]
    fn resize_in_place(&self, block: *mut u8, layout: Layout, new_size: usize) -> bool {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return false;
        };
        match (class_of(layout), class_of(new_layout)) {
            (Some(class), Some(new_class)) => class == new_class,
            (None, None) => {
                let start = block as usize;
                let Some(stop) = start.checked_add(new_size) else {
                    return false;
                };
                let end = self.end.load(Ordering::Acquire);
                self.locked(|state| {
                    let last = state.next == start + layout.size();
                    if last && stop <= end {
                        state.next = stop;
                        state.high = state.high.max(stop);
                        return true;
                    }
                    // Another large block that shrinks keeps its place (its tail stays unused
                    // until the process exits).
                    !last && new_size <= layout.size()
                })
            }
            _ => false,
        }
    }
}

static ARENA: Arena = Arena::none();

/// glibc's allocator, with the job child's arena in front of it once [`enter`] has run.
#[derive(Debug)]
pub struct JobArena;

#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: JobArena = JobArena;

/// Maps the arena and makes every later allocation of this process come from it while it has
/// room. Called once, first thing in a job child (a single-threaded process that ends with
/// `_exit`, so the arena is never unmapped under a live block). Without the mapping (no
/// memory), the child goes on with glibc's heap as before.
pub fn enter() {
    // SAFETY: a new private anonymous mapping at an address the kernel chooses: it overlaps
    // nothing of this process. MAP_NORESERVE: no page is committed before it is written.
    let base = unsafe {
        libc::mmap(
            ptr::null_mut(),
            ARENA_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base != libc::MAP_FAILED {
        // The mapping is new, zeroed, and stays for the process's life.
        ARENA.set(base as usize, ARENA_BYTES);
    }
}

// SAFETY: a block comes either from System, with the caller's layout (and goes back to
// System), or from the arena, aligned as asked and at least as long: a range of its mapping
// that the cursor has moved past (so no other block overlaps it), or a freed small block of
// the same class taken off its list (freed by its owner's dealloc, so no live block is there).
// Room is given back (the cursor moved down) only by a large block's own dealloc or realloc,
// and only while it is the last block, so no live or listed block lies above the cursor. A
// zeroed block lies above every byte ever given out, in memory the kernel zeroed, or is zeroed
// here. The mapping stays for the process's life.
unsafe impl GlobalAlloc for JobArena {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match ARENA.alloc(layout, false) {
            Some(block) => block,
            // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
            None => unsafe { System.alloc(layout) },
        }
    }

    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match ARENA.alloc(layout, true) {
            Some(block) => block,
            // SAFETY: as alloc.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ARENA.holds(ptr) {
            ARENA.free(ptr, layout);
        } else {
            // SAFETY: not the arena's, so System gave it, with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ARENA.holds(ptr) {
            // SAFETY: the caller's contract, passed on: ptr is the arena's block of this layout.
            unsafe { self.realloc_in_arena(ptr, layout, new_size) }
        } else {
            // SAFETY: System gave it, with this layout.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

impl JobArena {
    /// GlobalAlloc::realloc of a block of the arena, out of line.
    ///
    /// # Safety
    /// As `GlobalAlloc::realloc`, for a block the arena gave.
    #[inline(never)]
    unsafe fn realloc_in_arena(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ARENA.resize_in_place(ptr, layout, new_size) {
            return ptr;
        }
        // SAFETY: the caller guarantees that new_size with layout's alignment is a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as alloc.
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are live and distinct (the old one is not freed yet), and
            // each holds at least the bytes copied.
            unsafe { ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size)) };
            ARENA.free(ptr, layout);
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arena over a zeroed buffer of `len` bytes (kept alive by the returned Vec).
    fn arena(len: usize) -> (Arena, Vec<u128>) {
        let mut buffer = vec![0u128; len / 16];
        let arena = Arena::none();
        arena.set(buffer.as_mut_ptr() as usize, len);
        (arena, buffer)
    }

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn no_range_no_block() {
        let arena = Arena::none();
        assert_eq!(arena.alloc(layout(8, 8), false), None);
        assert!(!arena.holds(8 as *mut u8));
    }

    #[test]
    fn classes_are_powers_of_two_from_16_to_2_kib() {
        assert_eq!(class_of(layout(1, 1)), Some(0));
        assert_eq!(class_of(layout(16, 8)), Some(0));
        assert_eq!(class_of(layout(17, 1)), Some(1));
        assert_eq!(class_of(layout(2048, 16)), Some(7));
        assert_eq!(class_of(layout(2049, 1)), None, "large");
        assert_eq!(class_of(layout(64, 32)), None, "aligned beyond 16");
    }

    #[test]
    fn blocks_are_aligned_disjoint_and_inside() {
        let (arena, mut buffer) = arena(16384);
        let base = buffer.as_mut_ptr() as usize;
        let mut blocks = Vec::new();
        for (size, align) in [
            (3, 1),
            (8, 8),
            (5, 2),
            (40, 32),
            (1, 1),
            (3000, 8),
            (16, 16),
        ] {
            let block = arena.alloc(layout(size, align), false).unwrap() as usize;
            assert_eq!(block % align, 0, "{size} bytes aligned {align}");
            assert!(block >= base && block + size <= base + 16384);
            blocks.push((block, size));
        }
        for (i, &(a, a_len)) in blocks.iter().enumerate() {
            for &(b, b_len) in &blocks[i + 1..] {
                assert!(
                    a + a_len <= b || b + b_len <= a,
                    "{a:#x}+{a_len} overlaps {b:#x}+{b_len}"
                );
            }
            assert!(arena.holds(a as *mut u8));
        }
    }

    #[test]
    fn a_freed_small_block_is_the_next_of_its_class_and_only_of_it() {
        let (arena, _buffer) = arena(4096);
        let a = arena.alloc(layout(24, 8), false).unwrap();
        let _b = arena.alloc(layout(24, 8), false).unwrap();
        arena.free(a, layout(24, 8));
        let other_class = arena.alloc(layout(100, 8), false).unwrap();
        assert_ne!(other_class, a);
        assert_eq!(
            arena.alloc(layout(20, 4), false),
            Some(a),
            "same class (32 bytes)"
        );
    }

    #[test]
    fn a_loop_of_temporaries_stays_in_a_few_blocks() {
        // A poll loop's shape: each time round, two small vectors and a result made, then
        // dropped in another order than made.
        let (arena, _buffer) = arena(8192);
        let mut highest = 0;
        for _ in 0..10_000 {
            let polls = arena.alloc(layout(32, 8), false).unwrap();
            let tokens = arena.alloc(layout(4, 1), false).unwrap();
            let ready = arena.alloc(layout(8, 4), false).unwrap();
            arena.free(polls, layout(32, 8));
            arena.free(tokens, layout(4, 1));
            highest = highest.max(ready as usize);
            arena.free(ready, layout(8, 4));
        }
        let first = arena.start.load(Ordering::Relaxed);
        assert!(highest - first < 256, "{} bytes in use", highest - first);
    }

    #[test]
    fn full_arena_answers_none_and_the_last_large_block_gives_its_room_back() {
        let (arena, _buffer) = arena(8192);
        let big = layout(4096, 8);
        let a = arena.alloc(big, false).unwrap();
        let b = arena.alloc(big, false).unwrap();
        assert_eq!(arena.alloc(layout(1, 1), false), None, "no room left");
        // `a` is not the last block: freeing it gives nothing back.
        arena.free(a, big);
        assert_eq!(arena.alloc(layout(1, 1), false), None);
        // `b` is: its room is the next block's.
        arena.free(b, big);
        assert_eq!(arena.alloc(big, false), Some(b));
    }

    #[test]
    fn a_zeroed_block_reads_zeros_whatever_was_there() {
        let (arena, _buffer) = arena(16384);
        for size in [24, 3000] {
            let a = arena.alloc(layout(size, 8), false).unwrap();
            // SAFETY: a is `size` bytes of the arena's buffer, given to this test.
            unsafe { ptr::write_bytes(a, 0xAA, size) };
            arena.free(a, layout(size, 8));
            let zeroed = arena.alloc(layout(size, 8), true).unwrap();
            // SAFETY: `size` bytes of the buffer, given out as this block.
            let bytes = unsafe { std::slice::from_raw_parts(zeroed, size) };
            assert!(bytes.iter().all(|&b| b == 0), "{size} bytes");
        }
    }

    #[test]
    fn only_the_last_large_block_grows_in_place() {
        let (arena, _buffer) = arena(16384);
        let a = arena.alloc(layout(3000, 8), false).unwrap();
        let b = arena.alloc(layout(3000, 8), false).unwrap();
        assert!(
            !arena.resize_in_place(a, layout(3000, 8), 4000),
            "a block follows a"
        );
        assert!(
            arena.resize_in_place(a, layout(3000, 8), 2900),
            "a shrinks where it is"
        );
        assert!(
            arena.resize_in_place(b, layout(3000, 8), 9000),
            "b is last, and it fits"
        );
        assert!(
            !arena.resize_in_place(b, layout(9000, 8), 20000),
            "past the end"
        );
        assert!(arena.resize_in_place(b, layout(9000, 8), 2504));
        assert_eq!(
            arena.alloc(layout(3000, 8), false),
            Some(b.wrapping_add(2504))
        );
        // Small blocks stay in their class.
        let s = arena.alloc(layout(20, 8), false).unwrap();
        assert!(arena.resize_in_place(s, layout(20, 8), 32));
        assert!(!arena.resize_in_place(s, layout(32, 8), 33));
    }
}
