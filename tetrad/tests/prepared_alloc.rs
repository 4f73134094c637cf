//! `PreparedTensor::matmul` and `matmul_rows` allocate nothing once the tensor is prepared:
//! a counting global allocator counts this thread's allocations around the calls, for a dense
//! int4-row tensor, an `int4-rans256-g0` record and a CFS1 blob, f32 and int8 activations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use tetrad::container::Container;
use tetrad::packed::pack::{PackOptions, pack};
use tetrad_quant::adapter::Acts;
use tetrad_quant::kernels::quantize_activations;

/// Counts the allocations of the threads that asked for it.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: never touch a thread-local that is being torn down.
    let on = COUNTING.try_with(Cell::get).unwrap_or(false);
    if on {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counters are `const`-initialised thread-locals without destructors, so
// touching them never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's `layout` contract is passed on to `System` as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: `ptr` and `layout` come from this allocator, i.e. from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Allocations this thread made while running `f`.
fn allocations(f: impl FnOnce()) -> usize {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    COUNT.with(Cell::get)
}

const W: &str = "model.layers.0.mlp.experts.1.down_proj.weight";
const O: usize = 96;
const I: usize = 1001;

#[test]
fn matmul_and_matmul_rows_allocate_nothing() {
    // The counter itself counts.
    assert_eq!(allocations(|| drop(std::hint::black_box(vec![1u8; 10]))), 1);
    let t = tempfile::tempdir().unwrap();
    let (input, packed, cfs) = (t.path().join("in"), t.path().join("packed"), t.path().join("cfs"));
    tetrad::synth::write_expert_checkpoint(&input, 1, 2, O, I, 4).unwrap();
    let opts = PackOptions {
        indir: input.clone(),
        outdir: packed.clone(),
        layers: None,
        select: None,
        force: false,
        threads: Some(1),
        quiet: true,
    };
    pack(&opts).unwrap();
    std::fs::create_dir_all(&cfs).unwrap();
    for e in std::fs::read_dir(&input).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "safetensors") {
            tetrad::cfse::pack(&p, &cfs.join(p.file_name().unwrap()), &|_| {}).unwrap();
        }
    }
    for dir in [&input, &packed, &cfs] {
        let c = Container::open(dir).unwrap();
        let p = c.prepare(W, O as u64, I as u64).unwrap();
        let mut scratch = p.scratch();
        for s in [1usize, 3, 16] {
            let x: Vec<f32> = (0..s * I).map(|k| ((k as f32) * 0.37).sin()).collect();
            let (mut q, mut qs) = (vec![0i8; s * I], vec![0f32; s]);
            let xq = quantize_activations(&x, s, I, &mut q, &mut qs).unwrap();
            let mut y = vec![0f32; s * O];
            let mut yb = vec![0f32; s * 40];
            for acts in [Acts::F32 { x: &x, s }, Acts::Q8(&xq)] {
                let n = allocations(|| {
                    p.matmul(acts, &mut y).unwrap();
                    p.matmul(acts, &mut y).unwrap();
                    p.matmul_rows(10..50, acts, &mut yb, &mut scratch).unwrap();
                });
                assert_eq!(n, 0, "{} S={s}: {n} allocations", dir.display());
                assert!(y.iter().any(|&v| v != 0.0));
            }
        }
    }
}
