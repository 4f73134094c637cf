//! `tetrad demo`: the main job on an embedded default, with nothing to download.
//!
//! It generates realistic per-row int4 weights (see [`crate::synth`]), measures their order-0
//! entropy and the compression bound it implies, codes them with every codec the workspace
//! has and with zstd (levels 3 and 19) for reference (checking each round trip byte for byte), and runs the container tools (pack, verify,
//! unpack) on a small generated checkpoint in a temporary directory. Every number printed is
//! measured in this run, on this machine.

use std::time::Instant;

use clap::Args;
use tetrad_rans::{
    Arm, FORMAT_SCALE_BITS, Record, Table, decode_record_with, encode_record_packed, max_record_len,
};

use super::CliError;
use crate::error::Refusal;
use crate::packed::pack::{PackOptions, pack};
use crate::packed::unpack::unpack;
use crate::packed::verify::verify_shard;
use crate::synth;

/// Options of `tetrad demo`.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  tetrad demo --mib 16 --seed 1")]
pub struct DemoArgs {
    /// MiB of packed int4 weights to generate.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub mib: u32,
    /// Seed of the generator (same seed, same weights, same sizes).
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
}

fn gnib(bytes: usize, secs: f64) -> f64 {
    2.0 * bytes as f64 / secs / 1e9
}

fn fail(step: &'static str, e: impl std::fmt::Display) -> CliError {
    CliError::Failed { command: "demo", step, why: e.to_string() }
}

fn refused(step: &'static str, refusal: Refusal) -> CliError {
    CliError::Refused { command: "demo", step, refusal }
}

fn differs(what: impl Into<String>) -> CliError {
    CliError::Check { command: "demo", what: what.into() }
}

/// One entropy codec's run on the demo bytes: its name, coded size, and encode / decode
/// seconds (decode on arm `arm`).
struct Timed {
    name: &'static str,
    len: usize,
    enc: f64,
    arm: &'static str,
    dec: f64,
}

/// Checks a codec's round trip byte for byte and prints its line: size, the distance to the
/// pooled order-0 bound `h` bits/nibble (negative where per-chunk tables beat it), speeds.
fn check_and_report(data: &[u8], back: &[u8], h: f64, c: Timed) -> Result<(), CliError> {
    if back != data {
        return Err(differs(format!("{} round trip differs", c.name)));
    }
    let frac = c.len as f64 / data.len() as f64;
    println!(
        "{:<16} {} bytes = {frac:.4} of int4 ({:+.2}% vs the order-0 bound); encode {:.2}, decode ({}) {:.2} G nibbles/s; round trip exact",
        format!("{}:", c.name),
        c.len,
        (frac / (h / 4.0) - 1.0) * 100.0,
        gnib(data.len(), c.enc),
        c.arm,
        gnib(data.len(), c.dec)
    );
    Ok(())
}

