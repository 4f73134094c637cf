//! Decoding: the scalar reference, arm selection, and a resumable per-chunk decoder.
//!
//! A chunk decodes in *rounds*: round `r` produces bytes `64r .. 64r + 64` of the chunk, lane
//! `ℓ` producing byte `64r + ℓ` (low nibble step for all lanes, then high nibble step). A
//! step is [`Model::step`] followed by at most one refill word from the lane's way. The
//! scalar code below is the spec's decoder; a SIMD arm decodes whole rounds while every way
//! still holds at least 64 bytes (so its 16-word loads can never leave the stream) and hands
//! the rest — including every place an error can occur — back to the scalar code, which is
//! why every arm refuses exactly what the scalar decoder refuses.

use core::sync::atomic::{AtomicU8, Ordering};

use super::arch::{self, Side};
use super::decode3;
use super::format::{Blob, Chunk, ChunkBody};
use super::model::Model;
use super::{Error, LANES, RANS_L, V3_LANES, V3_RANS_L, WAY_LANES, WAYS};

/// A decode arm of `int4-rans64-t1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Arm {
    /// The reference: one lane and one step at a time, every word fetch checked.
    Scalar,
    /// x86-64 AVX2: a way is two 8-lane vectors; 16-entry lookups as two `vpermd` + blend.
    Avx2,
    /// x86-64 AVX-512 F+BW: a way is one 16-lane vector; lookups are single `vpermd`s,
    /// refills one load + `vpexpandd`.
    Avx512,
    /// x86-64 AVX-512 F+BW with VBMI, VBMI2 and CD (Ice Lake, Zen 4 and later): the
    /// `avx512` arm with the refill's word expanded by `vpexpandw` into place and shifted in
    /// by `vpshldvd` (its count from `vplzcntd`), and a round's bytes gathered by
    /// `vpermt2b`; fewer vector operations per step.
    Avx512Vbmi,
    /// aarch64 NEON: a way is four 4-lane vectors; lookups are `tbl` byte permutes.
    Neon,
}

impl core::fmt::Display for Arm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

static SELFTEST: [AtomicU8; 5] =
    [AtomicU8::new(0), AtomicU8::new(0), AtomicU8::new(0), AtomicU8::new(0), AtomicU8::new(0)];

impl Arm {
    /// Every arm this build knows.
    pub const ALL: &'static [Arm] =
        &[Arm::Scalar, Arm::Avx2, Arm::Avx512, Arm::Avx512Vbmi, Arm::Neon];

    /// The arm's name (`scalar`, `avx2`, `avx512`, `avx512-vbmi`, `neon`).
    pub fn name(self) -> &'static str {
        match self {
            Arm::Scalar => "scalar",
            Arm::Avx2 => "avx2",
            Arm::Avx512 => "avx512",
            Arm::Avx512Vbmi => "avx512-vbmi",
            Arm::Neon => "neon",
        }
    }

    /// Looks an arm up by [`Arm::name`].
    pub fn from_name(name: &str) -> Option<Arm> {
        Arm::ALL.iter().copied().find(|a| a.name() == name)
    }

    fn index(self) -> usize {
        match self {
            Arm::Scalar => 0,
            Arm::Avx2 => 1,
            Arm::Avx512 => 2,
            Arm::Avx512Vbmi => 3,
            Arm::Neon => 4,
        }
    }

    /// Whether the arm decodes two chunks faster together than one after the other
    /// ([`ChunkDecoder::decode_next_pair`]: the AVX-512 arms' paired kernel).
    pub fn has_paired_kernel(self) -> bool {
        matches!(self, Arm::Avx512 | Arm::Avx512Vbmi)
    }

    /// Whether the CPU (and this build) can run the arm, before the selftest.
    pub fn cpu_supported(self) -> bool {
        match self {
            Arm::Scalar => true,
            other => arch::detected(other),
        }
    }

    /// Whether the arm can run here and passed its first-use selftest against the scalar
    /// decoder (an arm that disagrees is disabled and reported on stderr with `std`).
    pub fn is_available(self) -> bool {
        if !self.cpu_supported() {
            return false;
        }
        if self == Arm::Scalar {
            return true;
        }
        cached_selftest(&SELFTEST[self.index()], || selftest(self), self, "decoder")
    }

    /// The fastest available arm (AVX-512 VBMI, AVX-512, then AVX2, then NEON, else scalar).
    pub fn best() -> Arm {
        static BEST: AtomicU8 = AtomicU8::new(u8::MAX);
        if let Some(&arm) = Arm::ALL.get(usize::from(BEST.load(Ordering::Relaxed))) {
            return arm;
        }
        let arm = [Arm::Avx512Vbmi, Arm::Avx512, Arm::Avx2, Arm::Neon]
            .into_iter()
            .find(|a| a.is_available())
            .unwrap_or(Arm::Scalar);
        #[allow(clippy::cast_possible_truncation)] // < 5 arms
        BEST.store(arm.index() as u8, Ordering::Relaxed);
        arm
    }
}

