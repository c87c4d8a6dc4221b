//! Namespaces: a database name and a collection name.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A `database.collection` pair.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Namespace {
    /// The database name.
    pub db: String,
    /// The collection name (may itself contain dots).
    pub coll: String,
}

impl Namespace {
    /// The namespace of collection `coll` in database `db`.
    pub fn new(db: impl Into<String>, coll: impl Into<String>) -> Self {
        Namespace {
            db: db.into(),
            coll: coll.into(),
        }
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.db, self.coll)
    }
}

impl FromStr for Namespace {
    type Err = Error;

    /// Splits at the first dot: database names cannot contain one, collection names can.
    fn from_str(s: &str) -> Result<Self> {
        match s.split_once('.') {
            Some((db, coll)) if !db.is_empty() && !coll.is_empty() => Ok(Namespace::new(db, coll)),
            _ => Err(Error::invalid_argument(format!(
                "'{s}' is not a namespace of the form database.collection"
            ))),
        }
    }
}

/// As `"database.collection"`, the string form the official driver uses.
impl serde::Serialize for Namespace {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// From `"database.collection"`, split at the first dot.
impl<'de> serde::Deserialize<'de> for Namespace {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::Namespace;

    #[test]
    fn serializes_as_its_string_form() {
        let ns = Namespace::new("shop", "orders.archive");
        let document = bson::doc! { "ns": bson::serialize_to_bson(&ns).unwrap() };
        assert_eq!(document.get_str("ns").unwrap(), "shop.orders.archive");
        let back: Namespace =
            bson::deserialize_from_bson(document.get("ns").unwrap().clone()).unwrap();
        assert_eq!(back, ns);
        assert!(
            bson::deserialize_from_bson::<Namespace>(bson::Bson::String("nodot".into())).is_err()
        );
    }

    #[test]
    fn parses_at_the_first_dot() {
        let ns: Namespace = "shop.orders.archive".parse().expect("valid namespace");
        assert_eq!(ns, Namespace::new("shop", "orders.archive"));
        assert_eq!(ns.to_string(), "shop.orders.archive");
    }

    #[test]
    fn rejects_missing_parts() {
        for bad in ["shop", ".orders", "shop.", ""] {
            assert!(
                bad.parse::<Namespace>().is_err(),
                "{bad:?} must be rejected"
            );
        }
    }
}