/// Runs the demo.
pub fn run(args: &DemoArgs) -> Result<(), CliError> {
    let bytes = usize::try_from(args.mib).expect("u32 fits usize") << 20;
    let t = Instant::now();
    let data = synth::int4_bytes(bytes, args.seed);
    println!(
        "generated {} MiB of per-row int4 weights ({} nibbles; Gaussian + Laplace rows, seed {}) in {:.2} s",
        args.mib,
        2 * data.len(),
        args.seed,
        t.elapsed().as_secs_f64()
    );
    let hist = synth::nibble_histogram(&data);
    let h = synth::entropy_bits(&hist);
    println!(
        "order-0 entropy: {h:.4} bits/weight -> lossless bound {:.4} of int4 ({:.4}x)",
        h / 4.0,
        4.0 / h
    );

    // int4-rans256-g0: one table from the histogram, one record, checked decode.
    let table = Table::from_histogram(FORMAT_SCALE_BITS, &hist).map_err(|e| fail("table", e))?;
    let mut blob = vec![0u8; max_record_len(2 * data.len(), tetrad_rans::FORMAT_STREAMS)];
    let t = Instant::now();
    let len = encode_record_packed(&table, &data, &mut blob).map_err(|e| fail("encode", e))?;
    let enc = t.elapsed().as_secs_f64();
    blob.truncate(len);
    let record = Record::parse(&blob).map_err(|e| fail("parse", e))?;
    let mut back = vec![0u8; data.len()];
    let arm = Arm::best();
    let t = Instant::now();
    decode_record_with(arm, &table, &record, &mut back).map_err(|e| fail("decode", e))?;
    let dec = t.elapsed().as_secs_f64();
    check_and_report(
        &data,
        &back,
        h,
        Timed { name: "int4-rans256-g0", len, enc, arm: arm.name(), dec },
    )?;

    // CFS1 on the same bytes.
    let mut cblob = vec![0u8; tetrad_fse::max_encoded_len(data.len())];
    let t = Instant::now();
    let clen = tetrad_fse::encode_into(&data, &mut cblob).map_err(|e| fail("cfs1 encode", e))?;
    let cenc = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let n =
        tetrad_fse::decode_into(&cblob[..clen], &mut back).map_err(|e| fail("cfs1 decode", e))?;
    let cdec = t.elapsed().as_secs_f64();
    if n != data.len() || back != data {
        return Err(differs("CFS1 round trip differs"));
    }
    println!(
        "CFS1:            {clen} bytes = {:.4} of int4; encode {:.2}, decode {:.2} G nibbles/s; round trip exact",
        clen as f64 / data.len() as f64,
        gnib(data.len(), cenc),
        gnib(data.len(), cdec)
    );

    // int4-rans64-t1, tetrad's own format, on the same bytes (one core, best decode arm).
    {
        use tetrad_rans::rans64;
        let shift = rans64::DEFAULT_CHUNK_SHIFT; // 2^20-byte chunks
        let mut rblob = vec![0u8; rans64::max_encoded_len(data.len(), shift)];
        let t = Instant::now();
        let rlen =
            rans64::encode_into(&data, shift, &mut rblob).map_err(|e| fail("rans64 encode", e))?;
        let renc = t.elapsed().as_secs_f64();
        let rarm = rans64::Arm::best();
        back.fill(0);
        let t = Instant::now();
        rans64::decode_with(rarm, &rblob[..rlen], &mut back)
            .map_err(|e| fail("int4-rans64-t1 decode", e))?;
        let rdec = t.elapsed().as_secs_f64();
        let timed =
            Timed { name: "int4-rans64-t1", len: rlen, enc: renc, arm: rarm.name(), dec: rdec };
        check_and_report(&data, &back, h, timed)?;
        println!(
            "                 (a table per 1 MiB chunk, so it can beat the pooled order-0 bound)"
        );
    }

    // zstd on the same bytes, for reference (level 3: its default; level 19: near its best).
    for level in [3, 19] {
        let t = Instant::now();
        let z = zstd::bulk::compress(&data, level).map_err(|e| fail("zstd encode", e))?;
        let zenc = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let n = zstd::bulk::decompress_to_buffer(&z, &mut back[..])
            .map_err(|e| fail("zstd decode", e))?;
        let zdec = t.elapsed().as_secs_f64();
        if n != data.len() || back != data {
            return Err(differs("zstd round trip differs"));
        }
        println!(
            "zstd -{level:<2}:       {} bytes = {:.4} of int4; encode {:.3}, decode {:.2} G nibbles/s (reference)",
            z.len(),
            z.len() as f64 / data.len() as f64,
            gnib(data.len(), zenc),
            gnib(data.len(), zdec)
        );
    }

    // The container tools on a small generated MoE checkpoint.
    let dir = tempfile::tempdir().map_err(|e| fail("temp dir", e))?;
    let (input, packed, restored) =
        (dir.path().join("model"), dir.path().join("packed"), dir.path().join("restored"));
    synth::write_expert_checkpoint(&input, 2, 4, 256, 1024, args.seed)
        .map_err(|e| fail("checkpoint", e))?;
    let report = pack(&PackOptions {
        indir: input.clone(),
        outdir: packed.clone(),
        layers: None,
        select: None,
        force: false,
        threads: None,
        quiet: true,
    })
    .map_err(|e| refused("pack", e))?;
    println!(
        "pack: 2 shards, {} expert weights ({} bytes of int4) -> {} shard(s)",
        report.records,
        report.original_bytes,
        report.shards.len()
    );
    println!("{}", report.ratio_line());
    let mut refusals = 0;
    for (file, ..) in &report.shards {
        let v = verify_shard(&packed.join(file), None);
        refusals += v.refusals.len();
        println!("verify: {}", v.summary());
    }
    if refusals > 0 {
        return Err(differs(format!("verify refused {refusals} record(s)")));
    }
    unpack(
        &packed,
        &restored,
        &crate::packed::unpack::UnpackOptions { quiet: true, ..Default::default() },
    )
    .map_err(|e| refused("unpack", e))?;
    let a = crate::shardset::ShardSet::open_dir(&input).map_err(|e| refused("reopen", e))?;
    let b = crate::shardset::ShardSet::open_dir(&restored).map_err(|e| refused("reopen", e))?;
    let mut same = 0;
    for (name, &loc) in &b.index {
        let (oloc, _) =
            a.get(name).ok_or_else(|| differs(format!("{name} missing after unpack")))?;
        if a.data(oloc) != b.data(loc) {
            return Err(differs(format!("{name} differs after unpack")));
        }
        same += 1;
    }
    println!("unpack: {same} tensors restored byte for byte");
    matmul_check(&input, &packed)?;
    println!("next: `tetrad --help`; docs/ has the formats, testing and performance notes");
    Ok(())
}

