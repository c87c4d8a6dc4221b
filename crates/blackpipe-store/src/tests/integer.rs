//! Reading an integer written as any BSON number.

use bson::{Bson, Decimal128};

use crate::integer::integral;

#[test]
fn integers_and_integral_doubles_and_decimals_read_as_integers() {
    assert_eq!(integral(&Bson::Int32(-7)), Some(-7));
    assert_eq!(integral(&Bson::Int64(i64::MIN)), Some(i64::MIN));
    assert_eq!(integral(&Bson::Double(3.0)), Some(3));
    let decimal: Decimal128 = "12".parse().unwrap();
    assert_eq!(integral(&Bson::Decimal128(decimal)), Some(12));
}

#[test]
fn huge_doubles_saturate_and_the_rest_is_not_an_integer() {
    assert_eq!(integral(&Bson::Double(1e300)), Some(i64::MAX));
    assert_eq!(integral(&Bson::Double(-1e300)), Some(i64::MIN));
    for value in [
        Bson::Double(2.5),
        Bson::Double(f64::NAN),
        Bson::Double(f64::INFINITY),
        Bson::String("1".into()),
        Bson::Null,
    ] {
        assert_eq!(integral(&value), None, "{value:?}");
    }
}
