//! Instruction-set arms of the kernels: which exist, which this CPU can run, and which one
//! [`crate::kernels`] uses when the caller does not force one.
//!
//! An *arm* is one implementation of every kernel for one instruction-set level. The scalar arm
//! ([`Isa::Scalar`], `crate::scalar`) is the normative spec; every other arm is tested against
//! it (bit-exact on the int8-activation paths, within the documented tolerance on the f32 paths,
//! see `docs/kernels.md`).
//!
//! Availability is a value: [`Isa::is_available`] is true when (a) this build contains the arm's
//! kernels and (b) the CPU supports the arm's features — detected at run time with the `std`
//! feature (`is_x86_feature_detected!` / `is_aarch64_feature_detected!`), otherwise taken from
//! `cfg!(target_feature)` at compile time — and (c) the arm passed its first-use selftest.
//!
//! The selftest runs once per arm, the first time the arm is asked for: a fixed pseudo-random
//! problem per format and accumulation mode is computed by the arm and by the scalar reference;
//! integer paths must agree bit for bit, f32 paths within the documented tolerance. An arm that
//! disagrees is disabled for the life of the process (loudly: a line on stderr under `std`) and
//! is never used again; [`best`] then picks the next arm down.
//!
//! Arms named here but not built for this target, or whose kernels are not written yet
//! (see [`Isa::is_implemented`]), are never available; forcing one is the named error
//! `E_PATH_UNAVAILABLE`, never a silent downgrade.

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// One instruction-set arm of the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Isa {
    /// Portable Rust; the normative reference (`crate::scalar`). Always available.
    Scalar,
    /// x86-64 AVX2 + FMA + F16C (256-bit).
    Avx2,
    /// x86-64 AVX-512 F + BW (512-bit).
    Avx512,
    /// x86-64 AVX-512 F + BW + VNNI (`vpdpbusd` for the int8-activation paths).
    Avx512Vnni,
    /// x86-64 AVX2 + FMA + F16C + AVX-VNNI (VEX-encoded `vpdpbusd` on 256-bit registers).
    AvxVnni,
    /// aarch64 Advanced SIMD (NEON).
    Neon,
    /// aarch64 NEON + dot product (`SDOT`).
    NeonDot,
    /// aarch64 NEON + int8 matrix multiply (`SMMLA`).
    NeonI8mm,
}

/// Every arm, in order of preference (best last).
pub const ALL: [Isa; 8] = [
    Isa::Scalar,
    Isa::Neon,
    Isa::NeonDot,
    Isa::NeonI8mm,
    Isa::Avx2,
    Isa::AvxVnni,
    Isa::Avx512,
    Isa::Avx512Vnni,
];

