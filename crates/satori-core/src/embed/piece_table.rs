//! The layout of a WordPiece vocabulary as a hash table fixed at build time, shared by the
//! build script that lays the bundled vocabulary out and by the tokenizer that reads it: a
//! process then looks pieces up in static data instead of building maps of 30,000 pieces
//! before it can embed its first query.
//!
//! A piece is keyed by whether it continues a word (`##` removed) and its text, as the
//! tokenizer's maps are. Each slot is a little-endian `u32`: `id + 1` in the low half (0:
//! empty) and the high half of the key's hash in the other, so that most probes that do not
//! match (and greedy WordPiece asks mostly for pieces that do not exist) are told apart
//! without reading the text. Probing is linear; a key listed twice keeps its last id, as a
//! map would. Lines end in `\n` alone.

/// Marks a piece that continues a word.
pub const CONTINUATION: &str = "##";

/// The key of one vocabulary line: continuation or not, and the text without the mark.
pub fn key(line: &str) -> (bool, &str) {
    match line.strip_prefix(CONTINUATION) {
        Some(rest) => (true, rest),
        None => (false, line),
    }
}

/// A multiply-rotate hash over eight bytes at a time, from a seed that differs for
/// continuations.
pub fn hash(continuation: bool, piece: &str) -> u32 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = if continuation {
        0x9e37_79b9_7f4a_7c15
    } else {
        0
    };
    let mut add = |word: u64| h = (h.rotate_left(5) ^ word).wrapping_mul(K);
    let mut bytes = piece.as_bytes().chunks_exact(8);
    for c in &mut bytes {
        add(u64::from_le_bytes([
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
        ]));
    }
    let mut tail = [0u8; 8];
    let rest = bytes.remainder();
    tail[..rest.len()].copy_from_slice(rest);
    add(u64::from_le_bytes(tail) ^ ((piece.len() as u64) << 56));
    (h >> 32) as u32 ^ h as u32
}

/// The slot of a piece with `id` and `hash`.
pub fn slot(id: usize, hash: u32) -> u32 {
    (hash & 0xffff_0000) | (id as u32 + 1)
}

/// Slots for `pieces` entries: a power of two at least twice as many, so probes stay short.
pub fn slot_count(pieces: usize) -> usize {
    (pieces * 2).next_power_of_two().max(2)
}
