//! The unit tests' global allocator: the system's, counting the bytes each thread has live, so a
//! test can state a memory bound as a figure ("parsing this file never holds more than N bytes")
//! rather than a timing. Test builds only.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // Const-initialised cells with no destructor: touching them never allocates, so the
    // allocator can use them without recursing into itself.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// [`System`], counting.
#[derive(Debug)]
pub struct Counting;

#[global_allocator]
static COUNTING: Counting = Counting;

fn add(delta: isize) {
    // try_with: a thread being torn down has no counters any more; its frees are not counted.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so it keeps
// System's contract; the counting beside it touches only this thread's two cells.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as alloc.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr was allocated by System (through us) with this layout.
        unsafe { System.dealloc(ptr, layout) };
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: ptr was allocated by System (through us) with this layout.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Runs `f` on this thread and returns its result with the most bytes that were live at once
/// during it, above what was live when it started (allocations of this thread only).
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(base));
    let out = f();
    let peak = PEAK.with(Cell::get);
    (out, (peak - base).max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_held_during_the_closure_is_counted_once_freed_or_not() {
        let (kept, peak) = peak_during(|| {
            let freed = vec![0u8; 10_000];
            drop(freed);
            vec![1u8; 50_000]
        });
        assert!((50_000..60_000).contains(&peak), "peak {peak}");
        drop(kept);
    }
}
