//! Batched, checked decode of whole records, with selectable arms.
//!
//! A record's `N` streams are independent, so a decoder keeps `N` states in flight and decodes
//! one *round* (one symbol from every stream, `N` consecutive nibbles, `N/2` output bytes) at
//! a time. The driver here, [`Decoder`], owns the per-stream state (`x`, read position, end)
//! in fixed arrays and hands whole rounds to an *arm*, a kernel that must leave exactly the
//! state and output the reference [`step`] would. Partial rounds (at an
//! output chunk boundary, at the end, or when `N` is odd) are decoded here, symbol by symbol,
//! with the reference step.
//!
//! Every arm is checked: a stream whose initial state is below `L` is never decoded from that
//! state (the arms may disagree there, as the reference's unchecked arms do); its state is set
//! to `L` so all arms stay in lock step, and [`Decoder::finish`] refuses it. The seal of every
//! stream is checked at the end, and the error names the lowest-numbered faulty stream with
//! its first fault (`E_STREAM_STATE_RANGE`, `E_STREAM_LEFTOVER`, `E_STREAM_FINAL_STATE`), so
//! every arm reports the same error on a corrupt record.
//!
//! Output written before [`Decoder::finish`] returns `Ok` is not trustworthy: a stream can only
//! be proven genuine after its last symbol.
//!
//! Arms: [`Arm::Scalar`] (the spec's branchy loop, never reads past a stream),
//! [`Arm::ScalarBranchFree`] (closed-form renormalisation, groups of streams in registers,
//! tiles of rounds so the output stays in L1), [`Arm::Avx2`] (x86-64, 32 streams in four
//! 8-lane vectors, `arch/x86_64/avx2.rs`), [`Arm::Avx512`] (x86-64 AVX-512 F/BW, 64 streams
//! in four 16-lane vectors, slot lookup by a radix-4 search in registers,
//! `arch/x86_64/avx512.rs`), [`Arm::Avx512Vbmi`] (the same with VBMI/VBMI2/CD for a shorter
//! refill) and [`Arm::Neon`] (aarch64, 16 streams in four
//! 4-lane vectors, `arch/aarch64/neon.rs`). Every variant exists on every target; an arm
//! this build or CPU cannot run is refused (`E_PATH_UNAVAILABLE`), never replaced.
//!
//! # Availability and the selftest
//! [`Arm::is_available`] is the CPU check (runtime detection under `std`, cached by std;
//! `cfg!(target_feature)` otherwise) *and* a first-use selftest: the first time a SIMD arm is
//! asked about, it decodes a small fixed record (170 streams over 66 rounds, so the 64-lane,
//! 32-lane, 8-lane and scalar pair paths and a tile boundary all run, skewed so most steps
//! refill 2 bytes, plus a partial round) and compares
//! output and result with the reference. An arm that disagrees is disabled for the process
//! (and reported on stderr under `std`): forcing it then returns `E_PATH_UNAVAILABLE`. The
//! verdict is cached in an atomic, so the check runs at most a few times per process.
//!
//! # Adding an arm
//! SIMD arms go in `decode/arch/<isa>/…` (the only place `unsafe` is allowed, each block with
//! a `// SAFETY:` comment) and are wired in three places here: a variant of [`Arm`] (plus its
//! name), [`Arm::is_available`] (runtime detection with the `std` feature, `cfg!` otherwise)
//! and the dispatch in `rounds_with`. The kernel contract is `rounds_with`'s: given the `N`
//! (even) stream states `x`, read positions `pos` and ends `end` (all relative to `data`, the
//! payload followed by its zero padding; `data` may end right at the last stream's end), decode
//! `rounds` full rounds into `out` (exactly `rounds · N/2` bytes, two streams per byte, even
//! stream in the low nibble) and leave `x`/`pos` exactly as [`step`] would. Every state is in
//! `[L, 2^32)` on entry (the driver replaced bad ones), so the closed-form refill is exact;
//! refills must still be capped by `end − pos`, and loads past `data.len()` are not allowed
//! (use a scalar tail or the slack of [`Table::slot_symbols_padded`] for table gathers). The
//! table's slot → symbol bytes are [`Table::slot_symbols_padded`], `freq`/`start` are 16-entry
//! arrays. Tests: every test in `tests/` iterates [`Arm::ALL`], so a new arm is checked against
//! the reference by the golden vectors, the round trips, the bit-flip sweep and the properties.

mod arch;
mod scalar;
#[cfg(feature = "std")]
mod threads;

