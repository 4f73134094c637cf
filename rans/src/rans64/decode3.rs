//! Decoding version 3: the scalar reference and the piece logic around the SIMD arms.
//!
//! A version-3 chunk decodes in rounds of 128 bytes: round `r`, way `w` produces the bytes
//! `128r + 32w .. 128r + 32w + 32`, lane `32w + i` byte `128r + 32w + i`. The ways are
//! independent (own lanes, own byte stream), so the reference order is way by way within a
//! round — each way its low-nibble steps (lanes ascending), then its high-nibble steps — and
//! a piece that starts half-way through a round (at a multiple of 64 bytes, as
//! [`ChunkDecoder`](super::ChunkDecoder) allows) starts at way 2. A SIMD arm decodes whole
//! rounds while every way holds at least 64 unread bytes and hands the rest, including every
//! place an error can occur, back to the scalar code.

use super::arch;
use super::decode::Arm;
use super::model3::Model3;
use super::{Error, V3_LANES, V3_RANS_L, V3_WAY_LANES, WAYS};

/// Decodes the `out.len()` bytes of a chunk that start at byte `done` (a multiple of 64).
#[allow(clippy::too_many_arguments)] // one chunk decoder's state, handed over as is
pub(super) fn decode_piece(
    arm: Arm,
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    done: usize,
    out: &mut [u8],
    chunk: usize,
) -> Result<(), Error> {
    let mut out = out;
    let first_way = (done % V3_LANES) / V3_WAY_LANES;
    if first_way != 0 {
        let n = out.len().min(V3_LANES - done % V3_LANES);
        let (head, rest) = out.split_at_mut(n);
        scalar_ways(model, st, ways, pos, head, first_way, chunk)?;
        out = rest;
    }
    let full = out.len() / V3_LANES * V3_LANES;
    let (body, tail) = out.split_at_mut(full);
    let simd = arch::rounds3(arm, model, st, ways, pos, body);
    for round in body[simd * V3_LANES..].chunks_exact_mut(V3_LANES) {
        scalar_ways(model, st, ways, pos, round, 0, chunk)?;
    }
    if !tail.is_empty() {
        scalar_ways(model, st, ways, pos, tail, 0, chunk)?;
    }
    Ok(())
}

/// The reference decoder for the part of one round that `out` covers, starting with way
/// `first_way`'s first byte: way by way, each its low-nibble step for its lanes (ascending)
/// then its high-nibble step; only the lanes whose byte is in `out` take part.
fn scalar_ways(
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
    first_way: usize,
    chunk: usize,
) -> Result<(), Error> {
    for (k, part) in out.chunks_mut(V3_WAY_LANES).enumerate() {
        let w = first_way + k;
        let lanes = &mut st[w * V3_WAY_LANES..w * V3_WAY_LANES + part.len()];
        for half in 0..2 {
            for (x, byte) in lanes.iter_mut().zip(part.iter_mut()) {
                let (sym, mut y) = model.step(u32::from(*x));
                if y < V3_RANS_L {
                    let Some(&b) = ways[w].get(pos[w]) else {
                        #[allow(clippy::cast_possible_truncation)] // w < 4
                        return Err(Error::Overrun { chunk, way: w as u8 });
                    };
                    y = (y << 8) | u32::from(b);
                    pos[w] += 1;
                }
                #[allow(clippy::cast_possible_truncation)] // y < 2^16 (Model3::step)
                let y16 = y as u16;
                *x = y16;
                if half == 0 {
                    *byte = sym;
                } else {
                    *byte |= sym << 4;
                }
            }
        }
    }
    Ok(())
}

/// The seal: every state back at `L = 256` (lanes ascending), then every way consumed.
pub(super) fn seal(
    st: &[u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &[usize; WAYS],
    chunk: usize,
) -> Result<(), Error> {
    for (lane, &x) in st.iter().enumerate() {
        if u32::from(x) != V3_RANS_L {
            #[allow(clippy::cast_possible_truncation)] // lane < 128
            return Err(Error::FinalState { chunk, lane: lane as u8, got: u32::from(x) });
        }
    }
    for w in 0..WAYS {
        if pos[w] != ways[w].len() {
            #[allow(clippy::cast_possible_truncation)] // w < 4, bytes < 2^32
            return Err(Error::Leftover {
                chunk,
                way: w as u8,
                left: (ways[w].len() - pos[w]) as u32,
            });
        }
    }
    Ok(())
}
