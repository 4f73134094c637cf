//! Shared helpers of the criterion benchmarks: realistic data ([`synth`], from
//! [`tetrad::synth`]) and the measurement [`clock`].
pub use tetrad::synth;

pub mod clock {
    //! The benches' clock: this thread's CPU time by default, wall time on request.
    //!
    //! On a machine shared with other processes, under contention wall time
    //! mostly measures the others, while the thread's on-CPU time
    //! (`/proc/thread-self/schedstat`, ns) measures the code. `TETRAD_BENCH_CLOCK=wall` switches
    //! to wall-clock time (right on an idle machine, and for multi-threaded groups). The clock
    //! in use is printed once. Criterion's `Gelem/s` reads as G nibbles/s or G weights/s,
    //! whatever the bench counts as elements.

    use std::time::Instant;

    use criterion::Throughput;
    use criterion::measurement::{Measurement, ValueFormatter};

    /// Wall-clock or this thread's CPU time, in nanoseconds.
    #[derive(Debug, Clone, Copy)]
    pub struct Clock {
        cpu: bool,
    }

    impl Clock {
        /// The clock `TETRAD_BENCH_CLOCK` asks for (thread CPU time unless `wall`), announced
        /// on stderr with the bench's `name`.
        pub fn from_env(name: &str) -> Clock {
            let wall = std::env::var("TETRAD_BENCH_CLOCK").is_ok_and(|v| v == "wall");
            let cpu = !wall && thread_cpu_ns().is_some();
            eprintln!("{name} bench clock: {}", if cpu { "thread CPU time" } else { "wall time" });
            Clock { cpu }
        }

        /// Always wall time (for groups that run several threads).
        pub fn wall() -> Clock {
            Clock { cpu: false }
        }
    }

    /// This thread's on-CPU nanoseconds, where the kernel reports them.
    pub fn thread_cpu_ns() -> Option<u64> {
        let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        s.split_whitespace().next()?.parse().ok()
    }

    impl Measurement for Clock {
        type Intermediate = (Instant, u64);
        type Value = f64;
        fn start(&self) -> (Instant, u64) {
            (Instant::now(), if self.cpu { thread_cpu_ns().unwrap_or(0) } else { 0 })
        }
        fn end(&self, (t, c): (Instant, u64)) -> f64 {
            if self.cpu {
                thread_cpu_ns().unwrap_or(0).saturating_sub(c) as f64
            } else {
                t.elapsed().as_nanos() as f64
            }
        }
        fn add(&self, a: &f64, b: &f64) -> f64 {
            a + b
        }
        fn zero(&self) -> f64 {
            0.0
        }
        fn to_f64(&self, v: &f64) -> f64 {
            *v
        }
        fn formatter(&self) -> &dyn ValueFormatter {
            &NanosFormatter
        }
    }

    struct NanosFormatter;

    impl ValueFormatter for NanosFormatter {
        fn scale_values(&self, ns: f64, values: &mut [f64]) -> &'static str {
            let (factor, unit) = match ns {
                n if n < 1e3 => (1.0, "ns"),
                n if n < 1e6 => (1e-3, "µs"),
                n if n < 1e9 => (1e-6, "ms"),
                _ => (1e-9, "s"),
            };
            values.iter_mut().for_each(|v| *v *= factor);
            unit
        }
        fn scale_throughputs(
            &self,
            typical: f64,
            t: &Throughput,
            values: &mut [f64],
        ) -> &'static str {
            let per = match *t {
                Throughput::Bytes(n) | Throughput::BytesDecimal(n) | Throughput::Elements(n) => {
                    n as f64
                }
            };
            let (div, unit) = match (t, per * 1e9 / typical) {
                (Throughput::Elements(_), r) if r >= 1e9 => (1e9, "Gelem/s"),
                (Throughput::Elements(_), _) => (1e6, "Melem/s"),
                (_, r) if r >= 1e9 => (1e9, "GB/s"),
                _ => (1e6, "MB/s"),
            };
            values.iter_mut().for_each(|v| *v = per * 1e9 / *v / div);
            unit
        }
        fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
            "ns"
        }
    }
}
