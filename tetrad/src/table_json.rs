//! The `int4-rans256-g0` table as JSON: the exact metadata value a writer must produce, and the
//! strict parser a reader and the validator use (`docs/int4-rans256-g0.md`, §3).
//!
//! The JSON lives here, not in `tetrad-rans`, because only this crate touches JSON. The codec
//! crate validates the table arrays again when a [`TableParts`] becomes a codec table.
//!
//! Parse refusals follow the reference validator's order: not JSON or a missing key →
//! `E_TABLE_MALFORMED`; `scale_bits` not an int in 1..=15 or `M != 1 << scale_bits` →
//! `E_TABLE_SCALE`; `n_streams != 256` → `E_TABLE_MALFORMED`; `freq`/`start` not 16 ints in
//! `[0, M]` → `E_TABLE_MALFORMED`; sum ≠ M → `E_TABLE_FREQ_SUM` (the validator checks the sum
//! before the prefix); prefix mismatch → `E_TABLE_START`; bad base64 (strict, padded) or a slot
//! array that is not `2·M` bytes → `E_TABLE_MALFORMED`; CRC mismatch → `E_TABLE_CRC`; a slot
//! value > 15, per-symbol slot counts ≠ freq, or unsorted slots → `E_TABLE_SLOT`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use tetrad_rans::Table;

use crate::error::{Class, Classified};
use crate::json::push_int_list;

/// The stream count the format pins.
pub const N_STREAMS: u64 = 256;

/// The raw arrays of a table, as stored in JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableParts {
    /// Scale bits (`M = 1 << scale_bits`), 1..=15.
    pub scale_bits: u32,
    /// Frequency of each nibble symbol; sums to `M`.
    pub freq: [u32; 16],
    /// Exclusive prefix sum of `freq`.
    pub start: [u32; 16],
    /// Symbol of each of the `M` slots.
    pub slots: Vec<u16>,
}

/// A codec table's arrays, for the JSON writer.
pub fn table_parts(t: &Table) -> TableParts {
    TableParts {
        scale_bits: t.scale_bits(),
        freq: *t.freq(),
        start: *t.start(),
        slots: t.slots_u16().collect(),
    }
}

/// A codec table from validated JSON arrays.
pub fn table_from_parts(p: &TableParts) -> Result<Table, tetrad_rans::TableError> {
    Table::from_parts(p.scale_bits, &p.freq, &p.start, &p.slots)
}

/// Why a table JSON was refused; [`TableJsonError::class`] gives the spec's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableJsonError {
    /// Not JSON, a missing key, a wrong type or shape, bad base64, wrong slot length.
    #[error("malformed table: {0}")]
    Malformed(String),
    /// `scale_bits` out of 1..=15 or `M` inconsistent with it.
    #[error("bad scale: {0}")]
    Scale(String),
    /// The frequencies do not sum to `M`.
    #[error("frequencies sum to {sum}, expected M = {m}")]
    FreqSum {
        /// Sum found.
        sum: u64,
        /// `M`.
        m: u64,
    },
    /// `start` is not the exclusive prefix sum of `freq`.
    #[error("start[{symbol}] = {got}, expected the prefix sum {expected}")]
    Start {
        /// Symbol index.
        symbol: usize,
        /// Stored start.
        got: u64,
        /// Prefix sum.
        expected: u64,
    },
    /// The stored CRC does not match the slot bytes.
    #[error("table_crc32 {stored:?} does not match the slot bytes (crc32 {computed:08x})")]
    Crc {
        /// Stored string.
        stored: String,
        /// CRC-32 of the decoded slot bytes.
        computed: u32,
    },
    /// The slot array does not map each slot to its symbol's band.
    #[error("slot {slot} holds {value}: {why}")]
    Slot {
        /// Slot index.
        slot: usize,
        /// Stored symbol.
        value: u16,
        /// What is wrong.
        why: &'static str,
    },
}

impl Classified for TableJsonError {
    fn class_of(&self) -> Class {
        self.class()
    }
}

impl TableJsonError {
    /// The refusal class of the spec.
    pub fn class(&self) -> Class {
        match self {
            Self::Malformed(_) => Class::TableMalformed,
            Self::Scale(_) => Class::TableScale,
            Self::FreqSum { .. } => Class::TableFreqSum,
            Self::Start { .. } => Class::TableStart,
            Self::Crc { .. } => Class::TableCrc,
            Self::Slot { .. } => Class::TableSlot,
        }
    }
}

/// The slot array as the little-endian `u16` bytes the CRC and base64 cover.
pub fn slot_bytes(slots: &[u16]) -> Vec<u8> {
    slots.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// The exact JSON text a writer stores under `colibri.int4-rans256-g0.table`.
pub fn to_json(t: &TableParts) -> String {
    let bytes = slot_bytes(&t.slots);
    let crc = crc32fast::hash(&bytes);
    let mut out = String::with_capacity(bytes.len() * 4 / 3 + 512);
    out.push_str(&format!("{{\"M\": {}, \"freq\": ", 1u32 << t.scale_bits));
    push_int_list(&mut out, &t.freq, ", ");
    out.push_str(&format!(
        ", \"n_streams\": {N_STREAMS}, \"scale_bits\": {}, \"slot_to_symbol_b64\": \"",
        t.scale_bits
    ));
    STANDARD.encode_string(&bytes, &mut out);
    out.push_str("\", \"start\": ");
    push_int_list(&mut out, &t.start, ", ");
    out.push_str(&format!(", \"table_crc32\": \"{crc:08x}\", \"table_id\": \"g0\"}}"));
    out
}

const KEYS: [&str; 8] = [
    "M",
    "freq",
    "n_streams",
    "scale_bits",
    "slot_to_symbol_b64",
    "start",
    "table_crc32",
    "table_id",
];

/// An integer JSON value (not a bool, not a float).
fn as_int(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n.as_u64().map(i128::from).or_else(|| n.as_i64().map(i128::from)),
        _ => None,
    }
}

