//! Canonical byte encoding of values for index lookups.
//!
//! Two values get the same encoding exactly when MongoDB considers them equal
//! ([`super::value_order::values_equal`]): numbers are encoded by numeric value, so `1`, `1.0` and
//! `NumberLong(1)` collide in the `_id` index as they do in mongod.

use bson::{Bson, Document};

use super::value_order::{Number, canonical_rank};

/// The encoded key of one value.
pub(crate) fn encode_key(value: &Bson) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    encode_into(&mut out, value);
    out
}

/// The encoded key of several values (a compound index key).
pub(crate) fn encode_compound_key(values: &[Bson]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 * values.len());
    for value in values {
        encode_into(&mut out, value);
    }
    out
}

fn push_len_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    // Lengths are bounded by the 16 MiB document limit, so u32 is enough.
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
}

fn encode_document(out: &mut Vec<u8>, document: &Document) {
    out.extend_from_slice(&(document.len() as u64).to_le_bytes());
    for (key, value) in document {
        push_len_prefixed(out, key.as_bytes());
        encode_into(out, value);
    }
}

fn encode_into(out: &mut Vec<u8>, value: &Bson) {
    out.push(canonical_rank(value));
    match value {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
            encode_number(out, Number::of(value).unwrap_or(Number::Int(0)));
        }
        Bson::String(text) | Bson::Symbol(text) | Bson::JavaScriptCode(text) => {
            push_len_prefixed(out, text.as_bytes());
        }
        Bson::Document(document) => encode_document(out, document),
        Bson::Array(items) => {
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                encode_into(out, item);
            }
        }
        Bson::Binary(binary) => {
            out.push(u8::from(binary.subtype));
            push_len_prefixed(out, &binary.bytes);
        }
        Bson::ObjectId(id) => out.extend_from_slice(&id.bytes()),
        Bson::Boolean(flag) => out.push(u8::from(*flag)),
        Bson::DateTime(date) => out.extend_from_slice(&date.timestamp_millis().to_le_bytes()),
        Bson::Timestamp(ts) => {
            out.extend_from_slice(&ts.time.to_le_bytes());
            out.extend_from_slice(&ts.increment.to_le_bytes());
        }
        Bson::RegularExpression(regex) => {
            push_len_prefixed(out, regex.pattern.as_str().as_bytes());
            push_len_prefixed(out, regex.options.as_str().as_bytes());
        }
        Bson::JavaScriptCodeWithScope(code) => {
            push_len_prefixed(out, code.code.as_bytes());
            encode_document(out, &code.scope);
        }
        Bson::DbPointer(pointer) => push_len_prefixed(out, format!("{pointer:?}").as_bytes()),
        Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => {}
    }
}

fn encode_number(out: &mut Vec<u8>, number: Number) {
    match number {
        Number::Int(value) => {
            out.push(0);
            out.extend_from_slice(&value.to_le_bytes());
        }
        Number::Float(value) => {
            // Integral doubles in i64 range share the integer encoding so 1.0 == 1.
            const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
            if value.fract() == 0.0 && (-TWO_POW_63..TWO_POW_63).contains(&value) {
                #[allow(clippy::cast_possible_truncation)]
                let whole = value as i64;
                out.push(0);
                out.extend_from_slice(&whole.to_le_bytes());
            } else if value.is_nan() {
                out.push(2);
            } else {
                out.push(1);
                out.extend_from_slice(&value.to_bits().to_le_bytes());
            }
        }
        Number::Decimal(value) => {
            // A decimal equal to an integer or a double shares its encoding; other decimals
            // (`0.1` is not the double `0.1`) encode their value's canonical text.
            if let Some(whole) = crate::decimal::exact_i64(value) {
                encode_number(out, Number::Int(whole));
            } else if let Some(double) = crate::decimal::exact_f64(value) {
                encode_number(out, Number::Float(double));
            } else if value.is_nan() {
                out.push(2);
            } else {
                out.push(3);
                push_len_prefixed(out, crate::decimal::canonical_text(value).as_bytes());
            }
        }
    }
}
