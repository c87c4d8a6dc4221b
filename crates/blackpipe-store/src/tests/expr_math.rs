//! Arithmetic and trigonometry.

use bson::Bson;

use super::expr_eval::{decimal, op, op_code, op_failure};

fn args(items: Vec<Bson>) -> Bson {
    Bson::Array(items)
}

fn double(value: &Bson) -> f64 {
    match value {
        Bson::Double(number) => *number,
        other => panic!("not a double: {other}"),
    }
}

#[test]
fn ceil_and_floor_keep_types() {
    assert_eq!(op("$ceil", 1.25.into()), Bson::Double(2.0));
    assert_eq!(op("$floor", (-1.25).into()), Bson::Double(-2.0));
    assert_eq!(op("$ceil", 7.into()), Bson::Int32(7));
    assert_eq!(op("$floor", 7_i64.into()), Bson::Int64(7));
    assert_eq!(op("$ceil", decimal("1.01")), decimal("2"));
    assert_eq!(op("$floor", decimal("-1.01")), decimal("-2"));
    assert_eq!(op("$ceil", Bson::Null), Bson::Null);
    let (code, message) = op_failure("$floor", Bson::String("1".into()));
    assert_eq!(
        (code, message.as_str()),
        (28765, "$floor only supports numeric types, not string")
    );
    assert_eq!(op_code("$ceil", args(vec![1.into(), 2.into()])), 16020);
}

#[test]
fn round_and_trunc() {
    assert_eq!(op("$round", args(vec![2.5.into()])), Bson::Double(2.0));
    assert_eq!(op("$round", args(vec![3.5.into()])), Bson::Double(4.0));
    assert_eq!(
        op("$round", args(vec![1.2345.into(), 2.into()])),
        Bson::Double(1.23)
    );
    assert_eq!(
        op("$trunc", args(vec![1.999.into(), 1.into()])),
        Bson::Double(1.9)
    );
    assert_eq!(
        op("$round", args(vec![1234.into(), (-2).into()])),
        Bson::Int32(1200)
    );
    assert_eq!(
        op("$round", args(vec![1250.into(), (-2).into()])),
        Bson::Int32(1200)
    );
    assert_eq!(
        op("$trunc", args(vec![(-1299_i64).into(), (-2).into()])),
        Bson::Int64(-1200)
    );
    assert_eq!(
        op("$round", args(vec![1234.into(), 2.into()])),
        Bson::Int32(1234)
    );
    assert_eq!(
        op("$round", args(vec![decimal("1.2345"), 3.into()])),
        decimal("1.234")
    );
    assert_eq!(op("$trunc", decimal("-1.9")), decimal("-1"));
    assert_eq!(
        op("$round", args(vec![f64::INFINITY.into()])),
        Bson::Double(f64::INFINITY)
    );
    assert_eq!(op("$round", args(vec![Bson::Null, 1.into()])), Bson::Null);
    assert_eq!(op("$round", args(vec![1.into(), Bson::Null])), Bson::Null);
    assert_eq!(
        op_code("$round", args(vec![Bson::String("1".into())])),
        51081
    );
    assert_eq!(op_code("$round", args(vec![1.into(), 1.5.into()])), 51082);
    let (code, message) = op_failure("$trunc", args(vec![1.into(), 101.into()]));
    assert_eq!(
        (code, message.as_str()),
        (
            51083,
            "cannot apply $trunc with precision value 101 value must be in [-20, 100]"
        )
    );
    assert_eq!(
        op_code("$round", args(vec![1.into(), Bson::String("1".into())])),
        16003
    );
    assert_eq!(
        op_code("$round", args(vec![1.into(), 1.into(), 1.into()])),
        28667
    );
    assert_eq!(
        op_code("$round", args(vec![i64::MAX.into(), (-1).into()])),
        51080
    );
}

#[test]
fn roots_powers_and_logarithms() {
    assert_eq!(op("$sqrt", 25.into()), Bson::Double(5.0));
    assert_eq!(
        op("$sqrt", decimal("2")),
        decimal("1.414213562373095048801688724209698")
    );
    assert_eq!(op_code("$sqrt", (-1).into()), 28714);
    assert_eq!(op("$exp", 0.into()), Bson::Double(1.0));
    assert_eq!(
        op("$exp", decimal("1")),
        decimal("2.718281828459045235360287471352662")
    );
    assert_eq!(op("$ln", 1.into()), Bson::Double(0.0));
    assert_eq!(op("$log10", 1000.into()), Bson::Double(3.0));
    assert_eq!(op("$log10", decimal("1000")), decimal("3"));
    assert_eq!(
        op("$log", args(vec![8.into(), 2.into()])),
        Bson::Double(3.0)
    );
    assert_eq!(
        op("$log", args(vec![decimal("100"), 10.into()])),
        decimal("2")
    );
    let (code, message) = op_failure("$ln", 0.into());
    assert_eq!(
        (code, message.as_str()),
        (28766, "$ln's argument must be a positive number, but is 0")
    );
    assert_eq!(op_code("$log10", (-1.5).into()), 28761);
    assert_eq!(
        op_code("$log", args(vec![Bson::String("1".into()), 2.into()])),
        28756
    );
    assert_eq!(
        op_code("$log", args(vec![1.into(), Bson::String("1".into())])),
        28757
    );
    assert_eq!(op_code("$log", args(vec![0.into(), 2.into()])), 28758);
    assert_eq!(op_code("$log", args(vec![2.into(), 1.into()])), 28759);
    assert_eq!(op("$log", args(vec![Bson::Null, 2.into()])), Bson::Null);
    assert!(op("$ln", f64::NAN.into()).as_f64().is_some_and(f64::is_nan));
}

