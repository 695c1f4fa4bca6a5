//! The daemon's own memory handed back to the kernel when it stops needing it: glibc's free
//! heap pages after a load, and the file pages (code, constants) mapped on the way that it does
//! not run again; and bytes a fork does not copy ([`UnforkedBytes`]).

use std::io;
use std::ops::Deref;
use std::ptr::NonNull;

/// Hands the free memory at the top and in the middle of the heap back to the kernel
/// (`malloc_trim`): after a reload the parser's buffers and the replaced entries are free, and
/// glibc would otherwise keep their pages, so the daemon's size would follow its largest load,
/// not its entries.
pub fn give_back_free_memory() {
    // SAFETY: malloc_trim only releases free pages of glibc's own arenas; it touches no memory
    // the program owns, and the daemon is single-threaded.
    unsafe { libc::malloc_trim(0) };
}

/// Unmaps the pages of files this process maps read-only (the binary's code and constants,
/// libc's, PAM's and NSS's modules) and has not modified; each page is mapped again at its next
/// use. On a fault the kernel maps up to 64 KiB of cached file around the page that faulted, so
/// after the start and a load most of the binary is mapped though little of it runs again (the
/// parser, the setup, the error paths): mapped, those pages count in the daemon's size and are
/// kept from reclaim as pages of a running program; unmapped, they stay in the page cache,
/// reclaimable like any file page. Returns the kilobytes unmapped. Never inlined: the
/// recording of the link order (benches/link-order) starts counting the daemon's code here.
#[inline(never)]
pub fn unmap_idle_file_pages() -> usize {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let mut unmapped = 0;
    for (start, end) in unmodified_read_only_file_mappings(&smaps) {
        // SAFETY: the range is one whole mapping of this process, private, backed by a file,
        // not writable, and without an anonymous page, resident or swapped (smaps says so; the
        // daemon is single-threaded, so nothing maps or writes between the read and this call):
        // every page is the file's page as the page cache holds it (ld.so's relocations made
        // the pages they wrote anonymous, and those mappings are skipped). MADV_DONTNEED on
        // such a mapping drops only page-table entries; a later read maps the same bytes
        // again, as after the kernel's own reclaim, which may unmap such clean pages at any
        // time.
        let rc =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        if rc == 0 {
            unmapped += end - start;
        }
    }
    unmapped / 1024
}

/// Bytes in an anonymous mapping of their own that a fork leaves out of the child
/// (`MADV_DONTFORK`): the kernel neither copies their page-table entries at the fork nor tears
/// them down at the child's exit, and the daemon writing near them later copies no page a child
/// still shares. For the large read-only data of the daemon's loaded files, which a job child
/// never reads (it gets a copy of its own entry before the fork): without this, each job's fork
/// and exit paid for every page of every loaded file. The child has no mapping at that address
/// at all: reading these bytes there faults (SIGSEGV), so only a type that no job child is
/// given may hold them.
pub struct UnforkedBytes {
    start: NonNull<u8>,
    len: usize,
    /// The mapping's length, `len` rounded up to whole pages (at least one).
    mapped: usize,
}

// SAFETY: the bytes are written once, in `copy_of`, before the value exists, and only read
// afterwards; the mapping is owned by the value alone (unmapped in `drop`).
unsafe impl Send for UnforkedBytes {}
// SAFETY: as above: no method writes through `&self`.
unsafe impl Sync for UnforkedBytes {}

impl UnforkedBytes {
    /// A copy of `bytes` in a new mapping marked `MADV_DONTFORK`. Fails when the kernel gives no
    /// mapping (or refuses the mark, and then the mapping is given back).
    pub fn copy_of(bytes: &[u8]) -> io::Result<UnforkedBytes> {
        let page = page_size();
        let mapped = bytes.len().max(1).div_ceil(page) * page;
        // SAFETY: a new private anonymous mapping at an address the kernel picks: it aliases
        // nothing of this program's; the result is checked before use.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let Some(start) = NonNull::new(start.cast::<u8>()) else {
            return Err(io::Error::other("mmap gave address 0"));
        };
        let unforked = UnforkedBytes {
            start,
            len: bytes.len(),
            mapped,
        };
        // SAFETY: the range is the whole mapping made above, which nothing else knows of yet.
        if unsafe { libc::madvise(start.as_ptr().cast(), mapped, libc::MADV_DONTFORK) } != 0 {
            // Dropped here: unmapped.
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the mapping is `mapped >= bytes.len()` bytes, writable, and cannot overlap
        // `bytes` (it is new); nothing reads it before this copy ends.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), start.as_ptr(), bytes.len());
        }
        Ok(unforked)
    }
}

impl Deref for UnforkedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `start` is a live mapping of `mapped >= len` bytes, the first `len` written
        // in `copy_of` and never again; in a forked child this address is not mapped, which is
        // why no job child is given one of these (see the type's comment).
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl Drop for UnforkedBytes {
    fn drop(&mut self) {
        // SAFETY: the mapping is this value's alone, and no reference into it outlives the
        // value (`deref` borrows from it).
        unsafe { libc::munmap(self.start.as_ptr().cast(), self.mapped) };
    }
}

impl std::fmt::Debug for UnforkedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UnforkedBytes({} bytes)", self.len)
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system; it touches no memory of ours.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(4096)
}