impl Isa {
    /// Lowercase name (`"scalar"`, `"avx2"`, `"avx512"`, `"avx512-vnni"`, …), as accepted by
    /// [`Isa::from_name`] and by `TETRAD_REQUIRE_ISA`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Scalar => "scalar",
            Self::Avx2 => "avx2",
            Self::Avx512 => "avx512",
            Self::Avx512Vnni => "avx512-vnni",
            Self::AvxVnni => "avx-vnni",
            Self::Neon => "neon",
            Self::NeonDot => "neon-dot",
            Self::NeonI8mm => "neon-i8mm",
        }
    }

    /// Parses a name produced by [`Isa::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        ALL.iter().copied().find(|isa| isa.name() == name)
    }

    const fn index(self) -> usize {
        match self {
            Self::Scalar => 0,
            Self::Neon => 1,
            Self::NeonDot => 2,
            Self::NeonI8mm => 3,
            Self::Avx2 => 4,
            Self::AvxVnni => 5,
            Self::Avx512 => 6,
            Self::Avx512Vnni => 7,
        }
    }

    /// Whether this build contains kernels for the arm (for this target architecture).
    ///
    /// Every arm is implemented for its architecture. `AvxVnni` runs natively only on a CPU
    /// with AVX-VNNI (none available to this project); its tests run under Miri (see
    /// `docs/kernels.md`, "AVX-VNNI").
    pub const fn is_implemented(self) -> bool {
        match self {
            Self::Scalar => true,
            // Soft-float x86-64 targets (e.g. x86_64-unknown-none, no SSE2) build no SIMD arms.
            Self::Avx2 | Self::AvxVnni | Self::Avx512 | Self::Avx512Vnni => {
                cfg!(all(target_arch = "x86_64", target_feature = "sse2"))
            }
            // Soft-float aarch64 targets (no NEON) build no SIMD arms.
            Self::Neon | Self::NeonDot | Self::NeonI8mm => {
                cfg!(all(target_arch = "aarch64", target_feature = "neon"))
            }
        }
    }

    /// Whether the CPU supports the arm's features (ignoring the selftest and implementation
    /// status). With `std`: detected at run time; without: `cfg!(target_feature)`.
    pub fn cpu_supports(self) -> bool {
        match self {
            Self::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            // F16C (the fp8 decode) is on every AVX2 CPU (Intel since Ivy Bridge, AMD since
            // Piledriver, both before AVX2); checked anyway, a hypervisor may mask it.
            Self::Avx2 => x86::has("avx2") && x86::has("fma") && x86::has("f16c"),
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => x86::has("avx512f") && x86::has("avx512bw"),
            #[cfg(target_arch = "x86_64")]
            Self::Avx512Vnni => {
                x86::has("avx512f") && x86::has("avx512bw") && x86::has("avx512vnni")
            }
            #[cfg(target_arch = "x86_64")]
            Self::AvxVnni => {
                x86::has("avx2") && x86::has("fma") && x86::has("f16c") && x86::has("avxvnni")
            }
            #[cfg(target_arch = "aarch64")]
            Self::Neon => arm::has("neon"),
            #[cfg(target_arch = "aarch64")]
            Self::NeonDot => arm::has("neon") && arm::has("dotprod"),
            #[cfg(target_arch = "aarch64")]
            Self::NeonI8mm => arm::has("neon") && arm::has("i8mm"),
            #[allow(unreachable_patterns)] // arms of the other architecture
            _ => false,
        }
    }

    /// Whether [`crate::kernels`] may run this arm: implemented in this build, supported by the
    /// CPU, and its first-use selftest passed (the selftest runs on the first call).
    pub fn is_available(self) -> bool {
        if !self.is_implemented() || !self.cpu_supports() {
            return false;
        }
        if self == Self::Scalar {
            return true;
        }
        let slot = &SELFTEST[self.index()];
        match slot.load(Ordering::Acquire) {
            PASSED => true,
            FAILED => false,
            _ => {
                let ok = crate::kernels::selftest(self);
                if !ok {
                    #[cfg(feature = "std")]
                    std::eprintln!(
                        "tetrad-quant: the {} kernel arm disagrees with the scalar reference on its \
                         selftest; it is disabled for this process",
                        self.name()
                    );
                }
                slot.store(if ok { PASSED } else { FAILED }, Ordering::Release);
                ok
            }
        }
    }
}