/// Runs `test` once per `cell` (0: not run, 1: passed, 2: failed) and returns whether it
/// passed; a failure is reported on stderr with `std` (`side`: "decoder" or "encoder"). The
/// first-use selftests of the decode and encode arms share it.
pub(super) fn cached_selftest(
    cell: &AtomicU8,
    test: impl FnOnce() -> bool,
    arm: Arm,
    side: &str,
) -> bool {
    match cell.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let ok = test();
            cell.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
            #[cfg(feature = "std")]
            if !ok {
                std::eprintln!(
                    "tetrad-rans: int4-rans64-t1 arm {arm} disagrees with the scalar {side} on its selftest; disabled"
                );
            }
            #[cfg(not(feature = "std"))]
            let _ = (arm, side);
            ok
        }
    }
}

/// Bytes of [`selftest_input`].
pub(super) const SELFTEST_LEN: usize = 6000;

/// A fixed skewed input for the first-use selftests (rare symbols, partial rounds, two
/// chunks at shift 12): a peaked nibble distribution with the occasional extreme value.
pub(super) fn selftest_input() -> [u8; SELFTEST_LEN] {
    let mut src = [0u8; SELFTEST_LEN];
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for b in src.iter_mut() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let pick = |v: u64| -> u8 {
            let t = v & 0xFF;
            let n = if t < 3 { (v >> 8) & 15 } else { 6 + (v >> 8) % 4 };
            #[allow(clippy::cast_possible_truncation)]
            let n8 = n as u8;
            n8
        };
        *b = pick(seed) | (pick(seed >> 20) << 4);
    }
    src
}

/// Encodes [`selftest_input`] with the scalar encoder and checks that `arm` decodes it
/// exactly as the scalar decoder does.
fn selftest(arm: Arm) -> bool {
    const N: usize = SELFTEST_LEN;
    let src = selftest_input();
    let mut blob = [0u8; N + 64];
    let Ok(len) = super::encode_v2_with(Arm::Scalar, &src, 12, &mut blob) else { return false };
    let mut a = [0u8; N];
    let mut b = [0xA5u8; N];
    let ra = decode_blob(Arm::Scalar, &blob[..len], &mut a);
    let rb = decode_blob(arm, &blob[..len], &mut b);
    ra.is_ok() && rb.is_ok() && a == b && a == src
}

/// Decodes a blob with the best available arm into `out` (exactly `n_bytes` long).
pub fn decode_into(blob: &[u8], out: &mut [u8]) -> Result<(), Error> {
    decode_blob(Arm::best(), blob, out)
}

/// Decodes a blob with a forced arm; `E_PATH_UNAVAILABLE` if it cannot run here.
pub fn decode_with(arm: Arm, blob: &[u8], out: &mut [u8]) -> Result<(), Error> {
    if !arm.is_available() {
        return Err(Error::Unavailable { arm });
    }
    decode_blob(arm, blob, out)
}

fn decode_blob(arm: Arm, blob: &[u8], out: &mut [u8]) -> Result<(), Error> {
    let blob = Blob::parse(blob)?;
    if out.len() as u64 != blob.n_bytes() {
        return Err(Error::OutputLength { got: out.len() as u64, expected: blob.n_bytes() });
    }
    let step = 1usize << blob.chunk_shift();
    decode_run(arm, blob.chunks(), out.chunks_mut(step.max(1)))
}

