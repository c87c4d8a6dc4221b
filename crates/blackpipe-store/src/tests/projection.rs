//! Find projections and their `_id` rules.

use bson::{Document, doc};

use crate::projection::{Projection, ProjectionKind};

fn project(spec: Document, document: Document) -> Document {
    let projection = Projection::parse(&spec, ProjectionKind::Find)
        .unwrap_or_else(|error| panic!("{spec}: {error:?}"))
        .expect("non-empty projection");
    projection
        .apply(&document)
        .unwrap_or_else(|error| panic!("{spec}: {error:?}"))
}

fn sample() -> Document {
    doc! { "_id": 1, "a": 1, "b": { "c": 2, "d": 3 }, "list": [{ "x": 1, "y": 2 }, { "x": 3 }, 4], "e": 5 }
}

#[test]
fn inclusion_keeps_listed_fields_and_id() {
    assert_eq!(
        project(doc! { "a": 1 }, sample()),
        doc! { "_id": 1, "a": 1 }
    );
    assert_eq!(
        project(doc! { "a": 1, "_id": 0 }, sample()),
        doc! { "a": 1 }
    );
    assert_eq!(
        project(doc! { "e": true, "a": 1 }, sample()),
        doc! { "_id": 1, "a": 1, "e": 5 }
    );
    assert_eq!(
        project(doc! { "b.c": 1 }, sample()),
        doc! { "_id": 1, "b": { "c": 2 } }
    );
    assert_eq!(
        project(doc! { "list.x": 1 }, sample()),
        doc! { "_id": 1, "list": [{ "x": 1 }, { "x": 3 }] }
    );
    assert_eq!(project(doc! { "_id": 1 }, sample()), doc! { "_id": 1 });
    assert_eq!(project(doc! { "missing": 1 }, sample()), doc! { "_id": 1 });
}

#[test]
fn exclusion_removes_listed_fields() {
    assert_eq!(
        project(doc! { "b": 0, "list": 0 }, sample()),
        doc! { "_id": 1, "a": 1, "e": 5 }
    );
    assert_eq!(
        project(doc! { "_id": 0, "b": 0, "list": 0, "e": 0 }, sample()),
        doc! { "a": 1 }
    );
    assert_eq!(
        project(doc! { "b.d": 0, "list.y": 0, "a": 0, "e": 0 }, sample()),
        doc! { "_id": 1, "b": { "c": 2 }, "list": [{ "x": 1 }, { "x": 3 }, 4] }
    );
}

#[test]
fn computed_fields_slice_and_elem_match() {
    assert_eq!(
        project(
            doc! { "sum": { "$add": ["$a", "$e"] }, "copy": "$b.c" },
            sample()
        ),
        doc! { "_id": 1, "sum": 6, "copy": 2 }
    );
    assert_eq!(
        project(doc! { "list": { "$slice": 1 }, "a": 1 }, sample()),
        doc! { "_id": 1, "a": 1, "list": [{ "x": 1, "y": 2 }] }
    );
    assert_eq!(
        project(doc! { "list": { "$slice": -1 } }, sample()),
        doc! { "_id": 1, "a": 1, "b": { "c": 2, "d": 3 }, "list": [4], "e": 5 }
    );
    assert_eq!(
        project(doc! { "list": { "$elemMatch": { "x": 3 } } }, sample()),
        doc! { "_id": 1, "list": [{ "x": 3 }] }
    );
}

#[test]
fn mixing_inclusion_and_exclusion_fails() {
    let error = Projection::parse(&doc! { "a": 1, "b": 0 }, ProjectionKind::Find)
        .expect_err("mixed projection");
    assert_eq!(error.code, 31254);
    let error = Projection::parse(&doc! { "a": 0, "b": "$x" }, ProjectionKind::Find)
        .expect_err("computed in exclusion");
    assert_eq!(error.code, 31252);
    assert!(
        Projection::parse(&doc! {}, ProjectionKind::Find)
            .expect("empty is fine")
            .is_none()
    );
    assert!(Projection::parse(&doc! {}, ProjectionKind::Stage).is_err());
}
