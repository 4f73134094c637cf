//! The prepared-tensor example of `docs/ENGINE.md`, compiled and run. The lines between the
//! two marker comments are the example; the test checks that the document shows them
//! verbatim.

#[test]
fn prepared_example_from_engine_md() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    tetrad::synth::write_expert_checkpoint(dir.path(), 1, 2, 64, 256, 7)?;
    let checkpoint = dir.path();
    // ENGINE.md prepared example begins
    use tetrad::container::Container;
    use tetrad::quant::adapter::Acts;

    let c = Container::open(checkpoint)?;
    let name = "model.layers.0.mlp.experts.1.up_proj.weight";
    let (o, i, s) = (64usize, 256usize, 1usize);
    // Every check once: format, shapes, scales widened, chunk checks, scratch.
    let w = c.prepare(name, o as u64, i as u64)?;
    let x: Vec<f32> = (0..s * i).map(|k| (k % 7) as f32 - 3.0).collect();

    // Per token on the calling thread: no allocation, no thread.
    let mut y = vec![0f32; s * o];
    w.matmul(Acts::F32 { x: &x, s }, &mut y)?;

    // On the engine's own workers: one row band and one scratch each. Bands start at
    // multiples of `row_split()` rows (`None`: a sequential codec, keep the tensor whole).
    let workers = 2;
    let unit = w.row_split().unwrap_or(o);
    let band = o.div_ceil(workers).next_multiple_of(unit).min(o);
    let mut bands: Vec<Vec<f32>> =
        (0..o).step_by(band).map(|r0| vec![0f32; s * band.min(o - r0)]).collect();
    std::thread::scope(|pool| -> Result<(), tetrad::error::Refusal> {
        let jobs: Vec<_> = (bands.iter_mut().enumerate())
            .map(|(k, y_band)| {
                let (w, x) = (&w, &x);
                pool.spawn(move || {
                    let mut scratch = w.scratch(); // once per worker, reused for every call
                    let rows = k * band..((k + 1) * band).min(o);
                    w.matmul_rows(rows, Acts::F32 { x, s }, y_band, &mut scratch)
                })
            })
            .collect();
        jobs.into_iter().try_for_each(|j| j.join().expect("worker panicked"))
    })?;
    assert_eq!(bands.concat(), y); // S = 1: the bands side by side are y
    // ENGINE.md prepared example ends
    let me = include_str!("prepared_engine_example.rs");
    let begin = me.find("// ENGINE.md prepared example begins\n").unwrap() + 37;
    let end = me.find("    // ENGINE.md prepared example ends").unwrap();
    let example: String = me[begin..end]
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ENGINE.md"))?;
    assert!(doc.contains(example.trim()), "docs/ENGINE.md does not show the example verbatim");
    Ok(())
}
