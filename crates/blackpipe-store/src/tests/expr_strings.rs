//! The string operators.

use bson::{Bson, doc};

use super::expr_eval::{date, op, op_code, op_failure, settles};

fn s(text: &str) -> Bson {
    Bson::String(text.to_owned())
}

fn args(items: Vec<Bson>) -> Bson {
    Bson::Array(items)
}

#[test]
fn substr_bytes_and_its_alias() {
    assert_eq!(
        op("$substrBytes", args(vec![s("abcde"), 1.into(), 3.into()])),
        s("bcd")
    );
    assert_eq!(
        op("$substr", args(vec![s("abcde"), 1.into(), 3.into()])),
        s("bcd")
    );
    // A negative length is the rest of the string; a start past the end is empty.
    assert_eq!(
        op(
            "$substrBytes",
            args(vec![s("abcde"), 2.into(), (-1).into()])
        ),
        s("cde")
    );
    assert_eq!(
        op("$substrBytes", args(vec![s("abc"), 10.into(), 1.into()])),
        s("")
    );
    // Null is the empty string; numbers and dates are written out.
    assert_eq!(
        op("$substrBytes", args(vec![Bson::Null, 0.into(), 1.into()])),
        s("")
    );
    assert_eq!(
        op("$substrBytes", args(vec![123.into(), 0.into(), 2.into()])),
        s("12")
    );
    assert_eq!(
        op("$substrBytes", args(vec![date(0), 0.into(), 4.into()])),
        s("1970")
    );
    assert_eq!(
        op("$substrBytes", args(vec![s("héllo"), 1.into(), 2.into()])),
        s("é")
    );
}

#[test]
fn substr_bytes_errors() {
    let (code, message) = op_failure("$substrBytes", args(vec![s("abc"), s("1"), 1.into()]));
    assert_eq!(
        (code, message.as_str()),
        (
            16034,
            "$substrBytes:  starting index must be a numeric type (is BSON type string)"
        )
    );
    assert_eq!(
        op_code("$substrBytes", args(vec![s("abc"), 1.into(), s("1")])),
        16035
    );
    assert_eq!(
        op_code("$substrBytes", args(vec![s("abc"), (-1).into(), 1.into()])),
        50752
    );
    assert_eq!(
        op_code("$substrBytes", args(vec![s("héllo"), 2.into(), 1.into()])),
        28656
    );
    assert_eq!(
        op_code("$substrBytes", args(vec![s("héllo"), 1.into(), 1.into()])),
        28657
    );
    assert_eq!(
        op_code(
            "$substrBytes",
            args(vec![Bson::Document(doc! {}), 0.into(), 1.into()])
        ),
        16007
    );
    let (code, message) = op_failure("$substr", args(vec![s("abc"), 1.into()]));
    assert_eq!(
        (code, message.as_str()),
        (
            16020,
            "Expression $substrBytes takes exactly 3 arguments. 2 were passed in."
        )
    );
}

#[test]
fn substr_code_points() {
    assert_eq!(
        op("$substrCP", args(vec![s("héllo"), 1.into(), 3.into()])),
        s("éll")
    );
    assert_eq!(
        op("$substrCP", args(vec![s("日本語"), 2.into(), 5.into()])),
        s("語")
    );
    assert_eq!(
        op("$substrCP", args(vec![s("abc"), 1.0.into(), 1.into()])),
        s("b")
    );
    assert_eq!(
        op_code("$substrCP", args(vec![s("abc"), s("x"), 1.into()])),
        34450
    );
    assert_eq!(
        op_code("$substrCP", args(vec![s("abc"), 1.5.into(), 1.into()])),
        34451
    );
    assert_eq!(
        op_code("$substrCP", args(vec![s("abc"), 1.into(), Bson::Null])),
        34452
    );
    assert_eq!(
        op_code("$substrCP", args(vec![s("abc"), 1.into(), 1e10.into()])),
        34453
    );
    assert_eq!(
        op_code("$substrCP", args(vec![s("abc"), 1.into(), (-1).into()])),
        34454
    );
    assert_eq!(
        op_code("$substrCP", args(vec![s("abc"), (-1).into(), 1.into()])),
        34455
    );
}

#[test]
fn string_lengths() {
    assert_eq!(op("$strLenBytes", s("héllo")), Bson::Int32(6));
    assert_eq!(op("$strLenCP", s("héllo")), Bson::Int32(5));
    assert_eq!(op("$strLenCP", args(vec![s("")])), Bson::Int32(0));
    let (code, message) = op_failure("$strLenBytes", Bson::Null);
    assert_eq!(
        (code, message.as_str()),
        (
            34473,
            "$strLenBytes requires a string argument, found: null"
        )
    );
    assert_eq!(op_code("$strLenCP", 5.into()), 34471);
    assert_eq!(op_code("$strLenCP", args(vec![s("a"), s("b")])), 16020);
}

