//! Relaxed Extended JSON for log messages, written straight from raw BSON into a buffer that
//! stops at the length limit, so a 16 MB reply costs what the limit allows and no more (the
//! logging specification asks for O(limit), not O(document)). Keys keep the document's order.

use base64::Engine as _;
use bson::RawDocument;
use bson::raw::{RawArray, RawBsonRef};

/// Nesting beyond this is not rendered (the output is truncated there): the server nests at
/// most ~200 levels, and a hostile reply must not be able to exhaust the stack when the
/// length limit is set very high.
const MAX_DEPTH: usize = 150;

/// The marker appended to truncated output; it does not count toward the limit.
const ELLIPSIS: &str = "...";

/// `document` as relaxed Extended JSON, cut to at most `max_length` bytes (at a character
/// boundary, rounding down) with `...` appended when anything was cut. A malformed document is
/// rendered up to the malformed element and marked as cut.
pub(crate) fn render(document: &RawDocument, max_length: usize) -> String {
    let mut out = Bounded::new(max_length);
    out.document(document, 0);
    out.finish()
}

/// A string that accepts at most `limit` bytes; what does not fit marks it truncated, after
/// which every write is a no-op.
struct Bounded {
    text: String,
    limit: usize,
    truncated: bool,
}

impl Bounded {
    fn new(limit: usize) -> Self {
        // The limit may be huge (usize::MAX means "never truncate"): do not reserve it.
        Bounded {
            text: String::with_capacity(limit.min(1024)),
            limit,
            truncated: false,
        }
    }

    fn finish(mut self) -> String {
        if self.truncated {
            self.text.push_str(ELLIPSIS);
        }
        self.text
    }

