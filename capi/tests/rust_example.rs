//! The Rust example of `docs/ENGINE.md`, compiled and run. The lines between the two marker
//! comments are the example; the test checks that the document shows them verbatim.

use tetrad_engine as tetrad;

#[test]
fn engine_example_from_rust() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    tetrad::synth::write_expert_checkpoint(dir.path(), 1, 2, 64, 256, 7)?;
    let checkpoint = dir.path();
    // ENGINE.md example begins
    use tetrad::container::Container;
    use tetrad::quant::adapter::Acts;
    use tetrad::quant::kernels::quantize_activations;

    // Open once: every shard's header, stamps and tables are checked here.
    let c = Container::open(checkpoint)?;
    // A tensor by name with the [O, I] of the model configuration; its format is decided by
    // its stamp (verified) or by byte arithmetic, and refused by name if neither fits.
    let name = "model.layers.0.mlp.experts.1.up_proj.weight";
    let (o, i, s) = (64usize, 256usize, 2usize);
    let w = c.tensor(name, o as u64, i as u64)?;
    println!("{name}: {}", w.format().name());

    // y (S × O) = x (S × I) · Wᵀ, f32 activations, on 2 threads.
    let x: Vec<f32> = (0..s * i).map(|k| (k % 7) as f32 - 3.0).collect();
    let mut y = vec![0f32; s * o];
    let isa = tetrad::quant::isa::best();
    w.matmul_acts(name, isa, Acts::F32 { x: &x, s }, &mut y, 2)?;

    // The same with int8 activations: exact integer dot products.
    let (mut q, mut scales) = (vec![0i8; s * i], vec![0f32; s]);
    let acts = quantize_activations(&x, s, i, &mut q, &mut scales)?;
    let mut y8 = vec![0f32; s * o];
    w.matmul_acts(name, isa, Acts::Q8(&acts), &mut y8, 1)?;

    // The dense bytes (int4-row for every int4 weight, compressed or not).
    let mut dense = vec![0u8; usize::try_from(w.decoded_len())?];
    w.decode_into(&mut dense)?;

    // Refusals carry a class name and the details.
    match c.tensor(name, o as u64 + 1, i as u64) {
        Err(r) => println!("refused: {} ({})", r.class, r.detail),
        Ok(_) => unreachable!("the bytes do not give [O + 1, I]"),
    }
    // ENGINE.md example ends
    assert_eq!(dense.len(), o * i / 2);
    assert!(y.iter().any(|v| *v != 0.0) && y8.iter().any(|v| *v != 0.0));

    let me = include_str!("rust_example.rs");
    let begin = me.find("// ENGINE.md example begins\n").unwrap() + 28;
    let end = me.find("    // ENGINE.md example ends").unwrap();
    let example: String = me[begin..end]
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ENGINE.md"))?;
    assert!(doc.contains(example.trim()), "docs/ENGINE.md does not show the Rust example verbatim");
    Ok(())
}