#[test]
fn split_strings() {
    assert_eq!(
        op("$split", args(vec![s("a,b,,c"), s(",")])),
        Bson::Array(vec![s("a"), s("b"), s(""), s("c")])
    );
    assert_eq!(
        op("$split", args(vec![s(""), s(",")])),
        Bson::Array(vec![s("")])
    );
    assert_eq!(op("$split", args(vec![Bson::Null, s(",")])), Bson::Null);
    assert_eq!(op("$split", args(vec![s("a"), s("$nothing")])), Bson::Null);
    assert_eq!(op_code("$split", args(vec![1.into(), s(",")])), 40085);
    assert_eq!(op_code("$split", args(vec![s("a"), 1.into()])), 40086);
    assert_eq!(op_code("$split", args(vec![s("a"), s("")])), 40087);
}

#[test]
fn trims() {
    let input = "\u{2002} \t hi there \n\u{0}";
    assert_eq!(
        op("$trim", Bson::Document(doc! { "input": input })),
        s("hi there")
    );
    assert_eq!(
        op("$ltrim", Bson::Document(doc! { "input": input })),
        s("hi there \n\u{0}")
    );
    assert_eq!(
        op("$rtrim", Bson::Document(doc! { "input": input })),
        s("\u{2002} \t hi there")
    );
    assert_eq!(
        op(
            "$trim",
            Bson::Document(doc! { "input": "xxhixyx", "chars": "xy" })
        ),
        s("hi")
    );
    assert_eq!(
        op(
            "$trim",
            Bson::Document(doc! { "input": "ééhié", "chars": "é" })
        ),
        s("hi")
    );
    assert_eq!(
        op("$trim", Bson::Document(doc! { "input": Bson::Null })),
        Bson::Null
    );
    assert_eq!(
        op(
            "$trim",
            Bson::Document(doc! { "input": "a", "chars": Bson::Null })
        ),
        Bson::Null
    );
    let (code, message) = op_failure("$trim", Bson::Document(doc! { "input": 5 }));
    assert_eq!(
        (code, message.as_str()),
        (
            50699,
            "$trim requires its input to be a string, got 5 (of type int) instead."
        )
    );
    assert_eq!(
        op_code("$ltrim", Bson::Document(doc! { "input": "a", "chars": 1 })),
        50700
    );
    assert_eq!(op_code("$rtrim", s("a")), 50696);
    assert_eq!(
        op_code("$trim", Bson::Document(doc! { "input": "a", "char": "a" })),
        50694
    );
    assert_eq!(
        op_code("$trim", Bson::Document(doc! { "chars": "a" })),
        50695
    );
}

#[test]
fn index_of_bytes_and_code_points() {
    let index = |operator: &str, items: Vec<Bson>| op(operator, args(items));
    assert_eq!(
        index("$indexOfBytes", vec![s("cafétéria"), s("té")]),
        Bson::Int32(5)
    );
    assert_eq!(
        index("$indexOfCP", vec![s("cafétéria"), s("té")]),
        Bson::Int32(4)
    );
    assert_eq!(
        index("$indexOfCP", vec![s("abcabc"), s("b"), 2.into()]),
        Bson::Int32(4)
    );
    assert_eq!(
        index("$indexOfCP", vec![s("abcabc"), s("b"), 2.into(), 4.into()]),
        Bson::Int32(-1)
    );
    assert_eq!(
        index("$indexOfBytes", vec![s("abc"), s("d")]),
        Bson::Int32(-1)
    );
    assert_eq!(
        index("$indexOfBytes", vec![s("abc"), s(""), 3.into()]),
        Bson::Int32(3)
    );
    assert_eq!(index("$indexOfCP", vec![s(""), s("")]), Bson::Int32(0));
    assert_eq!(
        index("$indexOfBytes", vec![s("abc"), s("a"), 5.into()]),
        Bson::Int32(-1)
    );
    assert_eq!(index("$indexOfBytes", vec![Bson::Null, s("a")]), Bson::Null);
    assert_eq!(
        op_code("$indexOfBytes", args(vec![1.into(), s("a")])),
        40091
    );
    assert_eq!(
        op_code("$indexOfBytes", args(vec![s("a"), Bson::Null])),
        40092
    );
    assert_eq!(op_code("$indexOfCP", args(vec![1.into(), s("a")])), 40093);
    assert_eq!(op_code("$indexOfCP", args(vec![s("a"), 1.into()])), 40094);
    let (code, message) = op_failure("$indexOfCP", args(vec![s("a"), s("a"), 1.5.into()]));
    assert_eq!(
        (code, message.as_str()),
        (
            40096,
            "$indexOfCPrequires an integral starting index, found a value of type: double, with value: 1.5"
        )
    );
    assert_eq!(
        op_code(
            "$indexOfCP",
            args(vec![s("a"), s("a"), 0.into(), (-1).into()])
        ),
        40097
    );
    let (code, message) = op_failure("$indexOfCP", args(vec![s("a")]));
    assert_eq!(
        (code, message.as_str()),
        (
            28667,
            "Expression $indexOfCP takes at least 2 arguments, and at most 4, but 1 were passed in."
        )
    );
}