    fn push(&mut self, piece: &str) {
        if self.truncated {
            return;
        }
        let room = self.limit.saturating_sub(self.text.len());
        if piece.len() <= room {
            self.text.push_str(piece);
            return;
        }
        let mut end = room;
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&piece[..end]);
        self.truncated = true;
    }

    /// A JSON string literal, escaped as JSON requires.
    fn string(&mut self, value: &str) {
        self.push("\"");
        // Only what can still fit is scanned: escaping never shortens text, so anything past
        // `room` bytes of the value is cut anyway.
        let room = self.limit.saturating_sub(self.text.len());
        let (mut rest, cut) = match (room..value.len()).find(|&i| value.is_char_boundary(i)) {
            Some(end) => (&value[..end], true),
            None => (value, false),
        };
        while let Some(at) = rest.find(|c: char| c == '"' || c == '\\' || c < ' ') {
            if self.truncated {
                return;
            }
            self.push(&rest[..at]);
            let escaped = rest[at..].chars().next().unwrap_or(' ');
            match escaped {
                '"' => self.push("\\\""),
                '\\' => self.push("\\\\"),
                '\n' => self.push("\\n"),
                '\r' => self.push("\\r"),
                '\t' => self.push("\\t"),
                other => self.push(&format!("\\u{:04x}", u32::from(other))),
            }
            rest = &rest[at + escaped.len_utf8()..];
        }
        self.push(rest);
        if cut {
            self.truncated = true;
        }
        self.push("\"");
    }

    /// `{"<key>":<string>}`, the shape of most type wrappers.
    fn wrapper(&mut self, key: &str, value: &str) {
        self.push("{\"");
        self.push(key);
        self.push("\":");
        self.string(value);
        self.push("}");
    }

    fn document(&mut self, document: &RawDocument, depth: usize) {
        if depth >= MAX_DEPTH {
            self.truncated = true;
            return;
        }
        self.push("{");
        for (index, element) in document.iter().enumerate() {
            if self.truncated {
                return;
            }
            let Ok((key, value)) = element else {
                self.truncated = true;
                return;
            };
            if index > 0 {
                self.push(",");
            }
            self.string(key.as_str());
            self.push(":");
            self.value(value, depth + 1);
        }
        self.push("}");
    }

    fn array(&mut self, array: &RawArray, depth: usize) {
        if depth >= MAX_DEPTH {
            self.truncated = true;
            return;
        }
        self.push("[");
        for (index, element) in array.into_iter().enumerate() {
            if self.truncated {
                return;
            }
            let Ok(value) = element else {
                self.truncated = true;
                return;
            };
            if index > 0 {
                self.push(",");
            }
            self.value(value, depth + 1);
        }
        self.push("]");
    }

    fn value(&mut self, value: RawBsonRef<'_>, depth: usize) {
        match value {
            RawBsonRef::Double(number) => self.double(number),
            RawBsonRef::String(text) => self.string(text),
            RawBsonRef::Array(array) => self.array(array, depth),
            RawBsonRef::Document(document) => self.document(document, depth),
            RawBsonRef::Boolean(flag) => self.push(if flag { "true" } else { "false" }),
            RawBsonRef::Null => self.push("null"),
            RawBsonRef::Int32(number) => self.push(&number.to_string()),
            RawBsonRef::Int64(number) => self.push(&number.to_string()),
            RawBsonRef::ObjectId(id) => self.wrapper("$oid", &id.to_hex()),
            RawBsonRef::Symbol(text) => self.wrapper("$symbol", text),
            RawBsonRef::JavaScriptCode(code) => self.wrapper("$code", code),
            RawBsonRef::Decimal128(number) => self.wrapper("$numberDecimal", &number.to_string()),
            RawBsonRef::Undefined => self.push("{\"$undefined\":true}"),
            RawBsonRef::MaxKey => self.push("{\"$maxKey\":1}"),
            RawBsonRef::MinKey => self.push("{\"$minKey\":1}"),
            RawBsonRef::Timestamp(ts) => self.push(&format!(
                "{{\"$timestamp\":{{\"t\":{},\"i\":{}}}}}",
                ts.time, ts.increment
            )),
            RawBsonRef::DateTime(date) => self.date(date),
            RawBsonRef::Binary(binary) => {
                let base64 = base64::engine::general_purpose::STANDARD.encode(binary.bytes);
                self.push("{\"$binary\":{\"base64\":");
                self.string(&base64);
                let subtype = u8::from(binary.subtype);
                self.push(&format!(",\"subType\":\"{subtype:02x}\"}}}}"));
            }
            RawBsonRef::RegularExpression(regex) => {
                self.push("{\"$regularExpression\":{\"pattern\":");
                self.string(regex.pattern.as_str());
                self.push(",\"options\":");
                self.string(regex.options.as_str());
                self.push("}}");
            }
            RawBsonRef::JavaScriptCodeWithScope(code) => {
                self.push("{\"$code\":");
                self.string(code.code);
                self.push(",\"$scope\":");
                self.document(code.scope, depth + 1);
                self.push("}");
            }
            // The deprecated DBPointer's parts are not readable through the bson crate's API;
            // no server sends one, so its type is all a log message shows.
            RawBsonRef::DbPointer(_) => self.push("{\"$dbPointer\":{}}"),
        }
    }

    /// A finite double as a JSON number that stays a double (`1.0`, not `1`); the others as
    /// the `$numberDouble` wrapper, as relaxed Extended JSON requires.
    fn double(&mut self, number: f64) {
        if number.is_finite() {
            // Debug keeps the fractional part and uses exponents for extremes: valid JSON.
            self.push(&format!("{number:?}"));
        } else if number.is_nan() {
            self.wrapper("$numberDouble", "NaN");
        } else if number > 0.0 {
            self.wrapper("$numberDouble", "Infinity");
        } else {
            self.wrapper("$numberDouble", "-Infinity");
        }
    }

    /// A date between years 1970 and 9999 as an ISO-8601 string, any other as milliseconds.
    fn date(&mut self, date: bson::DateTime) {
        const YEAR_10000_MS: i64 = 253_402_300_800_000;
        let millis = date.timestamp_millis();
        let iso = (0..YEAR_10000_MS)
            .contains(&millis)
            .then(|| date.try_to_rfc3339_string().ok())
            .flatten();
        match iso {
            Some(iso) => self.wrapper("$date", &iso),
            None => self.push(&format!("{{\"$date\":{{\"$numberLong\":\"{millis}\"}}}}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use bson::{RawDocumentBuf, doc, oid::ObjectId};

    use super::*;

    fn raw(document: &bson::Document) -> RawDocumentBuf {
        RawDocumentBuf::try_from(document).expect("a test document encodes")
    }

    #[test]
    fn renders_relaxed_extended_json_in_key_order() {
        let id = ObjectId::from_bytes([1; 12]);
        let document = doc! {
            "insert": "coll", "n": 1_i32, "big": 5_000_000_000_i64, "d": 1.0, "ok": true,
            "id": id, "nested": { "a": [1_i32, "x", null] }, "nan": f64::NAN,
        };
        assert_eq!(
            render(&raw(&document), usize::MAX),
            "{\"insert\":\"coll\",\"n\":1,\"big\":5000000000,\"d\":1.0,\"ok\":true,\
             \"id\":{\"$oid\":\"010101010101010101010101\"},\"nested\":{\"a\":[1,\"x\",null]},\
             \"nan\":{\"$numberDouble\":\"NaN\"}}"
        );
    }

    #[test]
    fn escapes_strings() {
        let document = doc! { "s": "a\"b\\c\nd\u{1}" };
        assert_eq!(
            render(&raw(&document), usize::MAX),
            "{\"s\":\"a\\\"b\\\\c\\nd\\u0001\"}"
        );
    }

    #[test]
    fn output_exactly_at_the_limit_is_not_truncated() {
        let document = raw(&doc! { "a": 1_i32 });
        let full = render(&document, usize::MAX);
        assert_eq!(full, "{\"a\":1}");
        assert_eq!(render(&document, full.len()), full);
        assert_eq!(render(&document, full.len() - 1), "{\"a\":1...");
    }

    #[test]
    fn zero_limit_keeps_only_the_ellipsis() {
        assert_eq!(render(&raw(&doc! { "a": 1_i32 }), 0), "...");
        // An empty document renders as `{}`, which still does not fit in zero bytes.
        assert_eq!(render(&raw(&doc! {}), 0), "...");
    }

    #[test]
    fn truncation_rounds_down_to_a_character_boundary() {
        // `{"s":"é` is 8 bytes; `é` spans bytes 6 and 7.
        let document = raw(&doc! { "s": "é" });
        assert_eq!(render(&document, 7), "{\"s\":\"...");
        assert_eq!(render(&document, 8), "{\"s\":\"é...");
        // A four-byte character cut in any of its three inner positions.
        let document = raw(&doc! { "s": "😀" });
        for limit in 7..10 {
            assert_eq!(render(&document, limit), "{\"s\":\"...", "limit {limit}");
        }
        assert_eq!(render(&document, 10), "{\"s\":\"😀...");
    }

    #[test]
    fn a_large_document_costs_only_the_limit() {
        let big = "x".repeat(1 << 20);
        let document = raw(&doc! { "big": big });
        let rendered = render(&document, 1000);
        assert_eq!(rendered.len(), 1000 + ELLIPSIS.len());
        assert!(
            rendered.capacity() < 4096,
            "no buffer for the whole document"
        );
    }

    #[test]
    fn deep_nesting_is_cut_not_recursed() {
        let mut document = doc! { "leaf": 1_i32 };
        for _ in 0..(MAX_DEPTH + 10) {
            document = doc! { "n": document };
        }
        let rendered = render(&raw(&document), usize::MAX);
        assert!(rendered.ends_with(ELLIPSIS));
        assert!(!rendered.contains("leaf"));
    }

    #[test]
    fn dates_binary_and_timestamps() {
        let document = doc! {
            "date": bson::DateTime::from_millis(0),
            "old": bson::DateTime::from_millis(-1),
            "bin": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] },
            "ts": bson::Timestamp { time: 5, increment: 6 },
        };
        assert_eq!(
            render(&raw(&document), usize::MAX),
            "{\"date\":{\"$date\":\"1970-01-01T00:00:00Z\"},\
             \"old\":{\"$date\":{\"$numberLong\":\"-1\"}},\
             \"bin\":{\"$binary\":{\"base64\":\"AQI=\",\"subType\":\"00\"}},\
             \"ts\":{\"$timestamp\":{\"t\":5,\"i\":6}}}"
        );
    }
}
