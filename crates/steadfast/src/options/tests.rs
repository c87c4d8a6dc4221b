//! The typed option values as the server reads them, and index descriptions as it lists them.

use std::time::Duration;

use bson::{Bson, doc};

use super::*;

#[test]
fn every_index_option_uses_the_server_field_name() {
    let options = IndexOptions::builder()
        .background(true)
        .expire_after(Duration::from_secs(30))
        .name("geo".to_string())
        .sparse(true)
        .storage_engine(doc! { "wiredTiger": {} })
        .unique(false)
        .version(IndexVersion::V2)
        .default_language("french".to_string())
        .language_override("lang".to_string())
        .text_index_version(TextIndexVersion::V3)
        .weights(doc! { "title": 5 })
        .sphere_2d_index_version(Sphere2DIndexVersion::V3)
        .bits(26)
        .max(180.0)
        .min(-180.0)
        .bucket_size(10)
        .partial_filter_expression(doc! { "a": { "$exists": true } })
        .collation(Collation::builder().locale("fr").build())
        .wildcard_projection(doc! { "a": 1 })
        .hidden(true)
        .build();
    let spec = IndexModel::builder()
        .keys(doc! { "loc": "2dsphere" })
        .options(options)
        .build()
        .to_spec();
    assert_eq!(
        spec,
        doc! {
            "key": { "loc": "2dsphere" }, "name": "geo", "background": true,
            "expireAfterSeconds": 30_i64, "sparse": true, "storageEngine": { "wiredTiger": {} },
            "unique": false, "v": 2, "default_language": "french", "language_override": "lang",
            "textIndexVersion": 3, "weights": { "title": 5 }, "2dsphereIndexVersion": 3,
            "bits": 26, "max": 180.0, "min": -180.0, "bucketSize": 10,
            "partialFilterExpression": { "a": { "$exists": true } },
            "collation": { "locale": "fr" }, "wildcardProjection": { "a": 1 }, "hidden": true,
        }
    );
}

#[test]
fn listed_indexes_read_numbers_of_any_width_into_typed_versions() {
    let listed = doc! {
        "v": 2.0, "key": { "loc": "2dsphere" }, "name": "loc_2dsphere",
        "2dsphereIndexVersion": 3_i64, "textIndexVersion": 7, "bits": 26.0,
        "expireAfterSeconds": -1, "collation": { "locale": "fr", "strength": 2, "version": "57.1" },
    };
    let model: IndexModel = bson::deserialize_from_document(listed).expect("a valid listing");
    let options = model.options.expect("options are kept");
    assert_eq!(options.version, Some(IndexVersion::V2));
    assert_eq!(
        options.sphere_2d_index_version,
        Some(Sphere2DIndexVersion::V3)
    );
    assert_eq!(
        options.text_index_version,
        Some(TextIndexVersion::Custom(7))
    );
    assert_eq!(options.bits, Some(26));
    // A negative TTL is meaningless; it is dropped rather than wrapped around.
    assert_eq!(options.expire_after, None);
    assert_eq!(
        options.collation,
        Some(
            Collation::builder()
                .locale("fr")
                .strength(CollationStrength::Secondary)
                .build()
        )
    );
}

#[test]
fn a_listed_collation_with_an_impossible_strength_is_an_error_not_a_panic() {
    let listed = doc! { "key": { "a": 1 }, "collation": { "locale": "fr", "strength": 9 } };
    assert!(bson::deserialize_from_document::<IndexModel>(listed).is_err());
}

#[test]
fn collations_send_only_the_fields_set_with_the_server_spelling() {
    let full = Collation::builder()
        .locale("en_US")
        .strength(CollationStrength::Identical)
        .case_level(true)
        .case_first(CollationCaseFirst::Off)
        .numeric_ordering(false)
        .alternate(CollationAlternate::NonIgnorable)
        .max_variable(CollationMaxVariable::Punct)
        .normalization(true)
        .backwards(false)
        .build();
    assert_eq!(
        Bson::from(full),
        Bson::Document(doc! {
            "locale": "en_US", "strength": 5, "caseLevel": true, "caseFirst": "off",
            "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
            "normalization": true, "backwards": false,
        })
    );
    assert_eq!(
        Bson::from(Collation::builder().locale("simple").build()),
        Bson::Document(doc! { "locale": "simple" })
    );
}

