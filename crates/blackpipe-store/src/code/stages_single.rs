//! mongod's numbered assertions of the single-input aggregation stages (`$bucket`,
//! `$bucketAuto`, `$sample`, `$redact`, `$densify`, `$fill`) and of the system variables
//! `$$NOW` and `$$CLUSTER_TIME`, reported as `Location<code>` (stages-single).

/// `Location51144`: a system variable (`$$CLUSTER_TIME` on a standalone) that is not available.
pub const BUILTIN_VARIABLE_UNAVAILABLE: i32 = 51144;
/// `Location40201`: a `$bucket` specification that is not a document.
pub const BUCKET_NOT_OBJECT: i32 = 40201;
/// `Location40202`: a `$bucket` `groupBy` neither a `$`-path nor an operator expression.
pub const BUCKET_BAD_GROUP_BY: i32 = 40202;
/// `Location40200`: `$bucket` `boundaries` that is not an array.
pub const BUCKET_BOUNDARIES_NOT_ARRAY: i32 = 40200;
/// `Location40191`: a `$bucket` boundary that is not a constant.
pub const BUCKET_BOUNDARY_NOT_CONSTANT: i32 = 40191;
/// `Location40192`: `$bucket` `boundaries` with fewer than two values.
pub const BUCKET_TOO_FEW_BOUNDARIES: i32 = 40192;
/// `Location40193`: `$bucket` boundaries of different type classes.
pub const BUCKET_BOUNDARY_TYPES: i32 = 40193;
/// `Location40194`: `$bucket` boundaries that are not strictly increasing.
pub const BUCKET_BOUNDARIES_UNSORTED: i32 = 40194;
/// `Location40195`: a `$bucket` `default` that is not a constant.
pub const BUCKET_DEFAULT_NOT_CONSTANT: i32 = 40195;
/// `Location40196`: a `$bucket` `output` that is not a document.
pub const BUCKET_OUTPUT_NOT_OBJECT: i32 = 40196;
/// `Location40197`: an unknown `$bucket` option.
pub const BUCKET_UNKNOWN_OPTION: i32 = 40197;
/// `Location40198`: a `$bucket` without `groupBy` or `boundaries`.
pub const BUCKET_MISSING_ARGUMENT: i32 = 40198;
/// `Location40199`: a `$bucket` `default` inside the boundaries' range.
pub const BUCKET_DEFAULT_IN_RANGE: i32 = 40199;
/// `Location7158303`: a `$bucket` input in no bucket, without a `default`.
pub const BUCKET_NO_MATCH: i32 = 7_158_303;
/// `Location40239`: a `$bucketAuto` `groupBy` neither a `$`-path nor an operator expression.
pub const BUCKET_AUTO_BAD_GROUP_BY: i32 = 40239;
/// `Location40240`: a `$bucketAuto` specification that is not a document.
pub const BUCKET_AUTO_NOT_OBJECT: i32 = 40240;
/// `Location40241`: `$bucketAuto` `buckets` that is not a number.
pub const BUCKET_AUTO_BUCKETS_NOT_NUMBER: i32 = 40241;
/// `Location40242`: `$bucketAuto` `buckets` that is not a 32-bit integer.
pub const BUCKET_AUTO_BUCKETS_NOT_INT: i32 = 40242;
/// `Location40243`: `$bucketAuto` `buckets` that is not positive.
pub const BUCKET_AUTO_BUCKETS_NOT_POSITIVE: i32 = 40243;
/// `Location40244`: a `$bucketAuto` `output` that is not a document.
pub const BUCKET_AUTO_OUTPUT_NOT_OBJECT: i32 = 40244;
/// `Location40245`: an unknown `$bucketAuto` option.
pub const BUCKET_AUTO_UNKNOWN_OPTION: i32 = 40245;
/// `Location40246`: a `$bucketAuto` without `groupBy` or `buckets`.
pub const BUCKET_AUTO_MISSING_ARGUMENT: i32 = 40246;
/// `Location40257`: an unknown `$bucketAuto` `granularity`.
pub const BUCKET_AUTO_UNKNOWN_GRANULARITY: i32 = 40257;
/// `Location40258`: a non-numeric `$bucketAuto` key with a `granularity`.
pub const BUCKET_AUTO_GRANULARITY_NOT_NUMBER: i32 = 40258;
/// `Location40259`: a NaN `$bucketAuto` key with a `granularity`.
pub const BUCKET_AUTO_GRANULARITY_NAN: i32 = 40259;
/// `Location40260`: a negative `$bucketAuto` key with a `granularity`.
pub const BUCKET_AUTO_GRANULARITY_NEGATIVE: i32 = 40260;
/// `Location40261`: a `$bucketAuto` `granularity` that is not a string.
pub const BUCKET_AUTO_GRANULARITY_NOT_STRING: i32 = 40261;
/// `Location28745`: a `$sample` specification that is not a document.
pub const SAMPLE_NOT_OBJECT: i32 = 28745;
/// `Location28746`: a `$sample` `size` that is not a number.
pub const SAMPLE_SIZE_NOT_NUMBER: i32 = 28746;
/// `Location28747`: a `$sample` `size` that is not positive.
pub const SAMPLE_SIZE_NOT_POSITIVE: i32 = 28747;
/// `Location28748`: an unknown `$sample` option.
pub const SAMPLE_UNKNOWN_OPTION: i32 = 28748;
/// `Location28749`: a `$sample` without `size`.
pub const SAMPLE_WITHOUT_SIZE: i32 = 28749;
/// `Location17053`: a `$redact` expression returning something else than KEEP, PRUNE, DESCEND.
pub const REDACT_BAD_RESULT: i32 = 17053;
/// `Location5733401`: a `$densify` step that is not a positive number.
pub const DENSIFY_BAD_STEP: i32 = 5_733_401;
/// `Location6586400`: a `$densify` date step that is not a whole number.
pub const DENSIFY_DATE_STEP_NOT_WHOLE: i32 = 6_586_400;
/// `Location5733403`: `$densify` bounds that are not two values.
pub const DENSIFY_BOUNDS_SIZE: i32 = 5_733_403;
/// `Location5733402`: `$densify` bounds that are not ascending.
pub const DENSIFY_BOUNDS_DESCENDING: i32 = 5_733_402;
/// `Location5733409`: numeric `$densify` bounds with a `unit`.
pub const DENSIFY_NUMERIC_WITH_UNIT: i32 = 5_733_409;
/// `Location5733406`: `$densify` bounds mixing a number and a non-number.
pub const DENSIFY_BOUNDS_NOT_NUMBERS: i32 = 5_733_406;
/// `Location5876900`: numeric `$densify` bounds and step of different types.
pub const DENSIFY_BOUNDS_TYPES: i32 = 5_876_900;
/// `Location5733405`: `$densify` bounds mixing a date and a non-date.
pub const DENSIFY_BOUNDS_NOT_DATES: i32 = 5_733_405;
/// `Location5733410`: date `$densify` bounds without a `unit`.
pub const DENSIFY_DATES_WITHOUT_UNIT: i32 = 5_733_410;
/// `Location5946800`: explicit `$densify` bounds neither numbers nor dates.
pub const DENSIFY_BOUNDS_BAD_TYPE: i32 = 5_946_800;
/// `Location5946802`: a `$densify` bounds string other than "full" and "partition".
pub const DENSIFY_BOUNDS_BAD_STRING: i32 = 5_946_802;
/// `Location5733404`: `$densify` bounds neither a string nor an array.
pub const DENSIFY_BOUNDS_NOT_RANGE: i32 = 5_733_404;
/// `Location5733408`: `$densify` "partition" bounds without `partitionByFields`.
pub const DENSIFY_PARTITION_WITHOUT_FIELDS: i32 = 5_733_408;
/// `Location5733201`: a `$densify` field value neither a number nor a date.
pub const DENSIFY_FIELD_TYPE: i32 = 5_733_201;
/// `Location6053600`: a `$densify` value whose kind (number, date) does not match the range.
pub const DENSIFY_VALUE_KIND: i32 = 6_053_600;
/// `Location5897900`: a `$densify` generating more documents than allowed.
pub const DENSIFY_TOO_MANY_DOCUMENTS: i32 = 5_897_900;
/// `Location5733307`: a `$densify` field path through an array.
pub const DENSIFY_THROUGH_ARRAY: i32 = 5_733_307;
/// `Location5733308`: a `$densify` field path through a non-document.
pub const DENSIFY_THROUGH_SCALAR: i32 = 5_733_308;
/// `Location5733306`: a `$densify` partition field that is the densified field.
pub const DENSIFY_PARTITION_IS_FIELD: i32 = 5_733_306;
/// `Location6050203`: a `$fill` `output` without fields.
pub const FILL_OUTPUT_EMPTY: i32 = 6_050_203;
/// `Location6050200`: a `$fill` output specification that is not a document.
pub const FILL_OUTPUT_NOT_OBJECT: i32 = 6_050_200;
/// `Location6050201`: a `$fill` output with both `method` and `value`.
pub const FILL_METHOD_AND_VALUE: i32 = 6_050_201;
/// `Location6050202`: a `$fill` `method` other than "locf" and "linear".
pub const FILL_BAD_METHOD: i32 = 6_050_202;
/// `Location6050204`: a `$fill` with both `partitionBy` and `partitionByFields`.
pub const FILL_TWO_PARTITIONS: i32 = 6_050_204;
/// `Location605001`: a linear `$fill` without a one-field `sortBy`.
pub const FILL_LINEAR_SORT_BY: i32 = 605_001;
/// `Location6050106`: a linear `$fill` over repeated sort values in one partition.
pub const FILL_LINEAR_REPEATED_SORT_VALUE: i32 = 6_050_106;
/// `Location5722400`: a `$fill` partition that evaluates to an array.
pub const FILL_PARTITION_ARRAY: i32 = 5_722_400;
/// `Location15948`: a `$bucket` or `$bucketAuto` `output` naming `_id`, a second group `_id`.
pub const GROUP_ID_TWICE: i32 = 15948;