#[cfg(feature = "std")]
pub use threads::{StreamShare, decode_record_threads};

use core::sync::atomic::{AtomicU8, Ordering};

use crate::error::{DecodeError, StreamError};
use crate::record::{MAX_STREAMS, Record};
use crate::stream::{RANS_L, seal, step};
use crate::table::Table;

/// A decode implementation. Every arm produces byte-identical output and identical errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Arm {
    /// The reference: the spec's loop, one byte-refill branch per byte.
    Scalar,
    /// Scalar with closed-form renormalisation and several streams in flight.
    ScalarBranchFree,
    /// x86-64 AVX2: 8 streams per vector, 32 in flight, gathers for the slot lookup and the
    /// refill bytes.
    Avx2,
    /// aarch64 NEON: 4 streams per vector, 16 in flight, per-lane table and refill loads.
    Neon,
    /// x86-64 AVX-512 (F, BW; plus AVX2 for its gathers): 16 streams per vector, 64 in
    /// flight, slot lookup by a radix-4 search in registers, gathers for the refill bytes.
    Avx512,
    /// x86-64 AVX-512 with VBMI, VBMI2 and CD: the `avx512` arm with a shorter refill (leading
    /// zeros, one 16-lane gather, one double shift). Not run under Miri.
    Avx512Vbmi,
}

impl Arm {
    /// Every arm this build knows, available or not.
    pub const ALL: &'static [Arm] =
        &[Arm::Scalar, Arm::ScalarBranchFree, Arm::Avx2, Arm::Neon, Arm::Avx512, Arm::Avx512Vbmi];

    /// Whether this arm can run on this machine: the CPU has the instructions (detected at run
    /// time with `std`, from the compile-time target features without) and the arm passed its
    /// first-use selftest against the reference.
    pub fn is_available(self) -> bool {
        self.cpu_supported() && selftest_passed(self)
    }

    /// Whether the CPU (or, without `std`, the compile-time target) has the arm's instructions.
    fn cpu_supported(self) -> bool {
        match self {
            Arm::Scalar | Arm::ScalarBranchFree => true,
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            Arm::Avx2 => arch::x86_64::avx2::detected(),
            #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
            Arm::Avx2 => false,
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            Arm::Avx512 => arch::x86_64::avx512::detected(),
            #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
            Arm::Avx512 => false,
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            Arm::Avx512Vbmi => arch::x86_64::avx512::vbmi_detected(),
            #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
            Arm::Avx512Vbmi => false,
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Arm::Neon => arch::aarch64::neon::detected(),
            #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
            Arm::Neon => false,
        }
    }

    /// The fastest available arm (detected once and cached).
    pub fn best() -> Arm {
        static BEST: AtomicU8 = AtomicU8::new(u8::MAX);
        let cached = BEST.load(Ordering::Relaxed);
        if let Some(&arm) = Arm::ALL.get(usize::from(cached)) {
            return arm;
        }
        let arm = [Arm::Avx512Vbmi, Arm::Avx512, Arm::Avx2, Arm::Neon]
            .into_iter()
            .find(|a| a.is_available())
            .unwrap_or(Arm::ScalarBranchFree);
        BEST.store(arm.index(), Ordering::Relaxed);
        arm
    }

    /// The arm's name (`scalar`, `scalar-bf`, `avx2`, `neon`, `avx512`, `avx512-vbmi`), as
    /// accepted by [`Arm::from_name`].
    pub const fn name(self) -> &'static str {
        match self {
            Arm::Scalar => "scalar",
            Arm::ScalarBranchFree => "scalar-bf",
            Arm::Avx2 => "avx2",
            Arm::Neon => "neon",
            Arm::Avx512 => "avx512",
            Arm::Avx512Vbmi => "avx512-vbmi",
        }
    }

    /// The arm's position in [`Arm::ALL`].
    const fn index(self) -> u8 {
        match self {
            Arm::Scalar => 0,
            Arm::ScalarBranchFree => 1,
            Arm::Avx2 => 2,
            Arm::Neon => 3,
            Arm::Avx512 => 4,
            Arm::Avx512Vbmi => 5,
        }
    }

    /// The arm of a name given by [`Arm::name`].
    pub fn from_name(name: &str) -> Option<Arm> {
        Arm::ALL.iter().copied().find(|a| a.name() == name)
    }
}

impl core::fmt::Display for Arm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Decodes a parsed record into `out` (exactly `packed_bytes` long) with the best arm,
/// checking every stream's seal.
pub fn decode_record(
    table: &Table,
    record: &Record<'_>,
    out: &mut [u8],
) -> Result<(), DecodeError> {
    decode_record_with(Arm::best(), table, record, out)
}

