//! The keyed hash of a chunk's text, for a fingerprint: two different texts get the same value
//! with a chance of about 2^-63 for a key the writer of the texts does not know, and the key
//! never leaves the process.
//!
//! Two layers. Each block of [`BLOCK`] bytes (the last zero-padded to whole 16-byte pairs) is
//! reduced to 128 bits by NH, the first layer of UMAC (Black, Halevi, Krawczyk, Krovetz and
//! Rogaway, "UMAC: Fast and Secure Message Authentication", CRYPTO '99): the sum over the
//! block's pairs of 64-bit words `(m0 + k0) * (m1 + k1)`, each addition modulo 2^64 and the
//! products summed modulo 2^128, with a key word for each word of the block. For two blocks of
//! the same length that differ, the sums are equal for at most a 2^-64 part of the keys. Then
//! the text's length and the blocks' sums go through std's SipHash with a key of its own: texts
//! of different lengths differ there, and texts of one length collide only if the sums of the
//! first block where they differ collide, or SipHash's values do.
//!
//! NH reads each 16 bytes with one multiplication, where SipHash takes about forty
//! instructions: hashing the chunks was a seventh of the instructions of loading 100,000
//! entries with 110-byte commands (docs/daemon.md).
//!
//! Pure: the key is drawn by [`Keys::new`] from std's per-process random keys.

use std::hash::{BuildHasher, Hasher, RandomState};

/// Bytes a first-layer sum covers (a multiple of 16).
const BLOCK: usize = 256;

/// The two keys: NH's, a word for each word of a block, and SipHash's.
#[derive(Clone)]
pub(super) struct Keys {
    nh: [u64; BLOCK / 8],
    sip: RandomState,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A key is not shown.
        f.debug_struct("Keys").finish_non_exhaustive()
    }
}

impl Keys {
    /// Fresh keys: NH's words are SipHash's values of their index under another fresh key
    /// (std draws the first key of a process from the system's random source).
    pub(super) fn new() -> Keys {
        let words = RandomState::new();
        Keys {
            nh: std::array::from_fn(|i| words.hash_one(i)),
            sip: RandomState::new(),
        }
    }

    /// The text's value.
    pub(super) fn hash(&self, text: &[u8]) -> u64 {
        let mut outer = self.sip.build_hasher();
        outer.write_usize(text.len());
        let mut blocks = text.chunks_exact(BLOCK);
        for block in &mut blocks {
            outer.write_u128(self.nh(block));
        }
        let rest = blocks.remainder();
        if !rest.is_empty() {
            let mut padded = [0u8; BLOCK];
            padded[..rest.len()].copy_from_slice(rest);
            outer.write_u128(self.nh(&padded[..rest.len().next_multiple_of(16)]));
        }
        outer.finish()
    }

    /// NH of a block of whole 16-byte pairs, at most [`BLOCK`] bytes.
    fn nh(&self, block: &[u8]) -> u128 {
        let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
        block
            .chunks_exact(16)
            .zip(self.nh.chunks_exact(2))
            .fold(0u128, |sum, (pair, key)| {
                let a = word(&pair[..8]).wrapping_add(key[0]);
                let b = word(&pair[8..]).wrapping_add(key[1]);
                sum.wrapping_add(u128::from(a) * u128::from(b))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_hash_alike_and_a_change_of_any_byte_or_length_shows() {
        let keys = Keys::new();
        // Over two blocks and a part of a third, so every way through the code is taken.
        let text: Vec<u8> = (0..2 * BLOCK + 37).map(|i| (i * 7 % 251) as u8).collect();
        let value = keys.hash(&text);
        assert_eq!(keys.hash(&text.clone()), value);
        for at in 0..text.len() {
            let mut changed = text.clone();
            changed[at] ^= 1;
            assert_ne!(keys.hash(&changed), value, "byte {at}");
        }
        // The padding is not the text: zeros written out are a different length.
        let mut longer = text.clone();
        longer.push(0);
        assert_ne!(keys.hash(&longer), value);
        assert_ne!(keys.hash(&text[..text.len() - 1]), value);
        assert_ne!(keys.hash(b""), keys.hash(&[0]));
    }

    #[test]
    fn another_key_gives_another_value() {
        let text = b"0 * * * * root run-parts /etc/cron.hourly\n".repeat(20);
        assert_ne!(Keys::new().hash(&text), Keys::new().hash(&text));
        let keys = Keys::new();
        assert_eq!(keys.clone().hash(&text), keys.hash(&text));
    }

    #[test]
    fn nh_sums_the_products_of_each_pair_of_words_plus_their_keys() {
        let keys = Keys::new();
        let block: Vec<u8> = (0..32u8).collect();
        let word = |i: usize| u64::from_le_bytes(block[i * 8..i * 8 + 8].try_into().unwrap());
        let term = |i: usize| {
            u128::from(word(i).wrapping_add(keys.nh[i]))
                * u128::from(word(i + 1).wrapping_add(keys.nh[i + 1]))
        };
        assert_eq!(keys.nh(&block), term(0).wrapping_add(term(2)));
    }
}