fn sixteen(v: &Value, key: &str, m: u64) -> Result<[u32; 16], TableJsonError> {
    let bad = || TableJsonError::Malformed(format!("{key} must be a list of 16 ints in [0, {m}]"));
    let list = v.as_array().ok_or_else(bad)?;
    if list.len() != 16 {
        return Err(bad());
    }
    let mut out = [0u32; 16];
    for (o, x) in out.iter_mut().zip(list) {
        let n = as_int(x).ok_or_else(bad)?;
        if n < 0 || n > i128::from(m) {
            return Err(bad());
        }
        *o = u32::try_from(n).map_err(|_| bad())?;
    }
    Ok(out)
}

/// Parses and fully validates a table JSON text, in the validator's refusal order.
pub fn parse(text: &str) -> Result<TableParts, TableJsonError> {
    // A key twice (two "freq" lists, say) would let two readers use different tables.
    let v: Value = crate::shard::parse_unique_keys(text)
        .map_err(|e| TableJsonError::Malformed(crate::shard::json_error("table JSON", &e)))?;
    let obj = v.as_object().ok_or_else(|| TableJsonError::Malformed("not a JSON object".into()))?;
    if let Some(k) = KEYS.iter().find(|k| !obj.contains_key(**k)) {
        return Err(TableJsonError::Malformed(format!("missing key {k:?}")));
    }
    let sb = as_int(&obj["scale_bits"]).filter(|s| (1..=15).contains(s)).ok_or_else(|| {
        TableJsonError::Scale(format!("scale_bits {} not an int in 1..=15", obj["scale_bits"]))
    })?;
    let scale_bits = u32::try_from(sb).expect("checked range");
    let m = 1u64 << scale_bits;
    if as_int(&obj["M"]) != Some(i128::from(m)) {
        return Err(TableJsonError::Scale(format!("M = {} but 1 << scale_bits = {m}", obj["M"])));
    }
    if as_int(&obj["n_streams"]) != Some(i128::from(N_STREAMS)) {
        return Err(TableJsonError::Malformed(format!(
            "n_streams = {}, expected {N_STREAMS}",
            obj["n_streams"]
        )));
    }
    let freq = sixteen(&obj["freq"], "freq", m)?;
    let start = sixteen(&obj["start"], "start", m)?;
    let sum: u64 = freq.iter().map(|&f| u64::from(f)).sum();
    if sum != m {
        return Err(TableJsonError::FreqSum { sum, m });
    }
    let mut acc = 0u64;
    for (symbol, (&f, &s)) in freq.iter().zip(&start).enumerate() {
        if u64::from(s) != acc {
            return Err(TableJsonError::Start { symbol, got: u64::from(s), expected: acc });
        }
        acc += u64::from(f);
    }
    let b64 = obj["slot_to_symbol_b64"]
        .as_str()
        .ok_or_else(|| TableJsonError::Malformed("slot_to_symbol_b64 is not a string".into()))?;
    let bytes = STANDARD.decode(b64).map_err(|e| {
        TableJsonError::Malformed(format!("slot_to_symbol_b64 is not strict base64: {e}"))
    })?;
    let want_len = usize::try_from(2 * m).expect("M <= 2^15");
    if bytes.len() != want_len {
        return Err(TableJsonError::Malformed(format!(
            "slot array is {} bytes, expected 2·M = {want_len}",
            bytes.len()
        )));
    }
    let crc = crc32fast::hash(&bytes);
    let stored = obj["table_crc32"]
        .as_str()
        .ok_or_else(|| TableJsonError::Malformed("table_crc32 is not a string".into()))?;
    if stored != format!("{crc:08x}") {
        return Err(TableJsonError::Crc { stored: stored.to_owned(), computed: crc });
    }
    let slots: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    check_slots(&slots, &freq)?;
    Ok(TableParts { scale_bits, freq, start, slots })
}

/// Slot values ≤ 15, sorted, and each symbol holding exactly `freq[s]` slots.
fn check_slots(slots: &[u16], freq: &[u32; 16]) -> Result<(), TableJsonError> {
    let mut counts = [0u32; 16];
    for (slot, &value) in slots.iter().enumerate() {
        if value > 15 {
            return Err(TableJsonError::Slot { slot, value, why: "symbol above 15" });
        }
        if slot > 0 && value < slots[slot - 1] {
            return Err(TableJsonError::Slot { slot, value, why: "slots are not sorted" });
        }
        counts[usize::from(value)] += 1;
    }
    if let Some(s) = (0..16).find(|&s| counts[s] != freq[s]) {
        let slot = slots.iter().position(|&v| usize::from(v) == s).unwrap_or(0);
        return Err(TableJsonError::Slot {
            slot,
            value: u16::try_from(s).expect("s < 16"),
            why: "per-symbol slot count differs from freq",
        });
    }
    Ok(())
}

/// Slot array of a valid `(freq, start)`: slot `i` in `[start[s], start[s] + freq[s])` maps to `s`.
pub fn slots_from_freq(freq: &[u32; 16]) -> Vec<u16> {
    let mut slots = Vec::new();
    for (s, &f) in (0u16..).zip(freq) {
        slots.extend(std::iter::repeat_n(s, f as usize));
    }
    slots
}
