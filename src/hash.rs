//! The crate's one stable hash: FNV-1a (64 bits) and splitmix64's finaliser. Values made from
//! them outlive a release — `~` picks in crontabs (`schedule`), entry ids and run weights in the
//! cluster's database (`cluster::entry_id`) — so they must never change: std's hasher makes no
//! such promise. Tests pin known values (`the_host_seed_is_a_fixed_function_of_the_name`,
//! `random_picks_are_the_same_in_every_release`, `ids_and_weights_are_the_same_in_every_release`).
//!
//! Pure.

#![forbid(unsafe_code)]

/// FNV-1a's offset basis: the hash of no bytes.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `bytes`, continuing from `hash` ([`FNV_OFFSET`] to start afresh).
pub fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// splitmix64's finaliser: FNV's last bytes reach only its low bits; this spreads them over the
/// whole word (before a modulo, or a comparison of whole weights).
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_gives_the_reference_values() {
        // From the FNV reference test vectors (64-bit FNV-1a).
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
        // Continuing from a hash is hashing the concatenation.
        assert_eq!(
            fnv1a(fnv1a(FNV_OFFSET, b"foo"), b"bar"),
            fnv1a(FNV_OFFSET, b"foobar")
        );
    }
}
