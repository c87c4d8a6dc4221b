//! The exact documents the builders produce, per operator family and stage option.

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, doc};

use super::*;

/// The operator part of a `$search` stage.
fn search_body(op: SearchOperator<impl Sized>) -> Document {
    op.into_stage().get_document("$search").unwrap().clone()
}

#[test]
fn stages_wrap_the_operator_in_search_or_search_meta() {
    assert_eq!(
        exists("a").into_stage(),
        doc! { "$search": { "exists": { "path": "a" } } }
    );
    assert_eq!(
        exists("a").into_stage_meta(),
        doc! { "$searchMeta": { "exists": { "path": "a" } } }
    );
}

#[test]
fn search_stage_options_use_the_server_field_names_in_call_order() {
    let stage = search(text("title", "x"))
        .index("idx")
        .concurrent(true)
        .count(doc! { "type": "total" })
        .highlight(doc! { "path": "title" })
        .return_stored_source(false)
        .search_after("tokA")
        .search_before("tokB")
        .score_details(true)
        .sort(doc! { "year": -1 })
        .into_stage();
    assert_eq!(
        stage,
        doc! { "$search": {
            "text": { "path": "title", "query": "x" },
            "index": "idx",
            "concurrent": true,
            "count": { "type": "total" },
            "highlight": { "path": "title" },
            "returnStoredSource": false,
            "searchAfter": "tokA",
            "searchBefore": "tokB",
            "scoreDetails": true,
            "sort": { "year": -1 },
        } }
    );
}

#[test]
fn search_meta_stage_options() {
    let stage = search_meta(exists("a"))
        .count(doc! { "type": "lowerBound", "threshold": 10 })
        .index(String::from("idx"))
        .into_stage();
    assert_eq!(
        stage,
        doc! { "$searchMeta": {
            "exists": { "path": "a" },
            "count": { "type": "lowerBound", "threshold": 10 },
            "index": "idx",
        } }
    );
}

#[test]
fn setting_an_option_twice_keeps_the_last_value() {
    let stage = search(exists("a")).index("one").index("two").into_stage();
    assert_eq!(
        stage,
        doc! { "$search": { "exists": { "path": "a" }, "index": "two" } }
    );
}

#[test]
fn compound_clauses_take_one_operator_lists_and_raw_documents() {
    let op = compound()
        .must(text("a", "x"))
        .must_not(vec![exists("b"), exists("c")])
        .should([text("d", "y").unit(), range("e").gt(1).unit()])
        .filter(vec![doc! { "equals": { "path": "f", "value": true } }])
        .minimum_should_match(1)
        .score(doc! { "boost": { "value": 2 } });
    assert_eq!(
        search_body(op),
        doc! { "compound": {
            "must": [{ "text": { "path": "a", "query": "x" } }],
            "mustNot": [{ "exists": { "path": "b" } }, { "exists": { "path": "c" } }],
            "should": [
                { "text": { "path": "d", "query": "y" } },
                { "range": { "path": "e", "gt": 1 } },
            ],
            "filter": [{ "equals": { "path": "f", "value": true } }],
            "minimumShouldMatch": 1,
            "score": { "boost": { "value": 2 } },
        } }
    );
}

#[test]
fn compound_nests() {
    let inner = compound().should(text("b", "y"));
    let op = compound().must(vec![text("a", "x").unit(), inner.unit()]);
    assert_eq!(
        search_body(op),
        doc! { "compound": { "must": [
            { "text": { "path": "a", "query": "x" } },
            { "compound": { "should": [{ "text": { "path": "b", "query": "y" } }] } },
        ] } }
    );
}

#[test]
fn empty_compound_is_an_empty_spec() {
    assert_eq!(search_body(compound()), doc! { "compound": {} });
}

#[test]
fn text_with_every_option() {
    let op = text("plot", ["heist", "bank"])
        .fuzzy(doc! { "maxEdits": 2, "prefixLength": 1 })
        .match_criteria(MatchCriteria::All)
        .synonyms("syn")
        .score(doc! { "constant": { "value": 3 } });
    assert_eq!(
        search_body(op),
        doc! { "text": {
            "path": "plot",
            "query": ["heist", "bank"],
            "fuzzy": { "maxEdits": 2, "prefixLength": 1 },
            "matchCriteria": "all",
            "synonyms": "syn",
            "score": { "constant": { "value": 3 } },
        } }
    );
}

#[test]
fn string_or_array_accepts_every_listed_form() {
    let owned = vec![String::from("a"), String::from("b")];
    let borrowed: &[&str] = &["a", "b"];
    let expected = Bson::from(vec!["a", "b"]);
    for spec in [
        search_body(exists(owned.as_slice())),
        search_body(exists(borrowed)),
        search_body(exists(["a", "b"])),
    ] {
        assert_eq!(
            spec.get_document("exists").unwrap().get("path"),
            Some(&expected)
        );
    }
    let single = search_body(exists(String::from("a")));
    assert_eq!(single, doc! { "exists": { "path": "a" } });
}

