use std::cmp::Ordering;

use bson::{Bson, doc};

use super::{Collation, parse};
use crate::value_order::compare_values;

fn collation(spec: bson::Document) -> Collation {
    parse(&spec)
        .expect("a valid collation")
        .expect("not simple")
}

fn order(collation: &Collation, left: &str, right: &str) -> Ordering {
    let (left, right) = (Bson::String(left.into()), Bson::String(right.into()));
    compare_values(&collation.fold(&left), &collation.fold(&right))
}

#[test]
fn strengths_decide_what_differences_count() {
    let primary = collation(doc! { "locale": "en", "strength": 1 });
    assert_eq!(order(&primary, "cote", "Côté"), Ordering::Equal);
    let secondary = collation(doc! { "locale": "en", "strength": 2 });
    assert_eq!(order(&secondary, "cote", "COTE"), Ordering::Equal);
    assert_ne!(order(&secondary, "cote", "côte"), Ordering::Equal);
    let tertiary = collation(doc! { "locale": "en" });
    assert_eq!(order(&tertiary, "a", "A"), Ordering::Less);
    assert_eq!(
        order(&tertiary, "A", "b"),
        Ordering::Less,
        "not binary order"
    );
}

#[test]
fn numeric_ordering_case_first_and_shifted_alternate() {
    let numeric = collation(doc! { "locale": "en", "numericOrdering": true });
    assert_eq!(order(&numeric, "b9", "b10"), Ordering::Less);
    let plain = collation(doc! { "locale": "en" });
    assert_eq!(order(&plain, "b10", "b9"), Ordering::Less);
    let upper = collation(doc! { "locale": "en", "caseFirst": "upper" });
    assert_eq!(order(&upper, "A", "a"), Ordering::Less);
    let shifted = collation(doc! { "locale": "en", "alternate": "shifted", "strength": 3 });
    assert_eq!(order(&shifted, "black-bird", "blackbird"), Ordering::Equal);
    let case_level = collation(doc! { "locale": "en", "strength": 1, "caseLevel": true });
    assert_eq!(order(&case_level, "cote", "côte"), Ordering::Equal);
    assert_ne!(order(&case_level, "cote", "Cote"), Ordering::Equal);
}

#[test]
fn locales_and_variants_have_their_own_orders() {
    let swedish = collation(doc! { "locale": "sv" });
    assert_eq!(order(&swedish, "z", "ö"), Ordering::Less);
    let german = collation(doc! { "locale": "de" });
    assert_eq!(order(&german, "ö", "z"), Ordering::Less);
    let phonebook = collation(doc! { "locale": "de@collation=phonebook", "strength": 1 });
    assert_eq!(order(&phonebook, "Müller", "Mueller"), Ordering::Equal);
    let spanish = collation(doc! { "locale": "es" });
    assert_eq!(order(&spanish, "n", "ñ"), Ordering::Less);
    assert_eq!(order(&spanish, "ñ", "o"), Ordering::Less);
}

#[test]
fn folding_reaches_into_arrays_and_documents_but_not_field_names() {
    let loose = collation(doc! { "locale": "en", "strength": 2 });
    let left = Bson::Document(doc! { "Name": ["ANN", 1] });
    let right = Bson::Document(doc! { "Name": ["ann", 1] });
    assert_eq!(loose.fold(&left), loose.fold(&right));
    let other_field = Bson::Document(doc! { "name": ["ann", 1] });
    assert_ne!(loose.fold(&left), loose.fold(&other_field));
    let number = Bson::Int32(4);
    assert!(matches!(loose.fold(&number), std::borrow::Cow::Borrowed(_)));
}

#[test]
fn the_resolved_specification_lists_every_field() {
    let resolved = collation(doc! { "locale": "fr_CA", "strength": 2 });
    assert_eq!(
        resolved.spec(),
        &doc! {
            "locale": "fr_CA", "caseLevel": false, "caseFirst": "off", "strength": 2,
            "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
            "normalization": false, "backwards": true, "version": "57.1",
        }
    );
    assert!(parse(&doc! { "locale": "simple" }).unwrap().is_none());
    let danish = collation(doc! { "locale": "da" });
    assert_eq!(danish.spec().get_str("caseFirst").unwrap(), "upper");
}

#[test]
fn malformed_collations_get_mongods_codes() {
    let code = |spec: bson::Document| parse(&spec).map(|_| ()).unwrap_err().code;
    assert_eq!(code(doc! { "strength": 2 }), 40414);
    assert_eq!(code(doc! { "locale": "en", "bogus": 1 }), 40415);
    assert_eq!(code(doc! { "locale": 1 }), 14);
    assert_eq!(code(doc! { "locale": "en", "caseLevel": "yes" }), 14);
    assert_eq!(code(doc! { "locale": "en", "strength": 6 }), 51024);
    assert_eq!(code(doc! { "locale": "en", "strength": 0 }), 51024);
    assert_eq!(code(doc! { "locale": "en", "strength": "2" }), 14);
    assert_eq!(code(doc! { "locale": "en", "caseFirst": "sideways" }), 2);
    assert_eq!(code(doc! { "locale": "en", "maxVariable": "symbol" }), 2);
    assert_eq!(code(doc! { "locale": "xx" }), 2);
    assert_eq!(code(doc! { "locale": "haw" }), 2);
    assert_eq!(code(doc! { "locale": "en", "backwards": true }), 2);
    let error = parse(&doc! { "locale": "zz_nope" }).unwrap_err();
    assert_eq!(
        error.message,
        "Field 'locale' is invalid in: { locale: \"zz_nope\" }"
    );
}

#[test]
fn a_huge_locale_is_refused_at_the_table() {
    let huge_locale = "e".repeat(4 * 1024 * 1024);
    let error = parse(&doc! { "locale": huge_locale }).unwrap_err();
    assert_eq!(error.code, 2);
}
