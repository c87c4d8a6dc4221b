//! Serde forms of the read preference types, as the official driver writes them:
//! `{ mode: "secondaryPreferred", tagSets: [..], maxStalenessSeconds: 90, hedge: { enabled } }`.

use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::read_preference::{
    HedgedReadOptions, ReadPreference, ReadPreferenceMode, ReadPreferenceOptions, TagSet,
};
use super::select::SelectionCriteria;
use crate::serde_util;

/// The fields of [`ReadPreferenceOptions`] under their wire names.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct OptionsForm {
    #[serde(default, alias = "tag_sets", skip_serializing_if = "Option::is_none")]
    tag_sets: Option<Vec<TagSet>>,
    #[serde(
        default,
        rename = "maxStalenessSeconds",
        with = "serde_util::duration_secs",
        skip_serializing_if = "Option::is_none"
    )]
    max_staleness: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hedge: Option<HedgedReadOptions>,
}

impl From<OptionsForm> for ReadPreferenceOptions {
    fn from(form: OptionsForm) -> Self {
        ReadPreferenceOptions {
            tag_sets: form.tag_sets,
            max_staleness: form.max_staleness,
            hedge: form.hedge,
        }
    }
}

impl From<&ReadPreferenceOptions> for OptionsForm {
    fn from(options: &ReadPreferenceOptions) -> Self {
        OptionsForm {
            tag_sets: options.tag_sets.clone(),
            max_staleness: options.max_staleness,
            hedge: options.hedge,
        }
    }
}

impl Serialize for ReadPreferenceOptions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        OptionsForm::from(self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ReadPreferenceOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        OptionsForm::deserialize(deserializer).map(ReadPreferenceOptions::from)
    }
}

#[derive(Serialize, Deserialize)]
struct HedgeForm {
    enabled: bool,
}

impl Serialize for HedgedReadOptions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        HedgeForm {
            enabled: self.enabled,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for HedgedReadOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        HedgeForm::deserialize(deserializer).map(|form| HedgedReadOptions::new(form.enabled))
    }
}

/// A read preference: its mode next to its options.
#[derive(Serialize, Deserialize)]
struct ReadPreferenceForm {
    mode: String,
    #[serde(flatten)]
    options: OptionsForm,
}

impl Serialize for ReadPreference {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ReadPreferenceForm {
            mode: self.mode().as_str().to_string(),
            options: self.options().map(OptionsForm::from).unwrap_or_default(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ReadPreference {
    /// Reads `{ mode, tagSets?, maxStalenessSeconds?, hedge? }`; the mode is matched without
    /// regard to case, and mode primary refuses options.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = ReadPreferenceForm::deserialize(deserializer)?;
        let mode = ReadPreferenceMode::parse(&form.mode).ok_or_else(|| {
            D::Error::custom(format!("unknown read preference mode {:?}", form.mode))
        })?;
        let options = ReadPreferenceOptions::from(form.options);
        if mode == ReadPreferenceMode::Primary && options != ReadPreferenceOptions::default() {
            return Err(D::Error::custom(
                "read preference mode primary takes no tag sets, staleness bound or hedge",
            ));
        }
        Ok(ReadPreference::with_mode(mode).with_options(options))
    }
}

impl<'de> Deserialize<'de> for SelectionCriteria {
    /// Reads a read preference (a predicate cannot be written down).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ReadPreference::deserialize(deserializer).map(SelectionCriteria::ReadPreference)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use bson::{Bson, doc};

    use super::*;

    #[test]
    fn read_preference_round_trips_with_wire_names() {
        let tags: TagSet = BTreeMap::from([("dc".to_string(), "ny".to_string())]);
        let preference = ReadPreference::secondary_preferred(
            ReadPreferenceOptions::builder()
                .tag_sets(vec![tags])
                .max_staleness(Duration::from_secs(90))
                .hedge(HedgedReadOptions::new(true))
                .build(),
        );
        let written = bson::serialize_to_document(&preference).unwrap();
        assert_eq!(
            written,
            doc! {
                "mode": "secondaryPreferred",
                "tagSets": [{ "dc": "ny" }],
                "maxStalenessSeconds": 90_i64,
                "hedge": { "enabled": true },
            }
        );
        let read: ReadPreference = bson::deserialize_from_document(written).unwrap();
        assert_eq!(read, preference);
        let primary = bson::serialize_to_document(&ReadPreference::primary()).unwrap();
        assert_eq!(primary, doc! { "mode": "primary" });
    }

    #[test]
    fn read_preference_errors_and_selection_criteria() {
        let tagged_primary = doc! { "mode": "primary", "tagSets": [{ "a": "b" }] };
        assert!(bson::deserialize_from_document::<ReadPreference>(tagged_primary).is_err());
        assert!(bson::deserialize_from_document::<ReadPreference>(doc! { "mode": "x" }).is_err());
        let criteria: SelectionCriteria =
            bson::deserialize_from_bson(Bson::Document(doc! { "mode": "NEAREST" })).unwrap();
        assert_eq!(
            criteria,
            SelectionCriteria::ReadPreference(ReadPreference::nearest(None))
        );
    }
}
