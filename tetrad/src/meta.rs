//! Names shared by the readers of containers and the packed-container tools: the metadata keys,
//! the format name they stamp, and the stamp map every reader builds from `colibri.fmt`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::Class;

/// The format's name, as stamped.
pub const FORMAT_NAME: &str = "int4-rans256-g0";
/// Metadata key of the stamps.
pub const STAMP_KEY: &str = "colibri.fmt";
/// Metadata key of the table JSON.
pub const TABLE_KEY: &str = "colibri.int4-rans256-g0.table";

/// The `colibri.fmt` value (a JSON object of tensor name → format name) as a map. A tensor
/// named twice with the same format collapses; with two different formats it is refused as
/// `E_STAMP_CONFLICT` naming the tensor and both claims (`formats.md`, "Stamps": the same
/// tensor stamped with two different names anywhere is refused) — a JSON parser alone would
/// keep one of the two claims silently. Anything else wrong is `E_STAMP_MALFORMED`; the
/// detail says what, for the caller to prefix with the shard.
pub fn stamp_map(text: &str) -> Result<BTreeMap<String, String>, (Class, String)> {
    let entries = crate::shard::object_entries(text)
        .map_err(|e| (Class::StampMalformed, format!("{STAMP_KEY} is not a JSON object: {e}")))?;
    let mut map = BTreeMap::new();
    for (name, v) in entries {
        let Value::String(format) = v else {
            return Err((
                Class::StampMalformed,
                format!("{STAMP_KEY}: the stamp of {name:?} is not a string"),
            ));
        };
        match map.get(&name) {
            Some(first) if *first != format => {
                return Err((
                    Class::StampConflict,
                    format!("{STAMP_KEY} stamps {name:?} both {first:?} and {format:?}"),
                ));
            }
            Some(_) => {}
            None => {
                map.insert(name, format);
            }
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::{Class, stamp_map};

    #[test]
    fn stamp_map_collapses_agreeing_duplicates_and_refuses_conflicts() {
        let m = stamp_map(r#"{"b": "int4-row", "a": "int8-row", "b": "int4-row"}"#).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m["b"], "int4-row");
        for (text, class, detail) in [
            (
                r#"{"w": "int8-row", "w": "int4-rans256-g0"}"#,
                Class::StampConflict,
                r#"stamps "w" both "int8-row" and "int4-rans256-g0""#,
            ),
            (
                r#"{"w": "int4-rans256-g0", "v": "int4-row", "w": "int8-row"}"#,
                Class::StampConflict,
                r#"both "int4-rans256-g0" and "int8-row""#,
            ),
            (r#"{"w": 1}"#, Class::StampMalformed, r#"the stamp of "w" is not a string"#),
            (r#"["w"]"#, Class::StampMalformed, "is not a JSON object"),
            (r#"{"w": "int4-row"} x"#, Class::StampMalformed, "is not a JSON object"),
            ("not json", Class::StampMalformed, "is not a JSON object"),
        ] {
            let (c, d) = stamp_map(text).unwrap_err();
            assert_eq!(c, class, "{text}");
            assert!(d.contains(detail), "{text}: {d}");
        }
    }
}
