//! Self-checks of the runner's reading of operation arguments into steadfast's options.

use bson::{Bson, doc};
use steadfast::options::{IndexVersion, TextIndexVersion};

use super::checks::expect;
use crate::args::Args;
use crate::ops::indexes::index_options;

/// `createIndex` reads every index option into `IndexOptions`, and a non-string `name` fails
/// rather than being dropped.
pub(super) fn index_options_read() -> Result<(), String> {
    let arguments = doc! {
        "name": "x_text", "background": true, "expireAfterSeconds": 60, "sparse": true,
        "storageEngine": { "wiredTiger": {} }, "unique": false, "version": 2,
        "defaultLanguage": "french", "languageOverride": "idioma", "textIndexVersion": 3,
        "weights": { "x": 2 }, "2dsphereIndexVersion": 3, "bits": 26, "max": 90.0,
        "min": -90, "bucketSize": 1, "partialFilterExpression": { "x": { "$gt": 1 } },
        "collation": { "locale": "fr" }, "wildcardProjection": { "a": 1 }, "hidden": true,
    };
    let mut args = Args::new("createIndex", Some(&arguments));
    let options = index_options(&mut args)?.ok_or("no IndexOptions read")?;
    args.finish()?;
    expect(options.name.as_deref() == Some("x_text"), "name")?;
    expect(
        options.expire_after == Some(std::time::Duration::from_secs(60)),
        "expireAfterSeconds",
    )?;
    expect(
        options.version.map(Bson::from) == Some(Bson::from(IndexVersion::V2)),
        "version",
    )?;
    expect(
        options.text_index_version.map(Bson::from) == Some(Bson::from(TextIndexVersion::V3)),
        "textIndexVersion",
    )?;
    expect(options.min == Some(-90.0), "min (an integer)")?;
    expect(options.hidden == Some(true), "hidden")?;
    expect(
        options.collation.is_some() && options.wildcard_projection.is_some(),
        "collation and wildcardProjection",
    )?;
    let bad = doc! { "name": 1 };
    let mut args = Args::new("createIndex", Some(&bad));
    expect(
        index_options(&mut args).is_err(),
        "a numeric name was accepted",
    )
}

/// A read preference's `hedge` is read, and an unknown field of it fails.
pub(super) fn read_preference_hedge() -> Result<(), String> {
    let preference = crate::ops::read_preference(&doc! {
        "mode": "nearest", "hedge": { "enabled": true },
    })?;
    expect(
        preference.hedge().is_some_and(|hedge| hedge.enabled),
        "hedge not applied",
    )?;
    let unknown = doc! { "mode": "nearest", "hedge": { "enabled": true, "other": 1 } };
    expect(
        crate::ops::read_preference(&unknown).is_err(),
        "hedge.other was accepted",
    )
}