/// Decodes a run of chunks, in order, into their output pieces: two at a time where `arm`
/// has a paired kernel (the AVX-512 arm), one after the other otherwise. Errors come out in
/// chunk order, exactly as decoding the chunks one by one reports them: a chunk's head error
/// is returned only after every earlier chunk has decoded and passed its seal.
fn decode_run<'a, 'o>(
    arm: Arm,
    chunks: impl Iterator<Item = Result<Chunk<'a>, Error>>,
    outs: impl Iterator<Item = &'o mut [u8]>,
) -> Result<(), Error> {
    let mut it = chunks.zip(outs);
    while let Some((first, da)) = it.next() {
        let mut a = ChunkDecoder::with_arm(first?, arm);
        match it.next() {
            None => return a.decode_next(da),
            Some((Err(e), _)) => {
                a.decode_next(da)?;
                return Err(e);
            }
            Some((Ok(second), db)) => {
                let mut b = ChunkDecoder::with_arm(second, arm);
                let n = ChunkDecoder::pair_rounds(&mut a, da, &mut b, db);
                a.decode_next(&mut da[n * LANES..])?;
                b.decode_next(&mut db[n * LANES..])?;
            }
        }
    }
    Ok(())
}

/// Decodes chunk `c` of a parsed blob with a forced arm into `out` (its raw length).
pub fn decode_chunk_with(arm: Arm, blob: &Blob<'_>, c: usize, out: &mut [u8]) -> Result<(), Error> {
    if !arm.is_available() {
        return Err(Error::Unavailable { arm });
    }
    ChunkDecoder::with_arm(blob.chunk(c)?, arm).decode_next(out)
}

/// Decodes one chunk in pieces (for callers that consume tiles, such as the fused matmul):
/// each [`ChunkDecoder::decode_next`] call continues where the previous one stopped.
#[derive(Debug, Clone)]
pub struct ChunkDecoder<'a> {
    chunk: Chunk<'a>,
    arm: Arm,
    states: [u32; LANES],
    /// Version 3's states (unused otherwise).
    states3: [u16; V3_LANES],
    pos: [usize; WAYS],
    done: usize,
    failed: bool,
}

