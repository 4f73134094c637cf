//! Byte-exact JSON text, written the way the reference tools' Python `json.dumps` writes it.
//!
//! The container formats pin their header bytes (sorted keys, a given pair of separators,
//! ASCII only), and the shard and manifest digests make any difference visible, so tetrad
//! writes these few JSON documents by hand instead of through a serializer whose spacing and
//! escaping rules are not ours to pin. The escaping is `json.dumps`' default
//! (`ensure_ascii=True`): `"` `\` and the short escapes `\b \f \n \r \t`, every other control
//! character and every non-ASCII character as `\uXXXX` (UTF-16 surrogate pairs above U+FFFF).

use std::fmt::Write as _;

/// Appends `s` as a JSON string literal (with quotes), escaped as Python's `json.dumps` does.
pub fn push_str_literal(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7E => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(out, "\\u{u:04x}").expect("writing to a String cannot fail");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `s` as a JSON string literal.
pub fn str_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_str_literal(&mut out, s);
    out
}

/// Appends `[a, b, c]` (with `sep` between items) for integer items.
pub fn push_int_list<T: std::fmt::Display>(out: &mut String, items: &[T], sep: &str) {
    out.push('[');
    for (k, v) in items.iter().enumerate() {
        if k > 0 {
            out.push_str(sep);
        }
        write!(out, "{v}").expect("writing to a String cannot fail");
    }
    out.push(']');
}

/// A flat object of string values with sorted keys: `{"a": "x", "b": "y"}` with the given
/// item and key separators (`", "`/`": "` for Python's default, `","`/`":"` for compact).
pub fn sorted_string_map<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    item_sep: &str,
    key_sep: &str,
) -> String {
    let mut v: Vec<(&str, &str)> = entries.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    let mut out = String::from("{");
    for (k, (key, val)) in v.iter().enumerate() {
        if k > 0 {
            out.push_str(item_sep);
        }
        push_str_literal(&mut out, key);
        out.push_str(key_sep);
        push_str_literal(&mut out, val);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_python_json_dumps() {
        // json.dumps('a"b\\c\n\x01é€😀') == '"a\\"b\\\\c\\n\\u0001\\u00e9\\u20ac\\ud83d\\ude00"'
        assert_eq!(
            str_literal("a\"b\\c\n\u{1}é€😀"),
            r#""a\"b\\c\n\u0001\u00e9\u20ac\ud83d\ude00""#
        );
        assert_eq!(str_literal("\u{7f}/"), r#""\u007f/""#);
    }

    #[test]
    fn sorted_map_and_lists() {
        assert_eq!(
            sorted_string_map([("b", "2"), ("a", "1")], ", ", ": "),
            r#"{"a": "1", "b": "2"}"#
        );
        let mut s = String::new();
        push_int_list(&mut s, &[1u32, 20, 300], ", ");
        assert_eq!(s, "[1, 20, 300]");
    }
}
