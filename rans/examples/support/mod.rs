//! What the timing examples (`decode_speed`, `rans64_speed`) share: their command line
//! (`[BYTES [ARM [HIST]]]`) and the packed nibbles they time, drawn from a 14-bit table built
//! on the histogram, so the two formats are timed on the same bytes.
#![allow(clippy::cast_possible_truncation)]
use tetrad_rans::Table;

/// The parsed command line and the data.
pub(crate) struct Setup {
    /// The table the nibbles were drawn from (`rans64_speed` builds its own per chunk).
    #[allow(dead_code)]
    pub(crate) table: Table,
    /// `BYTES` packed bytes (two nibbles each).
    pub(crate) packed: Vec<u8>,
    /// `ARM`, unless absent or `all`.
    pub(crate) only: Option<String>,
}

/// Reads `[BYTES [ARM [HIST]]]` (`BYTES` defaults to `default_bytes`; `HIST` is 16
/// comma-separated symbol counts, by default a weight-like bell peaking at 8 with code 0
/// absent) and draws the nibbles: slots of the table picked by a fixed xorshift.
pub(crate) fn setup(default_bytes: usize) -> Setup {
    let bytes: usize = std::env::args().nth(1).map_or(default_bytes, |s| s.parse().unwrap());
    let hist: [u64; 16] = std::env::args().nth(3).map_or(
        [0, 60, 90, 160, 300, 600, 1200, 2200, 3000, 2200, 1200, 600, 300, 160, 90, 60],
        |h| {
            let v: Vec<u64> = h.split(',').map(|c| c.trim().parse().unwrap()).collect();
            v.try_into().expect("HIST: 16 comma-separated counts")
        },
    );
    let table = Table::from_histogram(14, &hist).unwrap();
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut nib = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        table.symbol((s >> 20) as usize & 16383)
    };
    let packed: Vec<u8> = (0..bytes).map(|_| nib() | (nib() << 4)).collect();
    let only = std::env::args().nth(2).filter(|a| a != "all");
    Setup { table, packed, only }
}
