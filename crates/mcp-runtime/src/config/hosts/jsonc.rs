//! JSON with comments, as VS Code and Cursor write their `mcp.json` files.
//!
//! `//` and `/* */` comments and trailing commas are blanked out with spaces (a comment's
//! line breaks are kept), so the text left is plain JSON whose syntax errors keep the
//! line and column of the file.

/// `text` with its comments and trailing commas replaced by spaces.
pub(super) fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut at = 0;
    // The position of the last `,` outside a string, while only blanks followed it.
    let mut comma = None;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                comma = None;
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    out[at] = b' ';
                    at += 1;
                }
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                let end = text[at + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |end| at + 2 + end + 2);
                for byte in &mut out[at..end] {
                    if !matches!(*byte, b'\n' | b'\r') {
                        *byte = b' ';
                    }
                }
                at = end;
            }
            b',' => {
                comma = Some(at);
                at += 1;
            }
            b'}' | b']' => {
                if let Some(comma) = comma.take() {
                    out[comma] = b' ';
                }
                at += 1;
            }
            byte => {
                if !byte.is_ascii_whitespace() {
                    comma = None;
                }
                at += 1;
            }
        }
    }
    // Only ASCII bytes outside strings were replaced, by ASCII spaces.
    String::from_utf8(out).expect("ASCII replaced by ASCII keeps UTF-8")
}

/// Whether `text` looks like JSON: its first character, after blanks and comments, is
/// `{`. A TOML document never starts so.
pub(crate) fn looks_like_json(text: &str) -> bool {
    let mut rest = text.trim_start_matches('\u{feff}');
    loop {
        rest = rest.trim_start();
        if let Some(comment) = rest.strip_prefix("//") {
            rest = comment.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(comment) = rest.strip_prefix("/*") {
            rest = comment.split_once("*/").map_or("", |(_, after)| after);
        } else {
            return rest.starts_with('{');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_become_blanks_in_place() {
        let text = "{ // note\n  \"a\": \"//x,/*y*/\", /* b\n */ \"c\": [1, 2,],\n}";
        let stripped = strip(text);
        assert_eq!(
            stripped,
            "{        \n  \"a\": \"//x,/*y*/\",     \n    \"c\": [1, 2 ] \n}"
        );
        assert_eq!(stripped.len(), text.len());
        let value: serde_json::Value = serde_json::from_str(&stripped).unwrap();
        assert_eq!(value, serde_json::json!({"a": "//x,/*y*/", "c": [1, 2]}));
    }

    #[test]
    fn an_escaped_quote_does_not_end_a_string() {
        let text = r#"{"a": "x\"//", "b": 1,}"#;
        assert_eq!(strip(text), r#"{"a": "x\"//", "b": 1 }"#);
    }

    #[test]
    fn json_is_told_from_toml_by_its_first_character() {
        assert!(looks_like_json("{}"));
        assert!(looks_like_json(
            "\u{feff}\n  // servers\n/* x */ {\"servers\": {}}"
        ));
        assert!(!looks_like_json("[mcp_servers.a]\ncommand = \"x\""));
        assert!(!looks_like_json("# {\n"));
        assert!(!looks_like_json(""));
    }
}
