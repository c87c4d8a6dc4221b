//! Collations: the language rules string comparisons follow (the `collation` option of reads,
//! writes, indexes and collections).

use std::fmt;
use std::str::FromStr;

use bson::{Bson, Document};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use typed_builder::TypedBuilder;

use crate::error::Error;

/// A collation: the ICU locale and the comparison rules applied to strings. Only `locale` is
/// required; every other field left at `None` takes the locale's default on the server.
///
/// ```
/// use steadfast::options::{Collation, CollationStrength};
/// let collation = Collation::builder()
///     .locale("fr")
///     .strength(CollationStrength::Secondary)
///     .build();
/// assert_eq!(collation.locale, "fr");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Collation {
    /// The ICU locale (`"fr"`, `"en_US"`, `"simple"` for binary comparison).
    #[builder(!default)]
    pub locale: String,
    /// How many levels of difference count (base letters, accents, case, ...).
    pub strength: Option<CollationStrength>,
    /// Whether case is compared at strengths 1 and 2.
    pub case_level: Option<bool>,
    /// Whether upper or lower case sorts first at the tertiary level.
    pub case_first: Option<CollationCaseFirst>,
    /// Compares digit runs as numbers (`"10"` after `"9"`).
    pub numeric_ordering: Option<bool>,
    /// Whether spaces and punctuation are ignored at the first levels.
    pub alternate: Option<CollationAlternate>,
    /// Which characters `alternate: shifted` ignores.
    pub max_variable: Option<CollationMaxVariable>,
    /// Checks text for full normalisation before comparing.
    pub normalization: Option<bool>,
    /// Compares secondary differences (accents) from the end of the string (French dictionaries).
    pub backwards: Option<bool>,
}

impl Collation {
    /// The collation as the server reads it: only the fields that are set.
    pub(crate) fn to_document(&self) -> Document {
        let mut doc = Document::new();
        doc.insert("locale", self.locale.clone());
        let mut put = |key: &str, value: Option<Bson>| {
            if let Some(value) = value {
                doc.insert(key, value);
            }
        };
        put("strength", self.strength.map(|s| Bson::Int32(s.level())));
        put("caseLevel", self.case_level.map(Bson::Boolean));
        put("caseFirst", self.case_first.map(|c| c.as_str().into()));
        put("numericOrdering", self.numeric_ordering.map(Bson::Boolean));
        put("alternate", self.alternate.map(|a| a.as_str().into()));
        put("maxVariable", self.max_variable.map(|m| m.as_str().into()));
        put("normalization", self.normalization.map(Bson::Boolean));
        put("backwards", self.backwards.map(Bson::Boolean));
        doc
    }
}

impl Serialize for Collation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_document().serialize(serializer)
    }
}

impl From<Collation> for Bson {
    fn from(collation: Collation) -> Self {
        Bson::Document(collation.to_document())
    }
}

/// How many levels of difference a collation compares (the `strength` field, 1 to 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CollationStrength {
    /// Level 1: base characters only (`a` = `á` = `A`).
    Primary,
    /// Level 2: base characters and accents (`a` = `A`, `a` ≠ `á`).
    Secondary,
    /// Level 3, the ICU default: base characters, accents and case.
    Tertiary,
    /// Level 4: also punctuation when `alternate` is `shifted`.
    Quaternary,
    /// Level 5: ties are broken by code point.
    Identical,
}

impl CollationStrength {
    /// The level sent to the server.
    fn level(self) -> i32 {
        match self {
            CollationStrength::Primary => 1,
            CollationStrength::Secondary => 2,
            CollationStrength::Tertiary => 3,
            CollationStrength::Quaternary => 4,
            CollationStrength::Identical => 5,
        }
    }
}

impl From<CollationStrength> for u32 {
    fn from(strength: CollationStrength) -> Self {
        strength.level().unsigned_abs()
    }
}

impl TryFrom<u32> for CollationStrength {
    type Error = Error;

    /// # Errors
    /// `InvalidArgument` for a level outside 1..=5.
    fn try_from(level: u32) -> Result<Self, Error> {
        Ok(match level {
            1 => CollationStrength::Primary,
            2 => CollationStrength::Secondary,
            3 => CollationStrength::Tertiary,
            4 => CollationStrength::Quaternary,
            5 => CollationStrength::Identical,
            _ => {
                return Err(Error::invalid_argument(format!(
                    "a collation strength is a level from 1 to 5, not {level}"
                )));
            }
        })
    }
}

impl fmt::Display for CollationStrength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.level())
    }
}

impl Serialize for CollationStrength {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(self.level())
    }
}

impl<'de> Deserialize<'de> for CollationStrength {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let level = u32::deserialize(deserializer)?;
        CollationStrength::try_from(level).map_err(serde::de::Error::custom)
    }
}

/// Defines a string-valued collation enum: its wire names, `as_str`, `Display`, `FromStr` and
/// serde in both directions.
macro_rules! collation_keyword {
    (
        $(#[$meta:meta])*
        $name:ident { $($(#[$variant_meta:meta])* $variant:ident = $wire:literal),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$variant_meta])* #[serde(rename = $wire)] $variant,)+
        }

        impl $name {
            /// The value as sent to the server.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = Error;

            /// # Errors
            /// `InvalidArgument` for a name the server does not accept.
            fn from_str(value: &str) -> Result<Self, Error> {
                match value {
                    $($wire => Ok($name::$variant),)+
                    other => Err(Error::invalid_argument(format!(
                        concat!("{:?} is not a valid ", stringify!($name)),
                        other
                    ))),
                }
            }
        }
    };
}

collation_keyword! {
    /// Which case sorts first when strings differ only by case (`caseFirst`).
    CollationCaseFirst {
        /// Upper case first.
        Upper = "upper",
        /// Lower case first.
        Lower = "lower",
        /// The locale's default ordering.
        Off = "off",
    }
}

collation_keyword! {
    /// Whether spaces and punctuation are base characters (`alternate`).
    CollationAlternate {
        /// They are compared like any character (the default).
        NonIgnorable = "non-ignorable",
        /// They are ignored at strengths below 4.
        Shifted = "shifted",
    }
}

collation_keyword! {
    /// Which characters `alternate: shifted` ignores (`maxVariable`).
    CollationMaxVariable {
        /// Both whitespace and punctuation.
        Punct = "punct",
        /// Whitespace only.
        Space = "space",
    }
}
