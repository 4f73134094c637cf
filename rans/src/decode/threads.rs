//! Parallel decode of one record: the streams are independent, so threads can split them.
//!
//! Nibble `j` belongs to stream `j mod N` and output byte `k` holds nibbles `2k` and `2k+1`.
//! With `N` even, byte `k` therefore holds two streams of one *pair* `(2p, 2p+1)`, with
//! `p = k mod N/2`: a thread that owns whole pairs owns whole bytes, and two threads never
//! write the same byte. Ranges of streams are therefore ranges of pairs (`[2p0, 2p1)`).
//!
//! In the full output those bytes are strided (`p1 − p0` bytes of every `N/2`-byte round), and
//! safe Rust cannot hand two threads interleaved parts of one `&mut [u8]`, so each thread
//! decodes its pairs into a compact buffer (`p1 − p0` bytes per round, then its tail bytes)
//! with the same arm kernels, and the calling thread scatters the compact buffers into the
//! output (one memory pass, far cheaper than the decode). Errors are the single-threaded
//! decoder's: every thread checks its streams' seals in order, and the lowest-numbered faulty
//! stream is reported. A record with an odd `N` (pairs straddle rounds) or a single thread
//! decodes on the calling thread.

extern crate std;

use super::{Arm, Decoder, decode_record_with, rounds_with};
use crate::error::DecodeError;
use crate::record::Record;
use crate::stream::step;
use crate::table::Table;
use core::ops::Range;
use std::vec;
use std::vec::Vec;

/// Decodes a parsed record into `out` (exactly `packed_bytes` long) on up to `threads` threads
/// (scoped; the calling thread waits), checking every stream's seal. Output and errors are
/// exactly [`decode_record_with`]'s.
pub fn decode_record_threads(
    arm: Arm,
    table: &Table,
    record: &Record<'_>,
    out: &mut [u8],
    threads: usize,
) -> Result<(), DecodeError> {
    let n = record.n_streams();
    let expected = record.packed_bytes();
    if out.len() as u64 != expected {
        return Err(DecodeError::OutputLen { got: out.len() as u64, expected });
    }
    if !arm.is_available() {
        return Err(DecodeError::Unavailable { arm });
    }
    let pairs = n / 2;
    let threads = threads.min(pairs);
    if threads <= 1 || !n.is_multiple_of(2) {
        return decode_record_with(arm, table, record, out);
    }
    let ranges: Vec<Range<usize>> =
        (0..threads).map(|t| pairs * t / threads..pairs * (t + 1) / threads).collect();
    let parts: Vec<(Result<(), DecodeError>, Vec<u8>)> = std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|r| {
                let r = r.clone();
                s.spawn(move || {
                    let mut compact = vec![0u8; compact_len(record, &r)];
                    let res = decode_pairs(arm, table, record, r, &mut compact);
                    (res, compact)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("decode thread does not panic")).collect()
    });
    for (r, (res, compact)) in ranges.iter().zip(&parts) {
        res.as_ref().map_err(|e| *e)?;
        scatter(record, r, compact, out);
    }
    Ok(())
}

/// Full rounds of the record and nibbles of its last partial round.
fn shape(record: &Record<'_>) -> (usize, usize) {
    let n = record.n_streams() as u64;
    // The record's n_symbols fits in memory (its output was allocated by the caller).
    #[allow(clippy::cast_possible_truncation)]
    let rounds = (record.n_symbols() / n) as usize;
    #[allow(clippy::cast_possible_truncation)] // < N ≤ 256.
    let rem = (record.n_symbols() % n) as usize;
    (rounds, rem)
}

/// Tail bytes (of the last partial round) owned by pairs `r`.
fn tail_bytes(rem: usize, r: &Range<usize>) -> usize {
    rem.div_ceil(2).clamp(r.start, r.end) - r.start
}

/// Compact bytes of pairs `r`: `r.len()` per full round, then their tail bytes.
fn compact_len(record: &Record<'_>, r: &Range<usize>) -> usize {
    let (rounds, rem) = shape(record);
    rounds * r.len() + tail_bytes(rem, r)
}

/// Decodes streams `2·r.start .. 2·r.end` into `compact` and checks their seals (lowest
/// stream first). `N` is even.
fn decode_pairs(
    arm: Arm,
    table: &Table,
    record: &Record<'_>,
    r: Range<usize>,
    compact: &mut [u8],
) -> Result<(), DecodeError> {
    let (rounds, rem) = shape(record);
    let (s0, s1) = (2 * r.start, 2 * r.end);
    let mut d = Decoder::new(arm, table, *record)?;
    let (body, tail) = compact.split_at_mut(rounds * r.len());
    if rounds > 0 {
        rounds_with(
            arm,
            table,
            record.payload_padded(),
            &mut d.x[s0..s1],
            &mut d.pos[s0..s1],
            &d.end[s0..s1],
            body,
            rounds,
        );
    }
    let data = record.payload();
    for i in s0..s1.min(rem) {
        let mut p = d.pos[i] as usize;
        let s = step(table, &mut d.x[i], data, &mut p, d.end[i] as usize);
        #[allow(clippy::cast_possible_truncation)] // p ≤ end ≤ payload length < 2^32.
        {
            d.pos[i] = p as u32;
        }
        let b = &mut tail[i / 2 - r.start];
        if i & 1 == 0 {
            *b = s;
        } else {
            *b |= s << 4;
        }
    }
    d.next_byte = record.packed_bytes();
    d.finish_streams(s0..s1)
}

/// Copies the compact bytes of pairs `r` to their places in the full output.
fn scatter(record: &Record<'_>, r: &Range<usize>, compact: &[u8], out: &mut [u8]) {
    let (rounds, _) = shape(record);
    let half = record.n_streams() / 2;
    let w = r.len();
    let (body, tail) = compact.split_at(rounds * w);
    if w > 0 {
        for (row, src) in out.chunks_exact_mut(half).zip(body.chunks_exact(w)) {
            row[r.start..r.end].copy_from_slice(src);
        }
    }
    if !tail.is_empty() {
        out[rounds * half + r.start..][..tail.len()].copy_from_slice(tail);
    }
}
