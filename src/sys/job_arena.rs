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
//! it is written), allocated from by moving a cursor up. A block freed while it is the last
//! one gives its room back (most frees of a short process are of its latest temporaries); any
//! other freed block stays used until the child exits. So the arena bounds what a child holds
//! in it; past that, and for a block glibc gave (the daemon's, before the fork), the child goes
//! to glibc as before. A process that never calls [`enter`] (the daemon, crontab(1)) pays one
//! load of a zero per call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The arena's size: what a job child's allocations reach (a 64 KiB output buffer, the clone
/// stack of the shell's start, the environment, the log lines and the mail's header) many
/// times over; beyond it, glibc.
pub const ARENA_BYTES: usize = 1 << 20;

/// A range of memory allocated from by a cursor. `end` is 0 while there is no range.
#[derive(Debug)]
struct Arena {
    start: AtomicUsize,
    end: AtomicUsize,
    /// Where the next block may start.
    next: AtomicUsize,
    /// The highest the cursor has been: the memory below it may have been written and given
    /// back, the memory above it is as the kernel mapped it (zeros).
    high: AtomicUsize,
}

impl Arena {
    const fn none() -> Arena {
        Arena {
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            high: AtomicUsize::new(0),
        }
    }

    /// Allocates from `[start, start + len)`, which must be zeroed memory of this process
    /// that nothing else uses for as long as the arena's blocks are in use.
    fn set(&self, start: usize, len: usize) {
        self.start.store(start, Relaxed);
        self.next.store(start, Relaxed);
        self.high.store(start, Relaxed);
        self.end.store(start + len, Relaxed);
    }

    fn holds(&self, block: *mut u8) -> bool {
        let at = block as usize;
        at >= self.start.load(Relaxed) && at < self.end.load(Relaxed)
    }