#[test]
fn collection_and_index_values_serialise_as_the_server_expects() {
    assert_eq!(Bson::from(CommitQuorum::Nodes(2)), Bson::Int32(2));
    assert_eq!(
        Bson::from(CommitQuorum::VotingMembers),
        Bson::from("votingMembers")
    );
    assert_eq!(Bson::from(CommitQuorum::Majority), Bson::from("majority"));
    assert_eq!(
        Bson::from(CommitQuorum::Custom("dc".into())),
        Bson::from("dc")
    );
    // Past i32::MAX the number is kept (for the server to refuse), not truncated.
    assert_eq!(
        Bson::from(IndexVersion::Custom(u32::MAX)),
        Bson::Int64(i64::from(u32::MAX))
    );
    assert_eq!(Bson::from(ValidationLevel::Off), Bson::from("off"));
    assert_eq!(Bson::from(ValidationAction::Error), Bson::from("error"));
    let buckets = TimeseriesOptions::builder()
        .time_field("ts".to_string())
        .bucket_max_span(Duration::from_secs(3600))
        .bucket_rounding(Duration::from_secs(3600))
        .build();
    assert_eq!(
        Bson::from(buckets),
        Bson::Document(doc! {
            "timeField": "ts", "bucketMaxSpanSeconds": 3600_i64,
            "bucketRoundingSeconds": 3600_i64,
        })
    );
}

#[test]
fn listed_collection_options_read_back_typed() {
    let listed = doc! {
        "capped": true, "size": 4096.0, "max": 10_i64, "validationLevel": "strict",
        "validationAction": "error", "expireAfterSeconds": 60,
        "timeseries": {
            "timeField": "t", "granularity": "hours", "bucketMaxSpanSeconds": 86_400,
        },
        // Atlas lists a time-series collection's clustered index as `true`.
        "clusteredIndex": true,
    };
    let options: CreateCollectionOptions =
        bson::deserialize_from_document(listed).expect("a valid listing");
    assert_eq!((options.size, options.max), (Some(4096), Some(10)));
    assert_eq!(options.validation_level, Some(ValidationLevel::Strict));
    assert_eq!(options.validation_action, Some(ValidationAction::Error));
    assert_eq!(options.expire_after_seconds, Some(Duration::from_secs(60)));
    assert_eq!(options.clustered_index, Some(ClusteredIndex::default()));
    let timeseries = options.timeseries.expect("time-series options");
    assert_eq!(timeseries.granularity, Some(TimeseriesGranularity::Hours));
    assert_eq!(
        timeseries.bucket_max_span,
        Some(Duration::from_secs(86_400))
    );

    let unknown = doc! { "validationLevel": "sometimes" };
    assert!(bson::deserialize_from_document::<CreateCollectionOptions>(unknown).is_err());
}

#[test]
fn small_values_deserialise_from_their_spec_spellings() {
    let hint: Hint = bson::deserialize_from_bson(Bson::from("a_1")).expect("a name");
    assert_eq!(hint, Hint::Name("a_1".into()));
    let hint: Hint = bson::deserialize_from_bson(Bson::Document(doc! { "a": 1 })).expect("keys");
    assert_eq!(hint, Hint::Keys(doc! { "a": 1 }));
    let after: ReturnDocument = bson::deserialize_from_bson(Bson::from("After")).expect("after");
    assert_eq!(after, ReturnDocument::After);
    assert!(bson::deserialize_from_bson::<ReturnDocument>(Bson::from("later")).is_err());
    let cursor: CursorType =
        bson::deserialize_from_bson(Bson::from("tailableAwait")).expect("a cursor type");
    assert_eq!(cursor, CursorType::TailableAwait);
}