/// [`decode_record`] with a forced arm (`E_PATH_UNAVAILABLE` if it cannot run here).
pub fn decode_record_with(
    arm: Arm,
    table: &Table,
    record: &Record<'_>,
    out: &mut [u8],
) -> Result<(), DecodeError> {
    let expected = record.packed_bytes();
    if out.len() as u64 != expected {
        return Err(DecodeError::OutputLen { got: out.len() as u64, expected });
    }
    let mut d = Decoder::new(arm, table, *record)?;
    d.decode_next(out)?;
    d.finish()
}

/// Checks every stream's seal of a parsed record without keeping the output: decodes through a
/// 4 KiB stack buffer (no allocation). Returns what [`decode_record_with`] would.
pub fn verify_record_with(arm: Arm, table: &Table, record: &Record<'_>) -> Result<(), DecodeError> {
    let mut d = Decoder::new(arm, table, *record)?;
    let mut buf = [0u8; 4096];
    while d.remaining_bytes() > 0 {
        // At most 4096.
        #[allow(clippy::cast_possible_truncation)]
        let k = d.remaining_bytes().min(buf.len() as u64) as usize;
        d.decode_next(&mut buf[..k])?;
    }
    d.finish()
}

/// An incremental record decoder: decode the packed output in chunks of any size (e.g. row
/// tiles that stay in cache), then [`finish`](Decoder::finish) to check every seal.
///
/// Holds about 3 KiB of per-stream state; no allocation.
#[derive(Debug, Clone)]
pub struct Decoder<'t, 'r> {
    table: &'t Table,
    record: Record<'r>,
    arm: Arm,
    x: [u32; MAX_STREAMS],
    pos: [u32; MAX_STREAMS],
    end: [u32; MAX_STREAMS],
    bad_init: [bool; MAX_STREAMS],
    next_byte: u64,
}

impl<'t, 'r> Decoder<'t, 'r> {
    /// A decoder at the start of `record`, using `arm` (`E_PATH_UNAVAILABLE` if it cannot run
    /// here).
    pub fn new(arm: Arm, table: &'t Table, record: Record<'r>) -> Result<Self, DecodeError> {
        if !arm.is_available() {
            return Err(DecodeError::Unavailable { arm });
        }
        Ok(Self::new_unchecked(arm, table, record))
    }

    /// [`Decoder::new`] without the availability check (the selftest runs an arm before it is
    /// known to be available; the arm itself must still check the CPU).
    fn new_unchecked(arm: Arm, table: &'t Table, record: Record<'r>) -> Self {
        let mut d = Decoder {
            table,
            record,
            arm,
            x: [RANS_L; MAX_STREAMS],
            pos: [0; MAX_STREAMS],
            end: [0; MAX_STREAMS],
            bad_init: [false; MAX_STREAMS],
            next_byte: 0,
        };
        let payload = record.payload();
        for i in 0..record.n_streams() {
            let (a, b) = (record.offset(i), record.offset(i + 1));
            let au = a as usize;
            // Parsing guarantees every stream has at least 4 bytes.
            let x = u32::from_be_bytes([
                payload[au],
                payload[au + 1],
                payload[au + 2],
                payload[au + 3],
            ]);
            if x < RANS_L {
                d.bad_init[i] = true;
            } else {
                d.x[i] = x;
            }
            d.pos[i] = a + 4;
            d.end[i] = b;
        }
        d
    }

    /// The arm in use.
    pub const fn arm(&self) -> Arm {
        self.arm
    }

