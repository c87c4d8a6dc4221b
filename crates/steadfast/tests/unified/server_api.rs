//! A client entity's `serverApi` (the Stable API declaration it sends on every command).

use bson::{Bson, Document};
use steadfast::options::{ServerApi, ServerApiVersion};

/// Reads `{version, strict?, deprecationErrors?}`.
pub(crate) fn parse(spec: &Document) -> Result<ServerApi, String> {
    let version = match spec.get("version") {
        Some(Bson::String(v)) if v == "1" => ServerApiVersion::V1,
        other => {
            return Err(format!(
                "serverApi.version {other:?} is not a known version"
            ));
        }
    };
    let flag = |key: &str| -> Result<Option<bool>, String> {
        match spec.get(key) {
            None => Ok(None),
            Some(Bson::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("serverApi.{key} must be a boolean, found {other}")),
        }
    };
    if let Some(unknown) = spec
        .keys()
        .find(|k| !["version", "strict", "deprecationErrors"].contains(&k.as_str()))
    {
        return Err(format!(
            "serverApi.{unknown} is not supported by this runner"
        ));
    }
    Ok(ServerApi::builder()
        .version(version)
        .strict(flag("strict")?)
        .deprecation_errors(flag("deprecationErrors")?)
        .build())
}