impl<'a> ChunkDecoder<'a> {
    /// A decoder using the best available arm.
    pub fn new(chunk: Chunk<'a>) -> ChunkDecoder<'a> {
        ChunkDecoder::with_arm(chunk, Arm::best())
    }

    /// A decoder using `arm` (the caller has checked that it is available; an unavailable
    /// arm falls back to nothing: `decode_with`/`decode_chunk_with` refuse it first).
    fn with_arm(chunk: Chunk<'a>, arm: Arm) -> ChunkDecoder<'a> {
        let states = match &chunk.body {
            ChunkBody::Coded { states, .. } => *states,
            ChunkBody::Coded3 { .. } | ChunkBody::Raw(_) => [RANS_L; LANES],
        };
        #[allow(clippy::cast_possible_truncation)] // L = 256 in version 3
        let states3 = match &chunk.body {
            ChunkBody::Coded3 { states, .. } => *states,
            _ => [V3_RANS_L as u16; V3_LANES],
        };
        ChunkDecoder { chunk, arm, states, states3, pos: [0; WAYS], done: 0, failed: false }
    }

    /// A decoder using a forced arm; `E_PATH_UNAVAILABLE` if it cannot run here.
    pub fn new_with(chunk: Chunk<'a>, arm: Arm) -> Result<ChunkDecoder<'a>, Error> {
        if !arm.is_available() {
            return Err(Error::Unavailable { arm });
        }
        Ok(ChunkDecoder::with_arm(chunk, arm))
    }

    /// Bytes still to decode.
    pub fn remaining(&self) -> usize {
        self.chunk.raw_len - self.done
    }

    /// Runs the arm's paired kernel over the whole rounds that the next `da.len()` bytes of
    /// `a` and `db.len()` bytes of `b` have in common (each a valid [`decode_next`] length:
    /// at most the chunk's rest); returns how many rounds each decoded (0 when the arm has no
    /// paired kernel, a decoder has failed or a chunk is raw). The decoders continue from
    /// there with [`decode_next`] on the rest; the kernel never errs (it stops where a way
    /// runs short, and the checks run in [`decode_next`]).
    ///
    /// [`decode_next`]: ChunkDecoder::decode_next
    fn pair_rounds(a: &mut Self, da: &mut [u8], b: &mut Self, db: &mut [u8]) -> usize {
        let ready = |d: &Self, out: &[u8]| !d.failed && out.len() <= d.remaining();
        if a.arm != b.arm || !ready(a, da) || !ready(b, db) {
            return 0;
        }
        let (
            ChunkBody::Coded { model: ma, ways: wa, .. },
            ChunkBody::Coded { model: mb, ways: wb, .. },
        ) = (&a.chunk.body, &b.chunk.body)
        else {
            return 0;
        };
        let n = arch::pair_rounds(
            a.arm,
            Side { model: ma, st: &mut a.states, ways: wa, pos: &mut a.pos, out: da },
            Side { model: mb, st: &mut b.states, ways: wb, pos: &mut b.pos, out: db },
        );
        a.done += n * LANES;
        b.done += n * LANES;
        n
    }

    /// Decodes the next `da.len()` bytes of `a` and the next `db.len()` bytes of `b`: the
    /// same results, decoder states and errors as `(a.decode_next(da), b.decode_next(db))`,
    /// but the rounds the two pieces have in common run through the arm's paired kernel
    /// where it has one (the AVX-512 arms: eight vector chains instead of four, about 1.7×
    /// one chunk's speed). For callers that consume two chunks tile by tile, such as the
    /// fused matmul's two half-bands.
    pub fn decode_next_pair(
        a: &mut Self,
        da: &mut [u8],
        b: &mut Self,
        db: &mut [u8],
    ) -> (Result<(), Error>, Result<(), Error>) {
        let (before_a, before_b) = (a.done, b.done);
        let n = if a.fits(da.len()) && b.fits(db.len()) {
            ChunkDecoder::pair_rounds(a, da, b, db)
        } else {
            0
        };
        let (got_a, got_b) =
            (a.decode_next(&mut da[n * LANES..]), b.decode_next(&mut db[n * LANES..]));
        // A refused piece counts as not decoded at all, as with `decode_next`.
        if got_a.is_err() {
            a.done = before_a;
        }
        if got_b.is_err() {
            b.done = before_b;
        }
        (got_a, got_b)
    }

    /// Whether `len` is a piece length [`decode_next`](Self::decode_next) takes: at most the
    /// rest of the chunk, and a multiple of 64 or exactly the rest.
    fn fits(&self, len: usize) -> bool {
        let rem = self.remaining();
        len <= rem && (len.is_multiple_of(LANES) || len == rem)
    }

    /// Decodes the next `out.len()` bytes. `out.len()` must be a multiple of 64 or reach the
    /// end of the chunk exactly (`E_OUTPUT_LENGTH` otherwise); the call that reaches the end
    /// checks the seal. A refused piece leaves [`remaining`](Self::remaining) as it was, and
    /// after an error the decoder refuses every further call.
    pub fn decode_next(&mut self, out: &mut [u8]) -> Result<(), Error> {
        if self.failed || !self.fits(out.len()) {
            let (got, expected) = (out.len() as u64, self.remaining() as u64);
            return Err(Error::OutputLength { got, expected });
        }
        let before = self.done;
        let result = self.decode_inner(out);
        if result.is_err() {
            // A refused piece counts as not decoded, whichever check refused it (the seal
            // runs after the last round has been counted).
            self.done = before;
            self.failed = true;
        }
        result
    }

    fn decode_inner(&mut self, out: &mut [u8]) -> Result<(), Error> {
        let index = self.chunk.index;
        let (model, ways) = match &self.chunk.body {
            ChunkBody::Raw(raw) => {
                out.copy_from_slice(&raw[self.done..self.done + out.len()]);
                self.done += out.len();
                return Ok(());
            }
            ChunkBody::Coded { model, ways, .. } => (model, ways),
            ChunkBody::Coded3 { model, ways, .. } => {
                let (st, pos) = (&mut self.states3, &mut self.pos);
                decode3::decode_piece(self.arm, model, st, ways, pos, self.done, out, index)?;
                self.done += out.len();
                if self.done == self.chunk.raw_len {
                    decode3::seal(&self.states3, ways, &self.pos, index)?;
                }
                return Ok(());
            }
        };
        let full = out.len() / LANES * LANES;
        let (body, tail) = out.split_at_mut(full);
        let simd = arch::rounds(self.arm, model, &mut self.states, ways, &mut self.pos, body);
        for round in body[simd * LANES..].chunks_exact_mut(LANES) {
            scalar_round(model, &mut self.states, ways, &mut self.pos, round, index)?;
        }
        if !tail.is_empty() {
            scalar_round(model, &mut self.states, ways, &mut self.pos, tail, index)?;
        }
        self.done += out.len();
        if self.done == self.chunk.raw_len {
            seal(&self.states, ways, &self.pos, index)?;
        }
        Ok(())
    }
}

/// One round (or the final partial round: `out.len()` active lanes) of the reference decoder.
fn scalar_round(
    model: &Model,
    st: &mut [u32; LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
    chunk: usize,
) -> Result<(), Error> {
    for half in 0..2 {
        for (lane, byte) in out.iter_mut().enumerate() {
            let w = lane / WAY_LANES;
            let (sym, mut x) = model.step(st[lane]);
            if x < RANS_L {
                let p = pos[w];
                let Some(word) = ways[w].get(p..p + 2) else {
                    #[allow(clippy::cast_possible_truncation)] // w < 4
                    return Err(Error::Overrun { chunk, way: w as u8 });
                };
                x = (x << 16) | u32::from(u16::from_le_bytes([word[0], word[1]]));
                pos[w] = p + 2;
            }
            st[lane] = x;
            if half == 0 {
                *byte = sym;
            } else {
                *byte |= sym << 4;
            }
        }
    }
    Ok(())
}

/// The seal: every state back at `L` (lanes ascending), then every way consumed exactly.
fn seal(
    st: &[u32; LANES],
    ways: &[&[u8]; WAYS],
    pos: &[usize; WAYS],
    chunk: usize,
) -> Result<(), Error> {
    for (lane, &x) in st.iter().enumerate() {
        if x != RANS_L {
            #[allow(clippy::cast_possible_truncation)] // lane < 64
            return Err(Error::FinalState { chunk, lane: lane as u8, got: x });
        }
    }
    for w in 0..WAYS {
        if pos[w] != ways[w].len() {
            #[allow(clippy::cast_possible_truncation)] // w < 4, words < 2^32
            return Err(Error::Leftover {
                chunk,
                way: w as u8,
                left: ((ways[w].len() - pos[w]) / 2) as u32,
            });
        }
    }
    Ok(())
}

/// Decodes a blob on `threads` threads (chunks split in contiguous runs), best arm.
#[cfg(feature = "std")]
pub fn decode_threads(blob: &[u8], out: &mut [u8], threads: usize) -> Result<(), Error> {
    let parsed = Blob::parse(blob)?;
    if out.len() as u64 != parsed.n_bytes() {
        return Err(Error::OutputLength { got: out.len() as u64, expected: parsed.n_bytes() });
    }
    let arm = Arm::best();
    let step = 1usize << parsed.chunk_shift();
    let n = parsed.n_chunks();
    let threads = threads.clamp(1, n.max(1));
    let per = n.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let mut handles = std::vec::Vec::new();
        for (t, dst) in out.chunks_mut(per * step).enumerate() {
            let parsed = &parsed;
            handles.push(scope.spawn(move || -> Result<(), Error> {
                decode_run(arm, parsed.chunks_from(t * per), dst.chunks_mut(step))
            }));
        }
        let mut result = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            if result.is_ok() {
                result = r;
            }
        }
        result
    })
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // byte patterns from an LCG
mod tests {
    use super::*;
    use crate::rans64::encode_v2_into;

    /// `Arm::has_paired_kernel` and `arch::pair_rounds` name the same arms: every available
    /// arm that says it pairs runs rounds through the paired kernel, and no other does.
    #[test]
    fn the_arms_that_say_they_pair_run_the_paired_kernel() {
        let mut src = [0u8; 8192];
        let mut s = 5u32;
        for b in &mut src {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let nib = |v: u32| {
                if v.is_multiple_of(9) { (v >> 4) as u8 & 15 } else { 7 + (v >> 8) as u8 % 3 }
            };
            *b = nib(s >> 8) | nib(s >> 20) << 4;
        }
        let mut blob = [0u8; 8192 + 16 + 24];
        let n = encode_v2_into(&src, 12, &mut blob).unwrap();
        let parsed = Blob::parse(&blob[..n]).unwrap();
        let coded = |c: usize| matches!(parsed.chunk(c).unwrap().body, ChunkBody::Coded { .. });
        assert!(coded(0) && coded(1));
        for &arm in Arm::ALL.iter().filter(|a| a.is_available()) {
            let mut a = ChunkDecoder::new_with(parsed.chunk(0).unwrap(), arm).unwrap();
            let mut b = ChunkDecoder::new_with(parsed.chunk(1).unwrap(), arm).unwrap();
            let (mut da, mut db) = ([0u8; 4096], [0u8; 4096]);
            let rounds = ChunkDecoder::pair_rounds(&mut a, &mut da, &mut b, &mut db);
            assert_eq!(rounds > 0, arm.has_paired_kernel(), "{arm}");
        }
    }
}