impl core::fmt::Display for Isa {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

const UNKNOWN: u8 = 0;
const PASSED: u8 = 1;
const FAILED: u8 = 2;
static SELFTEST: [AtomicU8; 8] = [const { AtomicU8::new(UNKNOWN) }; 8];

/// Cached result of [`best`]: `0` = not yet computed, else `index + 1`.
static BEST: AtomicU8 = AtomicU8::new(0);

/// The best available arm on this CPU (detected once, then cached).
pub fn best() -> Isa {
    let cached = BEST.load(Ordering::Acquire);
    if cached != 0 {
        return ALL[usize::from(cached - 1)];
    }
    let pick = ALL.iter().rev().copied().find(|isa| isa.is_available()).unwrap_or(Isa::Scalar);
    #[allow(clippy::cast_possible_truncation)] // index < 8
    BEST.store(pick.index() as u8 + 1, Ordering::Release);
    pick
}

/// Whether the AVX-512 arms may use their VBMI variant (see [`vbmi_lookups`]).
static VBMI_LOOKUPS: AtomicBool = AtomicBool::new(true);

/// Whether the AVX-512 arms' mxfp4 int8-activation kernel uses its AVX-512 VBMI variant
/// (`vpermb` code lookups, which need no nibble masks): the CPU has VBMI (Ice Lake, Zen 4 and
/// later; Skylake-X and Cascade Lake do not), it is not switched off
/// ([`set_vbmi_lookups`]), and this is not Miri (which implements no `vpermb`). Both
/// variants give the same bits; this is not an arm of its own.
#[cfg(target_arch = "x86_64")]
pub(crate) fn vbmi_lookups() -> bool {
    !cfg!(miri) && VBMI_LOOKUPS.load(Ordering::Relaxed) && x86::has("avx512vbmi")
}

/// Allows (`true`, the default) or forbids the VBMI variant of the AVX-512 arms' mxfp4 kernel,
/// so that tests can run both variants on a VBMI machine. Results are identical either way;
/// only speed changes. For tests and measurements.
#[doc(hidden)]
pub fn set_vbmi_lookups(allowed: bool) {
    VBMI_LOOKUPS.store(allowed, Ordering::Relaxed);
}

/// The fp8 bits-decode switch of [`fp8_bits_decode`]: not yet decided (`FP8_AUTO`), decided
/// from the CPU, or set by [`set_fp8_bits_decode`].
static FP8_BITS_DECODE: AtomicU8 = AtomicU8::new(FP8_AUTO);
const FP8_AUTO: u8 = 0;
const FP8_SET_OFF: u8 = 1;
const FP8_SET_ON: u8 = 2;

/// Whether the AVX2 arm's fp8 f32 kernels (one activation row, and passes of two) may decode
/// e4m3 straight to f32 bits against activations scaled by `2¹²⁰` (where every `|x| < 2⁸`),
/// rather than through f16 against `x · 2⁸`. The bits decode turns exponent-0 codes into f32
/// subnormals, which an FMA takes at full speed on AMD's cores but through a microcode assist
/// per instruction on Intel's (30 × slower on random codes), so by default it is used only
/// where the CPU takes subnormal operands at full speed; [`set_fp8_bits_decode`] overrides
/// that. Both decodes give the same bits; this is not an arm of its own.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) fn fp8_bits_decode() -> bool {
    const FP8_CPU_OFF: u8 = 3;
    const FP8_CPU_ON: u8 = 4;
    match FP8_BITS_DECODE.load(Ordering::Relaxed) {
        FP8_SET_ON | FP8_CPU_ON => true,
        FP8_SET_OFF | FP8_CPU_OFF => false,
        _ => {
            let on = crate::arch::x86_64::subnormal_operands_full_speed();
            let decided = if on { FP8_CPU_ON } else { FP8_CPU_OFF };
            // A concurrent `set_fp8_bits_decode` wins: only an undecided switch is written.
            let _ = FP8_BITS_DECODE.compare_exchange(
                FP8_AUTO,
                decided,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            on
        }
    }
}

/// Forces (`true`) or forbids (`false`) the f32-bits decode of the AVX2 arm's fp8 f32 kernels
/// whatever the CPU (by default it is chosen from the CPU, see `fp8_bits_decode`), so that
/// tests can compare it with the f16 decode on the same inputs. Results are identical either
/// way; only speed changes. For tests and measurements.
#[doc(hidden)]
pub fn set_fp8_bits_decode(allowed: bool) {
    FP8_BITS_DECODE.store(if allowed { FP8_SET_ON } else { FP8_SET_OFF }, Ordering::Relaxed);
}

/// Every arm available on this CPU (scalar first).
pub fn available() -> impl Iterator<Item = Isa> {
    ALL.into_iter().filter(|isa| isa.is_available())
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// Runtime (with `std`) or compile-time detection of one x86 feature.
    pub(super) fn has(feature: &str) -> bool {
        #[cfg(feature = "std")]
        {
            match feature {
                "avx2" => std::is_x86_feature_detected!("avx2"),
                "fma" => std::is_x86_feature_detected!("fma"),
                "f16c" => std::is_x86_feature_detected!("f16c"),
                "avx512f" => std::is_x86_feature_detected!("avx512f"),
                "avx512bw" => std::is_x86_feature_detected!("avx512bw"),
                "avx512vnni" => std::is_x86_feature_detected!("avx512vnni"),
                "avxvnni" => std::is_x86_feature_detected!("avxvnni"),
                "avx512vbmi" => std::is_x86_feature_detected!("avx512vbmi"),
                _ => false,
            }
        }
        #[cfg(not(feature = "std"))]
        {
            match feature {
                "avx2" => cfg!(target_feature = "avx2"),
                "fma" => cfg!(target_feature = "fma"),
                "f16c" => cfg!(target_feature = "f16c"),
                "avx512f" => cfg!(target_feature = "avx512f"),
                "avx512bw" => cfg!(target_feature = "avx512bw"),
                "avx512vnni" => cfg!(target_feature = "avx512vnni"),
                "avxvnni" => cfg!(target_feature = "avxvnni"),
                "avx512vbmi" => cfg!(target_feature = "avx512vbmi"),
                _ => false,
            }
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    /// Runtime (with `std`) or compile-time detection of one aarch64 feature.
    pub(super) fn has(feature: &str) -> bool {
        #[cfg(feature = "std")]
        {
            match feature {
                "neon" => std::arch::is_aarch64_feature_detected!("neon"),
                "dotprod" => std::arch::is_aarch64_feature_detected!("dotprod"),
                "i8mm" => std::arch::is_aarch64_feature_detected!("i8mm"),
                _ => false,
            }
        }
        #[cfg(not(feature = "std"))]
        {
            match feature {
                "neon" => cfg!(target_feature = "neon"),
                "dotprod" => cfg!(target_feature = "dotprod"),
                "i8mm" => cfg!(target_feature = "i8mm"),
                _ => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip_and_scalar_is_always_there() {
        for isa in ALL {
            assert_eq!(Isa::from_name(isa.name()), Some(isa));
            assert_eq!(ALL[isa.index()], isa);
        }
        assert!(Isa::Scalar.is_available());
        assert!(best().is_available());
        assert_eq!(best(), best());
    }

    #[test]
    fn preference_order_is_vnni_then_width() {
        let pos = |isa: Isa| ALL.iter().position(|&a| a == isa).unwrap();
        // best() takes the last available arm of ALL.
        assert!(pos(Isa::Avx2) < pos(Isa::AvxVnni));
        assert!(pos(Isa::AvxVnni) < pos(Isa::Avx512));
        assert!(pos(Isa::Avx512) < pos(Isa::Avx512Vnni));
        assert!(pos(Isa::Scalar) < pos(Isa::Avx2) && pos(Isa::Scalar) < pos(Isa::Neon));
        assert!(pos(Isa::Neon) < pos(Isa::NeonDot) && pos(Isa::NeonDot) < pos(Isa::NeonI8mm));
    }

    #[test]
    fn x86_arms_are_implemented_on_x86_64() {
        let x86 = cfg!(all(target_arch = "x86_64", target_feature = "sse2"));
        for isa in [Isa::Avx2, Isa::AvxVnni, Isa::Avx512, Isa::Avx512Vnni] {
            assert_eq!(isa.is_implemented(), x86, "{isa}");
        }
    }
}
