//! Parallel decode of one record: the streams are independent, so threads can split them.
//!
//! Nibble `j` belongs to stream `j mod N` and output byte `k` holds nibbles `2k` and `2k+1`.
//! With `N` even, byte `k` therefore holds two streams of one *pair* `(2p, 2p+1)`, with
//! `p = k mod N/2`: a thread that owns whole pairs owns whole bytes, and two threads never
//! write the same byte. Ranges of streams are therefore ranges of pairs (`[2p0, 2p1)`).
//!
//! In the output those bytes are strided (`p1 − p0` bytes of every `N/2`-byte round), and safe
//! Rust cannot hand two threads interleaved parts of one `&mut [u8]` in one piece. So the
//! calling thread cuts the output into batches of [`BATCH_ROUNDS`] rounds, splits every round
//! of a batch at the pair boundaries (`split_at_mut`), sends each worker the list of its row
//! pieces over a bounded channel, and decodes the first share itself (so `threads` threads
//! run, not `threads + 1`: a dispatcher thread of its own starved the workers whenever the
//! busy machine descheduled it). A worker decodes its streams one batch at a time into a
//! small compact buffer (L1/L2-resident) with the same arm kernels and copies the rows into
//! its pieces. Nothing record-sized is allocated and every copy happens on the workers, in
//! parallel: the output is written once, in place.
//!
//! An earlier version decoded each worker's streams into a compact buffer of the whole record
//! (`packed_bytes / threads`, freshly allocated and page-faulted every call) and scattered the
//! buffers into the output on the calling thread after the join: about 40% more CPU time than
//! the single-threaded decode (allocation, page faults, and a serial 64 MiB scatter), which
//! is why two threads showed no speed-up (docs/design/rans-decode.md).
//!
//! Errors are the single-threaded decoder's: every worker checks its streams' seals in order,
//! and the lowest-numbered faulty stream is reported. A record with an odd `N` (pairs straddle
//! rounds) or a single thread decodes on the calling thread.

extern crate std;

use super::{Arm, Decoder, decode_record_with, rounds_with};
use crate::error::DecodeError;
use crate::record::Record;
use crate::stream::step;
use crate::table::Table;
use core::ops::Range;
use std::sync::mpsc;
use std::vec::Vec;

/// Rounds per batch handed to the workers (`BATCH_ROUNDS · N/2` output bytes, 128 KiB at
/// `N = 256`; 256 to 4096 measured the same within noise).
const BATCH_ROUNDS: usize = 1024;