#[test]
fn autocomplete_options() {
    let op = autocomplete(["title", "alt"], "pre")
        .token_order(TokenOrder::Any)
        .fuzzy(doc! { "maxEdits": 1 })
        .score(doc! { "boost": { "path": "rating" } });
    assert_eq!(
        search_body(op),
        doc! { "autocomplete": {
            "path": ["title", "alt"],
            "query": "pre",
            "tokenOrder": "any",
            "fuzzy": { "maxEdits": 1 },
            "score": { "boost": { "path": "rating" } },
        } }
    );
}

#[test]
fn enum_names_and_other_values() {
    let names = |order: TokenOrder| {
        search_body(autocomplete("a", "b").token_order(order))
            .get_document("autocomplete")
            .unwrap()
            .get_str("tokenOrder")
            .unwrap()
            .to_owned()
    };
    assert_eq!(names(TokenOrder::Sequential), "sequential");
    assert_eq!(names(TokenOrder::Other("future".into())), "future");
    assert_eq!(MatchCriteria::Any.as_str(), "any");
    assert_eq!(MatchCriteria::Other("x".into()).as_str(), "x");
    let relations = [
        (Relation::Contains, "contains"),
        (Relation::Disjoint, "disjoint"),
        (Relation::Intersects, "intersects"),
        (Relation::Within, "within"),
        (Relation::Other("touches".into()), "touches"),
    ];
    for (relation, name) in relations {
        assert_eq!(relation.clone(), relation);
        assert_eq!(relation.as_str(), name, "{relation:?}");
    }
}

#[test]
fn equals_in_and_exists() {
    let id = ObjectId::new();
    assert_eq!(
        search_body(equals("owner", id).score(doc! { "boost": { "value": 1 } })),
        doc! { "equals": { "path": "owner", "value": id, "score": { "boost": { "value": 1 } } } }
    );
    assert_eq!(
        search_body(search_in("tags", vec!["a", "b"])),
        doc! { "in": { "path": "tags", "value": ["a", "b"] } }
    );
    assert_eq!(
        search_body(exists(["a", "b"]).score(doc! { "constant": { "value": 1 } })),
        doc! { "exists": { "path": ["a", "b"], "score": { "constant": { "value": 1 } } } }
    );
}

#[test]
fn range_bounds_of_every_accepted_type() {
    let when = DateTime::from_millis(1_000);
    let id = ObjectId::new();
    let owned = String::from("m");
    assert_eq!(
        search_body(range("n").gt(1_i64).lt(2.5_f64).score(doc! {})),
        doc! { "range": { "path": "n", "gt": 1_i64, "lt": 2.5, "score": {} } }
    );
    assert_eq!(
        search_body(range("d").gte(when).lte(id)),
        doc! { "range": { "path": "d", "gte": when, "lte": id } }
    );
    assert_eq!(
        search_body(range("s").gte("a").lt(&owned).lte(owned.clone())),
        doc! { "range": { "path": "s", "gte": "a", "lt": "m", "lte": "m" } }
    );
    // A u32 is stored as an int32 when it fits, as an int64 otherwise (bson's conversion).
    let unsigned = search_body(range("u").gt(7_u32).lte(u32::MAX).lt(1.5_f32));
    let spec = unsigned.get_document("range").unwrap();
    assert_eq!(spec.get("gt"), Some(&Bson::Int32(7)));
    assert_eq!(spec.get("lte"), Some(&Bson::Int64(u32::MAX.into())));
    assert_eq!(spec.get("lt"), Some(&Bson::Double(1.5)));
}

#[test]
fn near_origins_and_pivots() {
    let when = DateTime::from_millis(5);
    let point = doc! { "type": "Point", "coordinates": [1.0, 2.0] };
    assert_eq!(
        search_body(near("released", when, 86_400_000_i64)),
        doc! { "near": { "path": "released", "origin": when, "pivot": 86_400_000_i64 } }
    );
    assert_eq!(
        search_body(near("loc", point.clone(), 1000.0).score(doc! { "boost": { "value": 2 } })),
        doc! { "near": {
            "path": "loc", "origin": point, "pivot": 1000.0,
            "score": { "boost": { "value": 2 } },
        } }
    );
}