#[test]
fn pow_types() {
    assert_eq!(
        op("$pow", args(vec![2.into(), 10.into()])),
        Bson::Int32(1024)
    );
    assert_eq!(
        op("$pow", args(vec![2.into(), 40.into()])),
        Bson::Int64(1 << 40)
    );
    assert_eq!(
        op("$pow", args(vec![2_i64.into(), 2.into()])),
        Bson::Int64(4)
    );
    assert_eq!(
        op("$pow", args(vec![2.into(), (-1).into()])),
        Bson::Double(0.5)
    );
    assert_eq!(
        op("$pow", args(vec![(-1).into(), 7.into()])),
        Bson::Int32(-1)
    );
    assert_eq!(
        op("$pow", args(vec![10.into(), 30.into()])),
        Bson::Double(1e30)
    );
    assert_eq!(
        op("$pow", args(vec![2.0.into(), 3.into()])),
        Bson::Double(8.0)
    );
    assert_eq!(
        op("$pow", args(vec![decimal("1.5"), 2.into()])),
        decimal("2.25")
    );
    assert_eq!(op("$pow", args(vec![Bson::Null, 2.into()])), Bson::Null);
    assert_eq!(op_code("$pow", args(vec![0.into(), (-1).into()])), 28764);
    assert_eq!(
        op_code("$pow", args(vec![decimal("0"), (-1).into()])),
        28764
    );
    assert_eq!(
        op_code("$pow", args(vec![Bson::String("2".into()), 1.into()])),
        28762
    );
    assert_eq!(
        op_code("$pow", args(vec![2.into(), Bson::Boolean(true)])),
        28763
    );
}

#[test]
fn trigonometry() {
    assert!((double(&op("$sin", std::f64::consts::FRAC_PI_2.into())) - 1.0).abs() < 1e-15);
    assert_eq!(op("$cos", 0.into()), Bson::Double(1.0));
    assert!(
        (double(&op("$atan2", args(vec![1.into(), 1.into()]))) - std::f64::consts::FRAC_PI_4).abs()
            < 1e-15
    );
    assert_eq!(
        op("$asin", 1.into()),
        Bson::Double(std::f64::consts::FRAC_PI_2)
    );
    assert_eq!(op("$acosh", 1.into()), Bson::Double(0.0));
    assert_eq!(op("$tanh", 0.into()), Bson::Double(0.0));
    assert_eq!(
        op("$degreesToRadians", 180.into()),
        Bson::Double(std::f64::consts::PI)
    );
    assert_eq!(
        op("$radiansToDegrees", std::f64::consts::PI.into()),
        Bson::Double(180.0)
    );
    assert_eq!(
        op("$degreesToRadians", decimal("180")),
        decimal("3.141592653589793238462643383279503")
    );
    assert_eq!(op("$sin", decimal("0")), decimal("0"));
    assert!(matches!(op("$cos", decimal("1")), Bson::Decimal128(_)));
    assert_eq!(op("$sin", Bson::Null), Bson::Null);
    assert_eq!(op("$atan2", args(vec![1.into(), Bson::Null])), Bson::Null);
    let (code, message) = op_failure("$acos", (-2).into());
    assert_eq!(
        (code, message.as_str()),
        (50989, "cannot apply $acos to -2, value must in [-1,1]")
    );
    let (code, message) = op_failure("$sin", f64::INFINITY.into());
    assert_eq!(
        (code, message.as_str()),
        (50989, "cannot apply $sin to inf, value must in (-inf,inf)")
    );
    assert_eq!(op_code("$acosh", 0.5.into()), 50989);
    assert_eq!(op_code("$atanh", decimal("1.5")), 50989);
    assert_eq!(op_code("$tan", Bson::String("x".into())), 28765);
    assert_eq!(
        op_code("$atan2", args(vec![Bson::String("x".into()), 1.into()])),
        51044
    );
    assert_eq!(
        op_code("$atan2", args(vec![1.into(), Bson::String("x".into())])),
        51045
    );
    assert_eq!(op_code("$atan2", args(vec![1.into()])), 16020);
    // NaN passes through the bounds.
    assert!(
        op("$acos", f64::NAN.into())
            .as_f64()
            .is_some_and(f64::is_nan)
    );
}