    /// The record being decoded.
    pub const fn record(&self) -> &Record<'r> {
        &self.record
    }

    /// Packed bytes decoded so far.
    pub const fn decoded_bytes(&self) -> u64 {
        self.next_byte
    }

    /// Packed bytes still to decode.
    pub const fn remaining_bytes(&self) -> u64 {
        self.record.packed_bytes() - self.next_byte
    }

    /// Decodes the next `out.len()` packed bytes (at most [`remaining_bytes`]; else
    /// `E_OUTPUT_LEN` and nothing is decoded).
    ///
    /// [`remaining_bytes`]: Decoder::remaining_bytes
    pub fn decode_next(&mut self, out: &mut [u8]) -> Result<(), DecodeError> {
        let remaining = self.remaining_bytes();
        if out.len() as u64 > remaining {
            return Err(DecodeError::OutputLen { got: out.len() as u64, expected: remaining });
        }
        let n_streams = self.record.n_streams();
        let nn = n_streams as u64;
        let j0 = 2 * self.next_byte;
        let j1 = (j0 + 2 * out.len() as u64).min(self.record.n_symbols());
        let mut j = j0;
        while j < j1 && !j.is_multiple_of(nn) {
            self.nibble(j, j0, out);
            j += 1;
        }
        if n_streams.is_multiple_of(2) {
            // Bounded by out.len() / (N/2).
            #[allow(clippy::cast_possible_truncation)]
            let rounds = ((j1 - j) / nn) as usize;
            if rounds > 0 {
                #[allow(clippy::cast_possible_truncation)] // < out.len().
                let at = ((j - j0) / 2) as usize;
                let o = &mut out[at..at + rounds * n_streams / 2];
                rounds_with(
                    self.arm,
                    self.table,
                    self.record.payload_padded(),
                    &mut self.x[..n_streams],
                    &mut self.pos[..n_streams],
                    &self.end[..n_streams],
                    o,
                    rounds,
                );
                j += (rounds * n_streams) as u64;
            }
        }
        while j < j1 {
            self.nibble(j, j0, out);
            j += 1;
        }
        self.next_byte += out.len() as u64;
        Ok(())
    }

    /// Decodes nibble `j` with the reference step into `out` (which starts at nibble `j0`).
    #[inline]
    fn nibble(&mut self, j: u64, j0: u64, out: &mut [u8]) {
        let nn = self.record.n_streams() as u64;
        #[allow(clippy::cast_possible_truncation)] // j % N < N ≤ 256.
        let i = (j % nn) as usize;
        let data = self.record.payload();
        let mut p = self.pos[i] as usize;
        let s = step(self.table, &mut self.x[i], data, &mut p, self.end[i] as usize);
        #[allow(clippy::cast_possible_truncation)] // p ≤ end ≤ payload length < 2^32.
        {
            self.pos[i] = p as u32;
        }
        #[allow(clippy::cast_possible_truncation)] // < out.len().
        let b = ((j - j0) / 2) as usize;
        if j & 1 == 0 {
            out[b] = s;
        } else {
            out[b] |= s << 4;
        }
    }

    /// Checks that everything was decoded and every stream's seal holds.
    pub fn finish(&self) -> Result<(), DecodeError> {
        self.finish_streams(0..self.record.n_streams())
    }

    /// [`Decoder::finish`] for the streams `streams` only (lowest first).
    fn finish_streams(&self, streams: core::ops::Range<usize>) -> Result<(), DecodeError> {
        let expected = self.record.packed_bytes();
        if self.next_byte != expected {
            return Err(DecodeError::Incomplete { decoded: self.next_byte, expected });
        }
        for i in streams {
            let fault = if self.bad_init[i] {
                let s = self.record.stream(i);
                Err(StreamError::StateRange { state: u32::from_be_bytes([s[0], s[1], s[2], s[3]]) })
            } else {
                seal(self.x[i], (self.end[i] - self.pos[i]) as usize)
            };
            fault.map_err(|error| DecodeError::Stream { stream: i, error })?;
        }
        Ok(())
    }
}

/// Decodes `rounds` full rounds with `arm`: `x`, `pos`, `end` hold the `N` (even) streams'
/// state (positions relative to `data`, which is the payload plus any padding after it; a
/// kernel may read past `end` but consumes only up to it), and `out` is exactly
/// `rounds · N/2` bytes.
#[allow(clippy::too_many_arguments)]
fn rounds_with(
    arm: Arm,
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    out: &mut [u8],
    rounds: usize,
) {
    debug_assert!(x.len().is_multiple_of(2) && out.len() == rounds * x.len() / 2);
    match arm {
        Arm::Scalar => scalar::rounds_reference(table, data, x, pos, end, out, rounds),
        Arm::ScalarBranchFree => scalar::rounds_branch_free(table, data, x, pos, end, out, rounds),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx2 => arch::x86_64::avx2::rounds(table, data, x, pos, end, out, rounds),
        // Never available off x86-64, so no decoder is built for it.
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        Arm::Avx2 => scalar::rounds_branch_free(table, data, x, pos, end, out, rounds),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx512 => arch::x86_64::avx512::rounds(table, data, x, pos, end, out, rounds),
        // Never available off x86-64, so no decoder is built for it.
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        Arm::Avx512 => scalar::rounds_branch_free(table, data, x, pos, end, out, rounds),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx512Vbmi => arch::x86_64::avx512::rounds_vbmi(table, data, x, pos, end, out, rounds),
        // Never available off x86-64, so no decoder is built for it.
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        Arm::Avx512Vbmi => scalar::rounds_branch_free(table, data, x, pos, end, out, rounds),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Arm::Neon => arch::aarch64::neon::rounds(table, data, x, pos, end, out, rounds),
        // Never available elsewhere, so no decoder is built for it.
        #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
        Arm::Neon => scalar::rounds_branch_free(table, data, x, pos, end, out, rounds),
    }
}