/// The `(start, end)` of each mapping in `smaps` (the text of /proc/PID/smaps) that is private,
/// backed by a file, readable and not writable, and holds no anonymous (modified) page, in
/// memory or swapped out (`Anonymous` counts only the resident ones: a relocated page in swap
/// would be lost).
fn unmodified_read_only_file_mappings(smaps: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    // The mapping being read, while nothing says it was modified.
    let mut candidate = None;
    let mut anonymous_zero = false;
    for line in smaps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((start, end)) = first.split_once('-') {
            // A mapping's header: `start-end perms offset dev inode [path]`.
            let perms = fields.next().unwrap_or("");
            let path = fields.nth(3).unwrap_or("");
            let read_only = matches!(perms, "r--p" | "r-xp");
            candidate = match (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) {
                (Ok(start), Ok(end)) if read_only && path.starts_with('/') => Some((start, end)),
                _ => None,
            };
            anonymous_zero = false;
        } else if first == "Anonymous:" {
            anonymous_zero = fields.next() == Some("0");
        } else if first == "Swap:" {
            // After `Anonymous:` in every kernel's smaps.
            if let (Some(range), true, Some("0")) =
                (candidate.take(), anonymous_zero, fields.next())
            {
                found.push(range);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d0a0000000-55d0a0010000 r--p 00000000 fe:00 100 /usr/sbin/crond
Size:                 64 kB
Rss:                  64 kB
Anonymous:             0 kB
Swap:                  0 kB
55d0a0010000-55d0a0130000 r-xp 00010000 fe:00 100 /usr/sbin/crond
Size:               1152 kB
Rss:                1100 kB
Anonymous:             0 kB
Swap:                  0 kB
55d0a0130000-55d0a0140000 r--p 00130000 fe:00 100 /usr/sbin/crond
Size:                 64 kB
Anonymous:            12 kB
Swap:                  0 kB
55d0a0140000-55d0a0142000 rw-p 00140000 fe:00 100 /usr/sbin/crond
Anonymous:             8 kB
Swap:                  0 kB
55d0a1000000-55d0a1100000 rw-p 00000000 00:00 0                  [heap]
Anonymous:           320 kB
Swap:                  0 kB
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
Anonymous:             0 kB
Swap:                  0 kB
7f0000010000-7f0000020000 r-xp 00000000 fe:00 200 /usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)
Anonymous:             0 kB
Swap:                  0 kB
7fff00000000-7fff00002000 r-xp 00000000 00:00 0                  [vdso]
Anonymous:             0 kB
Swap:                  0 kB
7fff00010000-7fff00011000 r-xp 00000000 fe:00 300 /usr/lib/x86_64-linux-gnu/gconv/breakpoint.so
Anonymous:             4 kB
Swap:                  0 kB
7fff00020000-7fff00030000 r--p 00020000 fe:00 300 /usr/lib/x86_64-linux-gnu/libpam.so.0
Anonymous:             0 kB
Swap:                  8 kB
";

    #[test]
    fn unforked_bytes_read_back_as_copied_whatever_their_length() {
        let page = page_size();
        for len in [0, 1, page - 1, page, page + 1, 20 * page + 7] {
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let unforked = UnforkedBytes::copy_of(&bytes).expect("mapped");
            assert_eq!(&unforked[..], &bytes[..], "{len} bytes");
            assert_eq!(unforked.mapped % page, 0);
            assert!(unforked.mapped >= len.max(1) && unforked.mapped < len.max(1) + page);
        }
    }

    #[test]
    fn a_forked_child_has_no_unforked_bytes() {
        let unforked = UnforkedBytes::copy_of(&[7u8; 10_000]).expect("mapped");
        let address = unforked.as_ptr() as usize;
        // The kernel marks the mapping (smaps' `dc`: do not copy on fork).
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let flags = smaps
            .lines()
            .skip_while(|l| !l.starts_with(&format!("{address:x}-")))
            .find(|l| l.starts_with("VmFlags:"))
            .expect("the mapping in smaps");
        assert!(flags.split_whitespace().any(|f| f == "dc"), "{flags}");
        // A child that reads them dies of SIGSEGV; the parent still reads them.
        // SAFETY: the test harness runs threads, so the child calls only what is safe after a
        // fork of a threaded process: a volatile read (a load from memory) and `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            // SAFETY: see above; if the address is mapped (the mark failed) the read is of the
            // copied bytes and the child exits 0, which fails the test.
            unsafe {
                std::ptr::read_volatile(address as *const u8);
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: waits for the child made above; `status` is a valid out-pointer.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSEGV,
            "the child read the bytes: status {status:#x}"
        );
        assert_eq!(unforked[9_999], 7);
    }

    #[test]
    fn only_unmodified_read_only_mappings_of_files_are_unmapped() {
        assert_eq!(
            unmodified_read_only_file_mappings(SMAPS),
            [
                (0x55d0a0000000, 0x55d0a0010000),
                (0x55d0a0010000, 0x55d0a0130000),
                (0x7f0000010000, 0x7f0000020000),
            ],
            "the binary's constants and code and a (deleted) library's code; not the relocated \
             constants (anonymous pages), the data, the heap, an anonymous mapping, the vdso, \
             code a debugger wrote a breakpoint into, or relocated constants now in swap"
        );
    }

    #[test]
    fn a_mapping_without_its_swap_line_is_not_taken_for_the_next_one() {
        let cut = "1000-2000 r-xp 00000000 fe:00 1 /bin/a\nRss: 4 kB\nAnonymous: 0 kB\n\
                   3000-4000 rw-p 00000000 00:00 0\nAnonymous: 0 kB\nSwap: 0 kB\n";
        assert!(unmodified_read_only_file_mappings(cut).is_empty());
    }
}