#[test]
fn replace_one_and_all() {
    let spec = |input: Bson, find: Bson, replacement: Bson| {
        Bson::Document(doc! { "input": input, "find": find, "replacement": replacement })
    };
    assert_eq!(
        op("$replaceOne", spec(s("a.b.c"), s("."), s("/"))),
        s("a/b.c")
    );
    assert_eq!(
        op("$replaceAll", spec(s("a.b.c"), s("."), s("/"))),
        s("a/b/c")
    );
    assert_eq!(
        op("$replaceAll", spec(s("abc"), s(""), s("-"))),
        s("-a-b-c-")
    );
    assert_eq!(op("$replaceOne", spec(s("abc"), s(""), s("-"))), s("-abc"));
    assert_eq!(op("$replaceAll", spec(s("abc"), s("x"), s("-"))), s("abc"));
    assert_eq!(
        op("$replaceAll", spec(Bson::Null, s("x"), s("-"))),
        Bson::Null
    );
    assert_eq!(
        op("$replaceOne", spec(s("a"), s("$nothing"), s("-"))),
        Bson::Null
    );
    // Types are checked before nulls.
    assert_eq!(
        op_code("$replaceOne", spec(Bson::Null, 1.into(), s("-"))),
        51745
    );
    let (code, message) = op_failure("$replaceAll", spec(5.into(), s("x"), s("-")));
    assert_eq!(
        (code, message.as_str()),
        (
            51746,
            "$replaceAll requires that 'input' be a string, found: 5"
        )
    );
    assert_eq!(
        op_code("$replaceAll", spec(s("a"), s("x"), 1.into())),
        51744
    );
    assert_eq!(op_code("$replaceAll", s("a")), 51751);
    assert_eq!(
        op_code(
            "$replaceAll",
            Bson::Document(doc! { "input": "a", "find": "a", "replacement": "b", "x": 1 })
        ),
        51750
    );
    assert_eq!(
        op_code(
            "$replaceAll",
            Bson::Document(doc! { "find": "a", "replacement": "b" })
        ),
        51749
    );
    assert_eq!(
        op_code(
            "$replaceAll",
            Bson::Document(doc! { "input": "a", "replacement": "b" })
        ),
        51748
    );
    assert_eq!(
        op_code(
            "$replaceAll",
            Bson::Document(doc! { "input": "a", "find": "b" })
        ),
        51747
    );
}

#[test]
fn replace_all_is_bounded() {
    // 2 MiB of input with every byte replaced by 16 bytes would pass 16 MiB.
    let big = "a".repeat(2 * 1024 * 1024);
    let spec =
        Bson::Document(doc! { "input": big, "find": "a", "replacement": "0123456789abcdef" });
    assert_eq!(op_code("$replaceAll", spec), 10334);
    settles(Bson::Document(
        doc! { "$split": ["a".repeat(4 * 1024 * 1024), "a"] },
    ));
}

#[test]
fn strcasecmp() {
    assert_eq!(
        op("$strcasecmp", args(vec![s("Hello"), s("hELLO")])),
        Bson::Int32(0)
    );
    assert_eq!(
        op("$strcasecmp", args(vec![s("a"), s("B")])),
        Bson::Int32(-1)
    );
    assert_eq!(
        op("$strcasecmp", args(vec![s("b"), Bson::Null])),
        Bson::Int32(1)
    );
    assert_eq!(
        op("$strcasecmp", args(vec![1.into(), s("1")])),
        Bson::Int32(0)
    );
    assert_eq!(
        op_code("$strcasecmp", args(vec![s("a"), Bson::Array(vec![])])),
        16007
    );
    assert_eq!(op_code("$strcasecmp", args(vec![s("a")])), 16020);
}