/// Selftest verdicts per arm (indexed by [`Arm::index`]): 0 unknown, 1 passed, 2 failed.
static SELFTEST: [AtomicU8; 8] = [const { AtomicU8::new(0) }; 8];

/// Whether `arm` agrees with the reference on the fixed selftest record (run once, cached).
/// The scalar arms are the reference and always pass.
fn selftest_passed(arm: Arm) -> bool {
    if matches!(arm, Arm::Scalar | Arm::ScalarBranchFree) {
        return true;
    }
    let cell = &SELFTEST[usize::from(arm.index())];
    match cell.load(Ordering::Relaxed) {
        1 => return true,
        2 => return false,
        _ => {}
    }
    let ok = selftest(arm);
    cell.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
    if !ok {
        #[cfg(feature = "std")]
        std::eprintln!(
            "tetrad-rans: the {arm} decode arm disagrees with the reference on its selftest; \
             it is disabled (forcing it returns E_PATH_UNAVAILABLE)"
        );
    }
    ok
}

/// Streams of the selftest record: 128 + 32 + 8 + 2, so every arm's widest group, its
/// narrower groups and the scalar pairs all run (AVX-512: 2 × 64 + 32 + scalar; AVX2: 5 × 32 +
/// 8 + scalar; NEON: 10 × 16 + scalar).
const SELFTEST_STREAMS: usize = 170;
/// Nibbles of the selftest record: 66 full rounds (past the 64-round tile) and a partial one.
const SELFTEST_NIBBLES: usize = SELFTEST_STREAMS * 66 + 5;
/// Record bytes the selftest reserves.
const SELFTEST_BLOB: usize = 24 * 1024;
const _: () = assert!(
    SELFTEST_BLOB >= crate::record::max_record_len(SELFTEST_NIBBLES, SELFTEST_STREAMS),
    "the selftest blob must hold the worst-case record"
);

/// Encodes the fixed selftest record and decodes it with `arm` and with the reference
/// (without the availability check, which is what is being decided). CPU support is checked
/// first: an arm is never run on a CPU without its instructions.
fn selftest(arm: Arm) -> bool {
    use crate::record::{Nibbles, encode_record};
    if !arm.cpu_supported() {
        return false;
    }
    // Skewed so that most coded symbols are rare ones (freq 1–3 at 14 bits: 12–14 bits each,
    // so most steps refill 2 bytes) with common ones in between (no refill).
    let freq = [1, 2, 13, 100, 1000, 3000, 5001, 4000, 2000, 900, 300, 50, 10, 4, 2, 1];
    let Ok(table) = Table::from_freq(crate::table::FORMAT_SCALE_BITS, &freq) else {
        return false;
    };
    let mut nib = [0u8; SELFTEST_NIBBLES];
    let mut z: u32 = 0x2545_f491;
    for (j, v) in nib.iter_mut().enumerate() {
        z = z.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let pick = (z >> 24) as usize;
        *v = if j % 5 == 4 { [4, 5, 6, 7, 8][pick % 5] } else { [0, 1, 13, 14, 15][pick % 5] };
    }
    let mut blob = [0u8; SELFTEST_BLOB];
    let Ok(len) = encode_record(&table, Nibbles::Unpacked(&nib), SELFTEST_STREAMS, &mut blob)
    else {
        return false;
    };
    let Ok(record) = Record::parse_streams(&blob[..len], SELFTEST_STREAMS) else {
        return false;
    };
    let mut want = [0u8; SELFTEST_NIBBLES.div_ceil(2)];
    let mut got = [0u8; SELFTEST_NIBBLES.div_ceil(2)];
    let mut reference = Decoder::new_unchecked(Arm::Scalar, &table, record);
    let mut tested = Decoder::new_unchecked(arm, &table, record);
    let r1 = reference.decode_next(&mut want).and_then(|()| reference.finish());
    let r2 = tested.decode_next(&mut got).and_then(|()| tested.finish());
    r1.is_ok() && r1 == r2 && want == got
}
