//! An order-preserving Extended JSON reader for the test files.
//!
//! `serde_json::Value` sorts object keys, which would reorder command documents, sort
//! specifications and update pipelines. This reader builds `Bson` straight from the JSON token
//! stream instead: objects keep their key order, integers that fit in 32 bits become `Int32`
//! (relaxed Extended JSON), and wrapper objects such as `{"$numberLong": "1"}` are handed to the
//! bson crate's own Extended JSON handling.

use std::fmt;

use bson::{Bson, Document};
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};

/// Keys that open an Extended JSON wrapper object. Legacy `$regex` is left out on purpose: in
/// test files it is a query operator, not a type wrapper.
const WRAPPER_KEYS: &[&str] = &[
    "$oid",
    "$symbol",
    "$numberInt",
    "$numberLong",
    "$numberDouble",
    "$numberDecimal",
    "$binary",
    "$uuid",
    "$code",
    "$scope",
    "$timestamp",
    "$regularExpression",
    "$dbPointer",
    "$date",
    "$minKey",
    "$maxKey",
    "$undefined",
];

/// Parses one JSON text into a `Bson` value.
pub(crate) fn parse(text: &str) -> Result<Bson, String> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = ValueSeed
        .deserialize(&mut reader)
        .map_err(|e| format!("invalid Extended JSON: {e}"))?;
    reader
        .end()
        .map_err(|e| format!("trailing characters after the JSON value: {e}"))?;
    Ok(value)
}

/// Parses a JSON text that must be an object.
pub(crate) fn parse_document(text: &str) -> Result<Document, String> {
    match parse(text)? {
        Bson::Document(document) => Ok(document),
        other => Err(format!("expected a JSON object, found {other}")),
    }
}

struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Bson;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Bson, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Bson;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Bson, E> {
        Ok(Bson::Boolean(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Bson, E> {
        Ok(i32::try_from(v).map_or(Bson::Int64(v), Bson::Int32))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Bson, E> {
        match i64::try_from(v) {
            Ok(v) => self.visit_i64(v),
            Err(_) => Err(E::custom(format!("integer {v} does not fit in 64 bits"))),
        }
    }

    fn visit_f64<E>(self, v: f64) -> Result<Bson, E> {
        Ok(Bson::Double(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Bson, E> {
        Ok(Bson::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Bson, E> {
        Ok(Bson::String(v))
    }

    fn visit_unit<E>(self) -> Result<Bson, E> {
        Ok(Bson::Null)
    }

    fn visit_none<E>(self) -> Result<Bson, E> {
        Ok(Bson::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bson, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ValueSeed)? {
            items.push(item);
        }
        Ok(Bson::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Bson, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Ok(Bson::Document(Document::new()));
        };
        if WRAPPER_KEYS.contains(&first.as_str()) {
            let replay = ReplayFirstKey {
                first: Some(first),
                rest: map,
            };
            return Bson::deserialize(MapAccessDeserializer::new(replay));
        }
        let mut document = Document::new();
        let value = map.next_value_seed(ValueSeed)?;
        document.insert(first, value);
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed)?;
            document.insert(key, value);
        }
        Ok(Bson::Document(document))
    }
}

/// A map whose first key was already read (to recognise a wrapper) and is yielded again.
struct ReplayFirstKey<A> {
    first: Option<String>,
    rest: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for ReplayFirstKey<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(key) => seed
                .deserialize(IntoDeserializer::<'de, A::Error>::into_deserializer(key))
                .map(Some),
            None => self.rest.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.rest.next_value_seed(seed)
    }
}
