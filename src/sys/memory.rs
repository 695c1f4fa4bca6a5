//! The daemon's own memory handed back to the kernel when it stops needing it: glibc's free
//! heap pages after a load or a large answer.

/// Hands the free memory at the top and in the middle of the heap back to the kernel
/// (`malloc_trim`): after a reload the parser's buffers and the replaced entries are free, and
/// glibc would otherwise keep their pages, so the daemon's size would follow its largest load,
/// not its entries.
pub fn give_back_free_memory() {
    // SAFETY: malloc_trim only releases free pages of glibc's own arenas; it touches no memory
    // the program owns, and the daemon is single-threaded.
    unsafe { libc::malloc_trim(0) };
}