    /// A block for `layout`, or None when there is no range or no room left. A block that must
    /// read as zeros starts above every byte given out before, so it is never written here.
    fn alloc(&self, layout: Layout, zeroed: bool) -> Option<*mut u8> {
        let end = self.end.load(Relaxed);
        if end == 0 {
            return None;
        }
        let mut current = self.next.load(Relaxed);
        loop {
            let from = if zeroed {
                current.max(self.high.load(Relaxed))
            } else {
                current
            };
            let start = from.checked_add(layout.align() - 1)? & !(layout.align() - 1);
            let stop = start.checked_add(layout.size())?;
            if stop > end {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(current, stop, Relaxed, Relaxed)
            {
                Ok(_) => {
                    self.high.fetch_max(stop, Relaxed);
                    return Some(start as *mut u8);
                }
                Err(now) => current = now,
            }
        }
    }

    /// Gives the block's room back if it is the last one.
    fn free(&self, block: *mut u8, size: usize) {
        let start = block as usize;
        let _ = self
            .next
            .compare_exchange(start + size, start, Relaxed, Relaxed);
    }

    /// Grows or shrinks the block where it is, if it is the last one and the room is there.
    fn resize_in_place(&self, block: *mut u8, size: usize, new_size: usize) -> bool {
        let start = block as usize;
        let Some(stop) = start.checked_add(new_size) else {
            return false;
        };
        if stop > self.end.load(Relaxed) {
            return false;
        }
        let resized = self
            .next
            .compare_exchange(start + size, stop, Relaxed, Relaxed)
            .is_ok();
        if resized {
            self.high.fetch_max(stop, Relaxed);
        }
        resized
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
// System), or from the arena: a range of its mapping, aligned as asked, that the cursor has
// moved past, so no other block overlaps it until its room is given back; room is given back
// (the cursor moved down) only by the block's own dealloc or realloc, and only while it is the
// last block, so memory the cursor covers again belongs to no live block. A zeroed block lies
// above every byte ever given out, in memory the kernel zeroed. The mapping stays for the
// process's life. The atomics keep this true even if a thread ran; a job child has none.
unsafe impl GlobalAlloc for JobArena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match ARENA.alloc(layout, false) {
            Some(block) => block,
            // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match ARENA.alloc(layout, true) {
            Some(block) => block,
            // SAFETY: as alloc.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ARENA.holds(ptr) {
            ARENA.free(ptr, layout.size());
        } else {
            // SAFETY: not the arena's, so System gave it, with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !ARENA.holds(ptr) {
            // SAFETY: System gave it, with this layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        if ARENA.resize_in_place(ptr, layout.size(), new_size) || new_size <= layout.size() {
            // The last block took the room it needs; any other block that shrinks keeps its
            // place (its tail stays unused until the process exits).
            return ptr;
        }
        // SAFETY: the caller guarantees that new_size with layout's alignment is a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as alloc.
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are live and distinct (the old one is not given back yet),
            // and each holds at least the bytes copied.
            unsafe { ptr::copy_nonoverlapping(ptr, moved, layout.size()) };
            ARENA.free(ptr, layout.size());
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arena over a zeroed buffer of `len` bytes (kept alive by the returned Vec).
    fn arena(len: usize) -> (Arena, Vec<u64>) {
        let mut buffer = vec![0u64; len / 8];
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
    fn blocks_are_aligned_disjoint_and_inside() {
        let (arena, mut buffer) = arena(4096);
        let base = buffer.as_mut_ptr() as usize;
        let mut blocks = Vec::new();
        for (size, align) in [(3, 1), (8, 8), (5, 2), (40, 32), (1, 1), (16, 16)] {
            let block = arena.alloc(layout(size, align), false).unwrap() as usize;
            assert_eq!(block % align, 0, "{size} bytes aligned {align}");
            assert!(block >= base && block + size <= base + 4096);
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
    fn full_arena_answers_none_and_the_last_block_gives_its_room_back() {
        let (arena, _buffer) = arena(64);
        let a = arena.alloc(layout(32, 8), false).unwrap();
        let b = arena.alloc(layout(32, 8), false).unwrap();
        assert_eq!(
            arena.alloc(layout(1, 1), false),
            None,
            "no room past the end"
        );
        // `a` is not the last block: freeing it gives nothing back.
        arena.free(a, 32);
        assert_eq!(arena.alloc(layout(1, 1), false), None);
        // `b` is: its room is the next block's.
        arena.free(b, 32);
        assert_eq!(arena.alloc(layout(32, 8), false), Some(b));
    }

    #[test]
    fn a_zeroed_block_never_reuses_written_room() {
        let (arena, _buffer) = arena(256);
        let a = arena.alloc(layout(64, 8), false).unwrap();
        // SAFETY: a is 64 bytes of the arena's buffer, given to this test.
        unsafe { ptr::write_bytes(a, 0xAA, 64) };
        arena.free(a, 64);
        let zeroed = arena.alloc(layout(64, 8), true).unwrap();
        assert!(zeroed as usize >= a as usize + 64, "above what was written");
        // SAFETY: 64 bytes of the buffer, given out as this block.
        let bytes = unsafe { std::slice::from_raw_parts(zeroed, 64) };
        assert!(bytes.iter().all(|&b| b == 0));
        // The room jumped over stays unused; the zeroed block's own is given back as usual.
        arena.free(zeroed, 64);
        assert_eq!(arena.alloc(layout(8, 8), false), Some(zeroed));
    }

    #[test]
    fn only_the_last_block_resizes_in_place() {
        let (arena, _buffer) = arena(128);
        let a = arena.alloc(layout(16, 8), false).unwrap();
        let b = arena.alloc(layout(16, 8), false).unwrap();
        assert!(!arena.resize_in_place(a, 16, 32), "a block follows a");
        assert!(arena.resize_in_place(b, 16, 100), "b is last, and 100 fit");
        assert!(!arena.resize_in_place(b, 100, 200), "past the end");
        assert!(arena.resize_in_place(b, 100, 8));
        assert_eq!(arena.alloc(layout(8, 8), false), Some(b.wrapping_add(8)));
    }
}
