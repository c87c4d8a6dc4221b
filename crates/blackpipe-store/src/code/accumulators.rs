//! Error codes of `$group`'s accumulators and of `$setWindowFields`.

/// `QueryExceededMemoryLimitNoDiskUseAllowed`: a stage past its memory limit without
/// `allowDiskUse`.
pub const QUERY_EXCEEDED_MEMORY_LIMIT_NO_DISK_USE_ALLOWED: i32 = 292;
/// `Location40236`: a `$group` output field named like an operator.
pub const GROUP_FIELD_OPERATOR_NAME: i32 = 40236;
/// `Location40237`: a unary accumulator given an array.
pub const ACCUMULATOR_UNARY: i32 = 40237;
/// `Location5788001`: a `$top`/`$bottom`/`$topN`/`$bottomN` argument that is not an object.
pub const TOP_BOTTOM_NOT_OBJECT: i32 = 5_788_001;
/// `Location5788002`: a `$top`-family argument it does not know.
pub const TOP_BOTTOM_UNKNOWN_ARGUMENT: i32 = 5_788_002;
/// `Location5788003`: a `$topN`/`$bottomN` without `n`.
pub const TOP_BOTTOM_WITHOUT_N: i32 = 5_788_003;
/// `Location5788004`: a `$top`-family accumulator without `output`.
pub const TOP_BOTTOM_WITHOUT_OUTPUT: i32 = 5_788_004;
/// `Location5788005`: a `$top`-family accumulator without `sortBy`.
pub const TOP_BOTTOM_WITHOUT_SORT_BY: i32 = 5_788_005;
/// `Location7429703`: a `$percentile` whose argument is not an object.
pub const PERCENTILE_NOT_OBJECT: i32 = 7_429_703;
/// `Location7436100`: a `$median` whose argument is not an object.
pub const MEDIAN_NOT_OBJECT: i32 = 7_436_100;
/// `Location7750300`: a `$percentile` `p` that is not constant.
pub const PERCENTILE_P_NOT_CONSTANT: i32 = 7_750_300;
/// `Location7750301`: a `$percentile` `p` that is not a non-empty array.
pub const PERCENTILE_P_NOT_ARRAY: i32 = 7_750_301;
/// `Location7750302`: a `$percentile` `p` element that is not a number.
pub const PERCENTILE_P_NOT_NUMBER: i32 = 7_750_302;
/// `Location7750303`: a `$percentile` `p` element outside [0, 1].
pub const PERCENTILE_P_OUT_OF_RANGE: i32 = 7_750_303;
/// `Location7455900`: a `$median`/`$percentile` window function without its specification.
pub const QUANTILE_WINDOW_INCOMPLETE: i32 = 7_455_900;
/// `Location31264`: server-side JavaScript on a server without a JavaScript engine.
pub const JAVASCRIPT_DISABLED: i32 = 31264;
/// `Location4544701`: an `$accumulator` function that is not constant.
pub const ACCUMULATOR_JS_NOT_CONSTANT: i32 = 4_544_701;
/// `Location4544702`: an `$accumulator` function that is not a string or code.
pub const ACCUMULATOR_JS_NOT_CODE: i32 = 4_544_702;
/// `Location4544703`: an `$accumulator` argument that is not an object.
pub const ACCUMULATOR_JS_NOT_OBJECT: i32 = 4_544_703;
/// `Location4544704`: an `$accumulator` `lang` that is not a string.
pub const ACCUMULATOR_JS_LANG_NOT_STRING: i32 = 4_544_704;
/// `Location4544705`: an `$accumulator` `lang` other than `js`.
pub const ACCUMULATOR_JS_LANG_NOT_JS: i32 = 4_544_705;
/// `Location4544706`: an `$accumulator` field it does not know.
pub const ACCUMULATOR_JS_UNKNOWN_FIELD: i32 = 4_544_706;
/// `Location4544707`: an `$accumulator` without `init`.
pub const ACCUMULATOR_JS_WITHOUT_INIT: i32 = 4_544_707;
/// `Location4544708`: an `$accumulator` without `accumulate`.
pub const ACCUMULATOR_JS_WITHOUT_ACCUMULATE: i32 = 4_544_708;
/// `Location4544709`: an `$accumulator` without `merge`.
pub const ACCUMULATOR_JS_WITHOUT_MERGE: i32 = 4_544_709;
/// `Location4544710`: an `$accumulator` without `accumulateArgs`.
pub const ACCUMULATOR_JS_WITHOUT_ARGS: i32 = 4_544_710;
/// `Location31260`: a `$function` whose argument is not an object.
pub const FUNCTION_NOT_OBJECT: i32 = 31260;
/// `Location31261`: a `$function` without `body`.
pub const FUNCTION_WITHOUT_BODY: i32 = 31261;
/// `Location31262`: a `$function` `body` that is not a string or code.
pub const FUNCTION_BODY_NOT_CODE: i32 = 31262;
/// `Location31263`: a `$function` without `args`.
pub const FUNCTION_WITHOUT_ARGS: i32 = 31263;
/// `Location31432`: a `$function` `body` that is not constant.
pub const FUNCTION_BODY_NOT_CONSTANT: i32 = 31432;
/// `Location31418`: a `$function` without `lang`.
pub const FUNCTION_WITHOUT_LANG: i32 = 31418;
/// `Location31419`: a `$function` `lang` other than `js`.
pub const FUNCTION_LANG_NOT_JS: i32 = 31419;
/// `Location5339900`: window bounds whose lower bound passes the upper.
pub const WINDOW_BOUNDS_INVERTED: i32 = 5_339_900;
/// `Location5339901`: document-based window bounds without a `sortBy`.
pub const WINDOW_DOCUMENTS_WITHOUT_SORT_BY: i32 = 5_339_901;
/// `Location5339902`: range-based window bounds without a one-field `sortBy`.
pub const WINDOW_RANGE_SORT_BY: i32 = 5_339_902;
/// `Location8947401`: range-based window bounds over a descending `sortBy`.
pub const WINDOW_RANGE_DESCENDING: i32 = 8_947_401;
/// `Location5371601`: a rank window function with other arguments.
pub const RANK_EXTRA_ARGUMENTS: i32 = 5_371_601;
/// `Location5371602`: a rank window function without a one-field `sortBy`.
pub const RANK_SORT_BY: i32 = 5_371_602;
/// `Location5371603`: a rank window function whose value is not `{}`.
pub const RANK_NOT_EMPTY_OBJECT: i32 = 5_371_603;
/// `Location605001`: `$linearFill` without a one-field `sortBy`.
pub const LINEAR_FILL_SORT_BY: i32 = 605_001;
/// `Location6050106`: `$linearFill` over repeated `sortBy` values.
pub const LINEAR_FILL_REPEATED_SORT_VALUE: i32 = 6_050_106;
/// `Location5490710`: a window `unit` larger than a week.
pub const WINDOW_UNIT_TOO_LARGE: i32 = 5_490_710;
/// `Location5429513`: a time-range window over a `sortBy` value that is not a date.
pub const WINDOW_RANGE_NOT_DATE: i32 = 5_429_513;
/// `Location5429413`: a numeric range window over a date `sortBy` value.
pub const WINDOW_RANGE_DATE_WITHOUT_UNIT: i32 = 5_429_413;
/// `Location5429414`: a numeric range window over a `sortBy` value that is not a number.
pub const WINDOW_RANGE_NOT_NUMBER: i32 = 5_429_414;
/// `Location5624900`: `$derivative` with `unit` over non-date `sortBy` values.
pub const DERIVATIVE_UNIT_NOT_DATE: i32 = 5_624_900;
/// `Location5624901`: `$derivative` over dates without `unit`.
pub const DERIVATIVE_DATE_WITHOUT_UNIT: i32 = 5_624_901;
/// `Location5624902`: `$derivative` over non-numeric `sortBy` values.
pub const DERIVATIVE_NOT_NUMBER: i32 = 5_624_902;
/// `Location5624903`: `$derivative` of a null or missing input.
pub const DERIVATIVE_NULL_INPUT: i32 = 5_624_903;
/// `Location5423900`: an `$integral` point that is not a number over a number or date.
pub const INTEGRAL_BAD_INPUT: i32 = 5_423_900;
/// `Location5423901`: `$integral` with `unit` over non-date `sortBy` values.
pub const INTEGRAL_UNIT_NOT_DATE: i32 = 5_423_901;
/// `Location5423902`: `$integral` without `unit` over non-numeric `sortBy` values.
pub const INTEGRAL_NOT_NUMBER: i32 = 5_423_902;
/// `Location6307900`: `$setWindowFields` output paths that conflict.
pub const WINDOW_OUTPUT_CONFLICT: i32 = 6_307_900;
/// `Location5414201`: `$setWindowFields` past its memory limit.
pub const WINDOW_MEMORY_LIMIT: i32 = 5_414_201;