/// One message to a worker: its piece of every round of one batch, or of the last partial
/// round (the tail).
enum Job<'o> {
    /// Row pieces of consecutive full rounds.
    Rows(Vec<&'o mut [u8]>),
    /// The worker's bytes of the last partial round (possibly empty).
    Tail(&'o mut [u8]),
}

/// Decodes a parsed record into `out` (exactly `packed_bytes` long) on up to `threads` threads
/// (scoped; the calling thread decodes the first share and hands out the others), checking every stream's seal.
/// Output and errors are exactly [`decode_record_with`]'s.
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
    let (rounds, _) = shape(record);
    let (body, tail) = out.split_at_mut(rounds * pairs);
    let (first, others) = ranges.split_first().expect("at least two ranges");
    let mut own = Part::new(arm, table, record, first.clone())?;
    let results: Vec<Result<(), DecodeError>> = std::thread::scope(|s| {
        let mut senders = Vec::with_capacity(others.len());
        let mut handles = Vec::with_capacity(others.len());
        for r in others {
            // Two batches queued per worker keep it busy while the next one is cut.
            let (tx, rx) = mpsc::sync_channel::<Job<'_>>(2);
            let r = r.clone();
            senders.push(tx);
            handles.push(s.spawn(move || {
                let mut part = Part::new(arm, table, record, r)?;
                for job in &rx {
                    part.run(job);
                }
                part.finish()
            }));
        }
        for batch in body.chunks_mut(BATCH_ROUNDS * pairs) {
            let rows = batch.len() / pairs;
            let mut parts: Vec<Vec<&mut [u8]>> =
                (0..threads).map(|_| Vec::with_capacity(rows)).collect();
            for row in batch.chunks_exact_mut(pairs) {
                let mut rest = row;
                for (part, r) in parts.iter_mut().zip(&ranges) {
                    let (mine, others) = rest.split_at_mut(r.len());
                    part.push(mine);
                    rest = others;
                }
            }
            let mut parts = parts.into_iter();
            let mine = parts.next().unwrap_or_default();
            for (tx, part) in senders.iter().zip(parts) {
                // A worker only stops receiving by panicking, which the join reports.
                let _ = tx.send(Job::Rows(part));
            }
            // The calling thread decodes the first range itself, after handing out the rest.
            own.run(Job::Rows(mine));
        }
        let mut rest = tail;
        let k = rest.len().min(first.len());
        let (mine, after) = rest.split_at_mut(k);
        own.run(Job::Tail(mine));
        rest = after;
        for (tx, r) in senders.iter().zip(others) {
            let k = rest.len().min(r.len());
            let (mine, after) = rest.split_at_mut(k);
            let _ = tx.send(Job::Tail(mine));
            rest = after;
        }
        drop(senders);
        let mut results = Vec::with_capacity(threads);
        results.push(own.finish());
        results
            .extend(handles.into_iter().map(|h| h.join().expect("decode thread does not panic")));
        results
    });
    // Lowest stream range first, so the lowest faulty stream is reported.
    results.into_iter().collect()
}

/// One share of a record's streams — the pairs `pairs` (streams `2·pairs.start ..
/// 2·pairs.end`) — decoded whole rounds at a time, for callers that cut the work themselves
/// (the threaded fused adapter: each thread holds a share and multiplies as the rounds
/// arrive). Round `k`'s bytes of the share are bytes `k·N/2 + pairs.start .. k·N/2 +
/// pairs.end` of the record's output; [`StreamShare::decode_rounds`] writes them compactly,
/// round after round. The shares of a partition of the pairs together decode exactly what
/// [`decode_record_with`] decodes, and their [`StreamShare::finish`] results, taken lowest
/// pairs first, report what it reports.
pub struct StreamShare<'t, 'r> {
    part: Part<'t, 'r>,
    rounds_left: usize,
}

impl<'t, 'r> StreamShare<'t, 'r> {
    /// A share over `pairs` of `record` (its `N` even, `pairs` not empty and ending at or
    /// before `N/2`, the arm available; otherwise the named error).
    pub fn new(
        arm: Arm,
        table: &'t Table,
        record: &Record<'r>,
        pairs: Range<usize>,
    ) -> Result<Self, DecodeError> {
        let n = record.n_streams();
        if !arm.is_available() {
            return Err(DecodeError::Unavailable { arm });
        }
        if !n.is_multiple_of(2) || pairs.start >= pairs.end || pairs.end > n / 2 {
            return Err(DecodeError::ShareRange {
                n_streams: n,
                start: pairs.start,
                end: pairs.end,
            });
        }
        let part = Part { d: Decoder::new(arm, table, *record)?, r: pairs, compact: Vec::new() };
        Ok(StreamShare { part, rounds_left: shape(record).0 })
    }

    /// Pairs in the share: its bytes per round.
    pub fn width(&self) -> usize {
        self.part.r.len()
    }

    /// Full rounds not yet decoded.
    pub fn rounds_left(&self) -> usize {
        self.rounds_left
    }