#[test]
fn geo_operators() {
    let polygon = doc! { "type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]] };
    assert_eq!(
        search_body(geo_shape("area", Relation::Within, polygon.clone()).score(doc! {})),
        doc! { "geoShape": {
            "path": "area", "relation": "within", "geometry": polygon.clone(), "score": {},
        } }
    );
    let corners = doc! { "bottomLeft": { "type": "Point", "coordinates": [0, 0] } };
    let op = geo_within("loc")
        .geo_box(corners.clone())
        .circle(doc! { "radius": 5 })
        .geometry(polygon.clone())
        .score(doc! {});
    assert_eq!(
        search_body(op),
        doc! { "geoWithin": {
            "path": "loc", "box": corners, "circle": { "radius": 5 }, "geometry": polygon,
            "score": {},
        } }
    );
}

#[test]
fn phrase_regex_wildcard_and_query_string() {
    assert_eq!(
        search_body(
            phrase("title", ["new", "york"])
                .slop(2)
                .synonyms(String::from("s"))
        ),
        doc! { "phrase": { "path": "title", "query": ["new", "york"], "slop": 2, "synonyms": "s" } }
    );
    assert_eq!(
        search_body(
            regex("sku", "ab.*")
                .allow_analyzed_field(true)
                .score(doc! {})
        ),
        doc! { "regex": { "path": "sku", "query": "ab.*", "allowAnalyzedField": true, "score": {} } }
    );
    assert_eq!(
        search_body(wildcard(["a", "b"], "c?t*").allow_analyzed_field(false)),
        doc! { "wildcard": { "path": ["a", "b"], "query": "c?t*", "allowAnalyzedField": false } }
    );
    assert_eq!(
        search_body(query_string("plot", String::from("rust AND NOT c"))),
        doc! { "queryString": { "defaultPath": "plot", "query": "rust AND NOT c" } }
    );
}

#[test]
fn embedded_document_and_more_like_this() {
    let op = embedded_document("items", compound().must(text("items.tags", "school")))
        .score(doc! { "embedded": { "aggregate": "maximum" } });
    assert_eq!(
        search_body(op),
        doc! { "embeddedDocument": {
            "path": "items",
            "operator": { "compound": { "must": [{ "text": { "path": "items.tags", "query": "school" } }] } },
            "score": { "embedded": { "aggregate": "maximum" } },
        } }
    );
    let raw = embedded_document("items", doc! { "exists": { "path": "items.x" } });
    assert_eq!(
        search_body(raw),
        doc! { "embeddedDocument": { "path": "items", "operator": { "exists": { "path": "items.x" } } } }
    );
    let likes = [doc! { "title": "a" }, doc! { "title": "b" }];
    assert_eq!(
        search_body(more_like_this(likes.clone())),
        doc! { "moreLikeThis": { "like": [{ "title": "a" }, { "title": "b" }] } }
    );
    assert_eq!(
        search_body(more_like_this(&likes[..1]).score(doc! {})),
        doc! { "moreLikeThis": { "like": [{ "title": "a" }], "score": {} } }
    );
    assert_eq!(
        search_body(more_like_this(doc! { "title": "a" })),
        doc! { "moreLikeThis": { "like": { "title": "a" } } }
    );
}

#[test]
fn facet_collector_with_every_facet_kind() {
    let (a, b) = (DateTime::from_millis(0), DateTime::from_millis(10));
    let collector = facet(doc! {
        "s": facet::string("genre").num_buckets(3),
        "n": facet::number("year", [1990_i32, 2000]).default_bucket("other"),
        "d": facet::date("released", vec![a, b]).default_bucket("later"),
    })
    .operator(range("year").gte(1990));
    assert_eq!(
        collector.into_stage_meta(),
        doc! { "$searchMeta": { "facet": {
            "facets": {
                "s": { "type": "string", "path": "genre", "numBuckets": 3 },
                "n": { "type": "number", "path": "year", "boundaries": [1990, 2000], "default": "other" },
                "d": { "type": "date", "path": "released", "boundaries": [a, b], "default": "later" },
            },
            "operator": { "range": { "path": "year", "gte": 1990 } },
        } } }
    );
}

#[test]
fn facet_definitions_convert_to_bson_documents() {
    let bson = Bson::from(facet::number("x", [1.5, 2.5]));
    assert_eq!(
        bson,
        Bson::Document(doc! { "type": "number", "path": "x", "boundaries": [1.5, 2.5] })
    );
    let plain: Bson = facet::string(String::from("tag")).into();
    assert_eq!(
        plain,
        Bson::Document(doc! { "type": "string", "path": "tag" })
    );
    let empty: Bson = facet::date("d", []).into();
    assert_eq!(
        empty,
        Bson::Document(doc! { "type": "date", "path": "d", "boundaries": [] })
    );
}

#[test]
fn a_single_operator_iterates_once() {
    let mut items = text("a", "b").into_iter();
    assert!(items.next().is_some());
    assert!(items.next().is_none());
}

#[test]
fn unit_and_clone_keep_the_specification() {
    let op = text("a", "b").synonyms("s");
    let copy = op.clone();
    assert_eq!(op.unit().into_stage(), copy.into_stage());
    assert!(format!("{:?}", exists("p")).contains("exists"));
}
