//! Maps keyed by [`EntryId`](super::EntryId): the daemon looks entries up by id on every
//! reload and every fire, so the hash is one multiplication. Ids are handed out in sequence
//! by the agenda, never taken from input, so no one can choose them to collide.
//!
//! Pure.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing of a `u64`: spreads sequential ids over the whole word, so the table's
/// top bits (which hashbrown probes with) differ.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b) ^ self.0.rotate_left(8));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A `HashMap` with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    #[test]
    fn sequential_ids_differ_in_their_top_bits() {
        let build = BuildHasherDefault::<IdHasher>::default();
        let tops: std::collections::HashSet<u64> =
            (0..1024u64).map(|n| build.hash_one(n) >> 57).collect();
        // 1,024 ids over 128 top-7-bit values: all of them used, as with a random hash.
        assert_eq!(tops.len(), 128);
        let mut h = IdHasher::default();
        7u64.hash(&mut h);
        assert_ne!(h.finish(), 7);
    }
}