/// Multiplies one expert through the fused decode-then-matmul adapter and through the dense
/// int4-row kernel, and checks the two agree bit for bit.
fn matmul_check(input: &std::path::Path, packed: &std::path::Path) -> Result<(), CliError> {
    use crate::container::{Container, TensorView};
    use tetrad_quant::adapter::{Acts, Rans256Matrix};
    use tetrad_quant::kernels::{Matrix, Scales, matmul_with};
    const NAME: &str = "model.layers.0.mlp.experts.0.up_proj.weight";
    let (o, i, s) = (256usize, 1024usize, 4usize);
    let dense = Container::open(input).map_err(|e| refused("open", e))?;
    let coded = Container::open(packed).map_err(|e| refused("open", e))?;
    let x: Vec<f32> = (0..s * i).map(|k| ((k as f32) * 0.013).sin()).collect();
    let isa = tetrad_quant::isa::best();
    let (mut y_dense, mut y_fused) = (vec![0f32; s * o], vec![0f32; s * o]);
    let TensorView::Dense { weights, scales: Some(sc), .. } =
        dense.tensor(NAME, o as u64, i as u64).map_err(|e| refused("tensor", e))?
    else {
        return Err(differs("the generated expert is not dense int4-row"));
    };
    let sc = sc.to_f32().ok_or_else(|| differs("scales are not floats"))?;
    let m = Matrix::new(tetrad_quant::Format::Int4Row, weights, Scales::F32(&sc), o, i, 0)
        .map_err(|e| fail("matrix", e))?;
    let t = Instant::now();
    matmul_with(isa, &m, &x, s, &mut y_dense).map_err(|e| fail("dense matmul", e))?;
    let td = t.elapsed().as_secs_f64();
    let TensorView::Rans256 { record, table, .. } =
        coded.tensor(NAME, o as u64, i as u64).map_err(|e| refused("tensor", e))?
    else {
        return Err(differs("the packed expert is not int4-rans256-g0"));
    };
    let fm = Rans256Matrix::new(record.blob(), &table, &sc, o, i).map_err(|e| fail("record", e))?;
    let t = Instant::now();
    fm.matmul_with(isa, Arm::best(), Acts::F32 { x: &x, s }, &mut y_fused)
        .map_err(|e| fail("fused matmul", e))?;
    let tf = t.elapsed().as_secs_f64();
    if y_dense.iter().map(|v| v.to_bits()).ne(y_fused.iter().map(|v| v.to_bits())) {
        return Err(differs("fused and dense matmul differ"));
    }
    println!(
        "matmul {NAME} [{o}x{i}], S = {s}: fused decode+int4 kernel == dense int4-row kernel, bit for bit ({}; {:.2} ms vs {:.2} ms)",
        isa.name(),
        tf * 1e3,
        td * 1e3
    );
    Ok(())
}