    /// Decodes the share's next `compact.len() / width` rounds into `compact` (round after
    /// round, `width` bytes each). Panics if `compact` is not whole rounds or holds more than
    /// [`rounds_left`](Self::rounds_left) (the caller's arithmetic, not the record's bytes:
    /// a hostile record shows as a failed seal in [`finish`](Self::finish)).
    pub fn decode_rounds(&mut self, compact: &mut [u8]) {
        let w = self.width(); // ≥ 1 (checked by `new`)
        assert!(compact.len().is_multiple_of(w), "whole rounds of the share");
        let rounds = compact.len() / w;
        assert!(rounds <= self.rounds_left, "no more than the record's full rounds");
        self.part.rounds_into(compact, rounds);
        self.rounds_left -= rounds;
    }

    /// Decodes the share's bytes of the last partial round (after every full round) into
    /// `tail` (`min(width, ⌈rem/2⌉ − pairs.start)` bytes, where `rem` is the round's nibbles;
    /// empty when the record ends on a round boundary).
    pub fn decode_tail(&mut self, tail: &mut [u8]) {
        assert_eq!(self.rounds_left, 0, "the tail follows every full round");
        self.part.run(Job::Tail(tail));
    }

    /// Checks the share's seals (lowest stream first), as the whole-record decoder does for
    /// these streams.
    pub fn finish(self) -> Result<(), DecodeError> {
        self.part.finish()
    }
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

/// One thread's share: streams `2·r.start .. 2·r.end` (`N` even), decoded batch by batch as
/// the jobs arrive, then the tail; [`Part::finish`] checks their seals (lowest stream first).
struct Part<'t, 'r> {
    d: Decoder<'t, 'r>,
    r: Range<usize>,
    compact: Vec<u8>,
}

impl<'t, 'r> Part<'t, 'r> {
    fn new(
        arm: Arm,
        table: &'t Table,
        record: &Record<'r>,
        r: Range<usize>,
    ) -> Result<Self, DecodeError> {
        let d = Decoder::new(arm, table, *record)?;
        let compact = std::vec![0u8; BATCH_ROUNDS.min(shape(record).0) * r.len()];
        Ok(Part { d, r, compact })
    }

    /// The share's next `rounds` full rounds into `c` (`rounds · width` bytes), compactly.
    fn rounds_into(&mut self, c: &mut [u8], rounds: usize) {
        let (s0, s1) = (2 * self.r.start, 2 * self.r.end);
        let d = &mut self.d;
        rounds_with(
            d.arm,
            d.table,
            d.record.payload_padded(),
            &mut d.x[s0..s1],
            &mut d.pos[s0..s1],
            &d.end[s0..s1],
            c,
            rounds,
        );
    }

    fn run(&mut self, job: Job<'_>) {
        let (s0, s1) = (2 * self.r.start, 2 * self.r.end);
        let w = self.r.len();
        match job {
            Job::Rows(rows) => {
                if rows.is_empty() || w == 0 {
                    return;
                }
                let mut c = core::mem::take(&mut self.compact);
                self.rounds_into(&mut c[..rows.len() * w], rows.len());
                for (dst, src) in rows.into_iter().zip(c.chunks_exact(w)) {
                    dst.copy_from_slice(src);
                }
                self.compact = c;
            }
            Job::Tail(tail) => {
                let d = &mut self.d;
                let (_, rem) = shape(&d.record);
                let data = d.record.payload();
                for i in s0..s1.min(rem) {
                    let mut p = d.pos[i] as usize;
                    let s = step(d.table, &mut d.x[i], data, &mut p, d.end[i] as usize);
                    #[allow(clippy::cast_possible_truncation)] // p ≤ end ≤ payload < 2^32.
                    {
                        d.pos[i] = p as u32;
                    }
                    let b = &mut tail[i / 2 - self.r.start];
                    if i & 1 == 0 {
                        *b = s;
                    } else {
                        *b |= s << 4;
                    }
                }
            }
        }
    }

    fn finish(mut self) -> Result<(), DecodeError> {
        self.d.next_byte = self.d.record.packed_bytes();
        self.d.finish_streams(2 * self.r.start..2 * self.r.end)
    }
}
